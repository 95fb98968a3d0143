"""One database's candidates: each scored by similarity and BM25, within the documents a filter picks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import numpy as np
import pytest

from haiku_cli.search.candidates import Candidate, CandidateQuery, candidates_of, find_candidates, show
from haiku_cli.search.lookups import Reads, Unbounded
from haiku_cli.store.database import Database
from haiku_cli.store.document_writes import write_documents
from tests.support.single_chunks import one_chunk_write, single_chunk_database

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
    return sorted((c.text, c.similarity, c.bm25, c.search_terms) for c in found)


@pytest.mark.parametrize("document_filter", [None, "title IN ('d0', 'd4')"])
def test_a_hybrid_lookup_scores_every_candidate_both_ways(db: Database, document_filter) -> None:
    found = _found(db, query="sediment tide", search_type="hybrid", document_filter=document_filter)
    assert any(bm25 for _, _, bm25, _ in found) and all(sim is not None for _, sim, _, _ in found)
    assert all(terms for _, _, bm25, terms in found if bm25 is not None)  # stored with each row
    if document_filter:
        assert {text for text, *_ in found} <= {TEXTS[0], TEXTS[4]}


def test_a_filter_no_document_matches_finds_nothing(db: Database) -> None:
    assert _found(db, query="sediment", search_type="hybrid", document_filter="title = 'nope'") == []


def _lean(db: Database, query: str) -> list[Candidate]:
    asked = CandidateQuery(query, None, "fts", k=5, lean=True)
    _, (found,) = anyio.run(lambda: candidates_of(Reads(Unbounded()), [db], asked))
    return found


def test_lean_candidates_are_shown_as_a_full_read_shows_them(db: Database) -> None:
    lean = _lean(db, "sediment tide river")
    assert lean and all(c.text == "" and c.row_id is not None for c in lean)
    shown = anyio.run(lambda: show(Reads(Unbounded()), [db], lean))
    full = find_candidates(db, query="sediment tide river", query_vector=None, search_type="fts", k=5)
    assert [vars(c) | {"row_id": None} for c in shown] == [vars(c) for c in full]


def test_lean_candidates_found_before_a_compaction_are_shown_by_id(tmp_path: Path) -> None:
    # A row id says where a row sits in one table version: a handle that another search moved on to a
    # compacted version (or one without a deleted chunk) must not show other rows in their place.
    path = tmp_path / "t.lancedb"
    db = single_chunk_database(path, TEXTS[:2], [[1.0, 0.0]] * 2)
    for i, text in enumerate(TEXTS[2:], start=2):  # one data file per write
        write_documents(db, [one_chunk_write(f"d{i}", text, [1.0, 0.0])])
    lean = _lean(db, "sediment tide river silt")
    assert len({c.row_id for c in lean}) == len(lean) >= 4
    gone = next(c for c in lean if c.chunk_id != lean[0].chunk_id)
    db.chunks.delete(f"id = '{gone.chunk_id}'")
    dataset = db.chunks.to_lance()
    dataset.optimize.compact_files()
    db.chunks.checkout_latest()
    shown = anyio.run(lambda: show(Reads(Unbounded()), [db], lean))
    texts = {r["id"]: r["text"] for r in db.chunks.search().select(["id", "text"]).to_list()}
    assert [c.chunk_id for c in shown] == [c.chunk_id for c in lean if c is not gone]
    assert all(c.text == texts[c.chunk_id] for c in shown)


def test_a_command_that_searches_once_does_not_import_lance(db: Database) -> None:
    # Importing Lance costs a command ~22 ms, which its cheaper take repays only over several searches.
    script = f"""
import sys, anyio, numpy as np
from haiku_cli.databases import fanout
from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.selection import Selection
from haiku_cli.store import Location
pool, selection = DatabasePool(), Selection((Location("t", {str(db.location.uri)!r}),))
async def embed(query):
    return np.full(8, 1 / np.sqrt(8), dtype=np.float32)
for _ in range(2):
    hits = anyio.run(lambda: fanout.search_set(pool, selection, "sediment", embed_query=embed, limit=2))
    print(len(hits), "lance" in sys.modules)
"""
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert ran.stdout.split("\n")[:2] == ["2 False", "2 True"]
