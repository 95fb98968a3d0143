"""`haiku publish`: copy one consistent state of a database to another place, then switch readers to it.

The state is taken under the source's writer lock, or from one of its tags: every table at one version.
Each table's files at that version (Lance's `tracked_files`: data, deletion and index files, the
manifest) that the target lacks are copied, data first and each table's manifest after, so the target
never names a file it does not hold. Readers of the target read the versions its meta row `published`
names (store/published.py), so nothing copied is seen until the last step, one commit to the target's
meta table, switches them over: a reader sees the previous publish whole or this one whole. A publish
killed at any step leaves that row, and so its readers, on the previous publish; the next publish
copies what is still missing and commits.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel

from haiku_cli import __version__
from haiku_cli.errors import DatabaseError
from haiku_cli.store import schema
from haiku_cli.store.handle import CHUNKS_TABLE, PENDING_WRITE, PUBLISHED, Database, read_meta, table_names
from haiku_cli.store.object_files import folder_of
from haiku_cli.store.published import PublishInfo, published_info
from haiku_cli.store.tag_records import TAG_PREFIX
from haiku_cli.store.writer_lock import LEASE_KEY, checkpoint

if TYPE_CHECKING:
    from lancedb.db import DBConnection

    from haiku_cli.store.location import Location

_MANIFEST = "manifest"
# Meta rows that belong to the source's own writing, not to the state it publishes.
_NOT_PUBLISHED = (PENDING_WRITE, LEASE_KEY, PUBLISHED)


class PublishReport(BaseModel):
    """What `haiku publish` did: which state went where, and what it cost."""

    database: str
    to: str
    unchanged: bool  # the target already held this state: nothing was written
    files: int  # files copied
    bytes: int  # bytes copied
    published: PublishInfo


@dataclass(frozen=True)
class State:
    """One consistent state of a database: each table's name and version, and its meta rows."""

    tables: dict[str, tuple[str, int]]  # key (schema.DOCUMENTS, schema.CHUNKS, side) -> (name, version)
    meta: dict[str, str]


def state_of(db: Database) -> State:
    """The state an open handle reads (at its latest under the lock, or at a tag)."""
    tables = {
        schema.DOCUMENTS: db.documents,
        schema.CHUNKS: db.chunks,
        **db.side_tables(),
    }
    meta = {k: v for k, v in db.meta.items() if k not in _NOT_PUBLISHED and not k.startswith(TAG_PREFIX)}
    meta[CHUNKS_TABLE] = db.chunks.name
    return State({k: (t.name, t.version) for k, t in tables.items()}, meta)


def target_meta(conn: DBConnection) -> dict[str, str] | None:
    """The target's meta rows at their latest, or None when nothing was ever published there."""
    if schema.META not in table_names(conn):
        return None
    return read_meta(conn.open_table(schema.META))


def same_state(state: State, meta: dict[str, str] | None, tag: str | None) -> bool:
    """Whether the target's latest publish is this state (so publishing it again would write nothing)."""
    info = published_info(meta or {})
    if info is None or info.tag != tag:
        return False
    published = {k: v for k, v in (meta or {}).items() if k not in _NOT_PUBLISHED}
    return info.versions == {k: v for k, (_, v) in state.tables.items()} and published == state.meta


def refuse_foreign(source: str, target: Location, meta: dict[str, str] | None) -> None:
    """Refuse a target holding something other than earlier publishes of this database."""
    if meta is None:
        return
    info = published_info(meta)
    if info is None:
        raise DatabaseError(
            f"{target.uri} holds a haiku database that was not published there; publish to another place"
        )
    if info.source != source:
        raise DatabaseError(
            f"{target.uri} holds a publish of database '{info.source}'; publish '{source}' to another place"
        )


def copy_state(source: Location, target: Location, state: State) -> tuple[int, int]:
    """Copy the files of every table at its version that the target lacks; (files, bytes) copied.

    Every table's data goes before any manifest: until its manifest is there, nothing names a file.
    """
    import lance

    src, dst = folder_of(source), folder_of(target)
    manifests: list[str] = []
    files = size = 0
    for name, version in state.tables.values():
        table = f"{name}.lance"
        uri = f"{source.connect_uri.rstrip('/')}/{table}"
        dataset = lance.dataset(uri, version=version, storage_options=source.storage_options or None)
        tracked = dataset.tracked_files(min_version=version).read_all().to_pylist()
        wanted = [(f["path"], f["type"]) for f in tracked if f["version"] == version]
        present = dst.listing(table)
        for path, kind in wanted:
            if path in present:
                if kind == _MANIFEST and present[path] != src.size(f"{table}/{path}"):
                    # Versions are numbered per table: another database's version of the same number
                    # (one deleted and made again under the same name) must not be taken for this one's.
                    raise DatabaseError(
                        f"{target.uri} holds another version {version} of table {name} than database "
                        f"'{source.name}' has; publish it to another place"
                    )
                continue
            if kind == _MANIFEST:
                manifests.append(f"{table}/{path}")
                continue
            size += dst.copy_in(src, f"{table}/{path}")
            files += 1
    checkpoint("publish-data-copied")
    for manifest in manifests:
        size += dst.copy_in(src, manifest)
        files += 1
    checkpoint("publish-manifests-copied")
    return files, size


def commit_publish(
    conn: DBConnection, target_db: Database | None, state: State, source: str, tag: str | None
) -> PublishInfo:
    """Switch the target's readers to the copied state: one commit of its meta table."""
    info = PublishInfo(
        source=source,
        at=datetime.now(UTC),
        tag=tag,
        haiku_version=__version__,
        chunks_table=state.tables[schema.CHUNKS][0],
        versions={k: v for k, (_, v) in state.tables.items()},
    )
    rows = {**state.meta, PUBLISHED: info.model_dump_json()}
    if target_db is None:
        # Created last, as any database's meta table: its presence is what makes the target a database.
        conn.create_table(
            schema.META,
            data=[{"key": k, "value": v} for k, v in rows.items()],
            schema=schema.meta_schema(),
        )
        return info
    with target_db.meta_guard:
        target_db.meta_table.checkout_latest()
        merge = (
            target_db.meta_table.merge_insert("key")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete(f"key != '{LEASE_KEY}'")
        )
        merge.execute([{"key": k, "value": v} for k, v in rows.items()])
    return info
