"""Paired tests over per-query scores: is a difference between two settings more than noise?"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

PERMUTATIONS = 10_000
SEED = 0


def sign_test(differences: Sequence[float]) -> float:
    """Two-sided exact sign test: the chance of a split of wins and losses at least this uneven if each
    query were a coin toss. Ties are left out; no wins and no losses is p = 1."""
    wins = sum(1 for d in differences if d > 0)
    losses = sum(1 for d in differences if d < 0)
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def permutation_test(differences: Sequence[float], rounds: int = PERMUTATIONS, seed: int = SEED) -> float:
    """Two-sided paired permutation test on the mean difference: each query's difference keeps its size
    and takes a random sign, `rounds` times (seeded, so a run is repeatable); p counts the observed
    arrangement itself, so it is never 0."""
    if not differences:
        return 1.0
    observed = abs(sum(differences))
    rng = random.Random(seed)
    as_extreme = 0
    for _ in range(rounds):
        total = sum(d if rng.random() < 0.5 else -d for d in differences)
        if abs(total) >= observed - 1e-12:
            as_extreme += 1
    return (as_extreme + 1) / (rounds + 1)
