"""Reads of the selection's open databases, awaited at once under the pool's rule for reads.

A storage failure is one exit-3 line naming its database, and a read that finds the files of its
version removed by a concurrent `vacuum` is made again, once, from the latest version.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import TypeVar

import anyio.to_thread

from haiku_cli.databases.concurrency import concurrently
from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.selection import Selection
from haiku_cli.store.database import Database
from haiku_cli.store.handle import read_errors
from haiku_cli.store.location import Location

T = TypeVar("T")


async def read_each(
    pool: DatabasePool, selection: Selection, read: Callable[[Database], Awaitable[T]]
) -> list[T]:
    """Await `read` of every database of the selection at once; results in the selection's order."""

    async def guarded(db: Database) -> T:
        with read_errors(db):
            return await read(db)

    async def once() -> list[T]:
        dbs = await pool.clients_covering(selection)
        return await concurrently([partial(guarded, db) for db in dbs])

    return await pool.reading_latest(selection, once)


async def read_one(pool: DatabasePool, location: Location, read: Callable[[Database], Awaitable[T]]) -> T:
    """Await `read` of one database of the selection."""
    (result,) = await read_each(pool, Selection((location,)), read)
    return result


def in_thread(read: Callable[[Database], T]) -> Callable[[Database], Awaitable[T]]:
    """A read made of LanceDB's synchronous calls, as `read_each` takes one: run in a worker thread."""

    async def threaded(db: Database) -> T:
        return await anyio.to_thread.run_sync(partial(read, db))

    return threaded
