"""Opening and creating a haiku database: a LanceDB connection with documents, chunks and meta tables."""

from __future__ import annotations

import os
import shutil
import time
from functools import partial
from typing import TYPE_CHECKING

from haiku_cli.errors import DatabaseError, Hint, InputError
from haiku_cli.store import schema
from haiku_cli.store.deadline import within_requests
from haiku_cli.store.failures import storage_failure, unanswered_failure
from haiku_cli.store.handle import (
    CHUNKS_TABLE,
    PENDING_WRITE,
    PUBLISHED,
    Database,
    EmbedderSpec,
    catch_up,
    parse_json_object,
    read_meta,
    table_names,
)
from haiku_cli.store.lance_import import import_lancedb
from haiku_cli.store.location import Location

if TYPE_CHECKING:
    from pathlib import Path

    from lancedb.db import DBConnection

# Re-exported: most of haiku reaches a database's handle through here, with `open_database`.
__all__ = [
    "CHUNKS_TABLE",
    "PENDING_WRITE",
    "Database",
    "EmbedderSpec",
    "connect",
    "exists",
    "load_driver",
    "open_database",
    "parse_json_object",
    "quiet_lance_logs",
    "read_meta",
    "storage_failure",
]


def quiet_lance_logs() -> None:
    """Keep LanceDB's Rust logging off the user's terminal unless they asked for it."""
    os.environ.setdefault("LANCEDB_LOG", "error")


def exists(location: Location) -> bool:
    """Whether a haiku database exists at the location (never creates anything).

    A local folder holding other files is refused rather than reported missing: it can never be created
    there, so "add documents first" would send the user to an add that refuses.
    """
    try:
        if written_here(location):
            return True  # a local database's meta table is there: nothing else to look at
        refuse_a_file(location)
        path = location.local_path
        if path is not None:
            _refuse_foreign_folder(location, path)
            return False
    except OSError as exc:  # a folder without read permission: the database's failure, not a usage error
        raise storage_failure(location, "cannot be read", exc) from exc
    try:
        conn = connect(location)
        return schema.META in table_names(conn)
    except DatabaseError:
        raise
    except Exception as exc:  # an unreachable store is a failure, not "missing"
        raise storage_failure(location, "cannot be reached", exc) from exc


def written_here(location: Location) -> bool:
    """Whether a local database's meta table, which marks a database as existing, is in its folder (one
    look at the folder); always False for object storage, which only a connection can tell."""
    path = location.local_path
    try:
        return path is not None and (path / f"{schema.META}.lance").is_dir()
    except OSError as exc:  # a folder without read permission
        raise storage_failure(location, "cannot be read", exc) from exc


def refuse_a_file(location: Location) -> None:
    """Refuse a local database path that is, or lies inside, a file: it can be neither read nor created."""
    path = location.local_path
    if path is None:
        return
    if path.is_file():
        raise InputError(f"database '{location.name}' at {path} is a file, not a database folder")
    # e.g. HAIKU_DATA_DIR naming a file: "does not exist yet" would lead to an add failing on an OS error.
    blocker = next((parent for parent in path.parents if parent.is_file()), None)
    if blocker is not None:
        raise InputError(f"database '{location.name}' cannot be at {path}: {blocker} is a file, not a folder")


def open_database(
    location: Location, *, create_with: EmbedderSpec | None = None, writable: bool = False
) -> Database:
    """Open a database; create it first when `create_with` is given and it does not exist yet."""
    if writable and location.read_only:
        raise DatabaseError(f"database '{location.name}' is configured read_only; it cannot be written")
    # Object storage is not listed first: opening the tables says whether they are there (one round trip
    # fewer); a local folder is looked at first, since connecting would create it.
    if (create_with is not None or location.local_path is not None) and not (
        location.seen_written or exists(location)
    ):
        if create_with is None:
            raise _not_yet(location)
        return _create_exclusively(location, create_with)
    conn = connect(location)
    try:
        tables = {n: conn.open_table(n) for n in (schema.DOCUMENTS, schema.META)}
        db = Database(location, conn, tables)
    except Exception as exc:
        if location.local_path is None and not exists(location):
            raise _not_yet(location) from None
        raise storage_failure(location, "cannot be opened", exc) from exc
    if db.schema_version > schema.SCHEMA_VERSION:
        raise DatabaseError(
            f"database '{location.name}' has schema version {db.schema_version}, newer than this haiku "
            f"supports ({schema.SCHEMA_VERSION}); upgrade haiku"
        )
    if PENDING_WRITE in db.meta:
        # A write is under way, or died half-way: read the state before it. Only a writer holding the
        # lock may undo it (store.writer_lock.exclusive), since only then is its writer provably gone.
        from haiku_cli.store.journal import read_snapshot

        read_snapshot(db)
    if PUBLISHED in db.meta:
        _read_published(db)
    return db


def _read_published(db: Database) -> None:
    from haiku_cli.store.published import read_published

    try:
        read_published(db)
    except Exception as exc:
        raise storage_failure(db.location, "cannot be read at its publish", exc) from exc


def _not_yet(location: Location) -> DatabaseError:
    return DatabaseError(
        f"database '{location.name}' does not exist yet",
        hint=Hint("add_documents", location.name, location.chosen_by),
    )


_FRESH_SECONDS = 1.0


def is_fresh(db: Database) -> bool:
    """Whether a reader's handle looked at the store so recently that `refresh_reader` would not look."""
    # A handle read at a tag never moves: its versions are the tag's, kept until the tag is deleted.
    return db.at_tag is not None or time.monotonic() - db.read_at < _FRESH_SECONDS


def refresh_reader(db: Database) -> None:
    """Bring a reader's long-lived handle up to date, as a fresh open would.

    A handle stays on the versions it opened at, which a later write's version cleanup or a `vacuum`
    may delete; a host that answers many queries (MCP, chat) must also see documents added since.
    """
    if is_fresh(db):
        return  # the queries of one command come close together: one look at the store serves them all
    catch_up(db)
    if PENDING_WRITE in db.meta:
        from haiku_cli.store.journal import read_snapshot

        read_snapshot(db)
    if PUBLISHED in db.meta:
        _read_published(db)
    db.read_at = time.monotonic()


def _create_exclusively(location: Location, spec: EmbedderSpec) -> Database:
    path = location.local_path
    if path is None:
        return _create(location, spec)
    from haiku_cli.store.writer_lock import WaitPolicy, acquire

    # Two first writers must not both create the tables: the second waits, then opens what the first made.
    made_folder = not path.is_dir()
    lock = acquire(path, location.name, WaitPolicy())
    try:
        if exists(location):
            return open_database(location)
        try:
            return _create(location, spec)
        except DatabaseError:
            # A database that could not be created (a full disk) leaves nothing behind: no half-made
            # tables (no meta table, so not a database), and no folder or lock file if it made them.
            _remove_uncreated(path, made_folder=made_folder)
            raise
    finally:
        lock.release()


def _remove_uncreated(path: Path, *, made_folder: bool) -> None:
    from haiku_cli.store.writer_lock import remove_held_lock_file

    for table in (schema.DOCUMENTS, schema.CHUNKS):
        shutil.rmtree(path / f"{table}.lance", ignore_errors=True)
    if made_folder:
        remove_held_lock_file(path, folder=True)


# What a file manager leaves in a folder it merely showed: such a folder is still empty to its user.
_DESKTOP_FILES = {".DS_Store", "Thumbs.db", "desktop.ini"}


def _refuse_foreign_folder(location: Location, path: Path) -> None:
    # A typo'd --db or config path must not scatter tables among the user's own files. A folder holding
    # only haiku's tables and lock is a database whose first write died half-way: finishing it is fine.
    from haiku_cli.store.writer_line import is_marker
    from haiku_cli.store.writer_lock import LOCK_FILE

    ours = (
        {LOCK_FILE}
        | _DESKTOP_FILES
        | {f"{t}.lance" for t in (schema.DOCUMENTS, schema.CHUNKS, schema.META, *schema.SIDE_TABLES)}
    )
    if path.is_dir() and any(
        entry.name not in ours and not is_marker(entry.name) for entry in path.iterdir()
    ):
        # Read or written, the same fix: a database's own folder, or a new or empty one to create it in.
        if location.chosen_by.startswith("--database"):
            where = f"[databases] {location.name} in the config file"
            fix = f"point {where} at a haiku database or a new or empty folder"
        else:
            fix = "give the folder of a haiku database, or a new or empty folder (e.g. --db ~/notes.lancedb)"
        raise InputError(f"{path} is an existing folder that is not a haiku database; {fix}")


def _create(location: Location, spec: EmbedderSpec) -> Database:
    try:
        conn = connect(location)
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
        raise storage_failure(location, "cannot be created", exc) from exc
    return Database(location, conn, tables)


def load_driver() -> None:
    """Import LanceDB now (seconds on a cold start), e.g. before a storage deadline starts counting."""
    quiet_lance_logs()
    import_lancedb()


# LanceDB keeps each version's manifest and the file metadata it read in a cache of up to 1 GiB per
# connection by default. A long add commits a version per batch, each manifest listing every file so far,
# so the cache grew with the square of its batches, to a multiple of what the add needs otherwise; this
# bound keeps a long add's memory flat. What a search reads of the latest version is a small part of it.
METADATA_CACHE_BYTES = 128 << 20
# The indexes' pages a search read are cached too, up to 6 GiB per connection by default: a long-lived
# server reading several databases could grow to many times the machine's memory. With `[server]
# max_open_databases`, this bound per database bounds what a server's open databases hold; a search whose
# index pages no longer fit reads them again from disk rather than growing.
INDEX_CACHE_BYTES = 512 << 20


def connect(location: Location) -> DBConnection:
    """A LanceDB connection to the database's location (no table opened; a stalled store is named so)."""
    quiet_lance_logs()
    lancedb = import_lancedb()
    # A session of its own, as LanceDB gives each connection: shared, a connection would find what
    # another read in the cache and ask the store in another order.
    session = lancedb.Session(
        index_cache_size_bytes=INDEX_CACHE_BYTES, metadata_cache_size_bytes=METADATA_CACHE_BYTES
    )

    def connected() -> DBConnection:
        options = location.storage_options or None
        return lancedb.connect(location.connect_uri, storage_options=options, session=session)

    try:
        # Connecting lists the database's folder (two requests); it only reads, so abandoning it leaves
        # nothing half-done.
        return within_requests(location, connected, _CONNECT_REQUESTS, partial(_unanswered, location))
    except DatabaseError:
        raise
    except Exception as exc:
        raise storage_failure(location, "cannot be reached", exc) from exc


_CONNECT_REQUESTS = 3  # a connect's requests (two lists) and one's worth of slack


def _unanswered(location: Location) -> DatabaseError:
    return unanswered_failure(location, "cannot be reached")
