"""Compare depth rules on held-out tasks: payoff, exposure, sufficiency, honest intervals.

:func:`evaluate_depth` fits everything on the training tasks for one ``λ`` -- the calibrated
sufficiency model, every baseline's ``k`` or threshold (:mod:`maitred.lab.depth.tuning`), ``camdf``
and ``camdf_lite`` -- and applies each rule to every test task. Per rule it reports:

* ``payoff`` -- mean ``U(A, x)`` over test tasks;
* ``payoff_ci_vs_camdf`` -- a paired bootstrap interval (tasks resampled, the same resample for
  both rules) of ``mean(U_camdf − U_rule)``: above zero means CAM-DF is better; an interval
  that contains zero means the data cannot tell the two apart;
* ``mean_exposed`` and ``sufficiency`` (share of tasks whose exposed prefix holds ``G_x``);
* ``exposure_reduction`` -- ``1 − mean_exposed / mean_exposed(full)``;
* ``sufficiency_vs_full`` -- a TOST on the paired sufficiency differences against ``full``
  (:func:`tost`): non-inferior when the one-sided test of "worse by at least the margin" rejects.

``oracle`` is the best prefix in hindsight (it reads ``G_x``); it bounds every rule on every
task and is reported for scale, never as a deployable rule. :func:`noise_robustness` retrains on
training labels whose required-set membership was flipped and re-scores on the clean test set.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from maitred.depth.camdf import CamDFModel, CamDFRule, fit_sufficiency, tasks_hash, train_camdf
from maitred.depth.payoff import DepthTask, oracle_depth, prefix_payoffs, sufficiency
from maitred.depth.rules import DepthRule
from maitred.errors import ConfigError
from maitred.lab.depth.tuning import sufficiency_floor, tune_baselines

RULES: Final = (
    "full",
    "fixed_k",
    "score_threshold",
    "predict_then_threshold",
    "score_per_cost",
    "camdf",
    "camdf_lite",
    "oracle",
)
"""Every rule evaluated, in report order."""

BASELINES: Final = (
    "full",
    "fixed_k",
    "score_threshold",
    "predict_then_threshold",
    "score_per_cost",
)
"""The deployable rules CAM-DF is compared with."""

MARGIN: Final = 0.05
"""Non-inferiority margin on sufficiency (absolute share of tasks)."""

NOISE_RATES: Final = (0.05, 0.10)


@dataclass(frozen=True)
class Outcome:
    """One rule on a task set: per-task depth, payoff and sufficiency."""

    depths: NDArray[np.int_]
    payoffs: NDArray[np.float64]
    sufficient: NDArray[np.float64]


@dataclass(frozen=True)
class Fitted:
    """Every rule fitted on one training set for one ``λ``."""

    lam: float
    rules: dict[str, DepthRule]
    models: dict[str, CamDFModel]


def fit_rules(
    train: Sequence[DepthTask], lam: float, c: float = 1.0, *, guard: float | None = None
) -> Fitted:
    """Tune the baselines and train both CAM-DF variants on ``train``.

    ``guard``: every rule is tuned under the sufficiency floor ``full``'s training
    sufficiency minus ``guard`` (:func:`~maitred.lab.depth.tuning.sufficiency_floor`).
    """
    suff = fit_sufficiency(train)
    floor = sufficiency_floor(train, guard)
    rules = tune_baselines(train, lam, suff, floor)
    models = {
        kind: train_camdf(train, lam, kind=kind, c=c, suff=suff, floor=floor)
        for kind in ("camdf", "camdf_lite")
    }
    rules.update({kind: CamDFRule(m) for kind, m in models.items()})
    return Fitted(lam, rules, models)


def apply_rules(fitted: Fitted, tasks: Sequence[DepthTask]) -> dict[str, Outcome]:
    """Every fitted rule, and the oracle, on every task."""
    payoffs = [prefix_payoffs(t, fitted.lam) for t in tasks]
    suff = [sufficiency(t) for t in tasks]
    depths: dict[str, list[int]] = {
        name: [rule.choose(t.candidates) for t in tasks] for name, rule in fitted.rules.items()
    }
    depths["oracle"] = [oracle_depth(t, fitted.lam) for t in tasks]
    return {
        name: Outcome(
            np.array(ks, dtype=np.int_),
            np.array([u[k] for u, k in zip(payoffs, ks, strict=True)]),
            np.array([s[k] for s, k in zip(suff, ks, strict=True)]),
        )
        for name, ks in depths.items()
    }


def paired_bootstrap(
    a: NDArray[np.float64], b: NDArray[np.float64], *, n_boot: int, seed: int, level: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of ``mean(a − b)`` over ``n_boot`` resamples of the paired tasks."""
    diff = a - b
    if len(diff) == 0:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(n_boot, len(diff)))].mean(axis=1)
    tail = (1 - level) / 2
    return (float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail)))


def tost(
    x: NDArray[np.float64], ref: NDArray[np.float64], *, margin: float = MARGIN, alpha: float = 0.05
) -> dict[str, Any]:
    """Paired TOST of ``mean(x − ref)`` against ``±margin`` (t-tests on the differences).

    ``p_noninferior`` tests H0 "x is worse than ref by ``margin`` or more"; ``p_equivalence``
    is the larger of the two one-sided p-values. ``ci90`` is the matching 90% interval.
    """
    from scipy import stats

    d = x - ref
    n = len(d)
    mean = float(d.mean()) if n else 0.0
    se = float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
    if se == 0.0:
        p_lower = 0.0 if mean > -margin else 1.0
        p_upper = 0.0 if mean < margin else 1.0
        ci = (mean, mean)
    else:
        p_lower = float(1 - stats.t.cdf((mean + margin) / se, n - 1))
        p_upper = float(stats.t.cdf((mean - margin) / se, n - 1))
        half = float(stats.t.ppf(1 - alpha, n - 1)) * se
        ci = (mean - half, mean + half)
    return {
        "diff": mean,
        "margin": margin,
        "ci90": [ci[0], ci[1]],
        "p_noninferior": p_lower,
        "p_equivalence": max(p_lower, p_upper),
        "noninferior": p_lower < alpha,
    }


def rule_params(rule: DepthRule) -> dict[str, Any]:
    """The tuned numbers of a rule (``k``, ``threshold``), for the report."""
    try:
        return {
            f.name: getattr(rule, f.name)
            for f in fields(rule)  # type: ignore[arg-type]
            if isinstance(getattr(rule, f.name), (int, float)) and f.name != "name"
        }
    except TypeError:
        return {}


def summarize(
    fitted: Fitted, outcomes: Mapping[str, Outcome], *, n_boot: int, seed: int
) -> dict[str, dict[str, Any]]:
    """The per-rule report (see the module docstring for every key)."""
    cam, full = outcomes["camdf"], outcomes["full"]
    full_exposed = float(full.depths.mean()) if len(full.depths) else 0.0
    out: dict[str, dict[str, Any]] = {}
    for name in RULES:
        o = outcomes[name]
        exposed = float(o.depths.mean()) if len(o.depths) else 0.0
        lo, hi = paired_bootstrap(cam.payoffs, o.payoffs, n_boot=n_boot, seed=seed)
        rule = fitted.rules.get(name)
        out[name] = {
            "payoff": float(o.payoffs.mean()) if len(o.payoffs) else 0.0,
            "payoff_ci_vs_camdf": [lo, hi],
            "mean_exposed": exposed,
            "sufficiency": float(o.sufficient.mean()) if len(o.sufficient) else 0.0,
            "exposure_reduction": 1 - exposed / full_exposed if full_exposed else 0.0,
            "sufficiency_vs_full": tost(o.sufficient, full.sufficient),
            "params": rule_params(rule) if rule is not None else {},
        }
    return out


def best_baseline(rules: Mapping[str, Mapping[str, Any]]) -> str:
    """The baseline with the highest *test* payoff (a conservative comparison for CAM-DF)."""
    return max(BASELINES, key=lambda name: float(rules[name]["payoff"]))


def check_settings(lam: float, n_boot: int, guard: float | None = None) -> None:
    """Refuse settings that define no figure (see :func:`evaluate_depth`)."""
    if n_boot < 1:
        raise ConfigError(f"n_boot (--boot) must be at least 1 bootstrap resample, got {n_boot}")
    for name, value in (("lambda", lam), ("sufficiency guard", guard)):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise ConfigError(f"the {name} must be a finite number >= 0, got {value!r}")


def evaluate_depth(
    train: Sequence[DepthTask],
    test: Sequence[DepthTask],
    lam: float,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    noise: bool = False,
    guard: float | None = None,
) -> dict[str, Any]:
    """Fit on ``train``, score on ``test``; the ``maitred eval depth --json`` result.

    ``guard``: tune every rule under a sufficiency floor (see :func:`fit_rules`).

    Raises:
        ConfigError: ``n_boot`` below 1, or ``lam``/``guard`` not a finite number >= 0 (a
            figure computed from them would be undefined, and ``NaN`` is no JSON).
    """
    check_settings(lam, n_boot, guard)
    fitted = fit_rules(train, lam, guard=guard)
    rules = summarize(fitted, apply_rules(fitted, test), n_boot=n_boot, seed=seed)
    untuned = Fitted(lam, {"camdf": CamDFRule(replace(fitted.models["camdf"], threshold=0.5))}, {})
    plain = apply_rules(untuned, test)["camdf"]
    result: dict[str, Any] = {
        "lambda": lam,
        "n_train": len(train),
        "n_test": len(test),
        "sufficiency_guard": guard,
        "train_hash": tasks_hash(train),
        "test_hash": tasks_hash(test),
        "ci": {"of": "mean(U_camdf - U_rule)", "level": 0.95, "n_boot": n_boot, "seed": seed},
        "best_baseline": best_baseline(rules),
        "rules": rules,
        "camdf_threshold": fitted.models["camdf"].threshold,
        "camdf_lite_coefficients": dict(fitted.models["camdf_lite"].coefficients()),
        "ablation": {
            "camdf_threshold_0.5": {
                "payoff": float(plain.payoffs.mean()),
                "mean_exposed": float(plain.depths.mean()),
                "sufficiency": float(plain.sufficient.mean()),
            }
        },
    }
    if noise:
        result["noise"] = noise_robustness(train, test, lam, seed=seed, guard=guard)
    return result


def flip_required(tasks: Sequence[DepthTask], rate: float, seed: int) -> list[DepthTask]:
    """Flip each candidate's membership in ``G_x`` with probability ``rate`` (seeded).

    Only candidates in the list can flip; a required skill absent from the list stays
    required. A task whose required set empties is kept (every prefix is then sufficient).
    """
    rng = random.Random(seed)
    out = []
    for task in tasks:
        required = set(task.required)
        for cand in task.candidates:
            if rng.random() < rate:
                required ^= {cand.name}
        out.append(replace(task, required=frozenset(required)))
    return out


def noise_robustness(
    train: Sequence[DepthTask],
    test: Sequence[DepthTask],
    lam: float,
    *,
    rates: Sequence[float] = NOISE_RATES,
    seed: int = 0,
    guard: float | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """Retrain on noisy training labels; payoff/exposure/sufficiency on the *clean* test set.

    Returns ``{rate: {rule: {"payoff", "mean_exposed", "sufficiency"}}}``, rate ``"0"``
    being the clean training run, for comparison.
    """
    out: dict[str, dict[str, dict[str, float]]] = {}
    for rate in (0.0, *rates):
        noisy = flip_required(train, rate, seed) if rate else list(train)
        outcomes = apply_rules(fit_rules(noisy, lam, guard=guard), test)
        out[f"{rate:g}"] = {
            name: {
                "payoff": float(o.payoffs.mean()),
                "mean_exposed": float(o.depths.mean()),
                "sufficiency": float(o.sufficient.mean()),
            }
            for name, o in outcomes.items()
        }
    return out
