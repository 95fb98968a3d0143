"""Hybrid fusion: a convex combination of normalised vector and full-text scores.

Reciprocal-rank fusion discards score magnitudes and, with this embedder, ranks below dense
retrieval alone. Following Bruch et al. (2022), each candidate gets

    score = w * sim_n + (1 - w) * bm25_n

where sim_n is the cosine similarity divided by the best similarity among the candidates and bm25_n
is BM25 divided by the best BM25 among the candidates. Both scales start at 0: BM25's theoretical
minimum, and for cosine the similarity of unrelated text under sentence embedders (negative values,
rare and meaningless here, are clamped to 0). A chunk absent from the full-text list gets BM25 0.
Normalising over the pooled candidates of every database in a fan-out keeps one scale for all.
With w = 0.5 neither signal is favoured; on CISI a wide band of weights around it ranks at least as
well as the better single signal (benchmarks/retrieval_quality.py --weights compares them).
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
    scored.sort(key=lambda cs: (-cs[1], *tie_order(cs[0])))
    return scored


def tie_order(c: Candidate) -> tuple[str, str, str, str]:
    """Where a candidate goes among equal scores: by its text, then its document's uri, so a chunk ranks
    the same whichever database of a set holds it (the database and id only part identical copies).

    A lean candidate carries no text yet: `through_ties` keeps every candidate tied at a ranking's end,
    to be ordered by this once what they show is read.
    """
    uri = c.document[0] if c.document is not None else None
    return (c.text, uri or "", c.database, c.chunk_id)


def through_ties(ranked: list[tuple[Candidate, float]], limit: int) -> list[tuple[Candidate, float]]:
    """The first `limit` of a ranking and every candidate scoring as the last of them: ties at the cut
    are settled by what the candidates hold (`tie_order`), not by where the ranking found them."""
    if len(ranked) <= limit:
        return ranked
    last = ranked[limit - 1][1]
    return ranked[:limit] + [cs for cs in ranked[limit:] if cs[1] == last]


def as_one_pool(candidates: Sequence[Candidate], k: int) -> list[Candidate]:
    """The candidates one database holding all of them would have found: its top k of each kind.

    Each database of a fan-out gives its own top k vector and top k full-text candidates; fused as they
    are, a chunk near the top of neither list of the whole set (so absent from one database's pool)
    could outrank the rest. Kept: the set's top k by similarity among the vector candidates and by BM25
    among the full-text ones; a chunk kept only for its similarity loses its BM25, as it would have none.
    """
    by_vector = [c for c in candidates if c.by_vector]
    by_text = [c for c in candidates if c.bm25 is not None]
    text_keys = _top_keys(by_text, [c.bm25 or 0.0 for c in by_text], k)
    keep = text_keys | _top_keys(by_vector, [c.similarity or 0.0 for c in by_vector], k)
    pool = [c for c in candidates if c.key in keep]
    for c in pool:
        if c.key not in text_keys:
            c.bm25 = None
    return pool


def _top_keys(candidates: Sequence[Candidate], scores: Sequence[float], k: int) -> set[tuple[str, str]]:
    pairs = zip(candidates, scores, strict=True)
    ranked = sorted(pairs, key=lambda cs: (-cs[1], *tie_order(cs[0])))
    return {c.key for c, _ in through_ties(ranked, k)}  # as one database's top k, ties and all


def _convex(candidates: Sequence[Candidate], w: float) -> list[tuple[Candidate, float]]:
    sim_max = max((_clamp(c.similarity) for c in candidates), default=0.0)
    bm25_max = max((c.bm25 or 0.0 for c in candidates), default=0.0)
    out = []
    for c in candidates:
        sim_n = _clamp(c.similarity) / sim_max if sim_max > 0 else 0.0
        bm25_n = (c.bm25 or 0.0) / bm25_max if bm25_max > 0 else 0.0
        out.append((c, w * sim_n + (1.0 - w) * bm25_n))
    return out


def _clamp(similarity: float | None) -> float:
    return max(similarity or 0.0, 0.0)
