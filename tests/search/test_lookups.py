"""One database's candidates: each scored by similarity and BM25, within the documents a filter picks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from haiku_cli.search.candidates import find_candidates
from haiku_cli.store.database import Database
from tests.support.single_chunks import single_chunk_database

TEXTS = [
    "Rivers carry sediment to the delta.",
    "Floods spread silt across the basin.",
    "Tides shape the estuary channels.",
    "Levees keep the river in its bank.",
    "Marshes trap sediment from the tide.",
]


@pytest.fixture
def db(tmp_path: Path) -> Database:
    vectors = np.random.default_rng(5).normal(size=(len(TEXTS), 8))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return single_chunk_database(tmp_path / "t.lancedb", TEXTS, vectors)


def _found(db: Database, **kwargs) -> list[tuple[str, float | None, float | None, str]]:
    query_vector = np.full(8, 1 / np.sqrt(8), dtype=np.float32)
    found = find_candidates(db, query_vector=query_vector, k=3, with_search_text=True, **kwargs)
    return sorted((c.text, c.similarity, c.bm25, c.search_text) for c in found)


@pytest.mark.parametrize("document_filter", [None, "title IN ('d0', 'd4')"])
def test_a_hybrid_lookup_scores_every_candidate_both_ways(db: Database, document_filter) -> None:
    found = _found(db, query="sediment tide", search_type="hybrid", document_filter=document_filter)
    assert any(bm25 for _, _, bm25, _ in found) and all(sim is not None for _, sim, _, _ in found)
    assert all(search_text for _, _, bm25, search_text in found if bm25 is not None)
    if document_filter:
        assert {text for text, *_ in found} <= {TEXTS[0], TEXTS[4]}


def test_a_filter_no_document_matches_finds_nothing(db: Database) -> None:
    assert _found(db, query="sediment", search_type="hybrid", document_filter="title = 'nope'") == []
