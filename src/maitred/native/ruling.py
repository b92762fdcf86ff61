"""The ruling: combine several experts' scores over the whole catalog into one ranking.

Each expert (the glance, and -- going beyond the paper -- maitred's dense and BM25 recall) gives
one score per skill for a query. Scores on different scales are made comparable per query by
standardising them (mean 0, spread 1 over the catalog); the ruling is then the weighted sum,
i.e. a log-linear pool (a weighted product of experts whose log-scores are the standardised
scores). Weights are calibrated on validation queries by a grid search on MRR, and the grid
always contains "one expert alone" for each expert, so on validation data the ruling is never
worse than its best single expert.

No torch here: the inputs are score vectors, so any expert can take part.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

F32 = NDArray[np.float32]


def standardise(scores: F32) -> F32:
    """Per-query z-scores (a constant vector becomes zeros)."""
    spread = float(scores.std())
    if spread == 0.0:
        return np.zeros_like(scores, dtype=np.float32)
    standard: F32 = ((scores - scores.mean()) / spread).astype(np.float32)
    return standard


def fuse(experts: Mapping[str, F32], weights: Mapping[str, float]) -> F32:
    """The ruling's scores: ``sum_e weights[e] * standardise(experts[e])``."""
    n = len(next(iter(experts.values())))
    out = np.zeros(n, dtype=np.float32)
    for name, weight in weights.items():
        if weight:
            out += np.float32(weight) * standardise(experts[name])
    return out


def reciprocal_rank(scores: F32, gold: set[int]) -> float:
    """1 / rank of the best-ranked gold skill (ties broken by catalog order)."""
    order = np.argsort(-scores, kind="stable")
    for rank, row in enumerate(order, start=1):
        if int(row) in gold:
            return 1.0 / rank
    return 0.0


def calibrate(
    queries: Sequence[Mapping[str, F32]],
    gold: Sequence[set[int]],
    grid: Sequence[float] = (0.0, 0.25, 0.5, 0.75, 1.0),
) -> tuple[dict[str, float], float]:
    """The weights (one per expert, from ``grid``) with the best mean reciprocal rank.

    Returns:
        ``(weights, validation MRR)``. Weight vectors that are all zero are skipped; ties keep
        the first found, which prefers fewer experts.
    """
    names = sorted(queries[0])
    best: tuple[dict[str, float], float] = ({names[0]: 1.0}, -1.0)
    for combo in itertools.product(grid, repeat=len(names)):
        if not any(combo):
            continue
        weights = dict(zip(names, combo, strict=True))
        mrr = float(
            np.mean(
                [reciprocal_rank(fuse(q, weights), g) for q, g in zip(queries, gold, strict=True)]
            )
        )
        if mrr > best[1] + 1e-12:
            best = (weights, mrr)
    return best
