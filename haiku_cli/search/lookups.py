"""One database's vector and full-text lookups, run as a single call into LanceDB.

Each call through LanceDB's synchronous API is a round trip to its background event loop, and a
search made several (row count, index list, the table schema two or three times per query, the
query itself). On a busy machine each round trip waits for a CPU. So when the installed LanceDB
exposes its asynchronous table behind the synchronous one, every lookup of a database runs in one
coroutine on that loop, the vector and full-text queries at once; otherwise, the synchronous API
is used, giving the same rows more slowly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from haiku_cli.store.database import Database
from haiku_cli.store.indexes import VECTOR_INDEX
from haiku_cli.store.reads import async_table

# Rows stay Arrow columns: a caller converts only what it needs, off LanceDB's loop thread.
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


def run_lookup(db: Database, lookup: Lookup) -> Found:
    """Run the lookup on one database, in one round trip to LanceDB when it allows."""
    bridge = async_table(db.chunks)
    if bridge is None:
        return _run_sync(db, lookup)
    table, run = bridge
    return run(_run_async(table, lookup))


async def _run_async(table: Any, lookup: Lookup) -> Found:
    rows, listed = await asyncio.gather(table.count_rows(), table.list_indices())
    indexes = {i.name for i in listed}
    if rows == 0:
        return _empty(lookup, indexes)
    jobs = []
    if lookup.vector is not None:
        q = table.query().nearest_to(lookup.vector).column("vector").distance_type("cosine")
        if VECTOR_INDEX in indexes:
            q = q.refine_factor(lookup.refine_factor).ef(lookup.ef(rows, lookup.k))
        if lookup.where:
            q = q.where(lookup.where)
        jobs.append(q.select(lookup.vector_columns).limit(lookup.k).to_arrow())
    if lookup.text is not None:
        q = table.query().nearest_to_text(lookup.text, columns="search_text")
        if lookup.where:
            q = q.where(lookup.where)
        jobs.append(q.select(lookup.text_columns).limit(lookup.k).to_arrow())
    results = await asyncio.gather(*jobs, return_exceptions=True)
    found = _empty(lookup, indexes, rows)
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
    found = _empty(lookup, indexes, rows)
    if rows == 0:
        return found
    if lookup.vector is not None:
        q = db.chunks.search(lookup.vector, vector_column_name="vector").distance_type("cosine")
        if VECTOR_INDEX in indexes:
            q = q.refine_factor(lookup.refine_factor).ef(lookup.ef(rows, lookup.k))
        if lookup.where:
            q = q.where(lookup.where, prefilter=True)
        found.vector_rows = q.select(lookup.vector_columns).limit(lookup.k).to_arrow()
    if lookup.text is not None:
        try:
            q = db.chunks.search(lookup.text, query_type="fts", fts_columns="search_text")
            if lookup.where:
                q = q.where(lookup.where, prefilter=True)
            found.text_rows = q.select(lookup.text_columns).limit(lookup.k).to_arrow()
        except Exception as exc:
            found.text_error = exc
    return found


def _empty(lookup: Lookup, indexes: set[str], rows: int = 0) -> Found:
    """A lookup's result before its queries: no rows, with the columns asked for."""

    def none(columns: list[str]) -> Rows:
        return pa.table({c: pa.array([], type=pa.null()) for c in columns})

    return Found(rows, indexes, none(lookup.vector_columns), none(lookup.text_columns))
