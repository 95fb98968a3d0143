"""Reads of the selection's open databases in worker threads, under the pool's rule for reads.

A storage failure is one exit-3 line naming its database, and a read that finds the files of its
version removed by a concurrent `vacuum` is made again, once, from the latest version.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

from haiku_cli.databases.concurrency import in_threads
from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.selection import Selection
from haiku_cli.store.database import Database
from haiku_cli.store.handle import read_errors
from haiku_cli.store.location import Location

T = TypeVar("T")


async def read_each(pool: DatabasePool, selection: Selection, read: Callable[[Database], T]) -> list[T]:
    """Run `read` on every database of the selection at once; results in the selection's order."""

    def guarded(db: Database) -> T:
        with read_errors(db):
            return read(db)

    async def once() -> list[T]:
        dbs = await pool.clients_covering(selection)
        return await in_threads([partial(guarded, db) for db in dbs])

    return await pool.reading_latest(selection, once)


async def read_one(pool: DatabasePool, location: Location, read: Callable[[Database], T]) -> T:
    """Run `read` on one database of the selection."""
    (result,) = await read_each(pool, Selection((location,)), read)
    return result
