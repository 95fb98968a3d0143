"""Opening and creating a haiku database: a LanceDB connection with documents, chunks and meta tables."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from haiku_cli.errors import DatabaseError
from haiku_cli.store import schema
from haiku_cli.store.lance_import import import_lancedb
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
        self.writer_lock: Any = None  # the held writer lock (store.writer), re-entrant
        self.write_policy: Any = None  # how long to wait for another writer (store.writer.WaitPolicy)
        self.documents = tables[schema.DOCUMENTS]
        self.meta_table = tables[schema.META]
        self.meta = read_meta(self.meta_table)
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
        return _create_exclusively(location, create_with)
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
        # A write is under way, or died half-way: read the state before it. Only a writer holding the
        # lock may undo it (store.writer.exclusive), since only then is its writer provably gone.
        from haiku_cli.store.transaction import read_snapshot

        read_snapshot(db)
    return db


def _create_exclusively(location: Location, spec: EmbedderSpec) -> Database:
    path = location.local_path
    if path is None:
        return _create(location, spec)
    from haiku_cli.store.writer import WaitPolicy, acquire

    # Two first writers must not both create the tables: the second waits, then opens what the first made.
    lock = acquire(path, location.name, WaitPolicy())
    try:
        if exists(location):
            return open_database(location)
        return _create(location, spec)
    finally:
        lock.release()


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


def load_driver() -> None:
    """Import LanceDB now (seconds on a cold start), e.g. before a storage deadline starts counting."""
    quiet_lance_logs()
    import_lancedb()


def _connect(location: Location) -> DBConnection:
    quiet_lance_logs()
    lancedb = import_lancedb()
    try:
        return lancedb.connect(location.connect_uri, storage_options=location.storage_options or None)
    except Exception as exc:
        raise DatabaseError(f"database '{location.name}' cannot be reached: {_reason(exc)}") from exc


def _table_names(conn: DBConnection) -> list[str]:
    return list(conn.list_tables().tables)


def read_meta(table: Table) -> dict[str, str]:
    """Every meta key and value of a database."""
    return {row["key"]: row["value"] for row in table.to_arrow().to_pylist()}


# What storage failures look like deep in LanceDB's (Rust) messages, and how to say them to a user.
_KNOWN_FAILURES = (
    (("read-only file system", "os error 30"), "the file system is read-only"),
    (("no space left", "os error 28", "disk quota"), "the disk is full"),
    (("permission denied", "os error 13", "access denied", "accessdenied", "forbidden"), "permission denied"),
    (("timed out", "timeout", "deadline"), "the storage did not answer in time"),
    (("connection refused", "connect error", "error sending request", "dispatch failure"), "cannot connect"),
)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    lowered = text.lower()
    for needles, plain in _KNOWN_FAILURES:
        if any(n in lowered for n in needles):
            return plain
    first = text.splitlines()[0] if text else type(exc).__name__
    # LanceDB prefixes its messages with Rust source locations; they mean nothing to a user.
    first = re.sub(r",?\s*[\w/.-]+\.rs:\d+:\d+", "", first)
    return first[:300]


def storage_failure(name: str, what: str, exc: BaseException) -> DatabaseError:
    """One line for a storage call that failed: `database 'x' cannot be written: the disk is full`."""
    return DatabaseError(f"database '{name}' {what}: {_reason(exc)}")


def parse_json_object(text: str | None) -> dict[str, Any]:
    """Decode a stored JSON object column, tolerating NULL."""
    return json.loads(text) if text else {}
