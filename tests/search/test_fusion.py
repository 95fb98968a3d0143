"""A fan-out fuses the candidate pool one database holding the whole set would have had."""

from __future__ import annotations

from haiku_cli.search.candidates import Candidate
from haiku_cli.search.fusion import as_one_pool, fuse


def _cand(
    db: str, chunk: str, sim: float | None, bm25: float | None = None, by_vector: bool = False
) -> Candidate:
    return Candidate(
        database=db, chunk_id=chunk, document_id=chunk, text=chunk,
        similarity=sim, bm25=bm25, by_vector=by_vector,
    )  # fmt: skip


def _ranked(candidates: list[Candidate]) -> list[str]:
    return [c.chunk_id for c, _ in fuse(candidates, search_type="hybrid")]


def test_pool_keeps_the_sets_top_k_of_each_kind() -> None:
    # Each database's own top 2 vector and top 2 full-text candidates; k = 2 for the whole set.
    found = [
        _cand("a", "near", 0.90, by_vector=True),
        _cand("a", "both-local", 0.80, bm25=1.0, by_vector=True),  # in neither of the set's top 2
        _cand("a", "words", 0.20, bm25=5.0),
        _cand("b", "near-too", 0.85, bm25=0.3, by_vector=True),  # its BM25 is not in the set's top 2
        _cand("b", "words-too", 0.10, bm25=4.0),
        _cand("b", "weak", 0.10, bm25=0.5),
    ]
    assert _ranked(found)[:2] == ["words", "both-local"]  # fused as found, it would rank second
    pool = as_one_pool(found, 2)
    expected = {"near": None, "near-too": None, "words": 5.0, "words-too": 4.0}
    assert {c.chunk_id: c.bm25 for c in pool} == expected
    assert _ranked(pool) == ["words", "near", "near-too", "words-too"]


def _scores(candidates: list[Candidate], **kw) -> dict[str, float]:
    return {c.chunk_id: round(score, 6) for c, score in fuse(candidates, **kw)}


def test_hybrid_weighs_similarity_by_the_vector_weight_and_bm25_by_the_rest() -> None:
    # Each signal is divided by its best among the candidates: close scores 0.9/0.9 and 1/4, worded 0.3/0.9
    # and 4/4; a weight leaning on vectors puts the close one first, one leaning on words the worded one.
    found = [_cand("a", "close", 0.9, bm25=1.0, by_vector=True), _cand("a", "worded", 0.3, bm25=4.0)]
    assert _scores(found, search_type="hybrid", vector_weight=0.8) == {"close": 0.85, "worded": 0.466667}
    assert _scores(found, search_type="hybrid", vector_weight=0.2) == {"worded": 0.866667, "close": 0.4}
    assert _ranked(found) == ["worded", "close"]  # the default, 0.5: 0.625 against 0.666667


def test_a_negative_similarity_counts_as_unrelated_not_as_a_penalty() -> None:
    found = [_cand("a", "opposite", -0.8, bm25=2.0), _cand("a", "near", 0.5, bm25=1.0, by_vector=True)]
    # The opposite chunk keeps half its full-text score (its similarity is clamped to 0, not -1.6).
    assert _scores(found, search_type="hybrid") == {"near": 0.75, "opposite": 0.5}


def test_a_chunk_found_by_one_signal_scores_zero_on_the_other() -> None:
    found = [_cand("a", "vector-only", 0.8, by_vector=True), _cand("b", "text-only", None, bm25=3.0)]
    assert _scores(found, search_type="hybrid", vector_weight=0.6) == {"vector-only": 0.6, "text-only": 0.4}
    # Searched by one kind, a candidate the other kind found alone is not ranked at all.
    assert _scores(found, search_type="vector") == {"vector-only": 0.8}
    assert _scores(found, search_type="fts") == {"text-only": 3.0}


def test_equal_scores_rank_by_what_a_chunk_holds_not_by_the_database_holding_it() -> None:
    # Text first (the same chunk ranks alike in any database of a set); only identical copies fall back
    # to the database, then the id.
    found = [_cand("b", "x", 0.5, by_vector=True), _cand("a", "y", 0.5), _cand("c", "w", 0.5)]
    found.append(_cand("a", "x", 0.5))
    assert [(c.database, c.chunk_id) for c, _ in fuse(found, search_type="vector")] == [
        ("c", "w"),
        ("a", "x"),
        ("b", "x"),
        ("a", "y"),
    ]
