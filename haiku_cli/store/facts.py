"""What a reader learns about a database without changing it: counts, size, versions, index state and
the corpus totals BM25 needs. Kept apart from maintenance.py (which writes) so a read loads no writer."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from haiku_cli.store import schema
from haiku_cli.store.database import Database
from haiku_cli.store.handle import read_errors
from haiku_cli.store.index_reads import index_states
from haiku_cli.store.published import PublishInfo, published_info
from haiku_cli.store.reads import async_table, count_rows, rows_where
from haiku_cli.store.records import UtcDatetime

CORPUS_TOTALS = "corpus_totals"


# Built on first use: a command validates a handful of these, and compiling every one at import costs
# a fresh command more CPU than the few it uses.
_LAZY = ConfigDict(defer_build=True)


class TableVersion(BaseModel):
    """One version of one table."""

    model_config = _LAZY

    table: str
    version: int
    timestamp: UtcDatetime


class DatabaseInfo(BaseModel):
    """What `haiku info` reports."""

    model_config = _LAZY

    database: str
    kind: str
    read_only: bool = False  # configured so: haiku never writes it
    documents: int
    chunks: int
    pictures: int = 0
    size_bytes: int | None
    embedder: str
    dimension: int
    schema_version: int
    upgrade: str | None = None  # how to bring an older layout up to this haiku's (None: current)
    versions: dict[str, int]
    indexes: list[dict[str, Any]]
    published: PublishInfo | None = None  # which publish a published copy holds (haiku publish)


async def database_info(db: Database) -> DatabaseInfo:
    """Counts, size on disk, embedder, schema, table versions and index state, read at once."""
    path = db.location.local_path
    side = await asyncio.to_thread(db.side_tables)  # opening a side table lists the database's folder
    tables = {schema.DOCUMENTS: db.documents, schema.CHUNKS: db.chunks, **side}
    pictures = side.get(schema.PICTURES)
    size, counts, versions, indexes = await asyncio.gather(
        asyncio.to_thread(dir_size, path) if path is not None else _nothing(),
        asyncio.gather(*(count_rows(db, t) for t in (db.documents, db.chunks, pictures) if t is not None)),
        asyncio.gather(*(async_table(t).version() for t in tables.values())),
        index_states(db.chunks),
    )
    return DatabaseInfo(
        database=db.name,
        kind=db.location.kind,
        read_only=db.location.read_only,
        documents=counts[0],
        chunks=counts[1],
        pictures=counts[2] if pictures is not None else 0,
        size_bytes=size,
        embedder=db.embedder.name,
        dimension=db.embedder.dimension,
        schema_version=db.schema_version,
        upgrade=_upgrade(db),
        versions=dict(zip(tables, versions, strict=True)),
        indexes=[s.__dict__ for s in indexes],
        published=published_info(db.meta),
    )


async def _nothing() -> None:
    return None


def _upgrade(db: Database) -> str | None:
    # Versions 1 to 3 keep working; 1 only looks each search's documents up (a few ms per database),
    # 2 does not know where its chunks stand in their documents, 3 analyses a fan-out's candidates.
    if db.chunks_carry_documents and db.chunks_carry_spans and db.chunks_carry_terms:
        return None
    if db.chunks_carry_spans:
        older = "older layout: full-text search over several databases analyses its candidates again"
    elif db.chunks_carry_documents:
        older = "older layout: chunks do not say where they stand in their documents"
    else:
        older = "older layout: each search also looks its documents up"
    if db.location.read_only:  # vacuum would refuse it here
        return f"{older}; vacuuming it (where it is not configured read_only) upgrades it"
    return f"{older}; haiku vacuum upgrades it in place (nothing is re-embedded)"


async def history(db: Database) -> list[TableVersion]:
    """Every version of the documents and chunks tables, newest first."""
    names = (schema.DOCUMENTS, schema.CHUNKS)
    with read_errors(db):
        listed = await asyncio.gather(*(async_table(t).list_versions() for t in (db.documents, db.chunks)))
    out = []
    for name, versions in zip(names, listed, strict=True):
        for v in versions:
            out.append(TableVersion(table=name, version=v["version"], timestamp=v["timestamp"]))
    return sorted(out, key=lambda v: (v.timestamp, v.table), reverse=True)


async def corpus_totals(db: Database, version: int) -> tuple[int, int]:
    """Chunk count and total length in index terms (for BM25) at `version` of the chunks table (the one its
    handle reads); kept in meta by each write, else counted."""
    stored = json.loads(db.meta.get(CORPUS_TOTALS) or "{}")
    if stored.get("table") == db.chunks_table_name and stored.get("version") == version:
        return int(stored["chunks"]), int(stored["tokens"])
    return await count_totals(db)


async def count_totals(db: Database) -> tuple[int, int]:
    import pyarrow.compute as pc  # ~60 ms to import, needed only when the stored totals are stale

    lengths = await rows_where(db, db.chunks, None, ["search_tokens"])
    return lengths.num_rows, int(pc.sum(lengths.column("search_tokens")).as_py() or 0)


def dir_size(path: Path) -> int:
    # Another process's write may remove old versions' files while they are being counted: a file or
    # folder gone by the time it is looked at counts for nothing (os.walk skips folders it cannot list).
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(folder, name)).st_size
            except FileNotFoundError:
                continue
    return total
