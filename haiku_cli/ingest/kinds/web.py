"""http(s) pages: read with a conditional request, so a sync downloads only a page its server says changed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haiku_cli.errors import HaikuError, InputError
from haiku_cli.ingest.convert.url import Validators, fetch_if_changed
from haiku_cli.ingest.kinds.base import Contents, Freshness, ListRequest, Reading, RemoteKind, Seen, SyncPlan
from haiku_cli.ingest.kinds.web_fetch import asked_page
from haiku_cli.ingest.reports import SourceOutcome
from haiku_cli.ingest.source_walk import is_url

if TYPE_CHECKING:
    from haiku_cli.ingest.document import ConvertedDocument
    from haiku_cli.store.source_tables import FileState, RememberedSource


class WebPages(RemoteKind):
    """One page per source, named by its URL; what it links to is not followed."""

    name = "url"
    described = "http(s)"
    polled = True
    listed_remotely = False

    def claims(self, source: str) -> bool:
        return is_url(source)

    def holds(self, item: object) -> bool:
        return isinstance(item, str)

    def contents(self, source: str, request: ListRequest) -> Contents:
        return Contents("url", itself=source, follow_symlinks=request.follow_symlinks)

    def label(self, item: Any) -> str:
        return str(item)

    def uri(self, item: Any) -> str:
        return str(item)

    def size(self, item: Any) -> int:
        return 0  # not known until it is fetched

    def read(self, item: Any, reading: Reading, fetched: Any | None = None) -> tuple[Seen, ConvertedDocument]:

        got = fetched or fetch_if_changed(item, limits=reading.limits)
        # Asked without validators, or read by a sync that found it changed: never "not modified".
        assert got.document is not None
        return Seen(item, validators=got.validators), got.document

    def plan_sync(
        self,
        source: RememberedSource,
        states: dict[str, FileState],
        scope: Sequence[Path] | None,
        reading: Reading,
        plan: SyncPlan,
    ) -> SyncPlan:
        """Ask the URL whether it changed since its stored validators; download it only if it did.

        Nothing is written for a page the server says is unchanged; one that cannot be fetched now is a
        failed item, and its document stays.
        """
        url = source.source
        stored = states.get(url)
        known = Validators(stored.etag, stored.last_modified) if stored is not None else None
        try:
            got = fetch_if_changed(url, known, limits=reading.limits)
        except HaikuError as exc:
            if exc.exit_code != InputError.exit_code:
                raise
            plan.outcomes.append(SourceOutcome.at(0, source=url, status="failed", error=str(exc)))
            return plan
        if got.document is None:
            plan.unchanged += 1
            return plan
        plan.fetched[url] = got
        plan.items.append((0, url))
        return plan

    def asked_freshness(
        self, state: FileState, reading: Reading, timeout: float
    ) -> tuple[Freshness, str | None]:
        return asked_page(state.uri, Validators(state.etag, state.last_modified), timeout)
