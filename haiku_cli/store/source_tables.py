"""The sources `add-src` remembers, and what each held when last read: the ground `sync` compares against.

Two side tables, created by the first add that remembers a source (older databases open unchanged):
`sources` (one row per source: its path or URL and the options it was added with) and `source_files`
(one row per document a source gave: its uri, document id, and the file's size and modification time
or the URL's ETag and Last-Modified when it was read). Both are written inside the write that adds or
removes the documents, so the three always agree.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from haiku_cli.store import schema
from haiku_cli.store.blocking import wait
from haiku_cli.store.handle import Database, parse_json_object
from haiku_cli.store.reads import in_list, rows_where, sql_string
from haiku_cli.store.records import UtcDatetime

SourceKind = Literal["folder", "file", "url"]
_TS = pa.timestamp("us", tz="UTC")
# Deletes name their rows in batches of this many ids (one SQL filter each).
DELETE_BATCH = 2000
_MEMO = "source_states_by_document"
_BY_URI = "source_states_by_uri"  # (the by-document memory it was made from, by uri)
_FOLDERS = "folder_sources"


def sources_schema() -> pa.Schema:
    """One row per remembered source; `options` is a JSON object (title, metadata, follow_symlinks, ...)."""
    return pa.schema(
        [
            pa.field("source", pa.string(), nullable=False),
            pa.field("kind", pa.string()),
            pa.field("options", pa.string()),
            pa.field("added_at", _TS),
        ]
    )


def source_files_schema() -> pa.Schema:
    """One row per document of a source, with what its file or URL looked like when it was read."""
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),  # source + "\n" + uri
            pa.field("source", pa.string(), nullable=False),
            pa.field("uri", pa.string(), nullable=False),
            pa.field("document_id", pa.string()),
            pa.field("size", pa.int64()),
            pa.field("mtime_ns", pa.int64()),
            pa.field("etag", pa.string()),
            pa.field("last_modified", pa.string()),
        ]
    )


# Built on first use: a command validates a handful of these, and compiling every one at import costs
# a fresh command more CPU than the few it uses.
_LAZY = ConfigDict(defer_build=True)


class RememberedSource(BaseModel):
    """A source `add-src` was given, with the options it was added with; `sync` reads it again."""

    model_config = _LAZY

    source: str  # an absolute path, or an http(s) URL
    kind: SourceKind
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    follow_symlinks: bool = False
    include: list[str] = Field(default_factory=list)  # --include/--exclude globs picking a folder's files
    exclude: list[str] = Field(default_factory=list)
    added_at: UtcDatetime = Field(default_factory=lambda: datetime.now(UTC))


class FileState(NamedTuple):
    """What one document of a source looked like when it was read (size and mtime, or HTTP validators).

    A tuple, not a model: a sync reads one per file of a source, and 100k of them must stay cheap.
    """

    source: str
    uri: str
    document_id: str
    size: int | None = None
    mtime_ns: int | None = None
    etag: str | None = None
    last_modified: str | None = None

    @property
    def key(self) -> str:
        """The row's id: a document may belong to several sources (a folder and a file in it)."""
        return f"{self.source}\n{self.uri}"


def has_sources(db: Database) -> bool:
    """Whether this database has remembered any source yet."""
    return db.side_table(schema.SOURCES) is not None


def prepare(db: Database) -> None:
    """Create the side tables if missing; a writer calls it holding the lock, before its journal."""
    from haiku_cli.store.transaction import storage_errors  # a write's: reads of the states do without

    with storage_errors(db, "cannot be written"):
        db.create_side_table(schema.SOURCES, sources_schema())
        db.create_side_table(schema.SOURCE_FILES, source_files_schema())


def read_sources(db: Database) -> list[RememberedSource]:
    """Every remembered source, in the order they were first added."""
    table = db.side_table(schema.SOURCES)
    if table is None:
        return []
    rows = wait(rows_where(db, table, None, ["source", "kind", "options", "added_at"])).to_pylist()
    out = [
        RememberedSource(
            source=r["source"], kind=r["kind"], added_at=r["added_at"], **parse_json_object(r["options"])
        )
        for r in rows
    ]
    return sorted(out, key=lambda s: (s.added_at, s.source))


def folder_sources(db: Database) -> list[str]:
    """The remembered folders (their keys), read once per database handle."""
    found: list[str] | None = db.read_memo.get(_FOLDERS)
    if found is None:
        found = [s.source for s in read_sources(db) if s.kind == "folder"] if has_sources(db) else []
        db.read_memo[_FOLDERS] = found
    return found


def remember(db: Database, sources: Sequence[RememberedSource]) -> None:
    """Store sources (a source added again takes the options given now; it keeps its first add's time)."""
    db.read_memo.pop(_FOLDERS, None)
    if not sources:
        return
    table = db.create_side_table(schema.SOURCES, sources_schema())
    known = {s.source: s for s in read_sources(db)}
    rows = []
    for s in sources:
        added_at = known[s.source].added_at if s.source in known else s.added_at
        options = s.model_dump(mode="json", exclude={"source", "kind", "added_at"})
        rows.append(
            {
                "source": s.source,
                "kind": s.kind,
                "options": json.dumps(options, ensure_ascii=False),
                "added_at": added_at,
            }
        )
    merge = table.merge_insert("source").when_matched_update_all().when_not_matched_insert_all()
    merge.execute(pa.Table.from_pylist(rows, schema=sources_schema()))


def forget(db: Database, source: str) -> None:
    """Remove a remembered source and its file states (its documents are the caller's to delete or keep)."""
    db.read_memo.pop(_MEMO, None)
    db.read_memo.pop(_FOLDERS, None)
    for name in (schema.SOURCES, schema.SOURCE_FILES):
        table = db.side_table(name)
        if table is not None:
            table.delete(f"source = {sql_string(source)}")


def file_states(db: Database, source: str | None = None, *, under: Sequence[str] = ()) -> list[FileState]:
    """The file states of one source (every source's when None); with `under`, only those of these uris
    and of the uris below them (a folder's)."""
    table = db.side_table(schema.SOURCE_FILES)
    if table is None:
        return []
    conditions = [] if source is None else [f"source = {sql_string(source)}"]
    if under:
        # LIKE's `_` and `%` match more than themselves: the exact test is made below.
        near = [f"uri = {sql_string(u)} OR uri LIKE {sql_string(u.rstrip('/') + '/%')}" for u in under]
        conditions.append("(" + " OR ".join(near) + ")")
    where = " AND ".join(conditions) or None
    columns = ["source", "uri", "document_id", "size", "mtime_ns", "etag", "last_modified"]
    found = wait(rows_where(db, table, where, columns))
    states = map(FileState._make, zip(*(found.column(c).to_pylist() for c in columns), strict=True))
    if under:
        return [s for s in states if any(_below(s.uri, u) for u in under)]
    return list(states)


async def states_of_documents(db: Database, document_ids: Sequence[str]) -> dict[str, FileState]:
    """A file state of each of these documents that a source gave (any source's: they agree on the file).

    The first call on a handle reads every state once; later ones (a daemon's, `mcp`'s, `serve`'s
    searches) take them from memory until the handle catches up with a write, so a warm search makes
    no read for them at all (benchmarks/source_freshness.py).
    """
    known = await _all_states(db)
    return {d: known[d] for d in document_ids if d in known}


async def has_file_states(db: Database) -> bool:
    """Whether any source gave a file state (from the memory `states_of_documents` keeps)."""
    return bool(await _all_states(db))


async def _all_states(db: Database) -> dict[str, FileState]:
    known: dict[str, FileState] | None = db.read_memo.get(_MEMO)
    if known is None and not db.may_have_side_table(schema.SOURCE_FILES):
        # No source was ever remembered: a search lists no tables to learn it, and its handle looks
        # at the folder again once it catches up with a write, as it reads the states again.
        known = db.read_memo[_MEMO] = {}
    if known is None:
        table = db.side_table(schema.SOURCE_FILES)
        if table is None:
            return {}
        columns = ["source", "uri", "document_id", "size", "mtime_ns", "etag", "last_modified"]
        found = await rows_where(db, table, None, columns)
        known = {}
        for state in map(FileState._make, zip(*(found.column(c).to_pylist() for c in columns), strict=True)):
            known.setdefault(state.document_id, state)
        db.read_memo[_MEMO] = known
    return known


async def states_of_uris(db: Database, uris: Iterable[str]) -> dict[str, FileState]:
    """A file state of each of these uris that a source gave (the files parts were read out of), from
    the same memory as `states_of_documents`."""
    wanted = set(uris)
    known = await _all_states(db)
    if not wanted or not known:
        return {}
    by_uri = db.read_memo.get(_BY_URI)
    if by_uri is None or by_uri[0] is not known:
        by_uri = (known, {state.uri: state for state in known.values()})
        db.read_memo[_BY_URI] = by_uri
    return {u: by_uri[1][u] for u in wanted if u in by_uri[1]}


def _below(uri: str, top: str) -> bool:
    return uri == top or uri.startswith(top.rstrip("/") + "/")


def put_file_states(db: Database, states: Iterable[FileState]) -> None:
    """Store file states, replacing those of the same source and uri."""
    db.read_memo.pop(_MEMO, None)
    rows = [{"id": s.key, **s._asdict()} for s in states]
    if not rows:
        return
    table = db.create_side_table(schema.SOURCE_FILES, source_files_schema())
    merge = table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    merge.execute(pa.Table.from_pylist(rows, schema=source_files_schema()))


def drop_file_states(db: Database, states: Iterable[FileState]) -> None:
    """Remove file states (their documents left the source)."""
    db.read_memo.pop(_MEMO, None)
    keys = [s.key for s in states]
    table = db.side_table(schema.SOURCE_FILES)
    if table is None:
        return
    for start in range(0, len(keys), DELETE_BATCH):
        table.delete(in_list("id", keys[start : start + DELETE_BATCH]))


def drop_states_of_documents(db: Database, document_ids: Sequence[str]) -> None:
    """Remove every source's file states of deleted documents (so no source still claims them)."""
    db.read_memo.pop(_MEMO, None)
    table = db.side_table(schema.SOURCE_FILES)
    if table is None or not document_ids:
        return
    for start in range(0, len(document_ids), DELETE_BATCH):
        table.delete(in_list("document_id", document_ids[start : start + DELETE_BATCH]))


def claimed(db: Database, document_ids: Iterable[str], *, besides: str) -> set[str]:
    """Which of these documents another source than `besides` also gave (they stay when it lets go)."""
    ids = list(dict.fromkeys(document_ids))
    table = db.side_table(schema.SOURCE_FILES)
    if table is None or not ids:
        return set()
    found: set[str] = set()
    for start in range(0, len(ids), DELETE_BATCH):
        where = (
            f"{in_list('document_id', ids[start : start + DELETE_BATCH])} AND source != {sql_string(besides)}"
        )
        found.update(wait(rows_where(db, table, where, ["document_id"])).column("document_id").to_pylist())
    return found
