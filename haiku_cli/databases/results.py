"""What the operations return: pydantic models whose `model_dump()` is exactly the CLI's `--json`.

Field names mean the same thing in every model: `database` is a database's label (its configured name,
or the file stem of a `--db` path), `*_id` are full ids, timestamps are ISO 8601 in UTC.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from haiku_cli.search.hits import SearchHit, SourceState
from haiku_cli.store.published import PublishInfo
from haiku_cli.store.records import ChunkRecord, DocumentRecord, DocumentSummary, PictureInfo

# Built on first use: a command validates a handful of these, and compiling every one at import costs
# a fresh command more CPU than the few it uses.
_LAZY = ConfigDict(defer_build=True)


class SearchResults(BaseModel):
    """One query's ranking over a selection, with the databases that were skipped because they are empty."""

    model_config = _LAZY

    query: str
    id: str = "1"  # the query's id: from `search --from`, its JSON id or line number; "1" for a single query
    databases: list[str]  # the databases searched, in selection order
    not_created: list[str] = Field(default_factory=list)  # configured local databases not written yet
    hits: list[SearchHit] = Field(default_factory=list)
    # What was synced (or left alone, or could not be) before searching: `search --sync`, a server started
    # with `--sync-before-search`; empty otherwise.
    notes: list[str] = Field(default_factory=list)


class DocumentList(BaseModel):
    """One page of `haiku list`: documents oldest first, and whether more exist after the page."""

    model_config = _LAZY

    database: str
    offset: int
    limit: int
    truncated: bool  # more documents match than this page holds: ask again with a larger --offset
    documents: list[DocumentSummary]


class DocumentWithChunks(BaseModel):
    """A document with its chunks, as `haiku get` shows it."""

    model_config = _LAZY

    database: str
    document: DocumentRecord
    chunks: list[ChunkRecord]
    pictures: list[PictureInfo] = Field(default_factory=list)
    source_state: SourceState = "unknown"  # as a search hit's (docs/json.md)
    source_note: str | None = None


class DeletedDocument(BaseModel):
    """What `haiku delete` removed."""

    model_config = _LAZY

    database: str
    document: DocumentSummary
    chunks: int  # how many chunks went with it
    parts: int = 0  # how many documents read out of it went with it (a mail's attachments)


class VacuumReport(BaseModel):
    """`haiku vacuum`: size on disk before and after (None for object storage), whether the database's
    older layout was upgraded to this haiku's, and how many older chunks were given their place."""

    model_config = _LAZY

    database: str
    size_bytes_before: int | None
    size_bytes_after: int | None
    upgraded_layout: bool = False
    placed_chunks: int = 0


class RebuildReport(BaseModel):
    """`haiku rebuild`: how many chunks were written (how many kept their ids), with which embedder."""

    model_config = _LAZY

    database: str
    chunks: int
    kept_chunk_ids: int = 0  # chunks that came out identical and kept their ids (saved citations resolve)
    embedder: str


class DatabaseOverview(BaseModel):
    """One row of `haiku databases`; `error` says why a database could not be read."""

    model_config = _LAZY

    database: str
    kind: str
    location: str
    read_only: bool = False
    exists: bool
    documents: int | None = None
    chunks: int | None = None
    embedder: str | None = None
    published: PublishInfo | None = None  # which publish a published copy holds (haiku publish)
    error: str | None = None
