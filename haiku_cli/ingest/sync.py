"""Reading a remembered source again: add what is new, replace what changed, delete what left it.

A file whose size and modification time are those stored costs a `stat`, never a read; one whose
stat moved is read and its content hash decides (an unchanged text only refreshes the stored stat).
Each source is one all-or-nothing write, and a source with nothing to change writes nothing.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio.to_thread

from haiku_cli.config.settings import IngestSettings
from haiku_cli.errors import HaikuError, InputError
from haiku_cli.ingest.convert.dispatch import file_uri
from haiku_cli.ingest.convert.url import Fetched, Validators, fetch_if_changed
from haiku_cli.ingest.document import ConversionError, SourceMissing
from haiku_cli.ingest.objects import ObjectStores, is_object_uri
from haiku_cli.ingest.pipeline import Ingestor, Item, add_on_cluster, ingest_items
from haiku_cli.ingest.remembering import states_of
from haiku_cli.ingest.reports import LeftOut, Progress, SourceOutcome, SourceSync, SyncStatus
from haiku_cli.ingest.sources import (
    FileChoice,
    Found,
    SkippedSource,
    TextFile,
    iter_source_files,
    iter_source_scope,
)
from haiku_cli.store import sources as stored_sources
from haiku_cli.store.blocking import wait
from haiku_cli.store.maintenance import after_write
from haiku_cli.store.reads import get_documents, in_list, rows_where
from haiku_cli.store.sources import FileState, RememberedSource
from haiku_cli.store.transaction import atomic_write, storage_errors
from haiku_cli.store.writes import delete_documents

if TYPE_CHECKING:
    from haiku_cli.embed import Embedder
    from haiku_cli.ingest.cluster import RayEngine
    from haiku_cli.store.database import Database
    from haiku_cli.store.records import DocumentRecord


async def sync_source(
    db: Database,
    embedder: Callable[[], Awaitable[Embedder]],
    source: RememberedSource,
    *,
    limits: IngestSettings | None = None,
    progress: Progress | None = None,
    scope: Sequence[Path] | None = None,
    objects: ObjectStores | None = None,
    engine: RayEngine | None = None,
) -> SourceSync:
    """Bring the documents of one remembered source up to date with it (the caller holds the writer lock).

    `embedder` is awaited only when something has to be embedded. `scope`: only these paths inside the
    source are looked at (what a watcher saw change); None: all of it. `objects` reads a source on object
    storage (listed again whole: an object whose size and Last-Modified are those stored is not read).
    With an `engine`, what is to be read is read, chunked and embedded on its cluster (unless it is too
    little to be worth it), as an add does.
    """
    plan = await anyio.to_thread.run_sync(_plan, db, source, scope, limits or IngestSettings(), objects)
    result = SourceSync(source=source.source, kind=source.kind, unchanged=plan.unchanged)
    if plan.problem is not None:
        result.status, result.error = plan.problem
        return result
    outcomes = list(plan.outcomes)
    if plan.items or plan.gone or plan.refresh or plan.retimed:
        ingestor = Ingestor(db, await embedder(), progress)
        if plan.gone and plan.items:
            ingestor.moved_from = await anyio.to_thread.run_sync(_movable, db, source, plan.gone)
        await anyio.to_thread.run_sync(stored_sources.prepare, db)
        on_cluster = engine is not None and bool(plan.items) and engine.worth_it(plan.items)
        with atomic_write(db, fragments=on_cluster and engine is not None and engine.settings.fragments):
            if engine is not None and on_cluster:
                seen = await add_on_cluster(
                    ingestor,
                    engine,
                    plan.items,
                    title=source.title,
                    metadata=source.metadata,
                    limits=limits,
                    objects=objects,
                    fetched=plan.fetched,
                )
            else:
                seen = await ingest_items(
                    ingestor,
                    plan.items,
                    title=source.title,
                    metadata=source.metadata,
                    limits=limits,
                    fetched=plan.fetched,
                    objects=objects,
                )
            owners = dict.fromkeys((p for p, _ in plan.items), source.source)
            deleted = await anyio.to_thread.run_sync(
                lambda: _apply(
                    db, source, plan, states_of(ingestor.report.outcomes, owners, seen), ingestor.moved
                )
            )
            for outcome in ingestor.report.outcomes:
                if outcome.document_id in ingestor.moved and outcome.status == "updated":
                    outcome.note = f"moved from {_path_of(ingestor.moved[outcome.document_id])}"
        await anyio.to_thread.run_sync(after_write, db)
        outcomes += ingestor.report.outcomes + deleted
    result.count(sorted(outcomes, key=lambda o: o.position))
    return result


@dataclass
class _Plan:
    """What a sync of one source has to do, found under the lock before anything is written."""

    items: list[tuple[int, Item]] = field(default_factory=list)  # to read (new or stat moved)
    gone: list[FileState] = field(default_factory=list)  # stored, no longer in the source
    refresh: list[FileState] = field(default_factory=list)  # stored for documents no longer held
    # Objects listed with a new size or Last-Modified whose ETag is the one stored: not read, their
    # states stored anew (an object uploaded again with the same bytes)
    retimed: list[FileState] = field(default_factory=list)
    fetched: dict[str, Fetched] = field(default_factory=dict)  # URLs that changed, downloaded already
    outcomes: list[SourceOutcome] = field(default_factory=list)  # failures and skips met on the way
    unchanged: int = 0
    problem: tuple[SyncStatus, str] | None = None


def _plan(
    db: Database,
    source: RememberedSource,
    scope: Sequence[Path] | None,
    limits: IngestSettings,
    objects: ObjectStores | None = None,
) -> _Plan:
    on_store = is_object_uri(source.source)
    under = (
        [file_uri(p) for p in scope] if scope is not None and source.kind != "url" and not on_store else []
    )
    with storage_errors(db, "cannot be read"):
        states = {s.uri: s for s in stored_sources.file_states(db, source.source, under=under)}
        held = _held(db, [s.document_id for s in states.values()])
    plan = _Plan()
    # A document deleted since (`haiku delete`) no longer stands for its file: read the file again. Nor
    # does one that moved to another file in a sync interrupted before it stored the files' states.
    stands = {uri: s for uri, s in states.items() if held.get(s.document_id) in (uri, _NOT_A_FILE)}
    plan.refresh = [s for uri, s in states.items() if uri not in stands]
    states = stands
    positions = itertools.count()
    if source.kind == "url":
        _plan_url(plan, source.source, states.get(source.source), limits, next(positions))
        return plan
    if on_store:
        return _plan_objects(plan, source, states, objects)
    root = Path(source.source)
    problem = _unreachable(root, len(states))
    if problem is not None:
        plan.problem = problem
        return plan
    choice = FileChoice(source.include, source.exclude)

    def known(path: Path) -> bool:  # a suffix-less file whose stat is the stored one: not sniffed again
        stored = states.get(file_uri(path))
        return stored is not None and _unchanged(path, stored)

    walked = iter_source_files(root, follow_symlinks=source.follow_symlinks, choice=choice, known=known)
    if scope is not None:
        walked = _scoped(root, scope, source.follow_symlinks, choice, known)
    seen: set[str] = set()
    kept_under: list[str] = []  # uris of folders that could not be read: what was under them stays
    for entry in walked:
        position = next(positions)
        if isinstance(entry, LeftOut):
            continue  # not the folder's any more, as a file that left it
        if isinstance(entry, SkippedSource):
            status = "failed" if entry.failed else "skipped"
            error = f"{entry.source}: {entry.reason}" if entry.failed else None
            note = None if entry.failed else entry.reason
            plan.outcomes.append(
                SourceOutcome.at(position, source=entry.source, status=status, error=error, note=note)
            )
            if entry.failed:
                kept_under.append(file_uri(Path(entry.source)))
            continue
        path = entry.path if isinstance(entry, TextFile) else entry
        uri = file_uri(path)
        seen.add(uri)
        stored = states.get(uri)
        if stored is not None and _unchanged(path, stored):
            plan.unchanged += 1
        else:
            plan.items.append((position, entry))
    plan.gone = [
        s for uri, s in states.items() if uri not in seen and not any(_under(uri, k) for k in kept_under)
    ]
    return plan


def _plan_url(plan: _Plan, url: str, stored: FileState | None, limits: IngestSettings, position: int) -> None:
    """Ask a URL whether it changed since its stored validators; download it only if it did.

    Nothing is written for a page the server says is unchanged; one that cannot be fetched now is a
    failed item, and its document stays.
    """
    known = Validators(stored.etag, stored.last_modified) if stored is not None else None
    try:
        got = fetch_if_changed(url, known, limits=limits)
    except HaikuError as exc:
        if exc.exit_code != InputError.exit_code:
            raise
        plan.outcomes.append(SourceOutcome.at(position, source=url, status="failed", error=str(exc)))
        return
    if got.document is None:
        plan.unchanged += 1
        return
    plan.fetched[url] = got
    plan.items.append((position, url))


def _plan_objects(
    plan: _Plan, source: RememberedSource, states: dict[str, FileState], objects: ObjectStores | None
) -> _Plan:
    """A source on object storage, listed again: an object whose size and Last-Modified are those stored
    is unchanged (not read), and so is one whose ETag, asked with a HEAD, is the one stored; one no
    longer listed has left. A source that cannot be listed, or lists nothing at all, keeps its
    documents."""
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
    positions = itertools.count()
    seen: set[str] = set()
    for entry in listing.found:
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
    return plan


def _held(db: Database, ids: list[str]) -> dict[str, str]:
    """Which of these documents the database still holds, with the file uri each stands for (or
    `_NOT_A_FILE`: a URL's may be where it redirected); a few are looked up, many read whole."""
    if not ids:
        return {}
    where = in_list("id", ids) if len(ids) <= _LOOKUP_AT_MOST else None
    rows = wait(rows_where(db, db.documents, where, ["id", "uri"])).to_pylist()
    return {r["id"]: r["uri"] if (r["uri"] or "").startswith("file:") else _NOT_A_FILE for r in rows}


_NOT_A_FILE = ""


# Up to this many documents are looked up by id; more, and every id is read (one column, fast).
_LOOKUP_AT_MOST = 500


def _unreachable(root: Path, documents: int) -> tuple[SyncStatus, str] | None:
    """Why a source cannot be read as a whole (its documents are then kept), or None."""
    kept = f"its {documents} document{'s' * (documents != 1)} are kept until it is back or forgotten"
    if not os.path.lexists(root):
        return "missing", f"{root}: no such file or directory; {kept} (haiku forget-src)"
    try:
        if root.is_dir():
            with os.scandir(root):
                pass
        elif not os.path.exists(root):
            return "missing", f"{root}: a broken symlink; {kept}"
    except OSError as exc:
        return "unreadable", f"{root}: cannot read ({exc.strerror or exc}); {kept}"
    return None


def _unchanged(path: Path, stored: FileState) -> bool:
    """Whether the file's size and modification time are those stored (then it is not read)."""
    try:
        stat = os.stat(path)
    except OSError:
        return False  # read it: the read reports what is wrong
    return stored.size is not None and (stat.st_size, stat.st_mtime_ns) == (stored.size, stored.mtime_ns)


def _scoped(
    root: Path,
    scope: Sequence[Path],
    follow_symlinks: bool,
    choice: FileChoice,
    known: Callable[[Path], bool],
) -> Iterator[Found]:
    done: set[Path] = set()
    for path in sorted(set(scope)):
        if any(path == d or d in path.parents for d in done):
            continue  # inside a folder already walked
        done.add(path)
        yield from iter_source_scope(root, path, follow_symlinks=follow_symlinks, choice=choice, known=known)


def _under(uri: str, prefix: str) -> bool:
    return uri == prefix or uri.startswith(prefix.rstrip("/") + "/")


def _movable(db: Database, source: RememberedSource, gone: list[FileState]) -> dict[str, DocumentRecord]:
    """The documents whose file left the source (and no other source gave), by content hash."""
    ids = [s.document_id for s in gone]
    with storage_errors(db, "cannot be read"):
        others = stored_sources.claimed(db, ids, besides=source.source)
        found = wait(get_documents(db, [i for i in ids if i not in others]))
    return {d.content_hash: d for d in found.values()}


def _apply(
    db: Database, source: RememberedSource, plan: _Plan, states: list[FileState], moved: dict[str, str]
) -> list[SourceOutcome]:
    """Inside the sync's write: delete what left the source (but what moved), store what it holds now."""
    gone = [s for s in plan.gone if s.document_id not in moved]
    with storage_errors(db, "cannot be written"):
        stored_sources.drop_file_states(db, plan.gone + plan.refresh)
        ids = [s.document_id for s in gone]
        # A document another source also gave (a file added by itself too) stays for that source.
        others = stored_sources.claimed(db, ids, besides=source.source)
        doomed = [i for i in dict.fromkeys(ids) if i not in others]
        if doomed:
            delete_documents(db, doomed)
        stored_sources.put_file_states(db, [*states, *plan.retimed])
    position = 1 << 40  # after every item found by the walk
    return [
        SourceOutcome.at(position, source=_path_of(s.uri), status="deleted", document_id=s.document_id)
        for s in gone
    ]


def _path_of(uri: str) -> str:
    from urllib.parse import unquote, urlsplit

    return unquote(urlsplit(uri).path) if uri.startswith("file://") else uri
