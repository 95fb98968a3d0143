"""A search result as users and agents see it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, computed_field

from haiku_cli.store.markers import picture_marks
from haiku_cli.store.records import ChunkSpan, PictureMark

# Whether a hit's source is as it was when it was read (haiku_cli.ingest.kinds.Freshness): `changed` and
# `missing` hits show text the source no longer has; `unknown`: not checked (a URL or an object, a
# document no remembered source gave) or it could not be looked at.
SourceState = Literal["fresh", "changed", "missing", "unknown"]


class SearchHit(ChunkSpan):
    """One ranked chunk, labelled with the database it came from, and where it stands in its document."""

    database: str
    document_id: str
    document_uri: str | None
    document_title: str | None
    chunk_id: str
    content: str
    score: float
    rank: int
    heading_path: list[str] = Field(default_factory=list)
    pages: list[int] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    source_state: SourceState = "unknown"
    source_note: str | None = None  # why `missing` or `unknown`, when known

    @property
    def stale(self) -> bool:
        """Whether the source changed or vanished since the hit's text was stored."""
        return self.source_state in ("changed", "missing")

    @property
    def stale_note(self) -> str | None:
        """What a reader of a stale hit should know, and what to run; None when it is not stale."""
        return stale_note(self.source_state, self.database)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pictures(self) -> list[PictureMark]:
        """The pictures the chunk covers, by their markers in its text."""
        return [PictureMark(reference=r, caption=c) for r, c in picture_marks(self.content)]


def stale_note(state: SourceState, database: str) -> str | None:
    """What a reader of text whose source is `state` should know, and what to run; None when it is not
    stale."""
    if state not in ("changed", "missing"):
        return None
    what = "changed" if state == "changed" else "was deleted or moved"
    return f"source {what} since it was indexed (stored text shown): run `haiku sync -d {database}`"


def best_per_document(hits: list[SearchHit]) -> list[SearchHit]:
    """Each document's best hit, in the order of the ranking, ranked again from 1."""
    seen: set[tuple[str, str]] = set()
    best: list[SearchHit] = []
    for hit in hits:
        key = (hit.database, hit.document_id)
        if key not in seen:
            seen.add(key)
            best.append(hit.model_copy(update={"rank": len(best) + 1}))
    return best
