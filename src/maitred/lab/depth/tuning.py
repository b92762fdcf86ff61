"""Tune the baseline rules' ``k`` and thresholds on training tasks, for one ``λ``.

Every baseline exposes a prefix whose length is a monotone step function of one parameter, so
tuning is an exhaustive search over the values where the step changes:

* ``fixed_k`` -- ``k = 0..max n``;
* ``score_threshold`` / ``score_per_cost`` -- a candidate passes when its value (score, or
  score / cost) is at least ``τ``, and the rule exposes the leading run that passes; with
  ``m_i`` the running minimum of the values, the depth is ``#{i : m_i ≥ τ}``. The thresholds
  tried are the midpoints between consecutive distinct ``m_i`` over the training tasks (at most
  :data:`MAX_THRESHOLDS` of them, by quantile), plus one above and one below them all;
* ``predict_then_threshold`` -- the depth is the first ``k`` with ``p_k ≥ τ`` (``p`` is
  non-decreasing), tried at the midpoints between distinct ``p_k`` in the same way.

The winner maximises mean training payoff; ties go to the smaller mean exposure, then to the
first value tried. Nothing here sees test data.

**Sufficiency floor.** The payoff alone lets a rule give up sufficiency whenever the last
required skill costs more than it is worth -- the seed paper's reviewers' main objection. An
operator who cannot accept that passes ``floor``: only values whose mean *training* sufficiency
is at least ``floor`` are eligible, and the best payoff among them wins. (This is the
Lagrangian dual of a smaller ``λ``, chosen per rule.) When no value reaches the floor, the one
with the highest training sufficiency wins. :func:`sufficiency_floor` turns a guard below
``full``'s training sufficiency into a floor. The same selection (:func:`select`) tunes CAM-DF's
stop threshold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

import numpy as np

from maitred.depth.features import FloatArray, SufficiencyModel
from maitred.depth.payoff import DepthTask, select, sufficiency
from maitred.depth.rules import (
    DepthRule,
    ExposeAll,
    FixedK,
    PredictThenThreshold,
    ScorePerCost,
    ScoreThreshold,
)
from maitred.errors import ConfigError

MAX_THRESHOLDS: Final = 1500
"""The most threshold values tried per rule (quantiles of the midpoints beyond that)."""


def _candidates(values: FloatArray) -> FloatArray:
    distinct = np.unique(values[np.isfinite(values)])
    if len(distinct) == 0:
        return np.array([0.0])
    mids = (distinct[1:] + distinct[:-1]) / 2
    if len(mids) > MAX_THRESHOLDS:
        mids = np.quantile(mids, np.linspace(0, 1, MAX_THRESHOLDS))
    return np.concatenate(([distinct[0] - 1.0], mids, [distinct[-1] + 1.0]))


def sufficiency_floor(tasks: Sequence[DepthTask], guard: float | None) -> float | None:
    """``full``'s mean training sufficiency minus ``guard`` (``None``: no floor).

    Raises:
        ConfigError: ``guard`` is negative.
    """
    if guard is None:
        return None
    if guard < 0:
        raise ConfigError(f"the sufficiency guard must be >= 0, got {guard}")
    full = [float(sufficiency(t)[t.n]) for t in tasks]
    return (float(np.mean(full)) if full else 1.0) - guard


def _leading_run_threshold(
    tasks: Sequence[DepthTask],
    lam: float,
    value: Callable[[DepthTask], FloatArray],
    floor: float | None,
) -> float:
    running_min = [np.minimum.accumulate(value(t)) if t.n else np.zeros(0) for t in tasks]
    # depth(τ) = #{i : m_i ≥ τ}; m is non-increasing, so count via a sorted copy
    ascending = [m[::-1] for m in running_min]

    def depths(tau: float) -> list[int]:
        return [len(a) - int(np.searchsorted(a, tau, side="left")) for a in ascending]

    pool = np.concatenate(running_min) if running_min else np.zeros(0)
    return select(tasks, lam, [float(v) for v in _candidates(pool)], depths, floor=floor)


def tune_fixed_k(tasks: Sequence[DepthTask], lam: float, floor: float | None = None) -> FixedK:
    """The ``k`` with the best mean training payoff."""
    longest = max((t.n for t in tasks), default=0)
    k = select(
        tasks, lam, list(range(longest + 1)), lambda k: [min(k, t.n) for t in tasks], floor=floor
    )
    return FixedK(k)


def tune_score_threshold(
    tasks: Sequence[DepthTask], lam: float, floor: float | None = None
) -> ScoreThreshold:
    """The score threshold with the best mean training payoff."""
    return ScoreThreshold(_leading_run_threshold(tasks, lam, lambda t: t.scores, floor))


def tune_score_per_cost(
    tasks: Sequence[DepthTask], lam: float, floor: float | None = None
) -> ScorePerCost:
    """The score-per-cost threshold with the best mean training payoff."""
    tau = _leading_run_threshold(tasks, lam, lambda t: t.scores / np.maximum(t.costs, 1e-9), floor)
    return ScorePerCost(tau)


def tune_predict_then_threshold(
    tasks: Sequence[DepthTask], lam: float, suff: SufficiencyModel, floor: float | None = None
) -> PredictThenThreshold:
    """The sufficiency threshold with the best mean training payoff."""
    estimates = [suff.estimate(t.scores) for t in tasks]

    def depths(tau: float) -> list[int]:
        return [min(int(np.sum(p < tau)), len(p) - 1) for p in estimates]

    pool = np.concatenate(estimates) if estimates else np.zeros(0)
    tau = select(tasks, lam, [float(v) for v in _candidates(pool)], depths, floor=floor)
    return PredictThenThreshold(suff, tau)


def tune_baselines(
    tasks: Sequence[DepthTask],
    lam: float,
    suff: SufficiencyModel,
    floor: float | None = None,
) -> dict[str, DepthRule]:
    """``full`` and every tuned baseline, by rule name (``floor``: see the module docstring)."""
    return {
        "full": ExposeAll(),
        "fixed_k": tune_fixed_k(tasks, lam, floor),
        "score_threshold": tune_score_threshold(tasks, lam, floor),
        "predict_then_threshold": tune_predict_then_threshold(tasks, lam, suff, floor),
        "score_per_cost": tune_score_per_cost(tasks, lam, floor),
    }
