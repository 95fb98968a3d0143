"""An open database's handle (its tables and meta) and the one-line storage failures of every store module.

The modules that keep databases consistent (writer lock, journal, indexes, reads) build on this one;
`database` opens and creates handles with their help, so nothing here imports them back.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from haiku_cli.errors import DatabaseError, HaikuError, ModelError
from haiku_cli.store import schema
from haiku_cli.store.failures import (
    FailureKind,
    is_read_failure,
    is_table_not_found,
    kind_of,
    storage_failure,
)
from haiku_cli.store.location import Location

if TYPE_CHECKING:
    import pyarrow as pa
    from lancedb.db import DBConnection
    from lancedb.table import Table

PENDING_WRITE = "pending_write"
CHUNKS_TABLE = "chunks_table"
# A published copy's record of the publish its readers read (store/published.py).
PUBLISHED = "published"


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
        # Table versions at the last point of the write where every document was whole (see keep_point)
        self.keep_versions: dict[str, int] | None = None
        # The write's documents and chunks committed so far, and as of its last keep point (None: it has
        # written no documents): what an interrupted write says it kept (store/outcomes.py).
        self.written: tuple[int, int] | None = None
        self.kept_counts: tuple[int, int] = (0, 0)
        # Meta values the write under way sets in its commit (the journal's removal), all of it or none.
        self.at_commit: dict[str, str] = {}
        self.writer_lock: Any = None  # the held writer lock (store.writer_lock), re-entrant
        self.write_policy: Any = None  # how long to wait for another writer (store.writer_lock.WaitPolicy)
        # A request of the write under way waited out its limit: the store stopped answering, so the
        # steps after a failure (undoing it, giving the lease back) are left to the next writer rather
        # than waiting the limit out again each. Cleared when the writer lock is taken.
        self.stalled = False
        self.read_at = time.monotonic()  # when this handle last caught up with the stored state
        self.at_tag: str | None = None  # read at this tag (`--at`): its versions never move, writes refused
        # This process's commits to the meta table (its writes, an object-store lease's heartbeat, a
        # vacuum compacting it) take turns: two at once would conflict, and fail one of them.
        self.meta_guard = threading.RLock()
        self.documents = tables[schema.DOCUMENTS]
        self.meta_table = tables[schema.META]
        self.meta = read_meta(self.meta_table)
        chunks = tables.get(schema.CHUNKS)
        self.chunks = chunks if chunks is not None else conn.open_table(self.chunks_table_name)
        # ((table name, version), its columns): `vacuum` adds columns to an older layout's table in place
        self._chunk_columns: tuple[tuple[str, int], frozenset[str]] | None = None
        # Tables a feature creates on first use (schema.SIDE_TABLES), so older databases open unchanged:
        # name -> the open table, or None while the database has none.
        self._side: dict[str, Table | None] = {}
        # What was read of the tables as this handle sees them (the remembered file states, by document),
        # kept until the handle catches up or writes: never past a change of what is stored.
        self.read_memo: dict[str, Any] = {}

    @property
    def pictures(self) -> Table | None:
        """The pictures table, or None while no write has stored a picture (a side table)."""
        return self.side_table(schema.PICTURES)

    def create_pictures(self) -> Table:
        """The pictures table, created now if missing (by a writer holding the lock)."""
        return self.create_side_table(schema.PICTURES, schema.pictures_schema())

    def forget_side_table(self, name: str, *, gone: bool = False) -> None:
        """Look a side table up again on next use; `gone`: read as if it were not there."""
        if gone:
            self._side[name] = None
        else:
            self._side.pop(name, None)

    @property
    def name(self) -> str:
        """The database's name, its identity in every message and result."""
        return self.location.name

    def side_table(self, name: str) -> Table | None:
        """A table created on first use (`schema.SIDE_TABLES`), or None if this database has none."""
        if name not in self._side:
            self._side[name] = _open_committed(self.conn, name) if name in table_names(self.conn) else None
        return self._side[name]

    def may_have_side_table(self, name: str) -> bool:
        """Whether a side table may be there, without listing the tables: a local database's folder is
        looked at (one stat); object storage only says when `side_table` lists it."""
        if name in self._side:
            return self._side[name] is not None
        path = self.location.local_path
        if path is None:
            return True
        try:
            return (path / f"{name}.lance").is_dir()
        except OSError:
            return True  # `side_table` says what is wrong

    def side_tables(self) -> dict[str, Table]:
        """Every side table this database has, by name."""
        return {n: t for n in schema.SIDE_TABLES if (t := self.side_table(n)) is not None}

    def create_side_table(self, name: str, table_schema: pa.Schema) -> Table:
        """The side table, created empty if missing (by a writer holding the lock, before its journal)."""
        table = self.side_table(name)
        if table is None:
            table = self.conn.create_table(name, schema=table_schema, exist_ok=True)
            self._side[name] = table
        return table

    @property
    def embedder(self) -> EmbedderSpec:
        """The embedder this database's vectors were made with."""
        return EmbedderSpec(self.meta["embedder_name"], int(self.meta["embedder_dimension"]))

    @property
    def chunks_table_name(self) -> str:
        """The live chunks table; `rebuild` writes a new one and switches this in one commit."""
        return self.meta.get(CHUNKS_TABLE, schema.CHUNKS)

    @property
    def chunk_columns(self) -> frozenset[str]:
        """The live chunks table's columns, read once per table version."""
        key = (self.chunks.name, self.chunks.version)
        if self._chunk_columns is None or self._chunk_columns[0] != key:
            self._chunk_columns = (key, frozenset(self.chunks.schema.names))
        return self._chunk_columns[1]

    @property
    def chunks_carry_documents(self) -> bool:
        """Whether chunk rows hold their document's uri, title and metadata (schema version 2 on)."""
        return set(schema.DOCUMENT_FIELDS.values()) <= self.chunk_columns

    @property
    def chunks_carry_spans(self) -> bool:
        """Whether chunk rows say where they stand in their document (schema version 3 on)."""
        return set(schema.SPAN_FIELDS) <= self.chunk_columns

    @property
    def chunks_carry_terms(self) -> bool:
        """Whether chunk rows hold their search text's index terms (schema version 4 on)."""
        return schema.TERMS_FIELD in self.chunk_columns

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
        with self.meta_guard:
            merge.execute(rows)
        self.meta.update(values)

    def set_meta_dropping(self, values: dict[str, str], key: str) -> None:
        """Store meta values and remove `key`, in one atomic commit."""
        rows = [{"key": k, "value": v} for k, v in values.items()]
        merge = (
            self.meta_table.merge_insert("key")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete(f"key = '{key}'")
        )
        with self.meta_guard:
            merge.execute(rows)
        self.meta.update(values)
        self.meta.pop(key, None)

    def delete_meta(self, key: str) -> None:
        """Remove one meta value."""
        with self.meta_guard:
            self.meta_table.delete(f"key = '{key}'")
        self.meta.pop(key, None)

    def check_embedder(self, spec: EmbedderSpec) -> None:
        """Refuse to mix embedders: vectors from two models are not comparable."""
        mine = self.embedder
        if mine.name == spec.name and mine.dimension != spec.dimension:
            # Same model, other vectors: the server is broken or serves another model under that name.
            # Rebuilding would re-embed everything with it, so the advice is to look at the server.
            raise ModelError(
                f"embedding model '{spec.name}' returned {spec.dimension}-dimensional vectors, but database "
                f"'{self.name}' was written with it at {mine.dimension}; check that its server still "
                "serves the model the database was written with"
            )
        if mine.name != spec.name:
            raise DatabaseError(
                f"database '{self.name}' was written with embedder {mine.name} ({mine.dimension} dims), "
                f"but {spec.name} ({spec.dimension} dims) is configured; "
                "configure the original embedder or rebuild the database"
            )


def table_names(conn: DBConnection) -> list[str]:
    """The names of a database's tables."""
    return list(conn.list_tables().tables)


def drop_tables(conn: DBConnection, names: Iterable[str]) -> None:
    """Drop those of the named tables that are there (one listing; not every connection type can be
    told to ignore a missing table)."""
    present = set(table_names(conn))
    for name in names:
        if name in present:
            conn.drop_table(name)


def read_meta(table: Table) -> dict[str, str]:
    """Every meta key and value of a database."""
    return {row["key"]: row["value"] for row in table.to_arrow().to_pylist()}


def note_stall(db: Database, exc: BaseException) -> bool:
    """Whether the database's store stalled during the write under way: true once a storage failure
    (a `StorageError` from the store, or a deadline of ours) was a request that waited out its limit."""
    if not db.stalled and (
        isinstance(exc, TimeoutError) or (db.location.can_stall and kind_of(exc) is FailureKind.STALLED)
    ):
        db.stalled = True
    return db.stalled


def _open_committed(conn: DBConnection, name: str) -> Table | None:
    """A listed table, or None when its creation never committed a version (a full disk, a kill).

    Such a folder holds no data; creating the table again (`create_side_table`) makes it whole.
    """
    try:
        return conn.open_table(name)
    except ValueError as exc:
        if not is_table_not_found(exc):
            raise
        return None


@contextmanager
def read_errors(db: Database) -> Iterator[None]:
    """A read's storage failure (I/O, a file gone) as one exit-3 line naming the database; others as is."""
    try:
        yield
    except HaikuError:
        raise
    except Exception as exc:
        if is_read_failure(exc):
            raise storage_failure(db.location, "cannot be read", exc) from exc
        raise


def parse_json_object(text: str | None) -> dict[str, Any]:
    """Decode a stored JSON object column, tolerating NULL."""
    return json.loads(text) if text else {}


def catch_up(db: Database) -> None:
    """Move an open handle to the latest committed state (another process may have written since)."""
    db.read_memo.clear()
    try:
        db.meta_table.checkout_latest()
        db.meta = read_meta(db.meta_table)
        db.documents.checkout_latest()
        if db.chunks.name != db.chunks_table_name:
            db.chunks = db.conn.open_table(db.chunks_table_name)  # a rebuild switched tables
        else:
            db.chunks.checkout_latest()
        for name, table in list(db._side.items()):
            if table is None:
                del db._side[name]  # another writer may have created it since: look again on use
            else:
                table.checkout_latest()
    except Exception as exc:
        raise storage_failure(db.location, "cannot be read", exc) from exc
