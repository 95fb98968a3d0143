"""Every read a search makes of its databases, as coroutines of one run.

Each call through LanceDB's synchronous API is a round trip to its background event loop, and a
search made many (row count, index list, the queries, the analyzer, statistics), from a worker
thread per database. When the installed LanceDB exposes its asynchronous table behind the
synchronous one, a whole search is one coroutine on that loop: every database's lookups at once,
with no thread in between. Otherwise each read runs through the synchronous API in a worker
thread, giving the same rows more slowly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

import numpy as np
import pyarrow as pa

from haiku_cli.store.database import Database
from haiku_cli.store.handle import read_errors
from haiku_cli.store.indexes import VECTOR_INDEX, analyze_many, analyze_many_async
from haiku_cli.store.location import Location
from haiku_cli.store.reads import async_table

T = TypeVar("T")

# Rows stay Arrow columns: a caller converts only what it needs.
Rows = pa.Table


@dataclass(frozen=True)
class Lookup:
    """What to ask one database: a vector query, a full-text query, or both."""

    k: int
    where: str | None
    vector: np.ndarray | None
    vector_columns: list[str]
    text: str | None
    text_columns: list[str]
    refine_factor: int
    ef: Callable[[int, int], int]  # HNSW breadth for (table rows, k)


@dataclass
class Found:
    """The rows a lookup returned, and the full-text failure if that query failed."""

    rows: int
    indexes: set[str]
    vector_rows: Rows
    text_rows: Rows
    text_error: Exception | None = None
    version: int = 0  # of the chunks table the rows came from


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


class Reads:
    """The reads of one search of `dbs`, each a coroutine; `run` runs the search's coroutine (blocking).

    On LanceDB's loop (when every table exposes its async table) reads await LanceDB directly; a
    blocking read (`in_thread`) goes to a worker thread, never to that loop, which it would call into.
    """

    def __init__(self, dbs: Sequence[Database], bounds: Bounds) -> None:
        bridges = [async_table(db.chunks) for db in dbs]
        self._bounds = bounds
        self._lance = bool(bridges) and all(b is not None for b in bridges)
        run: Callable[[Coroutine[Any, Any, Any]], Any] = asyncio.run  # a loop of its own, in this thread
        self.run = bridges[0][1] if self._lance and bridges[0] else run

    async def in_thread(self, db: Database, call: Callable[[], T]) -> T:
        """A blocking read of `db` in a worker thread, within its bound."""
        return await asyncio.to_thread(self._bounds.bounded, db.location, call)

    async def lookup(self, db: Database, lookup: Lookup) -> Found:
        """The rows `lookup` asks of `db`'s chunks."""
        if not self._lance:
            return await self.in_thread(db, partial(_run_sync, db, lookup))
        return await self._bounds.within(db.location, _run_async(_table(db), lookup, _table_key(db)))

    async def analyze(self, db: Database, texts: Sequence[str]) -> list[list[str]]:
        """Each text's terms under `db`'s full-text analyzer, in one call."""
        if not self._lance:
            return await self.in_thread(db, partial(analyze_many, db.chunks, texts))
        return await self._bounds.within(db.location, analyze_many_async(_table(db), texts))

    async def matching(self, db: Database, word: str, rows: int) -> int:
        """How many of `db`'s `rows` chunks the full-text index finds for `word`."""
        if not self._lance:

            def count() -> int:
                found = db.chunks.search(word, query_type="fts", fts_columns="search_text").select(["_score"])
                return found.limit(max(rows, 1)).to_arrow().num_rows

            return await self.in_thread(db, count)
        q = _table(db).query().nearest_to_text(word, columns="search_text").select(["_score"])
        return (await self._bounds.within(db.location, q.limit(max(rows, 1)).to_arrow())).num_rows


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


def _table(db: Database) -> Any:
    bridge = async_table(db.chunks)
    assert bridge is not None
    return bridge[0]


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


@dataclass(frozen=True)
class _Shape:
    """What a lookup needs to know of a table version: its rows, indexes and columns."""

    rows: int
    indexes: set[str]
    columns: frozenset[str]

    def select(self, wanted: list[str]) -> list[str]:
        """The wanted columns this version has (an old layout lacks some); scores are always there."""
        return [c for c in wanted if c in self.columns or c in _SCORES]


_SCORES = frozenset({"_score", "_distance"})
# A table version's shape, read once per version (listing the indexes cost more than reading the
# version's number); keyed by location, table and version.
_shapes: VersionFacts[_Shape] = VersionFacts(10_000)


def _table_key(db: Database) -> tuple[str, str]:
    return (db.location.uri, db.chunks_table_name)


async def _run_async(table: Any, lookup: Lookup, key: tuple[str, str]) -> Found:
    version = await table.version()
    shape = _shapes.get((*key, version))
    if shape is None:
        count, listed, schema = await asyncio.gather(table.count_rows(), table.list_indices(), table.schema())
        shape = _shapes.remember(
            (*key, version), _Shape(count, {i.name for i in listed}, frozenset(schema.names))
        )
    rows, indexes = shape.rows, shape.indexes
    if rows == 0:
        return _empty(lookup, indexes, version=version)
    jobs = []
    if lookup.vector is not None:
        q = table.query().nearest_to(lookup.vector).column("vector").distance_type("cosine")
        if VECTOR_INDEX in indexes:
            q = q.refine_factor(lookup.refine_factor).ef(lookup.ef(rows, lookup.k))
        if lookup.where:
            q = q.where(lookup.where)
        jobs.append(q.select(shape.select(lookup.vector_columns)).limit(lookup.k).to_arrow())
    if lookup.text is not None:
        q = table.query().nearest_to_text(lookup.text, columns="search_text")
        if lookup.where:
            q = q.where(lookup.where)
        jobs.append(q.select(shape.select(lookup.text_columns)).limit(lookup.k).to_arrow())
    results = await asyncio.gather(*jobs, return_exceptions=True)
    found = _empty(lookup, indexes, rows, version)
    if lookup.vector is not None:
        vector = results.pop(0)
        if isinstance(vector, BaseException):
            raise vector
        found.vector_rows = vector
    if lookup.text is not None:
        text = results.pop(0)
        if isinstance(text, Exception):
            found.text_error = text
        elif isinstance(text, BaseException):
            raise text
        else:
            found.text_rows = text
    return found


def _run_sync(db: Database, lookup: Lookup) -> Found:
    rows = db.chunks.count_rows()
    indexes = {i.name for i in db.chunks.list_indices()}
    shape = _Shape(rows, indexes, db.chunk_columns)
    found = _empty(lookup, indexes, rows, db.chunks.version)
    if rows == 0:
        return found
    if lookup.vector is not None:
        q = db.chunks.search(lookup.vector, vector_column_name="vector").distance_type("cosine")
        if VECTOR_INDEX in indexes:
            q = q.refine_factor(lookup.refine_factor).ef(lookup.ef(rows, lookup.k))
        if lookup.where:
            q = q.where(lookup.where, prefilter=True)
        found.vector_rows = q.select(shape.select(lookup.vector_columns)).limit(lookup.k).to_arrow()
    if lookup.text is not None:
        try:
            q = db.chunks.search(lookup.text, query_type="fts", fts_columns="search_text")
            if lookup.where:
                q = q.where(lookup.where, prefilter=True)
            found.text_rows = q.select(shape.select(lookup.text_columns)).limit(lookup.k).to_arrow()
        except Exception as exc:
            found.text_error = exc
    return found


def _empty(lookup: Lookup, indexes: set[str], rows: int = 0, version: int = 0) -> Found:
    """A lookup's result before its queries: no rows, with the columns asked for."""

    def none(columns: list[str]) -> Rows:
        return pa.table({c: pa.array([], type=pa.null()) for c in columns})

    return Found(rows, indexes, none(lookup.vector_columns), none(lookup.text_columns), version=version)
