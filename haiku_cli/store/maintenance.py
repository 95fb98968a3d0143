"""Database upkeep: size and version facts, compaction and old-version cleanup."""

from __future__ import annotations

import warnings
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from haiku_cli.store import schema
from haiku_cli.store.database import Database
from haiku_cli.store.indexes import index_states
from haiku_cli.store.reads import count_chunks, count_documents
from haiku_cli.store.records import UtcDatetime
from haiku_cli.store.transaction import storage_errors
from haiku_cli.store.writer import exclusive


class TableVersion(BaseModel):
    """One version of one table."""

    table: str
    version: int
    timestamp: UtcDatetime


class DatabaseInfo(BaseModel):
    """What `haiku info` reports."""

    database: str
    kind: str
    documents: int
    chunks: int
    size_bytes: int | None
    embedder: str
    dimension: int
    schema_version: int
    versions: dict[str, int]
    indexes: list[dict[str, Any]]


def database_info(db: Database) -> DatabaseInfo:
    """Counts, size on disk, embedder, schema, table versions and index state."""
    path = db.location.local_path
    return DatabaseInfo(
        database=db.name,
        kind=db.location.kind,
        documents=count_documents(db),
        chunks=count_chunks(db),
        size_bytes=_dir_size(path) if path is not None else None,
        embedder=db.embedder.name,
        dimension=db.embedder.dimension,
        schema_version=db.schema_version,
        versions={schema.DOCUMENTS: db.documents.version, schema.CHUNKS: db.chunks.version},
        indexes=[s.__dict__ for s in index_states(db.chunks)],
    )


def history(db: Database) -> list[TableVersion]:
    """Every version of the documents and chunks tables, newest first."""
    out = []
    for name, table in ((schema.DOCUMENTS, db.documents), (schema.CHUNKS, db.chunks)):
        for v in table.list_versions():
            out.append(TableVersion(table=name, version=v["version"], timestamp=v["timestamp"]))
    return sorted(out, key=lambda v: (v.timestamp, v.table), reverse=True)


def vacuum(db: Database) -> tuple[int | None, int | None]:
    """Compact files and drop every old version; returns the size before and after (local only)."""
    path = db.location.local_path
    before = _dir_size(path) if path is not None else None
    with exclusive(db), warnings.catch_warnings(), storage_errors(db, "cannot be vacuumed"):
        # Dropping every old version is what vacuum is for; LanceDB warns about it to other callers.
        warnings.simplefilter("ignore", UserWarning)
        for table in (db.documents, db.chunks, db.meta_table):
            table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
    after = _dir_size(path) if path is not None else None
    return before, after


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
