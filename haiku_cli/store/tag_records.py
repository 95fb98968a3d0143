"""What a database's tags are, read from its meta table: below the tagging itself, so that upkeep
(`vacuum`, `rebuild`) can keep what a tag reads without importing the module that tags."""

from __future__ import annotations

import json

from pydantic import BaseModel

from haiku_cli.store import schema
from haiku_cli.store.handle import Database, table_names
from haiku_cli.store.records import UtcDatetime

TAG_PREFIX = "tag:"


class TagInfo(BaseModel):
    """One tag of a database: when it was made and the table versions it names."""

    name: str
    created_at: UtcDatetime
    chunks_table: str
    versions: dict[str, int]  # by table: documents, chunks, meta and the side tables it had then


def list_tags(db: Database) -> list[TagInfo]:
    """Every tag of the database, oldest first."""
    tags = [
        TagInfo.model_validate({"name": key[len(TAG_PREFIX) :], **json.loads(value)})
        for key, value in db.meta.items()
        if key.startswith(TAG_PREFIX)
    ]
    return sorted(tags, key=lambda t: (t.created_at, t.name))


def tagged_chunk_tables(db: Database) -> set[str]:
    """The chunks tables some tag still reads (a rebuild keeps them until their last tag goes)."""
    return {t.chunks_table for t in list_tags(db)}


def drop_stray_chunk_tables(db: Database) -> list[str]:
    """Drop the chunks tables neither live nor kept by a tag (what a killed rebuild, or a restore killed
    after its commit, leaves); the writer lock must be held. Their names."""
    live, kept = db.chunks_table_name, tagged_chunk_tables(db)
    stray = [
        name
        for name in table_names(db.conn)
        if (name == schema.CHUNKS or name.startswith(f"{schema.CHUNKS}_"))
        and name != live
        and name not in kept
    ]
    for name in stray:
        db.conn.drop_table(name)
    return stray
