"""An open database's handle (its tables and meta) and the one-line storage failures of every store module.

The modules that keep databases consistent (writer lock, journal, indexes, reads) build on this one;
`database` opens and creates handles with their help, so nothing here imports them back.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from haiku_cli.errors import DatabaseError, HaikuError, ModelError
from haiku_cli.store import schema
from haiku_cli.store.location import Location

if TYPE_CHECKING:
    import pyarrow as pa
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
        # Table versions at the last point of the write where every document was whole (see keep_point)
        self.keep_versions: dict[str, int] | None = None
        # The write's documents and chunks committed so far, and as of its last keep point (None: it has
        # written no documents): what an interrupted write says it kept (store/outcomes.py).
        self.written: tuple[int, int] | None = None
        self.kept_counts: tuple[int, int] = (0, 0)
        # Meta values the write under way sets in its commit (the journal's removal), all of it or none.
        self.at_commit: dict[str, str] = {}
        self.writer_lock: Any = None  # the held writer lock (store.writer), re-entrant
        self.write_policy: Any = None  # how long to wait for another writer (store.writer.WaitPolicy)
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


# How to raise the storage timeout, for every message about a store that stopped answering.
STORAGE_TIMEOUT_HINT = "check the store, or raise [storage] timeout_seconds (HAIKU_STORAGE_TIMEOUT)"
_STALLED = "the storage did not answer in time"
# A request that got no answer: the store client does not say whether it waited out its timeout (a
# store that accepted the connection, then stalled) or could not connect at all, so `_unanswered` tells.
_UNSENT = "cannot connect"
_REFUSED = "the connection was refused; check the endpoint"
_DENIED = "permission denied"
_READ_ONLY = "the file system is read-only"
_FULL = "the disk is full"
_NO_CREDENTIALS = (
    "no AWS credentials were found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
)
# What LanceDB (0.40) raises when the analyzer cannot read its full-text index's settings from the store:
# it logs the store's error (a request that timed out, a refused connection) and raises this without it.
_SETTINGS_UNREAD = "does not include tokenizer details"
# Failures that are the store's answer, a definite no: the request changed nothing (see `is_refusal`).
_REFUSALS = (_DENIED, _READ_ONLY, _FULL, _NO_CREDENTIALS)

# What storage failures look like deep in LanceDB's (Rust) messages, and how to say them to a user.
_KNOWN_FAILURES = (
    # Looked up before any request: its failure says "Forbidden" (a metadata service refusing), not a denial.
    (("failed to get aws credentials",), _NO_CREDENTIALS),
    (("read-only file system", "os error 30"), _READ_ONLY),
    (("no space left", "os error 28", "disk quota"), _FULL),
    (("permission denied", "os error 13", "access denied", "accessdenied", "forbidden"), _DENIED),
    # Before the timeouts: a refused connection's retry report also names its `retry_timeout`.
    (("connection refused", "connectionrefused"), _REFUSED),
    (("timed out", "timeout", "deadline"), _STALLED),
    (("connect error", "error sending request", "dispatch failure"), _UNSENT),
)


def failure_reason(exc: BaseException, location: Location | None = None, *, ran: float = 0.0) -> str:
    """A storage failure in a few plain words (LanceDB's Rust messages mean little to a user); a store
    that stopped answering is told with the location's timeout in force and how to raise it. `ran`: how
    long the failed call took, for a failure whose message does not say."""
    if is_missing_file(exc):
        # A read retries once after a concurrent vacuum, so a file still missing was removed by hand.
        return "some of its data files are missing (was the database folder changed by hand?)"
    text = str(exc).strip()
    lowered = text.lower()
    if location is not None and location.can_stall and _SETTINGS_UNREAD in lowered:
        return _settings_unread(location, ran)
    for needles, plain in _KNOWN_FAILURES:
        if any(n in lowered for n in needles):
            if plain is _STALLED or plain is _UNSENT:
                return _unanswered(lowered, location, timed_out=plain is _STALLED)
            return plain
    return plain_first_line(exc)


def _unanswered(lowered: str, location: Location | None, *, timed_out: bool) -> str:
    """A request that got no answer: refused (nothing listens now), waited out (the store stalled), or
    not sent (no connection). The client's words do not tell: its retry report names its timeout even
    when every try was refused, and a request it gave up on is only `error sending request`."""
    if location is None:
        return stalled_reason(None) if timed_out else _UNSENT
    if timed_out:
        return unanswered_reason(location)
    if location.can_stall and location.endpoint_refuses():
        return _REFUSED
    # The store client reports how long the failed request ran (`GET ... in 2.001358017s - HTTP error`):
    # one that ran for its whole timeout was accepted and never answered.
    ran = max((_duration(m.group(1), m.group(2)) for m in _RAN_FOR.finditer(lowered)), default=0.0)
    limit = request_timeout(location)
    if limit is not None and ran >= 0.9 * limit:
        return stalled_reason(location)
    return _UNSENT


def _settings_unread(location: Location, ran: float) -> str:
    """The store failed LanceDB's read of a full-text index's settings, whose cause LanceDB only logs:
    refused when nothing listens at the endpoint, a stall when the call ran a whole request limit."""
    if location.endpoint_refuses():
        return _REFUSED
    limit = request_timeout(location)
    # A request that waited out its limit took at least that long; any other failure comes sooner.
    if limit is not None and ran >= limit:
        return stalled_reason(location)
    return "the settings of its full-text index could not be read; check the store"


def is_refusal(exc: BaseException | None) -> bool:
    """Whether a storage call failed on the store's definite no (access denied, a read-only or full
    disk, no credentials): an answer, so the call changed nothing, unlike one whose answer never came."""
    return exc is not None and failure_reason(exc) in _REFUSALS


def is_stall(exc: BaseException, location: Location) -> bool:
    """Whether a storage call failed on a request that waited out its limit (a store that stopped
    answering; `TimeoutError`: a deadline of ours), as the failure's message names it."""
    if isinstance(exc, TimeoutError):
        return True
    return location.can_stall and failure_reason(exc, location) == stalled_reason(location)


def note_stall(db: Database, exc: BaseException) -> bool:
    """Whether the database's store stalled during the write under way: true once a storage failure
    (a `DatabaseError` from the store, or a deadline of ours) was a request that waited out its limit."""
    # Told once: telling may try a connection to the endpoint (refused, or accepted and never answered).
    if not db.stalled and isinstance(exc, DatabaseError | TimeoutError) and is_stall(exc, db.location):
        db.stalled = True
    return db.stalled


def unanswered_reason(location: Location) -> str:
    """A request that went unanswered: refused when nothing listens at the endpoint now, else a stall
    named with the timeout in force and the setting that changes it."""
    return _REFUSED if location.can_stall and location.endpoint_refuses() else stalled_reason(location)


# A Rust Duration as the store client prints it: `2.001358017s`, `850.2ms`, `12µs`.
_RAN_FOR = re.compile(r"(?:\bin |elapsed: )(\d+(?:\.\d+)?)(ns|µs|us|ms|s)\b")
_UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def _duration(number: str, unit: str) -> float:
    return float(number) * _UNITS[unit]


def request_timeout(location: Location) -> float | None:
    """The per-request limit of the location's store client in seconds (its `timeout` option, set from
    `[storage] timeout_seconds` unless the database's own `storage_options` name one); None if unknown."""
    own = location.storage_options.get("timeout", "")
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ns|µs|us|ms|s|min|m|h)?\s*", own)
    return _duration(found.group(1), found.group(2) or "s") if found else location.timeout_seconds


def stalled_reason(location: Location | None) -> str:
    """A store that stopped answering: the request timeout in force and the setting that changes it."""
    seconds = location.timeout_seconds if location is not None else None
    if location is None or seconds is None:
        return f"{_STALLED}; {STORAGE_TIMEOUT_HINT}"
    own = location.storage_options.get("timeout", f"{seconds:g}s")
    if own != f"{seconds:g}s":  # the database's own storage_options won over the setting
        return (
            f"the storage did not answer within its storage_options timeout ({own}); "
            "check the store, or raise it"
        )
    return f"the storage did not answer within {seconds:g} s; {STORAGE_TIMEOUT_HINT}"


def plain_first_line(exc: BaseException) -> str:
    """The first line of LanceDB's message without the Rust source locations it adds (`scanner.rs:834:33`)."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return re.sub(r",?\s*[\w/.-]+\.rs:\d+:\d+", "", first)[:300]


def is_missing_file(exc: BaseException | None) -> bool:
    """Whether a read failed because a data file is gone: a `vacuum` removed the version it was reading."""
    text = str(exc)
    return isinstance(exc, FileNotFoundError) or ("Not found" in text and ".lance" in text)


def is_read_failure(exc: BaseException) -> bool:
    """Whether LanceDB's exception is the store failing a read (I/O, a file gone), not bad input."""
    return isinstance(exc, OSError) or "LanceError(IO)" in str(exc) or is_missing_file(exc)


def _open_committed(conn: DBConnection, name: str) -> Table | None:
    """A listed table, or None when its creation never committed a version (a full disk, a kill).

    Such a folder holds no data; creating the table again (`create_side_table`) makes it whole.
    """
    try:
        return conn.open_table(name)
    except ValueError as exc:
        if "was not found" not in str(exc):
            raise
        return None


def storage_failure(where: Location | str, what: str, exc: BaseException) -> DatabaseError:
    """One line for a storage call that failed: `database 'x' cannot be written: the disk is full`.

    `where` is the database's location (its name alone for a local lock file, which cannot stall).
    """
    if isinstance(where, str):
        return DatabaseError(f"database '{where}' {what}: {failure_reason(exc)}")
    return DatabaseError(f"database '{where.name}' {what}: {failure_reason(exc, where)}")


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
