"""Hybrid fusion: a convex combination of normalised vector and full-text scores.

Reciprocal-rank fusion discards score magnitudes and, with this embedder, ranks below dense
retrieval alone. Following Bruch et al. (2022), each candidate gets

    score = w * sim_n + (1 - w) * bm25_n

where sim_n is the cosine similarity rescaled from its theoretical minimum (-1) to the best
similarity among the candidates, and bm25_n is BM25 divided by the best BM25 among the candidates
(BM25's theoretical minimum is 0, which is also what a chunk absent from the full-text list gets).
Normalising over the pooled candidates of every database in a fan-out keeps one scale for all.
"""

from __future__ import annotations

from collections.abc import Sequence

from haiku_cli.search.candidates import Candidate, SearchType

DEFAULT_VECTOR_WEIGHT = 0.5


def fuse(
    candidates: Sequence[Candidate], *, search_type: SearchType, vector_weight: float = DEFAULT_VECTOR_WEIGHT
) -> list[tuple[Candidate, float]]:
    """Rank candidates (possibly from several databases) by one score, best first."""
    if search_type == "vector":
        scored = [(c, c.similarity) for c in candidates if c.similarity is not None]
    elif search_type == "fts":
        scored = [(c, c.bm25) for c in candidates if c.bm25 is not None]
    else:
        scored = _convex(candidates, vector_weight)
    scored.sort(key=lambda cs: (-cs[1], cs[0].database, cs[0].chunk_id))
    return scored  # type: ignore[return-value]


def _convex(candidates: Sequence[Candidate], w: float) -> list[tuple[Candidate, float]]:
    sims = [c.similarity for c in candidates if c.similarity is not None]
    bm25s = [c.bm25 for c in candidates if c.bm25 is not None]
    sim_max = max(sims, default=1.0)
    bm25_max = max(bm25s, default=0.0)
    out = []
    for c in candidates:
        sim_n = ((c.similarity or -1.0) + 1.0) / (sim_max + 1.0) if sim_max > -1.0 else 0.0
        bm25_n = (c.bm25 or 0.0) / bm25_max if bm25_max > 0 else 0.0
        out.append((c, w * sim_n + (1.0 - w) * bm25_n))
    return out
