"""`haiku doctor`: the health of one database or of the set, and mending what is safe to mend."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio.to_thread
from pydantic import BaseModel

from haiku_cli.databases.freshness import stale_check
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import HaikuError
from haiku_cli.ingest.chunk_places import fill_places
from haiku_cli.store import doctor
from haiku_cli.store.adding import writing
from haiku_cli.store.database import exists
from haiku_cli.store.doctor import Check
from haiku_cli.store.location import Location


class DatabaseHealth(BaseModel):
    """One database's checks; `ok` when none failed (a warning is not a failure)."""

    database: str
    ok: bool
    checks: list[Check]


class DoctorReport(BaseModel):
    """`haiku doctor`: every database of the selection; `ok` when no check of any failed."""

    ok: bool
    databases: list[DatabaseHealth]


async def check_health(ws: Workspace, selection: Selection, *, fix: bool = False) -> DoctorReport:
    """Check each database of the selection in turn; with `fix`, apply the safe fixes and check again."""
    for loc in selection.locations:
        # One named by path (`--db`) that is not there is the error `info` gives: that path is likely a slip.
        if ws.locations.get(loc.name) != loc and not await _exists(ws, loc):
            await ws.pool.open_one(loc)  # raises "database 'x' does not exist yet", with its hint
    name = _configured_embedder(ws)
    found = [await _one(ws, loc, name, fix) for loc in selection.locations]
    return DoctorReport(ok=all(h.ok for h in found), databases=found)


def _configured_embedder(ws: Workspace) -> str | None:
    try:
        return ws.embedder.name
    except HaikuError:  # not loadable here: the check compares nothing rather than fail the doctor
        return None


async def _one(ws: Workspace, loc: Location, embedder: str | None, fix: bool) -> DatabaseHealth:
    try:
        if not await _exists(ws, loc):
            return _not_created(loc)
        checks = await _checks(ws, loc, embedder)
    except HaikuError as exc:
        where = "check the endpoint and credentials" if loc.local_path is None else "check the folder"
        check = Check(check="reachable", status="fail", detail=str(exc), fix=where)
        return DatabaseHealth(database=loc.name, ok=False, checks=[check])
    failed = [c for c in checks if c.status != "ok" and c.safe_fix]
    if fix and failed and not loc.read_only:
        db = await ws.pool.open_one(loc, writable=True)
        async with writing(db, "doctor --fix"):
            mended = await anyio.to_thread.run_sync(lambda: doctor.mend(db, failed, fill_places))
        ws.pool.forget(loc)
        checks = await _checks(ws, loc, embedder)
        for c in checks:
            c.fixed = c.check in mended and c.status != "fail"
    return DatabaseHealth(database=loc.name, ok=all(c.status != "fail" for c in checks), checks=checks)


async def _exists(ws: Workspace, loc: Location) -> bool:
    return await anyio.to_thread.run_sync(ws.pool.bounded, loc, partial(exists, loc))


def _not_created(loc: Location) -> DatabaseHealth:
    """A configured database nothing was added to yet: a warning, not a failure (a search of the set skips
    it too), naming the command that writes it."""
    check = Check(
        check="reachable",
        status="warn",
        detail="not created yet (nothing added to it)",
        fix=f"haiku add-src PATH {loc.chosen_by}".rstrip(),
    )
    return DatabaseHealth(database=loc.name, ok=True, checks=[check])


async def _checks(ws: Workspace, loc: Location, embedder: str | None) -> list[Check]:
    db = await ws.pool.open_one(loc)
    reach = "object store answered" if loc.local_path is None else "local folder"
    found = await anyio.to_thread.run_sync(lambda: doctor.check_database(db, embedder, _local_path))
    option = f" {loc.chosen_by}" if loc.chosen_by else ""
    stale = await anyio.to_thread.run_sync(stale_check, db, option)
    return [Check(check="reachable", status="ok", detail=reach), *found, stale]


def _local_path(source: str) -> Path | None:
    """Where a remembered source lives on this machine (its kind says), for the `sources` check."""
    from haiku_cli.ingest.kinds import kind_of

    return kind_of(source).local_path(source)
