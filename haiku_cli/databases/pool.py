"""The one rule that turns a selection into open databases, opening cold ones concurrently."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

import anyio

from haiku_cli.databases.concurrency import in_threads
from haiku_cli.databases.selection import Selection
from haiku_cli.errors import DatabaseError
from haiku_cli.store.database import (
    Database,
    EmbedderSpec,
    exists,
    is_fresh,
    load_driver,
    open_database,
    refresh_reader,
)
from haiku_cli.store.deadline import with_deadline
from haiku_cli.store.failures import (
    STORAGE_TIMEOUT_HINT,
    Failure,
    FailureKind,
    StorageError,
    kind_of,
    unanswered_failure,
)
from haiku_cli.store.heap import release_freed
from haiku_cli.store.location import Location
from haiku_cli.store.wait_policy import WaitPolicy

T = TypeVar("T")


# A read (opening a database, one phase of a search) is a few dependent requests, each bounded by the
# store client's own timeout, which names a stall as it happens. The whole read gets a generous bound of
# its own, only as a net for a request the client does not bound (a slow store answering every request
# within its timeout must not fail for being slow overall): this many requests' worth, and at least a
# minute.
OPERATION_REQUESTS = 8
_MIN_OPERATION_SECONDS = 60.0


def operation_bound(request_seconds: float) -> float:
    """The most one read of a networked database may take, given the per-request timeout."""
    return max(_MIN_OPERATION_SECONDS, OPERATION_REQUESTS * request_seconds)


@dataclass
class _Opening:
    """A cold open in flight, which concurrent calls for the same database wait on instead of repeating."""

    done: anyio.Event = field(default_factory=anyio.Event)
    result: Database | DatabaseError | None = None  # None once done: the opening call was cancelled


class DatabasePool:
    """Open databases by name, reused across the queries of one process.

    A long-lived process (a server, the daemon) reads many databases over its life: at most `max_open`
    readers stay open, the least recently used closed first, so its memory is bounded by the databases it
    keeps, not by every one it ever read. One call covering more than `max_open` holds them all until it
    is done; the next call closes the surplus.
    """

    def __init__(
        self,
        write_policy: WaitPolicy | None = None,
        timeout_seconds: float | None = None,
        read_seconds: float | None = None,
        max_open: int | None = None,
    ) -> None:
        """`timeout_seconds` bounds each request to a networked store; `read_seconds` (by default
        `operation_bound` of it) each whole read, opening a database or one phase of a search;
        `max_open` (None: no bound) the readers kept open."""
        self._open: OrderedDict[tuple[str, str, bool], Database] = OrderedDict()  # least recent first
        self.max_open = max_open
        self._pinned: dict[tuple[str, str, bool], int] = {}  # keys of calls in progress, never closed
        self._opening: dict[tuple[str, str, bool], _Opening] = {}  # cold opens in flight
        self.write_policy = write_policy
        self.timeout_seconds = timeout_seconds  # each request's limit ([storage] timeout_seconds)
        if read_seconds is None and timeout_seconds is not None:
            read_seconds = operation_bound(timeout_seconds)
        self.read_seconds = read_seconds
        self.at: str | None = None  # `--at TAG`: every database is read at that tag, and none written

    def bounded(self, location: Location, call: Callable[[], T]) -> T:
        """Run a blocking read of a networked database within a whole read's bound, else fail naming it."""
        seconds = self._deadline(location)
        if seconds is None:
            return call()
        load_driver()  # the import is local work: it must not count against the store's time
        return with_deadline(call, seconds, partial(self._stalled, location, seconds))

    async def within(self, location: Location, read: Awaitable[T]) -> T:
        """Await a read of a networked database on LanceDB's loop within a whole read's bound, else fail."""
        seconds = self._deadline(location)
        if seconds is None:
            return await read
        try:
            return await asyncio.wait_for(read, seconds)
        except TimeoutError:
            raise self._stalled(location, seconds) from None

    def _deadline(self, location: Location) -> float | None:
        return self.read_seconds if location.can_stall else None

    def _stalled(self, location: Location, seconds: float) -> DatabaseError:
        if location.endpoint_refuses():  # its client was still retrying a refused connection
            return unanswered_failure(location, "cannot be reached")
        return StorageError(
            f"database '{location.name}' did not finish a read within {seconds:g} s; {STORAGE_TIMEOUT_HINT}",
            Failure(FailureKind.STALLED),
        )

    async def clients_covering(
        self, selection: Selection, *, writable: bool = False, create_with: EmbedderSpec | None = None
    ) -> list[Database]:
        """Exactly the selection's databases, open, in the selection's order.

        Every search, sandbox mount and citation lookup goes through here, so nothing outside the
        selection is ever reached. Cold databases open concurrently: the wait is the slowest open.
        """
        keys = [_key(loc, writable) for loc in selection.locations]
        for key in keys:  # not closed for another call's sake while this one opens or refreshes them
            self._pinned[key] = self._pinned.get(key, 0) + 1
        try:
            return await self._covering(selection, writable, create_with)
        finally:
            for key in keys:
                self._pinned[key] -= 1
                if not self._pinned[key]:
                    del self._pinned[key]

    async def _covering(
        self, selection: Selection, writable: bool, create_with: EmbedderSpec | None
    ) -> list[Database]:
        missing = [loc for loc in selection.locations if _key(loc, writable) not in self._open]
        # Single flight: a database another call is already opening is awaited, not opened again.
        waiting = {
            loc: self._opening[_key(loc, writable)] for loc in missing if _key(loc, writable) in self._opening
        }
        mine = [loc for loc in missing if loc not in waiting]
        # Reused reader handles catch up with writes made since they opened (see refresh_reader); one
        # that has just looked needs no worker thread to learn that it need not look again.
        cached = [] if writable else [loc for loc in selection.locations if loc not in missing]
        cached = [loc for loc in cached if not is_fresh(self._open[_key(loc, False)])]
        if not missing and not cached:
            return self._used(selection, writable)
        errors = await self._open_and_refresh(mine, cached, writable, create_with)
        errors += await self._opened_by_others(waiting, writable, create_with)
        if errors:
            raise DatabaseError.of_several(errors)
        return self._used(selection, writable)

    def _used(self, selection: Selection, writable: bool) -> list[Database]:
        """The selection's open handles, now the most recently used; readers beyond `max_open` closed."""
        keys = [_key(loc, writable) for loc in selection.locations]
        for key in keys:
            self._open.move_to_end(key)
        handles = [self._open[key] for key in keys]
        if self.max_open is not None:
            # Only readers are closed: a writer's handle is what a write in progress commits through.
            readers = [key for key in self._open if not key[2] and key not in self._pinned]
            surplus = sum(1 for key in self._open if not key[2]) - self.max_open
            closed = readers[: max(0, surplus)]
            for key in closed:
                # A read still holding the handle finishes with it; the pool just stops offering it.
                del self._open[key]
            if closed:
                # What the closed handles held goes back to the system, not to a heap left at its peak.
                release_freed()
        return handles

    @property
    def open_names(self) -> list[str]:
        """The databases with a reader open, least recently used first."""
        return [name for name, _, writable in self._open if not writable]

    async def check(self, selection: Selection) -> None:
        """Fail naming every database of the selection that cannot be read, opening none that this machine
        can look at: what a server does before it takes requests, which open them as they need them.

        A local database is looked at (its folder readable, its meta table there); one on object storage
        is opened, the only way to ask it.
        """
        errors: list[DatabaseError] = []
        for loc in selection.locations:
            if loc.local_path is None:
                continue
            try:
                if not exists(loc):  # a file, another program's folder or an unreadable one fail here
                    open_database(loc)  # not written yet: fails saying so, as a search would
            except DatabaseError as exc:
                errors.append(exc)
        remote = tuple(loc for loc in selection.locations if loc.local_path is None)
        if remote:
            try:
                await self.clients_covering(Selection(remote))
            except DatabaseError as exc:
                errors.append(exc)
        if errors:
            raise DatabaseError.of_several(errors)

    async def _open_and_refresh(
        self, mine: list[Location], cached: list[Location], writable: bool, create_with: EmbedderSpec | None
    ) -> list[DatabaseError]:
        """Open `mine` (claimed, so that other calls wait for them) and refresh `cached`, all at once."""
        claims = {loc: _Opening() for loc in mine}
        for loc, claim in claims.items():
            self._opening[_key(loc, writable)] = claim
        try:
            calls = [partial(self._open_or_error, loc, writable, create_with) for loc in mine] + [
                partial(self._refresh_or_error, loc) for loc in cached
            ]
            results = await in_threads(calls)
            opened, refreshed = results[: len(mine)], results[len(mine) :]
            errors = [r for r in (*refreshed, *opened) if isinstance(r, DatabaseError)]
            for loc, result in zip(cached, refreshed, strict=True):
                if isinstance(result, DatabaseError):
                    self._open.pop(_key(loc, writable), None)
            for loc, result in zip(mine, opened, strict=True):
                if isinstance(result, Database):
                    result.write_policy = self.write_policy
                    self._open[_key(loc, writable)] = result
                claims[loc].result = result
        finally:
            for loc, claim in claims.items():
                self._opening.pop(_key(loc, writable), None)
                claim.done.set()  # with no result if this call was cancelled: a waiter opens it itself
        return errors

    async def _opened_by_others(
        self, waiting: dict[Location, _Opening], writable: bool, create_with: EmbedderSpec | None
    ) -> list[DatabaseError]:
        """Wait for the databases other calls were opening; one whose opener was cancelled is opened here."""
        errors: list[DatabaseError] = []
        for loc, claim in waiting.items():
            await claim.done.wait()
            if claim.result is None:
                try:
                    await self.clients_covering(Selection((loc,)), writable=writable, create_with=create_with)
                except DatabaseError as exc:
                    errors.append(exc)
            elif isinstance(claim.result, DatabaseError):
                errors.append(claim.result)
        return errors

    def _open_or_error(
        self, loc: Location, writable: bool, create_with: EmbedderSpec | None
    ) -> Database | DatabaseError:
        try:
            if writable and self.at is not None:
                raise DatabaseError(
                    f"database '{loc.name}' is read at tag '{self.at}' (--at), which is read-only; "
                    "it cannot be written"
                )
            if writable:  # opening to write may create it: never abandoned half-way
                return open_database(loc, create_with=create_with, writable=True)
            return self.bounded(loc, partial(self._open_reader, loc))
        except DatabaseError as exc:
            return exc  # collected, so that every unopenable database is named at once

    def _refresh_or_error(self, loc: Location) -> DatabaseError | None:
        try:
            self.bounded(loc, partial(refresh_reader, self._open[_key(loc, False)]))
        except DatabaseError as exc:
            return exc
        return None

    def _open_reader(self, loc: Location) -> Database:
        db = open_database(loc)
        if self.at is not None:
            # Imported here: tags belong to the write path, which a plain read never loads.
            from haiku_cli.store.tags import read_at

            read_at(db, self.at)
        return db

    async def open_one(
        self, location: Location, *, writable: bool = False, create_with: EmbedderSpec | None = None
    ) -> Database:
        """The single database of an admin command, through the same rule."""
        (db,) = await self.clients_covering(
            Selection((location,)), writable=writable, create_with=create_with
        )
        return db

    async def reading_latest(self, selection: Selection, read: Callable[[], Awaitable[T]]) -> T:
        """Run a read of the selection; if a `vacuum` removed the files of the version its handles held,
        catch them up and read again, once (the next read's open would otherwise trust them for a second)."""
        try:
            return await read()
        except DatabaseError as exc:
            if kind_of(exc) is not FailureKind.MISSING:
                raise
        for loc in selection.locations:
            db = self._open.get(_key(loc, False))
            if db is not None:
                db.read_at = float("-inf")
        return await read()

    def forget(self, location: Location) -> None:
        """Drop the cached handles after a write: a reader's handle would not see it."""
        for writable in (False, True):
            self._open.pop(_key(location, writable), None)


def _key(loc: Location, writable: bool) -> tuple[str, str, bool]:
    # A reader may hold a snapshot from before an unfinished write; a writer must not.
    return (loc.name, loc.uri, writable)
