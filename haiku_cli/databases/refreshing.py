"""`search --sync`: before a search, sync the remembered sources of the databases searched whose files
changed or vanished since they were read, then search what they hold now.

Only sources with a changed or missing document are synced (a stat per remembered file: URLs and objects,
which only a request could ask, are left to `haiku sync`), and folders with a file made, removed or
renamed since their last sync (a stat per directory it listed; only the directories whose time moved
are walked again, with the rules `sync` walks by); each is one all-or-nothing write, as `sync` makes
it. A database configured `read_only`, or a published copy, is searched as it is, with a note.
`haiku mcp --sync-before-search` and `haiku serve --sync-before-search` do the same before each search
(`sync_before_search`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from weakref import WeakKeyDictionary

import anyio.to_thread

from haiku_cli.databases.freshness import folder_changes, stale_by_source
from haiku_cli.databases.operations import remembered_sources, sync_source
from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.selection import Selection, searchable
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import HaikuError, exception_reason
from haiku_cli.ingest.reports import SourceSync
from haiku_cli.store.database import Database
from haiku_cli.store.handle import PUBLISHED
from haiku_cli.store.location import Location
from haiku_cli.store.source_state import path_of
from haiku_cli.store.source_tables import RememberedSource, file_states

# One sync of a database at a time per process. The writer lock keeps other processes out, but it is
# re-entrant per handle and a process shares one writable handle per database: two requests to one
# server would both hold it and write at once. The second waits its turn here, then looks again (what
# the first synced is fresh by then, so it syncs nothing more).
_TURNS: WeakKeyDictionary[DatabasePool, dict[tuple[str, str], tuple[asyncio.Lock, asyncio.AbstractEventLoop]]]
_TURNS = WeakKeyDictionary()


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
        async with _turn(ws.pool, location):
            reader = await ws.pool.open_one(location)
            if PUBLISHED in reader.meta:
                on_note(f"{location.name} is a published copy: searched as it is, not synced")
                continue
            changed = await anyio.to_thread.run_sync(_changed_sources, reader)
            if changed:
                done += [(location.name, s) for s in await _sync(ws, location, changed)]
    return done


@dataclass(frozen=True)
class SyncedFirst:
    """What syncing before a search did: notes for the result, and whether anything stored changed."""

    notes: list[str]
    wrote: bool


async def sync_before_search(ws: Workspace, selection: Selection) -> list[str]:
    """`--sync-before-search` (`haiku mcp`, `haiku serve`): `sync_changed` before a search, each database
    on its own; what was synced, left alone or could not be synced, as notes for the result.

    A database whose sync fails (another process held its writer lock past `[storage]
    write_wait_seconds`, a full disk) is searched as it is, its hits marked `changed`, with the reason.
    """
    return (await sync_first(ws, selection)).notes


async def sync_first(ws: Workspace, selection: Selection) -> SyncedFirst:
    """`sync_before_search`, also saying whether a sync changed what is stored (a sandbox's view of the
    documents is read again then)."""
    notes: list[str] = []
    wrote = False
    searched, _ = searchable(selection)
    for location in searched.locations:
        try:
            done = await sync_changed(ws, Selection((location,)), on_note=notes.append)
        except HaikuError as exc:
            notes.append(
                f"{location.name} could not be synced first ({exception_reason(exc)}): searched as it is"
            )
            continue
        notes += [synced_note(database, each) for database, each in done]
        wrote = wrote or any(each.added or each.updated or each.deleted for _, each in done)
    return SyncedFirst(notes, wrote)


def synced_note(database: str, done: SourceSync) -> str:
    """One line on what syncing a source before a search did, or why it could not."""
    if done.error:
        return f"{database}: {done.error}"
    counts = ", ".join(
        f"{n} {what}"
        for what, n in (("added", done.added), ("updated", done.updated), ("deleted", done.deleted))
        if n
    )
    return f"synced {done.source} [{database}]: {counts or 'nothing changed'}"


def _worth_a_note(done: SourceSync) -> bool:
    # A folder looked at again only because a directory's time moved (a file made and removed, an
    # unsettled time) and found as it is stored says nothing.
    return bool(done.error or done.added or done.updated or done.deleted)


def _turn(pool: DatabasePool, location: Location) -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    turns = _TURNS.setdefault(pool, {})
    key = (location.name, location.uri)
    held = turns.get(key)
    if held is None or held[1] is not loop:  # a lock serves the loop it was made in (tests run several)
        held = turns[key] = (asyncio.Lock(), loop)
    return held[0]


@dataclass(frozen=True)
class _Changed:
    """A source to sync; the only paths in it to look at (None: all of it); whether only a directory's
    time moved (no remembered file changed)."""

    source: RememberedSource
    scope: list[Path] | None = None
    listing_only: bool = False


def _changed_sources(db: Database) -> list[_Changed]:
    stale = stale_by_source(db, file_states(db))
    folders = folder_changes(db)
    if not stale and not folders:  # the usual case before a server's search: no read of the sources table
        return []
    out: list[_Changed] = []
    for source in remembered_sources(db):
        if source.source in stale:
            out.append(_Changed(source))
        elif source.source in folders:
            moved = folders[source.source]
            scope = None if moved is None else [Path(path_of(uri)) for uri in moved]
            out.append(_Changed(source, scope, listing_only=True))
    return out


async def _sync(ws: Workspace, location: Location, sources: list[_Changed]) -> list[SourceSync]:
    db = await ws.pool.open_one(location, writable=True)
    try:
        done = [(c, await sync_source(ws, db, c.source, scope=c.scope, keep_listing=True)) for c in sources]
        return [each for c, each in done if not c.listing_only or _worth_a_note(each)]
    finally:
        ws.pool.forget(location)  # readers open again, seeing what the syncs wrote
