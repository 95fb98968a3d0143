"""Database upkeep: size and version facts, compaction and old-version cleanup."""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from haiku_cli.errors import DatabaseError, HaikuError, Hint
from haiku_cli.store import schema
from haiku_cli.store.blocking import wait
from haiku_cli.store.database import PENDING_WRITE, Database
from haiku_cli.store.facts import CORPUS_TOTALS as CORPUS_TOTALS
from haiku_cli.store.facts import DatabaseInfo as DatabaseInfo
from haiku_cli.store.facts import TableVersion as TableVersion
from haiku_cli.store.facts import corpus_totals as corpus_totals
from haiku_cli.store.facts import count_totals, dir_size
from haiku_cli.store.facts import database_info as database_info
from haiku_cli.store.facts import history as history
from haiku_cli.store.failures import failure_reason
from haiku_cli.store.heap import release_freed, return_large_buffers
from haiku_cli.store.indexes import (
    DOCUMENT_KEYS,
    analyze,
    lance_dataset,
    refresh_indexes,
    refresh_keys,
)
from haiku_cli.store.picture_table import drop_orphans
from haiku_cli.store.reads import rows_where
from haiku_cli.store.tag_records import drop_stray_chunk_tables
from haiku_cli.store.transaction import storage_errors
from haiku_cli.store.writer_lock import checkpoint, ensure_held, exclusive

if TYPE_CHECKING:
    from lancedb.table import Table

# A version is removed automatically once it has been superseded for this long: a reader that opened
# it (or the snapshot before an unfinished write) within that time can still finish reading it.
KEEP_SUPERSEDED = timedelta(hours=1)
# But a burst of writes (a script adding notes one by one) would pile up an hour of versions, each with
# its own copy of the rewritten indexes: past this many versions of a table the oldest go as soon as
# they have been superseded for READER_GRACE, longer than any one search or write takes.
MAX_VERSIONS = 20
READER_GRACE = timedelta(minutes=2)
_NEVER = timedelta(days=36500)


def after_write(db: Database) -> None:
    """Bring the indexes up to date after a finished write, and drop versions nothing can need any more.

    Inside an all-or-nothing write this waits for the outermost write to finish: one refresh per
    command, not one per batch, so a large add leaves one new index segment, not hundreds.
    """
    if db.in_write:
        return
    return_large_buffers()
    with exclusive(db):
        checkpoint("committed")
        try:
            release_freed()  # what the write left, before the indexes take theirs
            refresh_indexes(db.chunks)
            refresh_keys(db.documents, DOCUMENT_KEYS)
            cleanup_superseded(db)
            _store_corpus_totals(db)
        except HaikuError:
            raise
        except Exception as exc:
            # The write itself is committed and read as it is (unindexed rows are searched directly):
            # saying the command failed would have it retried; what is left is the upkeep.
            raise DatabaseError(
                f"database '{db.name}': the write was stored, but the index upkeep after it failed: "
                f"{failure_reason(exc, db.location)}",
                hint=Hint("finish_upkeep", db.name, db.location.chosen_by),
            ) from exc


def _store_corpus_totals(db: Database) -> None:
    # Keyed by table and version: a later write, or its undoing, makes it stale, never wrong.
    stored = json.loads(db.meta.get(CORPUS_TOTALS) or "{}")
    known = stored.get("fragments", {}) if stored.get("table") == db.chunks_table_name else {}
    fragments = _fragment_totals(db.chunks, known)
    if fragments is None:
        chunks, tokens = wait(count_totals(db))
    else:
        chunks, tokens = sum(f[0] for f in fragments.values()), sum(f[1] for f in fragments.values())
    totals = {"table": db.chunks_table_name, "version": db.chunks.version, "chunks": chunks, "tokens": tokens}
    if fragments is not None:
        totals["fragments"] = fragments
    db.set_meta(CORPUS_TOTALS, json.dumps(totals))


def _fragment_totals(chunks: Table, known: dict[str, list[int]]) -> dict[str, list[int]] | None:
    """Rows and index terms in each of the table's fragments (files), counted only for those not `known`.

    Summing the whole column costs each write time proportional to the table (30 ms at 100k chunks).
    A Lance fragment never changes in place: new rows come as new fragments, deletions as a new
    deletion file, compaction as new fragments; so its description (data files and deletion file)
    names its rows exactly, and the totals counted under that description still hold. None without Lance.
    """
    try:
        dataset = lance_dataset(chunks)  # at the table's version
        if dataset is None:
            return None
        out = {}
        for fragment in dataset.get_fragments():
            description = json.dumps(fragment.metadata.to_json(), sort_keys=True).encode()
            key = hashlib.sha256(description).hexdigest()[:32]
            if key in known:
                out[key] = known[key]
            else:
                lengths = fragment.to_table(columns=["search_tokens"]).column("search_tokens")
                out[key] = [len(lengths), int(pc.sum(lengths).as_py() or 0)]
        return out
    except Exception:  # a Lance release that describes fragments otherwise: the whole column is summed
        return None


def cleanup_superseded(db: Database, keep: timedelta = KEEP_SUPERSEDED) -> None:
    """Remove the files of versions superseded longer than `keep` ago, or, past `MAX_VERSIONS`, longer
    than `READER_GRACE` ago (never while a write is pending: undoing it needs the versions before it)."""
    if PENDING_WRITE in db.meta:
        return  # undoing that write needs the versions its journal names
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for table in (db.documents, db.chunks, db.meta_table, *db.side_tables().values()):
            older_than = _superseded_cutoff(table, keep)
            if older_than is not None:
                _drop_versions(table, older_than)


def _tables(db: Database) -> list[Table]:
    """Every table of the database (the pictures table once a picture was stored)."""
    return [db.documents, db.chunks, db.meta_table, *([db.pictures] if db.pictures is not None else [])]


def _drop_versions(table: Table, older_than: timedelta) -> None:
    # Through Lance only the old versions' files go; LanceDB's optimize would compact the table too
    # (a rewrite of every small file, which `refresh_keys` does only once they pile up).
    try:
        dataset = lance_dataset(table)
        if dataset is not None:
            # Tagged versions stay (see store/tags.py); Lance would otherwise refuse the whole cleanup.
            dataset.cleanup_old_versions(older_than=older_than, error_if_tagged_old_versions=False)
            return
    except Exception:  # a Lance that refuses: LanceDB's own way below
        pass
    finally:
        table.checkout_latest()
    table.optimize(cleanup_older_than=older_than)


def _superseded_cutoff(table: Table, keep: timedelta) -> timedelta | None:
    # Versions are stamped when written, so a version's end of life is its successor's stamp: cut at
    # the newest successor stamp old enough, which removes exactly the versions before it.
    stamps = sorted(v["timestamp"] for v in table.list_versions())
    now = datetime.now(tz=stamps[-1].tzinfo) if stamps else datetime.now()
    successors = stamps[1:]
    expired = [t for t in successors if now - t >= keep]
    excess = len(stamps) - MAX_VERSIONS
    if excess > 0:
        grace = min(keep, READER_GRACE)
        expired += [t for t in successors[:excess] if now - t >= grace]
    # A margin: the clock moves on before the cleanup runs, and the version cut at must stay.
    return now - max(expired) + timedelta(milliseconds=100) if expired else None


def vacuum(
    db: Database, place: Callable[[Database], int] | None = None
) -> tuple[int | None, int | None, bool, int]:
    """Merge index segments, compact files, drop every old version and bring an older layout up to date
    (and drop the pictures of documents an older haiku deleted). `place`, given, says where chunks
    written before schema 3 stand (re-reading text is the ingest layer's); it returns how many it placed.

    Every step checks first that this writer still holds the database (an object-store lease may
    lapse during a long vacuum), and old versions go last, after every commit of the vacuum: a reader
    whose version was removed catches up once, to versions that stay. Returns the size before and
    after, whether the layout was upgraded, and how many chunks were placed.
    """
    path = db.location.local_path
    before = dir_size(path) if path is not None else None
    with exclusive(db), warnings.catch_warnings(), storage_errors(db, "cannot be vacuumed"):
        # Dropping old versions is what vacuum is for; LanceDB warns about it to other callers.
        warnings.simplefilter("ignore", UserWarning)
        upgraded = upgrade_layout(db)
        ensure_held(db)
        # Before the upkeep below: the replaced span columns' files are compacted with the rest.
        placed = place(db) if place is not None else 0
        ensure_held(db)
        drop_orphans(db)
        drop_stray_chunk_tables(db)
        ensure_held(db)
        refresh_indexes(db.chunks, merge_all=True)
        ensure_held(db)
        refresh_keys(db.documents, DOCUMENT_KEYS, merge_all=True)
        side = list(db.side_tables().values())
        # The meta table is not compacted: it holds a few rows, and Lance drops a file once every row
        # in it is replaced, while compacting it beside the lease's heartbeat would conflict with it.
        for table in (db.documents, db.chunks, *side):
            ensure_held(db)
            # Compaction and index upkeep, removing no version: LanceDB's default (a week) would fail on
            # a tagged one, which only `_drop_old_versions` knows to keep.
            table.optimize(cleanup_older_than=_NEVER)
        for table in (db.documents, db.chunks, db.meta_table, *side):
            ensure_held(db)
            _drop_old_versions(db, table)
    after = dir_size(path) if path is not None else None
    return before, after, upgraded, placed


def _drop_old_versions(db: Database, table: Table) -> None:
    """Remove every version but the latest, and the files of failed writes.

    Files no version names may be a commit still on its way (the lease's heartbeat on the meta table,
    or a writer that has not yet noticed its lease lapsed): they are only removed where no other writer
    can exist, a local database under its lock; on an object store Lance removes them after 7 days.
    """
    unverified = db.location.local_path is not None
    try:
        dataset = lance_dataset(table)
        if dataset is not None:
            dataset.cleanup_old_versions(
                older_than=timedelta(0), delete_unverified=unverified, error_if_tagged_old_versions=False
            )
            return
    except Exception:  # a Lance that refuses: LanceDB's own way below
        pass
    finally:
        table.checkout_latest()
    table.optimize(cleanup_older_than=timedelta(0), delete_unverified=unverified)


def upgrade_layout(db: Database) -> bool:
    """Bring the chunks table to this haiku's layout in place: copy each document's uri, title and
    metadata into its chunk rows (schema 1 to 2), add the columns saying where each chunk stands,
    empty (2 to 3: `vacuum`'s `place` fills them in where the chunks' text is found), and each chunk's
    index terms (3 to 4).

    Nothing is re-embedded and chunk ids stay (saved citations still resolve); `rebuild` upgrades too,
    by re-embedding everything. False when there is nothing to do or no Lance to do it with.
    """
    if db.chunks_carry_documents and db.chunks_carry_spans and db.chunks_carry_terms:
        return False
    dataset = lance_dataset(db.chunks)
    if dataset is None:
        return False
    ensure_held(db)
    # The version first: from here an older haiku refuses the database rather than write chunk rows
    # without the new columns; a crash before they are added leaves a database read as the older
    # layout it still has (the columns are looked at, not the version) until the next vacuum.
    db.set_meta("schema_version", str(schema.SCHEMA_VERSION))
    if not db.chunks_carry_documents:
        fields = wait(rows_where(db, db.documents, None, ["id", *schema.DOCUMENT_FIELDS]))
        fields = fields.rename_columns(["document_id", *schema.DOCUMENT_FIELDS.values()])
        # One commit adding the three columns beside the existing data files: row addresses, and so
        # the indexes, stay as they are.
        dataset.merge(fields, left_on="document_id", right_on="document_id")
    if not set(schema.SPAN_FIELDS) & set(dataset.schema.names):
        dataset.add_columns(schema.span_fields())  # all null: a change of metadata only
    if schema.TERMS_FIELD not in dataset.schema.names:
        texts = dataset.to_table(columns=["id", "search_text"])
        terms = []
        for start in range(0, texts.num_rows, _ANALYZED_AT_ONCE):
            batch = texts.column("search_text").slice(start, _ANALYZED_AT_ONCE).to_pylist()
            terms += [" ".join(t) for t in wait(analyze(db.chunks, [t or "" for t in batch]))]
        # One commit, beside the existing data files, as the document fields above.
        dataset.merge(
            pa.table({"id": texts.column("id"), schema.TERMS_FIELD: terms}), left_on="id", right_on="id"
        )
    db.chunks.checkout_latest()
    return True


_ANALYZED_AT_ONCE = 2_000  # search texts per analyzer call when an upgrade fills their terms
