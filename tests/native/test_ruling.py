"""The ruling: standardised log-linear pooling, calibrated never to lose to its best expert."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from maitred.native.ruling import calibrate, fuse, reciprocal_rank, standardise


def test_standardise_and_fuse() -> None:
    a = np.array([1.0, 2.0, 3.0], np.float32)
    assert np.allclose(standardise(a).mean(), 0) and np.isclose(standardise(a).std(), 1)
    assert np.all(standardise(np.ones(3, np.float32)) == 0)
    fused = fuse({"x": a, "y": a * 100}, {"x": 1.0, "y": 1.0})
    assert np.allclose(fused, 2 * standardise(a))  # scale no longer matters


def test_reciprocal_rank() -> None:
    s = np.array([0.1, 0.9, 0.5], np.float32)
    assert reciprocal_rank(s, {1}) == 1.0 and reciprocal_rank(s, {0}) == 1 / 3
    assert reciprocal_rank(s, set()) == 0.0


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_calibrated_ruling_never_loses_to_its_best_expert_on_validation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, q = 12, 15
    gold = [{int(rng.integers(n))} for _ in range(q)]
    queries = []
    for g in gold:
        good = rng.normal(size=n).astype(np.float32)
        good[next(iter(g))] += 1.5
        queries.append({"a": good, "b": rng.normal(size=n).astype(np.float32)})
    weights, mrr = calibrate(queries, gold)
    for expert in ("a", "b"):
        alone = np.mean(
            [reciprocal_rank(qs[expert], g) for qs, g in zip(queries, gold, strict=True)]
        )
        assert mrr >= alone - 1e-9
    assert any(weights.values())
