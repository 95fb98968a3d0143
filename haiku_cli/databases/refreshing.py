"""`search --sync`: before a search, sync the remembered sources of the databases searched whose files
changed or vanished since they were read, then search what they hold now.

Only sources with a changed or missing document are synced (a stat per remembered file: URLs and objects,
which only a request could ask, are left to `haiku sync`); each is one all-or-nothing write, as `sync`
makes it. A database configured `read_only`, or a published copy, is searched as it is, with a note.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio.to_thread

from haiku_cli.databases.freshness import stale_by_source
from haiku_cli.databases.operations import remembered_sources, sync_source
from haiku_cli.databases.selection import Selection, searchable
from haiku_cli.databases.workspace import Workspace
from haiku_cli.ingest.reports import SourceSync
from haiku_cli.store.database import Database
from haiku_cli.store.handle import PUBLISHED
from haiku_cli.store.location import Location
from haiku_cli.store.source_tables import RememberedSource, file_states


async def sync_changed(
    ws: Workspace, selection: Selection, *, on_note: Callable[[str], None] = lambda _: None
) -> list[tuple[str, SourceSync]]:
    """Sync the changed remembered sources of the selection's databases; (database, what its sync did)."""
    searched, _ = searchable(selection)
    done: list[tuple[str, SourceSync]] = []
    for location in searched.locations:
        if location.read_only:
            on_note(f"{location.name} is read_only: searched as it is, not synced")
            continue
        reader = await ws.pool.open_one(location)
        if PUBLISHED in reader.meta:
            on_note(f"{location.name} is a published copy: searched as it is, not synced")
            continue
        changed = await anyio.to_thread.run_sync(_changed_sources, reader)
        if changed:
            done += [(location.name, s) for s in await _sync(ws, location, changed)]
    return done


def _changed_sources(db: Database) -> list[RememberedSource]:
    stale = stale_by_source(db, file_states(db))
    return [s for s in remembered_sources(db) if s.source in stale]


async def _sync(ws: Workspace, location: Location, sources: list[RememberedSource]) -> list[SourceSync]:
    db = await ws.pool.open_one(location, writable=True)
    try:
        return [await sync_source(ws, db, source) for source in sources]
    finally:
        ws.pool.forget(location)  # readers open again, seeing what the syncs wrote
