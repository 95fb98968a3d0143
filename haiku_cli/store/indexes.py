"""Keeping the full-text index current and adding a vector index once the table is large enough."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

from haiku_cli.store.database import Database

if TYPE_CHECKING:
    from lancedb.table import Table

# Below this many chunks an exact vector scan is fast enough (76 ms at 50k x 384 here) and exact;
# above it an IVF_HNSW_SQ index answers in a few ms at ~0.92 recall, which refinement lifts to ~0.99.
VECTOR_INDEX_MIN_ROWS = 25_000
FTS_INDEX = "text_idx"
VECTOR_INDEX = "vector_idx"


@dataclass(frozen=True)
class IndexState:
    """One index as `info` reports it."""

    name: str
    kind: str
    indexed_rows: int
    unindexed_rows: int


def create_fts_index(chunks: Table) -> None:
    """The full-text index, made with the (empty) table so its analyzer can count tokens from the start."""
    # English stemming and stop words: BM25 over raw surface forms ranks noticeably worse.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the sync wrapper is deprecated, not the index kind
        chunks.create_fts_index(
            "search_text",
            stem=True,
            remove_stop_words=True,
            ascii_folding=True,
            language="English",
            with_position=False,
            name=FTS_INDEX,
        )


def analyze(chunks: Table, text: str) -> list[str]:
    """The terms the full-text index makes of `text` (lower-cased, stemmed, stop words dropped)."""
    return [token.text for token in chunks.tokenize(text, index_name=FTS_INDEX)]


def refresh_indexes(chunks: Table) -> None:
    """Fold newly written rows into the indexes; add a vector index once the table is large enough."""
    from lancedb.index import IvfHnswSq

    rows = chunks.count_rows()
    names = {i.name for i in chunks.list_indices()}
    if rows == 0:
        return
    if FTS_INDEX not in names:
        create_fts_index(chunks)
    elif any(s.unindexed_rows for s in index_states(chunks) if s.name == FTS_INDEX):
        chunks.optimize()
    if VECTOR_INDEX not in names and rows >= VECTOR_INDEX_MIN_ROWS:
        chunks.create_index(
            vector_column_name="vector", config=IvfHnswSq(distance_type="cosine"), name=VECTOR_INDEX
        )


def has_vector_index(db: Database) -> bool:
    """Whether searches go through an ANN index (and so want refinement)."""
    return any(i.name == VECTOR_INDEX for i in db.chunks.list_indices())


def index_states(chunks: Table) -> list[IndexState]:
    """Each index on a chunks table with how many rows it covers."""
    states = []
    for idx in chunks.list_indices():
        stats = chunks.index_stats(idx.name)
        states.append(
            IndexState(
                name=idx.name,
                kind=str(idx.index_type),
                indexed_rows=stats.num_indexed_rows if stats else 0,
                unindexed_rows=stats.num_unindexed_rows if stats else 0,
            )
        )
    return states
