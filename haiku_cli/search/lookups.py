"""Every read a search makes of its databases, awaited on the caller's event loop.

LanceDB's synchronous API runs each call on its own background loop; a search made many (row count,
index list, the queries, the analyzer, statistics), so it awaits LanceDB's async tables directly
instead: every database's reads at once, with no thread and no other loop in between.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

from haiku_cli.store.database import Database
from haiku_cli.store.handle import read_errors
from haiku_cli.store.index_reads import VECTOR_INDEX, analyze, analyze_locally, analyzes_as_haiku
from haiku_cli.store.location import Location
from haiku_cli.store.reads import async_table

T = TypeVar("T")


class Bounds(Protocol):
    """How long a read of a database may take (a networked store may stop answering)."""

    def bounded(self, location: Location, call: Callable[[], T]) -> T:
        """Run a blocking read within the bound."""
        ...

    async def within(self, location: Location, read: Awaitable[T]) -> T:
        """Await a read within the bound."""
        ...


class Unbounded:
    """No bound: for a caller with no timeout to keep (a test, a benchmark)."""

    def bounded(self, location: Location, call: Callable[[], T]) -> T:
        """Run the read."""
        return call()

    async def within(self, location: Location, read: Awaitable[T]) -> T:
        """Await the read."""
        return await read


@dataclass(frozen=True)
class Shape:
    """What a search needs to know of a chunks table version: its rows, indexes and columns."""

    version: int
    rows: int
    indexes: frozenset[str]
    columns: frozenset[str]
    vector_segments: int = 1  # the graphs a vector search reads (store/vector_segments.py)

    def select(self, wanted: list[str]) -> list[str]:
        """The wanted columns this version has (an old layout lacks some); scores are always there."""
        return [c for c in wanted if c in self.columns or c in _SCORES]


class Reads:
    """The reads of one search, each within the bound its database's location has."""

    def __init__(self, bounds: Bounds) -> None:
        self._bounds = bounds

    async def in_thread(self, db: Database, call: Callable[[], T]) -> T:
        """A blocking read of `db` in a worker thread, within its bound."""
        return await asyncio.to_thread(self._bounds.bounded, db.location, call)

    async def within(self, db: Database, read: Awaitable[T]) -> T:
        """Await a read of `db` within its bound."""
        return await self._bounds.within(db.location, read)

    async def shape(self, db: Database) -> tuple[Any, Shape]:
        """`db`'s chunks table to query, and its version's shape (read once per version)."""
        table = async_table(db.chunks)
        version = await table.version()
        key = (db.location.uri, db.chunks_table_name, version)
        shape = _shapes.get(key)
        if shape is None:
            # Asked together: a table without a vector index has no statistics for it (None).
            count, listed, schema, vector = await asyncio.gather(
                table.count_rows(), table.list_indices(), table.schema(), table.index_stats(VECTOR_INDEX)
            )
            segments = (vector.num_indices or 1) if vector else 1
            names = frozenset(i.name for i in listed)
            found = Shape(version, count, names, frozenset(schema.names), segments)
            shape = _shapes.remember(key, found)
        return table, shape

    async def analyze(self, db: Database, texts: Sequence[str]) -> list[list[str]]:
        """Each text's terms under `db`'s full-text analyzer, in one call."""
        if await self.within(db, analyzes_as_haiku(db)):
            return analyze_locally(texts)
        return await self.within(db, analyze(db.chunks, texts))

    async def take(
        self, db: Database, table: Any, version: int, row_ids: list[int], columns: list[str]
    ) -> Any:
        """The rows of `db`'s chunks table at these row ids (at `version`), with these columns.

        Through Lance's own take where `takes_cheaply`, else LanceDB's.
        """
        if takes_cheaply():
            key = (db.location.uri, db.chunks_table_name, version)
            dataset = _datasets.get(key)
            if dataset is None:
                dataset = _datasets.remember(key, await self.in_thread(db, partial(_dataset, db, version)))
            if dataset is not None:
                return await self.in_thread(db, partial(dataset._take_rows, row_ids, columns=columns))
        return await self.within(db, table.take_row_ids(row_ids).select(columns).to_arrow())


async def each(reads: Sequence[tuple[Database, Awaitable[T]]]) -> list[T]:
    """Await reads of several databases at once; a storage failure names its database (the first, in
    the order given), as a synchronous read's would."""

    async def named(db: Database, read: Awaitable[T]) -> T:
        with read_errors(db):
            return await read

    results = await asyncio.gather(*(named(db, read) for db, read in reads), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results  # type: ignore[return-value]


class VersionFacts(dict[tuple, T]):
    """Facts of table versions, which never change, kept for the life of the process (a host serving
    many queries reads each once); emptied whole when `limit` keys are held, so memory stays bounded."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def remember(self, key: tuple, value: T) -> T:
        """Keep `value` under `key` and return it."""
        if len(self) >= self.limit:
            self.clear()
        self[key] = value
        return value


_searched = False


def takes_cheaply() -> bool:
    """Whether rows are taken by row id through Lance's own take, a fraction of LanceDB's cost for the
    few rows of a hit.

    Importing Lance has a one-time cost a command searching once does not recover: its first search
    (so a one-search command) answers without it, and a process that searches again (a host, many
    queries) imports it then.
    """
    global _searched
    if "lance" in sys.modules:
        return True
    if not _searched:
        _searched = True
        return False
    try:
        import lance  # noqa: F401
    except ImportError:
        return False
    return True


def _dataset(db: Database, version: int) -> Any:
    dataset = db.chunks.to_lance()
    return dataset if dataset.version == version else dataset.checkout_version(version)


_SCORES = frozenset({"_score", "_distance"})
# A table version's shape, read once per version (listing the indexes cost more than reading the
# version's number); keyed by location, table and version.
_shapes: VersionFacts[Shape] = VersionFacts(10_000)
# Lance's own handle on a table version, for taking hits' rows; few, as each holds its own caches.
_datasets: VersionFacts[Any] = VersionFacts(64)
