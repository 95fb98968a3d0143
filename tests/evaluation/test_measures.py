"""The measures against a hand-scored case and a second, independent implementation of trec_eval's
definitions; the paired tests against exact enumeration."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from haiku_cli.evaluation.documents import relevant_lines
from haiku_cli.evaluation.measures import ndcg_at, score
from haiku_cli.evaluation.significance import permutation_test, sign_test


def test_a_hand_scored_ranking() -> None:
    grades = {"a": 2.0, "b": 1.0, "c": 1.0, "d": 1.0}
    got = score(["a", "x", "b", "y", "c"], grades, k=5)
    # Gains 2, 0, 1, 0, 1 at ranks 1..5 over the ideal 2, 1, 1, 1; log2(rank + 1) discounts.
    dcg = 2 / 1 + 1 / 2 + 1 / math.log2(6)
    ideal = 2 / 1 + 1 / math.log2(3) + 1 / 2 + 1 / math.log2(5)
    assert got.ndcg == pytest.approx(dcg / ideal) and got.ndcg == pytest.approx(0.81055, abs=1e-5)
    assert got.rr == 1.0 and got.recall == 3 / 4 and got.hit
    later = score(["x", "y", "b", "a"], grades, k=2)
    assert later.rr == 1 / 3 and later.recall == 0 and not later.hit
    assert later.ndcg == pytest.approx((1 / 2 + 2 / math.log2(5)) / ideal)
    # A relevant item past rank 10 counts for recall@k but not for nDCG@10 or MRR@10.
    deep = score([f"x{i}" for i in range(10)] + ["d"], grades, k=20)
    assert (deep.ndcg, deep.rr, deep.recall, deep.hit) == (0.0, 0.0, 1 / 4, True)
    # An item retrieved twice counts once, at its best rank.
    assert score(["a", "a", "b"], grades, k=3).recall == 2 / 4


def _trec_eval(ranking: list[str], qrels: dict[str, int], k: int) -> tuple[float, float, float, bool]:
    """trec_eval's ndcg_cut.10, recip_rank over the top 10, recall.k and success.k, written out the way
    trec_eval computes them: a gain vector over ranks, an ideal vector from the judged grades."""
    gains = [qrels.get(doc, 0) for doc in ranking]
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)
    discount = [math.log(i + 2, 2) for i in range(10)]
    dcg = sum(g / discount[i] for i, g in enumerate(gains[:10]))
    idcg = sum(g / discount[i] for i, g in enumerate(ideal[:10]))
    first = [i for i, g in enumerate(gains[:10]) if g > 0]
    found = sum(1 for g in gains[:k] if g > 0)
    return dcg / idcg, (1 / (first[0] + 1) if first else 0.0), found / len(ideal), found > 0


def test_the_measures_equal_trec_evals_definitions_on_random_runs() -> None:
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(40)]
    for _ in range(300):
        qrels = {d: rng.choice([1, 1, 2, 3]) for d in rng.sample(docs, rng.randint(1, 15))}
        ranking = rng.sample(docs, rng.randint(0, 30))
        k = rng.choice([1, 5, 10, 20, 100])
        got = score(ranking, {d: float(g) for d, g in qrels.items()}, k)
        want = _trec_eval(ranking, qrels, k)
        assert (got.ndcg, got.rr, got.recall, got.hit) == pytest.approx(want, abs=1e-12)


def test_ndcg_of_a_perfect_ranking_is_one_and_of_nothing_zero() -> None:
    grades = {"a": 3.0, "b": 1.0}
    assert ndcg_at(["a", "b"], grades) == pytest.approx(1.0)
    assert ndcg_at(["b", "a"], grades) < 1.0
    assert ndcg_at([], grades) == 0.0 and ndcg_at(["a"], {}) == 0.0


def test_sign_test_by_hand() -> None:
    # 8 better, 2 worse, 1 tie: ties are left out; 2 * P(X <= 2), X ~ Binomial(10, 1/2) = 2 * 56 / 1024.
    assert sign_test([0.1] * 8 + [-0.2] * 2 + [0.0]) == pytest.approx(2 * (1 + 10 + 45) / 1024)
    assert sign_test([0.0, 0.0]) == 1.0 and sign_test([]) == 1.0
    assert sign_test([0.5, -0.5]) == 1.0


def test_permutation_test_approaches_the_exact_enumeration_and_is_repeatable() -> None:
    diffs = [0.3, 0.1, -0.05, 0.2, 0.25, -0.1, 0.15, 0.05]
    observed = abs(sum(diffs))
    flips = list(itertools.product((1, -1), repeat=len(diffs)))
    exact = sum(
        abs(sum(s * d for s, d in zip(signs, diffs, strict=True))) >= observed - 1e-12 for signs in flips
    )
    p = permutation_test(diffs)
    assert p == pytest.approx(exact / len(flips), abs=0.01)
    assert permutation_test(diffs) == p  # seeded: the same questions give the same p
    assert permutation_test([0.0] * 5) == 1.0 and permutation_test([]) == 1.0


def test_a_chunk_answers_when_it_overlaps_the_judged_lines() -> None:
    assert relevant_lines(None, None, None)  # no lines judged: every chunk of the document
    assert relevant_lines([(10, 20)], 18, 30) and relevant_lines([(10, 20)], 1, 10)
    assert not relevant_lines([(10, 20)], 21, 30) and not relevant_lines([(10, 20)], None, None)
