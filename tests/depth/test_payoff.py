"""Payoff, oracle and Δ: unit cases and hypothesis properties (oracle bound, λ monotonicity)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maitred.depth.payoff import (
    DepthTask,
    oracle_depth,
    payoff,
    prefix_payoffs,
    stop_gaps,
    sufficient_depth,
)
from maitred.depth.rules import ExposeAll, FixedK, Ranked, ScorePerCost, ScoreThreshold


def _task(costs: list[float], required: set[str], scores: list[float] | None = None) -> DepthTask:
    scores = scores or sorted((1.0 - 0.1 * i for i in range(len(costs))), reverse=True)
    cands = tuple(Ranked(f"s{i}", s, c) for i, (s, c) in enumerate(zip(scores, costs, strict=True)))
    return DepthTask("t", cands, frozenset(required))


def test_payoff_counts_sufficiency_and_cost() -> None:
    task = _task([1.0, 2.0, 3.0], {"s0", "s1"})
    assert payoff(task.candidates[:2], task.required, 0.1) == pytest.approx(1 - 0.3)
    assert payoff(task.candidates[:1], task.required, 0.1) == pytest.approx(-0.1)
    assert list(prefix_payoffs(task, 0.1)) == pytest.approx([0.0, -0.1, 0.7, 0.4])


def test_oracle_and_gaps() -> None:
    task = _task([1.0, 2.0, 3.0], {"s0", "s1"})
    assert sufficient_depth(task) == 2
    assert oracle_depth(task, 0.1) == 2
    # Δ_0 = 0 − 0.7, Δ_1 = −0.1 − 0.7, Δ_2 = 0.7 − 0.4
    assert list(stop_gaps(task, 0.1)) == pytest.approx([-0.7, -0.8, 0.3])
    assert oracle_depth(task, 1.0) == 0  # too expensive: expose nothing


def test_missing_required_skill_makes_every_prefix_insufficient() -> None:
    task = _task([1.0, 1.0], {"s0", "elsewhere"})
    assert sufficient_depth(task) is None
    assert oracle_depth(task, 0.01) == 0
    assert (stop_gaps(task, 0.01) >= 0).all()


@st.composite
def tasks(draw: st.DrawFn) -> DepthTask:
    n = draw(st.integers(0, 10))
    costs = draw(st.lists(st.floats(0.05, 5.0), min_size=n, max_size=n))
    scores = sorted(draw(st.lists(st.floats(-1.0, 1.0), min_size=n, max_size=n)), reverse=True)
    names = [f"s{i}" for i in range(n)] + ["absent"]
    required = draw(st.sets(st.sampled_from(names), min_size=1, max_size=3))
    return _task(costs, required, scores)


LAMBDAS = st.floats(0.0, 2.0)


@settings(max_examples=300, deadline=None)
@given(tasks(), LAMBDAS, st.integers(0, 12), st.floats(-1.5, 1.5), st.floats(0.0, 5.0))
def test_oracle_bounds_every_rule_on_every_task(
    task: DepthTask, lam: float, k: int, tau: float, rho: float
) -> None:
    best = prefix_payoffs(task, lam)[oracle_depth(task, lam)]
    u = prefix_payoffs(task, lam)
    for rule in (ExposeAll(), FixedK(k), ScoreThreshold(tau), ScorePerCost(rho)):
        depth = rule.choose(task.candidates)
        assert 0 <= depth <= task.n
        assert u[depth] <= best + 1e-12
        assert payoff(task.candidates[:depth], task.required, lam) == pytest.approx(u[depth])


@settings(max_examples=300, deadline=None)
@given(tasks(), LAMBDAS, LAMBDAS, st.integers(0, 10))
def test_payoff_is_monotone_in_lambda(task: DepthTask, a: float, b: float, k: int) -> None:
    lo, hi = sorted((a, b))
    k = min(k, task.n)
    # a fixed exposed set pays no more when λ grows
    assert prefix_payoffs(task, hi)[k] <= prefix_payoffs(task, lo)[k] + 1e-12
    # so does the best prefix, and it is never longer
    assert np.max(prefix_payoffs(task, hi)) <= np.max(prefix_payoffs(task, lo)) + 1e-12
    assert oracle_depth(task, hi) <= oracle_depth(task, lo)


@settings(max_examples=200, deadline=None)
@given(tasks(), LAMBDAS)
def test_stop_label_matches_oracle(task: DepthTask, lam: float) -> None:
    """The first t labelled "stop" (Δ_t ≥ 0) is exactly the oracle depth."""
    gaps = stop_gaps(task, lam)
    stops = np.flatnonzero(gaps >= 0)
    first = int(stops[0]) if len(stops) else task.n
    assert first == oracle_depth(task, lam)
