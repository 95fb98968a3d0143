"""A database's lookups give the same candidates through LanceDB's async table and its sync API."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from haiku_cli.search import lookups
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
def test_sync_fallback_finds_what_the_async_path_finds(db: Database, monkeypatch, document_filter) -> None:
    kwargs = {"query": "sediment tide", "search_type": "hybrid", "document_filter": document_filter}
    assert lookups.async_table(db.chunks) is not None  # this LanceDB has the async table: the fast path ran
    fast = _found(db, **kwargs)
    monkeypatch.setattr(lookups, "async_table", lambda table: None)  # as with a LanceDB without it
    assert _found(db, **kwargs) == fast
    assert any(bm25 for _, _, bm25, _ in fast) and all(sim is not None for _, sim, _, _ in fast)
    if document_filter:
        assert {text for text, *_ in fast} <= {TEXTS[0], TEXTS[4]}
