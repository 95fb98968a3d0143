"""`haiku publish`: a database's consistent state copied to a local folder or a bucket for others to read."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from functools import partial
from typing import TYPE_CHECKING

import anyio

from haiku_cli.errors import HaikuError, InputError
from haiku_cli.store.database import Database, connect, exists, open_database
from haiku_cli.store.failures import storage_failure
from haiku_cli.store.location import Location
from haiku_cli.store.object_files import folder_of
from haiku_cli.store.published import published_info
from haiku_cli.store.state_copy import (
    PublishReport,
    commit_publish,
    copy_state,
    refuse_foreign,
    same_state,
    state_of,
    target_meta,
)
from haiku_cli.store.tags import read_at
from haiku_cli.store.writer_lock import WaitPolicy, acquire, exclusive

if TYPE_CHECKING:
    from haiku_cli.databases.workspace import Workspace


def publish_target(ws: Workspace, to: str) -> Location:
    """Where `--to` points: a configured database's name, or a URI (with the storage options of the
    configured database at that URI, if any; credentials from the environment)."""
    if to in ws.locations:
        found = ws.locations[to]
        return Location(found.name, found.uri, found.storage_options, timeout_seconds=found.timeout_seconds)
    if "://" not in to and not to.startswith(("/", ".", "~")):
        known = ", ".join(ws.locations) or "none"
        raise InputError(
            f"--to {to!r} is neither a configured database (configured: {known}) nor a URI or path; "
            "give e.g. s3://bucket/team or ./published",
            argument="to",
        )
    for loc in ws.locations.values():
        if loc.uri.rstrip("/") == to.rstrip("/"):
            return Location(loc.name, loc.uri, loc.storage_options, timeout_seconds=loc.timeout_seconds)
    return Location(name=to, uri=to)


async def publish(ws: Workspace, location: Location, to: str, *, tag: str | None = None) -> PublishReport:
    """Publish the database's latest state (or the tag's) to `to`; only what the target lacks is copied."""
    target = publish_target(ws, to)
    if target.uri.rstrip("/") == location.uri.rstrip("/"):
        raise InputError(f"--to {to} is database '{location.name}' itself; publish it to another place")
    folder_of(target)  # a kind of store haiku does not publish to is refused before anything is opened
    if ws.pool.timeout_seconds is not None:
        target = target.with_timeout(ws.pool.timeout_seconds)
    locked = tag is None and not location.read_only
    db = await ws.pool.open_one(location, writable=locked)
    policy = ws.pool.write_policy or WaitPolicy()
    try:
        return await anyio.to_thread.run_sync(partial(_publish, db, target, tag, policy))
    finally:
        ws.pool.forget(location)  # its handle was moved to a tag, or held the lock


def _publish(db: Database, target: Location, tag: str | None, policy: WaitPolicy) -> PublishReport:
    if tag is not None:
        read_at(db, tag)  # a tag's versions are kept until it is deleted: no lock needed
    # Without a tag, the writer lock holds the state still (and its files from cleanup) while it is copied.
    hold = exclusive(db) if tag is None and not db.location.read_only else nullcontext()
    with hold:
        return _publish_state(db, target, tag, policy)


def _publish_state(db: Database, target: Location, tag: str | None, policy: WaitPolicy) -> PublishReport:
    state = state_of(db)
    with _target_errors(target):
        if target.local_path is not None:
            exists(target)  # refuses a folder of other files
        conn = connect(target)
        meta = target_meta(conn)
        refuse_foreign(db.name, target, meta)
        if same_state(state, meta, tag):
            info = published_info(meta or {})
            assert info is not None
            return PublishReport(
                database=db.name, to=target.uri, unchanged=True, files=0, bytes=0, published=info
            )
        target_db = open_database(target) if meta is not None else None
        path = target.local_path
        lock_on = path if path is not None else target_db
        lock = acquire(lock_on, target.name, policy) if lock_on is not None else None
        try:
            files, size = copy_state(db.location, target, state)
            info = commit_publish(conn, target_db, state, db.name, tag)
        finally:
            if lock is not None:
                lock.release()
    return PublishReport(
        database=db.name, to=target.uri, unchanged=False, files=files, bytes=size, published=info
    )


@contextmanager
def _target_errors(target: Location) -> Iterator[None]:
    """A failure reaching or writing the target as one exit-3 line naming it."""
    try:
        yield
    except HaikuError:
        raise
    except Exception as exc:
        raise storage_failure(target, "cannot be published to", exc) from exc
