"""Opening and creating a haiku database: a LanceDB connection with documents, chunks and meta tables."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from haiku_cli.errors import DatabaseError
from haiku_cli.store import schema
from haiku_cli.store.location import Location

if TYPE_CHECKING:
    from lancedb.db import DBConnection
    from lancedb.table import Table

PENDING_WRITE = "pending_write"
CHUNKS_TABLE = "chunks_table"


@dataclass(frozen=True)
class EmbedderSpec:
    """The identity of the embedder a database was written with."""

    name: str
    dimension: int


class Database:
    """An open haiku database. Create with `open_database`."""

    def __init__(self, location: Location, conn: DBConnection, tables: dict[str, Table]) -> None:
        self.location = location
        self.conn = conn
        self.in_write = False  # inside atomic_write: nested writes join the outer one
        self.documents = tables[schema.DOCUMENTS]
        self.meta_table = tables[schema.META]
        self.meta = _read_meta(self.meta_table)
        chunks = tables.get(schema.CHUNKS)
        self.chunks = chunks if chunks is not None else conn.open_table(self.chunks_table_name)

    @property
    def name(self) -> str:
        """The database's name, its identity in every message and result."""
        return self.location.name

    @property
    def embedder(self) -> EmbedderSpec:
        """The embedder this database's vectors were made with."""
        return EmbedderSpec(self.meta["embedder_name"], int(self.meta["embedder_dimension"]))

    @property
    def chunks_table_name(self) -> str:
        """The live chunks table; `rebuild` writes a new one and switches this in one commit."""
        return self.meta.get(CHUNKS_TABLE, schema.CHUNKS)

    @property
    def schema_version(self) -> int:
        """The on-disk schema version."""
        return int(self.meta["schema_version"])

    def set_meta(self, key: str, value: str) -> None:
        """Store one meta value (a single atomic commit)."""
        self.set_meta_many({key: value})

    def set_meta_many(self, values: dict[str, str]) -> None:
        """Store several meta values in one atomic commit."""
        rows = [{"key": k, "value": v} for k, v in values.items()]
        merge = self.meta_table.merge_insert("key").when_matched_update_all().when_not_matched_insert_all()
        merge.execute(rows)
        self.meta.update(values)

    def delete_meta(self, key: str) -> None:
        """Remove one meta value."""
        self.meta_table.delete(f"key = '{key}'")
        self.meta.pop(key, None)

    def check_embedder(self, spec: EmbedderSpec) -> None:
        """Refuse to mix embedders: vectors from two models are not comparable."""
        mine = self.embedder
        if mine.name != spec.name or mine.dimension != spec.dimension:
            raise DatabaseError(
                f"database '{self.name}' was written with embedder {mine.name} ({mine.dimension} dims), "
                f"but {spec.name} ({spec.dimension} dims) is configured; "
                "configure the original embedder or rebuild the database"
            )


def quiet_lance_logs() -> None:
    """Keep LanceDB's Rust logging off the user's terminal unless they asked for it."""
    os.environ.setdefault("LANCEDB_LOG", "error")


def exists(location: Location) -> bool:
    """Whether a haiku database exists at the location (never creates anything)."""
    path = location.local_path
    if path is not None and not (path / f"{schema.META}.lance").exists():
        return False
    try:
        conn = _connect(location)
        return schema.META in _table_names(conn)
    except DatabaseError:
        raise
    except Exception as exc:  # an unreachable store is a failure, not "missing"
        raise DatabaseError(f"database '{location.name}' cannot be reached: {_reason(exc)}") from exc


def open_database(
    location: Location, *, create_with: EmbedderSpec | None = None, writable: bool = False
) -> Database:
    """Open a database; create it first when `create_with` is given and it does not exist yet."""
    if writable and location.read_only:
        raise DatabaseError(f"database '{location.name}' is configured read_only; it cannot be written")
    if not exists(location):
        if create_with is None:
            raise DatabaseError(
                f"database '{location.name}' does not exist yet; add documents to it first "
                "(haiku add-src PATH)"
            )
        return _create(location, create_with)
    try:
        conn = _connect(location)
        tables = {n: conn.open_table(n) for n in (schema.DOCUMENTS, schema.META)}
        db = Database(location, conn, tables)
    except Exception as exc:
        raise DatabaseError(f"database '{location.name}' cannot be opened: {_reason(exc)}") from exc
    if db.schema_version > schema.SCHEMA_VERSION:
        raise DatabaseError(
            f"database '{location.name}' has schema version {db.schema_version}, newer than this haiku "
            f"supports ({schema.SCHEMA_VERSION}); upgrade haiku"
        )
    if PENDING_WRITE in db.meta:
        # An earlier write died half-way: writers undo it, readers read the state before it.
        from haiku_cli.store.transaction import read_snapshot, recover

        if writable:
            recover(db)
        else:
            read_snapshot(db)
    return db


def _create(location: Location, spec: EmbedderSpec) -> Database:
    try:
        conn = _connect(location)
        tables = {
            schema.DOCUMENTS: conn.create_table(
                schema.DOCUMENTS, schema=schema.documents_schema(), exist_ok=True
            ),
            schema.CHUNKS: conn.create_table(
                schema.CHUNKS, schema=schema.chunks_schema(spec.dimension), exist_ok=True
            ),
        }
        from haiku_cli.store.indexes import create_fts_index

        if not tables[schema.CHUNKS].list_indices():
            create_fts_index(tables[schema.CHUNKS])
        meta_rows = [
            {"key": "schema_version", "value": str(schema.SCHEMA_VERSION)},
            {"key": "embedder_name", "value": spec.name},
            {"key": "embedder_dimension", "value": str(spec.dimension)},
        ]
        # The meta table is created last: its presence is what marks a database as existing.
        tables[schema.META] = conn.create_table(schema.META, data=meta_rows, schema=schema.meta_schema())
    except Exception as exc:
        raise DatabaseError(f"database '{location.name}' cannot be created: {_reason(exc)}") from exc
    return Database(location, conn, tables)


def _connect(location: Location) -> DBConnection:
    quiet_lance_logs()
    import lancedb

    try:
        return lancedb.connect(location.connect_uri, storage_options=location.storage_options or None)
    except Exception as exc:
        raise DatabaseError(f"database '{location.name}' cannot be reached: {_reason(exc)}") from exc


def _table_names(conn: DBConnection) -> list[str]:
    return list(conn.list_tables().tables)


def _read_meta(table: Table) -> dict[str, str]:
    return {row["key"]: row["value"] for row in table.to_arrow().to_pylist()}


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]


def parse_json_object(text: str | None) -> dict[str, Any]:
    """Decode a stored JSON object column, tolerating NULL."""
    return json.loads(text) if text else {}
