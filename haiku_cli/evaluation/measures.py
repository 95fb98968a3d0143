"""Ranking measures, as trec_eval defines them, over one query's ranking and its judgments.

`ranking` is the retrieved items in rank order (each at most once); `grades` maps each judged relevant item
to its grade (> 0). Gains are the grades themselves (trec_eval's `ndcg_cut`: linear gains, log2(rank + 1)
discount, the ideal ranking made of the judged grades, best first); a query without a relevant item is not
scored at all, as trec_eval leaves it out of its averages.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from pydantic import BaseModel

NDCG_DEPTH = 10
MRR_DEPTH = 10
Item = TypeVar("Item", bound=Hashable)


class QueryScores(BaseModel):
    """One query's measures at one level (documents or chunks) for one search type."""

    ndcg: float  # nDCG@10
    rr: float  # reciprocal rank of the first relevant item within the top 10 (0 if none)
    recall: float  # relevant items in the top k, of all relevant items
    hit: bool  # a relevant item in the top k


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain of gains in rank order (rank 1 first)."""
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))


def ndcg_at(ranking: Sequence[Item], grades: Mapping[Item, float], depth: int = NDCG_DEPTH) -> float:
    """trec_eval's ndcg_cut.depth: DCG of the top `depth` over the ideal ranking's."""
    ideal = dcg(sorted(grades.values(), reverse=True)[:depth])
    if ideal == 0:
        return 0.0
    return dcg([grades.get(item, 0.0) for item in ranking[:depth]]) / ideal


def reciprocal_rank_at(ranking: Sequence[Item], grades: Mapping[Item, float], depth: int) -> float:
    """1 / the rank of the first relevant item in the top `depth`, else 0."""
    return next((1 / rank for rank, item in enumerate(ranking[:depth], 1) if grades.get(item, 0) > 0), 0.0)


def recall_at(ranking: Sequence[Item], grades: Mapping[Item, float], depth: int) -> float:
    """The share of relevant items found in the top `depth`."""
    relevant = {item for item, grade in grades.items() if grade > 0}
    return len(relevant.intersection(ranking[:depth])) / len(relevant) if relevant else 0.0


def score(ranking: Sequence[Item], grades: Mapping[Item, float], k: int) -> QueryScores:
    """Every measure of one ranking; recall and hits at `k`."""
    ranking = list(dict.fromkeys(ranking))  # an item counts once, at its best rank
    recall = recall_at(ranking, grades, k)
    return QueryScores(
        ndcg=ndcg_at(ranking, grades),
        rr=reciprocal_rank_at(ranking, grades, MRR_DEPTH),
        recall=recall,
        hit=recall > 0,
    )
