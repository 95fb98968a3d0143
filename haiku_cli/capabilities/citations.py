"""Citations: chunks resolved within the covered databases, each labelled with the database it came from."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pydantic import Field, computed_field

from haiku_cli.databases.freshness import UNCHECKED, RemoteCheck, check_shown
from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.resolve import Resolution, ResolvedChunk, resolve_chunks
from haiku_cli.databases.selection import Selection
from haiku_cli.search.hits import SourceState, stale_note
from haiku_cli.store.markers import picture_marks
from haiku_cli.store.records import ChunkSpan, PictureMark


class Citation(ChunkSpan):
    """One cited chunk: its number in the answer, its database, document and text, and where the text
    stands in the document (characters, and source lines for line-based formats; None where unknown)."""

    index: int
    database: str
    document_id: str
    document_uri: str | None = None
    document_title: str | None = None
    chunk_id: str
    content: str
    pages: list[int] = Field(default_factory=list)
    source_state: SourceState = "unknown"  # as a search hit's: `changed`/`missing` cite stale text
    source_note: str | None = None

    @property
    def stale_note(self) -> str | None:
        """What a reader of a stale citation should know, and what to run; None when it is not stale."""
        return stale_note(self.source_state, self.database)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pictures(self) -> list[PictureMark]:
        """The pictures the cited chunk covers (`haiku pictures DOCUMENT_ID` writes them out)."""
        return [PictureMark(reference=r, caption=c) for r, c in picture_marks(self.content)]

    @classmethod
    def from_resolved(cls, index: int, found: ResolvedChunk) -> Citation:
        """A citation numbered `index` for a chunk resolved in exactly one database."""
        doc = found.document
        return cls(
            index=index,
            database=found.database,
            document_id=found.chunk.document_id,
            document_uri=doc.uri if doc else None,
            document_title=doc.title if doc else None,
            chunk_id=found.chunk.id,
            content=found.chunk.text,
            pages=list(found.chunk.pages),
            source_state=found.source.shown,
            source_note=found.source.note,
            **found.chunk.model_dump(include=set(ChunkSpan.model_fields)),
        )


def clean_ids(ids: Iterable[str]) -> list[str]:
    """Chunk ids as the model may write them (`[id]`, padded), normalised and de-duplicated in order."""
    cleaned = (i.strip().strip("[]").strip() for i in ids)
    return list(dict.fromkeys(i for i in cleaned if i))


async def resolve_citations(
    pool: DatabasePool, selection: Selection, ids: Sequence[str], remote: RemoteCheck | None = None
) -> Resolution[ResolvedChunk]:
    """Resolve chunk ids within the selection only (through `clients_covering`); collisions stay ambiguous.
    Each found chunk carries its source's state, looked at now (with `remote`, `--check-remote`: a URL's
    or object's asked too)."""
    resolution = await resolve_chunks(pool, selection, ids)
    found = list(resolution.found.values())
    if found:
        dbs = await pool.clients_covering(selection)
        checks = await check_shown(dbs, [(f.database, f.chunk.document_id) for f in found], remote)
        for f in found:
            f.source = checks.get((f.database, f.chunk.document_id), UNCHECKED)
    return resolution


def number_markers(answer: str, citations: Sequence[Citation]) -> str:
    """Replace `[chunk-id]` markers of cited chunks with their numbers, for models that cite by id in text."""
    by_id: dict[str, int] = {}
    for c in citations:
        by_id.setdefault(c.chunk_id, c.index)
    if not by_id:
        return answer
    pattern = re.compile(r"\[(" + "|".join(re.escape(i) for i in by_id) + r")\]")
    return pattern.sub(lambda m: f"[{by_id[m.group(1)]}]", answer)
