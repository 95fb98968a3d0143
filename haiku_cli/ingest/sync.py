"""Reading a remembered source again: add what is new, replace what changed, delete what left it.

The source's kind plans it (ingest/kinds/): a file whose size and modification time are those stored
costs a `stat`, never a read; one whose stat moved is read and its content hash decides (an unchanged
text only refreshes the stored stat). Each source is one all-or-nothing write, and a source with nothing
to change writes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio.to_thread

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.convert.dispatch import file_uri
from haiku_cli.ingest.engine import Engine, engine_for
from haiku_cli.ingest.ingestor import Ingestor
from haiku_cli.ingest.kinds import kind_of
from haiku_cli.ingest.kinds.base import Reading, SyncPlan
from haiku_cli.ingest.objects import ObjectStores
from haiku_cli.ingest.remembering import states_of
from haiku_cli.ingest.reports import Progress, SourceOutcome, SourceSync
from haiku_cli.store import source_tables as stored_sources
from haiku_cli.store.blocking import wait
from haiku_cli.store.document_parts import parts_of
from haiku_cli.store.document_writes import delete_documents
from haiku_cli.store.maintenance import after_write
from haiku_cli.store.reads import get_documents, in_list, rows_where
from haiku_cli.store.source_dirs import UNSETTLED, put_listed_dirs
from haiku_cli.store.source_tables import FileState, RememberedSource
from haiku_cli.store.transaction import atomic_write, storage_errors

if TYPE_CHECKING:
    from haiku_cli.embed import Embedder
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
    engine: Engine | None = None,
    keep_listing: bool = False,
) -> SourceSync:
    """Bring the documents of one remembered source up to date with it (the caller holds the writer lock).

    `embedder` is awaited only when something has to be embedded. `scope`: only these paths inside the
    source are looked at (what a watcher saw change); None: all of it. `objects` reads a source on object
    storage (listed again whole: an object whose size and Last-Modified are those stored is not read).
    With an `engine`, what is to be read is read, chunked and embedded on its cluster (unless it is too
    little to be worth it), as an add does. A folder's directories are remembered with their times
    (what `search --sync` looks at) by a sync that writes, or with `keep_listing` by any: otherwise a
    sync with nothing to change writes nothing.
    """
    reading = Reading(limits or IngestSettings(), objects)
    plan = await anyio.to_thread.run_sync(_plan, db, source, scope, reading)
    result = SourceSync(source=source.source, kind=source.kind, unchanged=plan.unchanged)
    if plan.problem is not None:
        result.status, result.error = plan.problem
        return result
    outcomes = list(plan.outcomes)
    wrote = bool(plan.items or plan.gone or plan.refresh or plan.retimed)
    if wrote:
        ingestor = Ingestor(db, await embedder(), progress)
        outcomes += await _write(db, ingestor, source, plan, reading, engine)
    if source.kind == "folder" and plan.listed is not None and (wrote or keep_listing):
        # After the write: had it failed, the times of the sync before stay, and what moved since is
        # looked at again by the next `search --sync`.
        await anyio.to_thread.run_sync(_remember_listed, db, source, plan.listed, scope)
    result.count(sorted(outcomes, key=lambda o: o.position))
    return result


# A directory changed this recently may change again within the same tick of the file system's clock,
# its time not moving: it is stored as unsettled, looked at again by each `search --sync` until a sync
# finds it settled.
_SETTLING_NS = 2_000_000_000


def _remember_listed(
    db: Database, source: RememberedSource, listed: dict[Path, int], scope: Sequence[Path] | None
) -> None:
    under = [file_uri(p) for p in scope] if scope is not None else []
    recent = time.time_ns() - _SETTLING_NS
    times = {file_uri(p): UNSETTLED if t >= recent else t for p, t in listed.items()}
    with storage_errors(db, "cannot be written"):
        put_listed_dirs(db, source.source, times, under)


async def _write(
    db: Database,
    ingestor: Ingestor,
    source: RememberedSource,
    plan: SyncPlan,
    reading: Reading,
    engine: Engine | None,
) -> list[SourceOutcome]:
    """Write what the plan found, in one all-or-nothing write; the outcomes."""
    if plan.gone and plan.items:
        ingestor.moved_from = await anyio.to_thread.run_sync(_movable, db, source, plan.gone)
    await anyio.to_thread.run_sync(stored_sources.prepare, db)
    chosen = engine_for(engine if plan.items else None, plan.items)
    with atomic_write(db, fragments=chosen.fragments):
        seen = await chosen.write(
            ingestor,
            plan.items,
            title=source.title,
            metadata=source.metadata,
            reading=reading,
            fetched=plan.fetched,
        )
        owners = dict.fromkeys((p for p, _ in plan.items), source.source)
        states = states_of(ingestor.report.outcomes, owners, seen)
        deleted = await anyio.to_thread.run_sync(lambda: _apply(db, source, plan, states, ingestor.moved))
        for outcome in ingestor.report.outcomes:
            if outcome.document_id in ingestor.moved and outcome.status == "updated":
                outcome.note = f"moved from {_path_of(ingestor.moved[outcome.document_id])}"
    await anyio.to_thread.run_sync(after_write, db)
    return ingestor.report.outcomes + deleted


def _plan(db: Database, source: RememberedSource, scope: Sequence[Path] | None, reading: Reading) -> SyncPlan:
    kind = kind_of(source.source)
    # A watcher's scope names paths on this machine: only a source there is narrowed to them.
    local = scope is not None and kind.local_path(source.source) is not None
    under = [file_uri(p) for p in scope] if local and scope is not None else []
    with storage_errors(db, "cannot be read"):
        states = {s.uri: s for s in stored_sources.file_states(db, source.source, under=under)}
        held = _held(db, [s.document_id for s in states.values()])
    plan = SyncPlan()
    # A document deleted since (`haiku delete`) no longer stands for its file: read the file again. Nor
    # does one that moved to another file in a sync interrupted before it stored the files' states.
    stands = {uri: s for uri, s in states.items() if held.get(s.document_id) in (uri, _NOT_A_FILE)}
    plan.refresh = [s for uri, s in states.items() if uri not in stands]
    return kind.plan_sync(source, stands, scope, reading, plan)


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


def _movable(db: Database, source: RememberedSource, gone: list[FileState]) -> dict[str, DocumentRecord]:
    """The documents whose file left the source (and no other source gave), by content hash."""
    ids = [s.document_id for s in gone]
    with storage_errors(db, "cannot be read"):
        others = stored_sources.claimed(db, ids, besides=source.source)
        found = wait(get_documents(db, [i for i in ids if i not in others]))
    return {d.content_hash: d for d in found.values()}


def _apply(
    db: Database, source: RememberedSource, plan: SyncPlan, states: list[FileState], moved: dict[str, str]
) -> list[SourceOutcome]:
    """Inside the sync's write: delete what left the source (but what moved), store what it holds now."""
    gone = [s for s in plan.gone if s.document_id not in moved]
    with storage_errors(db, "cannot be written"):
        stored_sources.drop_file_states(db, plan.gone + plan.refresh)
        ids = [s.document_id for s in gone]
        # A document another source also gave (a file added by itself too) stays for that source.
        others = stored_sources.claimed(db, ids, besides=source.source)
        doomed = [i for i in dict.fromkeys(ids) if i not in others]
        # A mail's attachments go with it (a document's parts name it, ingest/part_documents.py).
        parts = parts_of(db, doomed) if doomed else {}
        if doomed:
            delete_documents(db, [*doomed, *parts])
        stored_sources.put_file_states(db, [*states, *plan.retimed])
    position = 1 << 40  # after every item found by the walk
    deleted = [(s.document_id, s.uri) for s in gone] + list(parts.items())
    return [
        SourceOutcome.at(position, source=_path_of(uri), status="deleted", document_id=document_id)
        for document_id, uri in deleted
    ]


def _path_of(uri: str) -> str:
    from urllib.parse import unquote, urlsplit

    if not uri.startswith("file://"):
        return uri
    parts = urlsplit(uri)
    return unquote(parts.path) + (f"#{unquote(parts.fragment)}" if parts.fragment else "")
