"""A published database's record: which publish a reader is on, and the table versions it names.

`haiku publish` copies a database's files to another place and then commits one meta row, `published`,
naming every table's version in that copy. The row is the publish's commit point: a reader opens the
tables at the versions it names, not at their latest, so files a later publish has copied but not yet
committed (or a publish killed half-way left behind) are never read.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from haiku_cli.store import schema
from haiku_cli.store.handle import PUBLISHED, Database

# Built on first use: a command validates a handful of these, and compiling every one at import costs
# a fresh command more CPU than the few it uses.
_LAZY = ConfigDict(defer_build=True)


class PublishInfo(BaseModel):
    """Which state of which database a published copy holds, and who published it when."""

    model_config = _LAZY

    source: str  # the name of the database it was published from
    at: datetime  # when the publish committed
    tag: str | None = None  # the tag it was published from (None: the latest state)
    haiku_version: str  # of the haiku that published it
    chunks_table: str
    versions: dict[str, int]  # table -> its version in this publish


def published_info(meta: dict[str, str]) -> PublishInfo | None:
    """The publish a database's meta names, or None for a database that was never published to."""
    text = meta.get(PUBLISHED)
    return PublishInfo.model_validate_json(text) if text else None


def read_published(db: Database) -> None:
    """Point a reader at the versions its database's publish names (a no-op for other databases)."""
    info = published_info(db.meta)
    if info is None:
        return
    if db.chunks.name != info.chunks_table:
        db.chunks = db.conn.open_table(info.chunks_table)
    db.documents.checkout(info.versions[schema.DOCUMENTS])
    db.chunks.checkout(info.versions[schema.CHUNKS])
    for side in schema.SIDE_TABLES:
        if side not in info.versions:
            db.forget_side_table(side, gone=True)
        elif (table := db.side_table(side)) is not None:
            table.checkout(info.versions[side])


def describe(info: PublishInfo) -> str:
    """The publish in a few words, as `info` and `databases` show it."""
    tag = f", tag {info.tag}" if info.tag else ""
    when = info.at.strftime("%Y-%m-%d %H:%M UTC")
    return f"{info.source} at {when}{tag}, haiku {info.haiku_version}"


def newer_than_reader(name: str, info: PublishInfo) -> str | None:
    """One line when the publish was made by a newer haiku than this one, which may not read all of it."""
    from haiku_cli import __version__

    if _version_key(info.haiku_version) <= _version_key(__version__):
        return None
    return (
        f"database '{name}' was published by haiku {info.haiku_version}, newer than this haiku "
        f"({__version__}); upgrade haiku to read all of it"
    )


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split(".")[:3])
