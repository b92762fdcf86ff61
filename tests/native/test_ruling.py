"""The ruling: standardised log-linear pooling, calibrated never to lose to its best expert."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maitred.errors import IndexMismatchError
from maitred.native.ruling import (
    RulingWeights,
    ablation,
    calibrate,
    fuse,
    load_weights,
    mean_metrics,
    metrics,
    reciprocal_rank,
    save_weights,
    standardise,
)


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


def _brute_force(queries, gold, grid):  # type: ignore[no-untyped-def]
    """calibrate's contract, spelled out with fuse and reciprocal_rank."""
    import itertools

    names = sorted(queries[0])
    best: tuple[dict[str, float], float] = ({}, -1.0)
    for combo in itertools.product(grid, repeat=len(names)):
        if any(combo):
            w = dict(zip(names, combo, strict=True))
            pairs = zip(queries, gold, strict=True)
            mrr = float(np.mean([reciprocal_rank(fuse(q, w), g) for q, g in pairs]))
            if mrr > best[1] + 1e-9:
                best = (w, mrr)
    return best


def _queries(seed: int, n: int = 15, q: int = 12, experts: int = 3):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    gold = [{int(rng.integers(n))} for _ in range(q)]
    out = []
    for g in gold:
        row = {}
        for e in range(experts):
            v = rng.normal(size=n).astype(np.float32)
            v[next(iter(g))] += float(e)
            row[f"e{e}"] = v
        out.append(row)
    return out, gold


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_vectorised_calibration_matches_the_brute_force(seed: int) -> None:
    queries, gold = _queries(seed)
    weights, mrr = calibrate(queries, gold, grid=(0.0, 0.5, 1.0))
    _, expected_mrr = _brute_force(queries, gold, (0.0, 0.5, 1.0))
    assert abs(mrr - expected_mrr) < 1e-6
    pairs = zip(queries, gold, strict=True)
    measured = np.mean([reciprocal_rank(fuse(q, weights), g) for q, g in pairs])
    assert abs(measured - mrr) < 1e-6


def test_ruling_with_shortlist_experts_never_loses_on_validation() -> None:
    """Five experts, two of them verdict-like (read on a shortlist, the minimum elsewhere)."""
    from maitred.native.gavel import fill_shortlist

    queries, gold = _queries(7, n=30, q=20, experts=3)
    rng = np.random.default_rng(1)
    for q, g in zip(queries, gold, strict=True):
        shortlist = list(np.argsort(-q["e0"])[:5])
        for name in ("likelihood", "judgment"):
            v = rng.normal(size=5).astype(np.float32)
            v += np.array([2.0 if i in g else 0.0 for i in shortlist], np.float32)
            q[name] = fill_shortlist(v, shortlist, 30)
    _, mrr = calibrate(queries, gold)
    for name in queries[0]:
        alone = np.mean([reciprocal_rank(q[name], g) for q, g in zip(queries, gold, strict=True)])
        assert mrr >= alone - 1e-9, name


def test_ablation_reports_alone_leave_one_out_and_full() -> None:
    val, val_gold = _queries(3)
    test, test_gold = _queries(4)
    rows = ablation(val, val_gold, test, test_gold, grid=(0.0, 0.5, 1.0))
    labels = [r.label for r in rows]
    assert labels == [
        "e0 alone",
        "e1 alone",
        "e2 alone",
        "without e0",
        "without e1",
        "without e2",
        "ruling",
    ]
    alone = mean_metrics([q["e2"] for q in test], test_gold)
    assert rows[2].mrr == pytest.approx(alone["mrr"]) and rows[2].weights == {"e2": 1.0}
    assert set(rows[3].weights) == {"e1", "e2"}
    full = rows[-1]
    assert full.val_mrr >= max(r.val_mrr for r in rows[:3]) - 1e-9


def test_metrics_of_one_query() -> None:
    s = np.array([0.1, 0.9, 0.5, 0.2, 0.3, 0.0], np.float32)
    assert metrics(s, {1}) == {"hit_at_1": 1.0, "recall_at_5": 1.0, "mrr": 1.0}
    assert metrics(s, {5, 2}) == {"hit_at_1": 0.0, "recall_at_5": 0.5, "mrr": 0.5}


def test_weights_file_round_trip_and_merge(tmp_path: Path) -> None:
    path = tmp_path / "ruling.json"
    assert load_weights(path, "native") is None
    a = RulingWeights("native", {"glance": 1.0, "dense": 0.5}, 10, "bb", 0.7, 80)
    b = RulingWeights("native-rerank", {"judgment": 1.0}, 10, "bb", 0.6, 80)
    save_weights(path, a)
    save_weights(path, b)
    assert load_weights(path, "native") == a and load_weights(path, "native-rerank") == b
    assert json.loads(path.read_text())["format"] == "maitred-native-ruling/1"
    path.write_text(json.dumps({"format": "other/9", "methods": {}}))
    with pytest.raises(IndexMismatchError):
        load_weights(path, "native")
