"""A fan-out fuses the candidate pool one database holding the whole set would have had."""

from __future__ import annotations

from haiku_cli.search.candidates import Candidate
from haiku_cli.search.fusion import as_one_pool, fuse


def _cand(db: str, chunk: str, sim: float, bm25: float | None = None, by_vector: bool = False) -> Candidate:
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
