"""Tags: a named, consistent set of one database's table versions, read back (`--at`) or restored.

A tag is recorded twice. Each table gets a Lance tag of the same name at its version, which keeps Lance's
version cleanup (ours after each write, `vacuum`'s) from ever removing it; and the meta table gets one
row naming every table's version, which is the tag's commit point: written last on creation and removed
first on deletion, so a tag that is listed always names versions that are kept.
"""

from __future__ import annotations

import re
from contextlib import suppress
from datetime import UTC, datetime

from haiku_cli.errors import DatabaseError, InputError
from haiku_cli.store import schema
from haiku_cli.store.handle import CHUNKS_TABLE, Database, read_meta, table_names
from haiku_cli.store.maintenance import after_write
from haiku_cli.store.tag_records import TAG_PREFIX, TagInfo, list_tags, tagged_chunk_tables
from haiku_cli.store.transaction import atomic_write, storage_errors
from haiku_cli.store.writer_lock import checkpoint, exclusive

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# What a restore puts back from the tagged meta table: the state the tagged tables were written under.
_STATE_KEYS = ("schema_version", "embedder_name", "embedder_dimension")


def check_name(name: str) -> str:
    """The tag name, or one line saying what a tag name may hold."""
    if not _NAME.fullmatch(name):
        raise InputError(
            f"tag name {name!r} is not allowed; use letters, digits, '.', '-' and '_' (starting with a "
            "letter or digit, at most 100)",
            argument="name",
        )
    return name


def find_tag(db: Database, name: str) -> TagInfo:
    """The named tag, or one line naming the database that lacks it.

    A `DatabaseError` (exit 3) whichever command asks: `--at`, `tag delete` and `tag restore` alike, as the
    database does not hold the state asked of it (a malformed name is an input error, `check_name`).
    """
    for tag in list_tags(db):
        if tag.name == name:
            return tag
    known = ", ".join(t.name for t in list_tags(db)) or "none"
    raise DatabaseError(f"database '{db.name}' has no tag '{name}' (its tags: {known})")


def create_tag(db: Database, name: str) -> TagInfo:
    """Tag every table at its current version, under the writer lock so that no write falls between."""
    check_name(name)
    with exclusive(db), storage_errors(db, "cannot be tagged"):
        if any(t.name == name for t in list_tags(db)):
            raise InputError(
                f"database '{db.name}' already has a tag '{name}'; delete it first or pick another"
            )
        tables = {
            schema.DOCUMENTS: db.documents,
            schema.CHUNKS: db.chunks,
            **db.side_tables(),
            schema.META: db.meta_table,
        }
        versions = {key: table.version for key, table in tables.items()}
        for key, table in tables.items():
            _lance_tag(table, name, versions[key])
        tag = TagInfo(
            name=name, created_at=datetime.now(UTC), chunks_table=db.chunks_table_name, versions=versions
        )
        db.set_meta(TAG_PREFIX + name, tag.model_dump_json(exclude={"name"}))
        return tag


def _lance_tag(table, name: str, version: int) -> None:
    # A tag left by a creation that died before its meta row is moved rather than refused.
    if name in table.tags.list():
        table.tags.update(name, version)
    else:
        table.tags.create(name, version)


def delete_tag(db: Database, name: str) -> TagInfo:
    """Remove a tag: its meta row first (the tag is gone from then on), then the Lance tags it kept."""
    with exclusive(db), storage_errors(db, "cannot be changed"):
        tag = find_tag(db, name)
        db.delete_meta(TAG_PREFIX + name)
        _release(db, tag)
        return tag


def _release(db: Database, tag: TagInfo) -> None:
    present = set(table_names(db.conn))
    for key in tag.versions:
        table_name = tag.chunks_table if key == schema.CHUNKS else key
        if table_name in present:
            with suppress(Exception):  # already gone: a deletion that died half-way
                db.conn.open_table(table_name).tags.delete(tag.name)
    # A chunks table a rebuild replaced was kept for this tag alone: nothing reads it any more.
    if (
        tag.chunks_table != db.chunks_table_name
        and tag.chunks_table not in tagged_chunk_tables(db)
        and tag.chunks_table in present
    ):
        db.conn.drop_table(tag.chunks_table)


def read_at(db: Database, name: str) -> None:
    """Point an open handle at a tag's versions: it reads the database as it was, and refuses writes."""
    # A database of the set without the tag fails the command (named): never read at its latest instead.
    tag = find_tag(db, name)
    with storage_errors(db, f"cannot be read at tag '{name}'"):
        db.meta_table.checkout(tag.versions[schema.META])
        db.meta = read_meta(db.meta_table)
        db.documents.checkout(tag.versions[schema.DOCUMENTS])
        if db.chunks.name != tag.chunks_table:
            db.chunks = _open_kept(db, tag)
        db.chunks.checkout(tag.versions[schema.CHUNKS])
        for side in schema.SIDE_TABLES:
            table = db.side_table(side)
            if side not in tag.versions:
                db.forget_side_table(side, gone=True)  # made after the tag
            elif table is None:
                raise DatabaseError(f"database '{db.name}': tag '{name}' names table {side}, which is gone")
            else:
                table.checkout(tag.versions[side])
    db.at_tag = name


def _open_kept(db: Database, tag: TagInfo):
    if tag.chunks_table not in table_names(db.conn):
        raise DatabaseError(
            f"database '{db.name}': the chunks of tag '{tag.name}' are gone (a rebuild replaced them)"
        )
    return db.conn.open_table(tag.chunks_table)


def restore_tag(db: Database, name: str) -> TagInfo:
    """Make a tag's versions the latest, all-or-nothing; the tags themselves (and later ones) stay."""
    with exclusive(db):
        tag = find_tag(db, name)
        with atomic_write(db), storage_errors(db, "cannot be restored"):
            tagged_meta = db.conn.open_table(schema.META)
            tagged_meta.checkout(tag.versions[schema.META])
            state = {k: v for k, v in read_meta(tagged_meta).items() if k in _STATE_KEYS}
            db.documents.restore(tag.versions[schema.DOCUMENTS])
            for side, table in db.side_tables().items():
                if side in tag.versions:
                    table.restore(tag.versions[side])
                elif table.count_rows():
                    table.delete("true")  # made after the tag: empty then
            replaced = kept = None
            if db.chunks.name == tag.chunks_table:
                db.chunks.restore(tag.versions[schema.CHUNKS])
            else:
                # Across a rebuild: the kept table, restored, becomes live in the write's commit.
                kept = _open_kept(db, tag)
                kept.restore(tag.versions[schema.CHUNKS])
                replaced = db.chunks.name
                state[CHUNKS_TABLE] = kept.name
            # Set by the commit that removes the journal: until then readers read the state before, and a
            # writer after a kill undoes the rest.
            db.at_commit = state
        if kept is not None:
            db.chunks = kept
        checkpoint("tag-restored")
        if replaced is not None and replaced not in tagged_chunk_tables(db):
            with suppress(Exception):  # else left for the next vacuum or rebuild to drop
                db.conn.drop_table(replaced)
        after_write(db)
        return tag
