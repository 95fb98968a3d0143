"""Objects on object storage (`s3://bucket/prefix/` or one object), read with `ingest/objects.py`'s clients.

A listing gives each object's size and Last-Modified: a sync reads again only an object whose pair moved
and whose ETag (one HEAD) is not the one stored.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haiku_cli.ingest.document import ConversionError, SourceMissing
from haiku_cli.ingest.kinds.base import Contents, Freshness, ListRequest, Reading, RemoteKind, Seen, SyncPlan
from haiku_cli.ingest.objects import ObjectFile, ObjectStores, is_object_uri
from haiku_cli.ingest.reports import LeftOut
from haiku_cli.ingest.source_walk import FileChoice

if TYPE_CHECKING:
    from haiku_cli.ingest.document import ConvertedDocument
    from haiku_cli.ingest.reports import SyncStatus
    from haiku_cli.store.source_tables import FileState, RememberedSource


@dataclass(frozen=True)
class ListedPrefix:
    """A prefix being added, with every object its listing holds: a stored object not listed has left."""

    prefix: str
    listed: frozenset[str]

    def left(self, uri: str) -> str | None:
        return uri if uri.startswith(self.prefix) and uri not in self.listed else None


class ObjectStorage(RemoteKind):
    """Objects and prefixes on S3-compatible object storage."""

    name = "s3"
    described = "s3:// addresses"
    polled = False
    listed_remotely = True

    def claims(self, source: str) -> bool:
        return is_object_uri(source)

    def holds(self, item: object) -> bool:
        return isinstance(item, ObjectFile)

    def contents(self, source: str, request: ListRequest) -> Contents:
        objects = request.reading.objects
        if objects is None:
            raise ConversionError(f"{source}: object storage is not configured for this add")
        listing = objects.get(source).listing(source, request.choice)
        gone = None
        if listing.kind == "folder":
            listed = frozenset(e.source if isinstance(e, LeftOut) else e.uri for e in listing.found)
            gone = ListedPrefix(source.rstrip("/") + "/", listed)
        return Contents(listing.kind, listing.found, gone=gone)

    def label(self, item: Any) -> str:
        return str(item.uri)

    def uri(self, item: Any) -> str:
        return str(item.uri)

    def size(self, item: Any) -> int:
        return int(item.size)

    def read(self, item: Any, reading: Reading, fetched: Any | None = None) -> tuple[Seen, ConvertedDocument]:
        from haiku_cli.ingest.convert.url import Validators

        assert reading.objects is not None  # objects are found only with the clients that list them
        doc, etag = reading.objects.get(item.uri).read(item, reading.limits)
        return Seen(item.uri, item.size, item.mtime_ns, validators=Validators(etag=etag)), doc

    def plan_sync(
        self,
        source: RememberedSource,
        states: dict[str, FileState],
        scope: Sequence[Path] | None,
        reading: Reading,
        plan: SyncPlan,
    ) -> SyncPlan:
        """Listed again whole: an object whose size and Last-Modified are those stored is unchanged (not
        read), and so is one whose ETag, asked with a HEAD, is the one stored; one no longer listed has
        left. A source that cannot be listed, or lists nothing at all, keeps its documents."""
        objects = reading.objects
        documents = len(states)
        kept = f"its {documents} document{'s' * (documents != 1)} are kept until it is back or forgotten"
        if objects is None:
            plan.problem = ("unreadable", f"{source.source}: object storage is not configured; {kept}")
            return plan
        try:
            listing = objects.get(source.source).listing(
                source.source, FileChoice(source.include, source.exclude)
            )
        except ConversionError as exc:
            status: SyncStatus = "missing" if isinstance(exc, SourceMissing) else "unreadable"
            plan.problem = (status, f"{exc}; {kept} (haiku forget-src)")
            return plan
        _plan_listed(plan, listing.found, states, objects)
        return plan

    def asked_freshness(
        self, state: FileState, reading: Reading, timeout: float
    ) -> tuple[Freshness, str | None]:
        if reading.objects is None:
            return Freshness.UNKNOWN, "object storage is not configured"
        store = reading.objects.get(state.uri)
        try:
            found = store.look(state.uri)
        except ConversionError as exc:
            return Freshness.UNKNOWN, str(exc)
        if found is None:
            return Freshness.MISSING, "no such object"
        if (found.size, found.mtime_ns) == (state.size, state.mtime_ns):
            return Freshness.FRESH, None
        if state.etag and store.etag(found) == state.etag:
            return Freshness.FRESH, None  # uploaded again with the same bytes
        return Freshness.CHANGED, None


def _plan_listed(
    plan: SyncPlan, found: list[ObjectFile | LeftOut], states: dict[str, FileState], objects: ObjectStores
) -> None:
    positions = itertools.count()
    seen: set[str] = set()
    for entry in found:
        position = next(positions)
        if isinstance(entry, LeftOut):
            continue
        seen.add(entry.uri)
        stored = states.get(entry.uri)
        if stored is not None and (stored.size, stored.mtime_ns) == (entry.size, entry.mtime_ns):
            plan.unchanged += 1
        elif stored is not None and stored.etag and objects.get(entry.uri).etag(entry) == stored.etag:
            plan.unchanged += 1
            plan.retimed.append(stored._replace(size=entry.size, mtime_ns=entry.mtime_ns))
        else:
            plan.items.append((position, entry))
    plan.gone = [s for uri, s in states.items() if uri not in seen]
