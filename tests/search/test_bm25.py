"""Set-wide BM25: chunk frequencies read off a database's own scores equal counted ones."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from haiku_cli.search import bm25
from haiku_cli.search.candidates import Candidate, CandidateQuery, candidates_of, find_candidates
from haiku_cli.search.lookups import Reads, Unbounded, VersionFacts
from haiku_cli.store.blocking import wait
from haiku_cli.store.database import Database
from haiku_cli.store.indexes import analyze
from tests.support.single_chunks import single_chunk_database, word_texts


@pytest.fixture
def db(tmp_path: Path) -> Database:
    rng = np.random.default_rng(3)
    texts = word_texts(rng, 60)
    return single_chunk_database(tmp_path / "t.lancedb", texts, [[1, 0, 0, 0]] * len(texts))


def _counted(db: Database, query: bm25.QueryTerms) -> dict[str, int]:
    """How many chunks hold each query term, counted over every chunk's analyzed text."""
    texts = db.chunks.search().select(["search_text"]).limit(1000).to_arrow().column("search_text")
    analyzed = wait(analyze(db.chunks, texts.to_pylist()))
    return {t: sum(t in terms for terms in analyzed) for t in dict.fromkeys(query.terms)}


def _analyzed(db: Database, query: str, found: list[list[Candidate]]):
    return asyncio.run(bm25.analyzed(Reads(Unbounded()), db, query, found))


@pytest.mark.parametrize(
    "query", ["flood basin silt", "tidal estuary channels and levees", "marsh marsh zebra"]
)
def test_frequencies_read_off_the_scores_equal_counted_ones(db: Database, query: str) -> None:
    found = find_candidates(
        db, query=query, query_vector=None, search_type="fts", k=100, with_search_text=True
    )
    terms, (pairs,) = _analyzed(db, query, [found])
    derived = bm25.frequencies_from_scores(
        wait(bm25.corpus_size(db, db.chunks.version)), terms.terms, pairs, exhaustive=True
    )
    assert derived == _counted(db, terms)  # every term settled, without a lookup


def test_too_few_candidates_settle_nothing_wrongly(db: Database) -> None:
    query = "flood basin silt marsh tide"
    found = find_candidates(db, query=query, query_vector=None, search_type="fts", k=3, with_search_text=True)
    terms, (pairs,) = _analyzed(db, query, [found])
    derived = bm25.frequencies_from_scores(
        wait(bm25.corpus_size(db, db.chunks.version)), terms.terms, pairs, exhaustive=False
    )
    counted = _counted(db, terms)
    assert all(derived[t] == counted[t] for t in derived)  # what is settled is right; the rest is looked up
    assert len(derived) < len(counted)


def test_one_analysis_of_several_databases_candidates_gives_each_theirs(db: Database, tmp_path: Path) -> None:
    other_texts = word_texts(np.random.default_rng(4), 25)
    other = single_chunk_database(tmp_path / "o.lancedb", other_texts, [[1, 0, 0, 0]] * len(other_texts))
    query = "flood basin silt levee"
    found = [
        find_candidates(d, query=query, query_vector=None, search_type="fts", k=k, with_search_text=True)
        for d, k in ((db, 12), (other, 5))
    ]
    _, together = _analyzed(db, query, found)
    for d, cands, analyzed in zip((db, other), found, together, strict=True):
        _, (alone,) = _analyzed(d, query, [cands])
        assert [c.chunk_id for c in analyzed.candidates] == [c.chunk_id for c in cands]
        assert analyzed.lengths.tolist() == alone.lengths.tolist()
        assert analyzed.counts.tolist() == alone.counts.tolist()
    assert [len(a.candidates) for a in together] == [12, 5]


def test_frequencies_the_scores_settle_are_kept_for_the_table_version(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bm25, "_frequency", VersionFacts(100))
    query = "flood basin silt"
    asked = CandidateQuery(query, None, "fts", 100, with_search_text=True, parts=2)
    shapes, per_db = wait(candidates_of(Reads(Unbounded()), [db], asked))
    wait(bm25.rescore_set(Reads(Unbounded()), [db], shapes, per_db, asked))
    terms = wait(bm25.query_terms(Reads(Unbounded()), db, query))
    key = (db.location.uri, db.chunks_table_name, shapes[0].version)
    # Settled from the scores (no lookup), and kept: a later query with these terms settles nothing again.
    assert {t: bm25._frequency[(*key, t)] for t in terms.terms} == _counted(db, terms)


def test_terms_counted_in_the_stored_strings_as_in_their_lists() -> None:
    """A candidate's stored terms are counted without splitting them: the same lengths and counts (a term
    repeated side by side, one a prefix or suffix of another, at either end, none at all)."""
    stored = ["", "run", "run run run", "runner run rerun run", "a run b", "run runs", "bank river bank"]
    terms = ["run", "bank", "river", "runs", "absent"]
    lengths, counts = bm25.term_counts(stored, terms)
    assert lengths.tolist() == [len(s.split()) for s in stored]
    assert counts.tolist() == [[s.split().count(t) for t in terms] for s in stored]
