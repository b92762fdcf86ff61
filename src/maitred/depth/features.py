"""Prefix features, the calibrated sufficiency estimate, and a serialisable logistic model.

Everything here is computed from what a depth rule sees at run time -- the ranked candidates'
scores and costs, and ``λ`` -- never from the required set. Two learned pieces sit on top:

* :class:`SufficiencyModel` -- ``p_k ≈ P(G_x ⊆ A_k)`` for every prefix ``k = 0..n``, a logistic
  regression on cost-free prefix features (depth, score drops, score mass). Trained with log
  loss, its outputs are calibrated probabilities in the Platt sense; the estimate is made
  monotone in ``k`` by a running maximum, since a longer prefix cannot be less sufficient.
* the CAM-DF stopper (:mod:`maitred.depth.camdf`), a logistic regression on
  :func:`decision_features` -- one row per decision point ``t = 0..n−1`` ("``t`` skills are
  exposed; stop, or add candidate ``t+1``?").

:class:`LinearModel` holds a fitted logistic regression as plain numbers (feature names, the
standardisation, coefficients, intercept) so a model saves as JSON, loads without scikit-learn
objects and predicts with one dot product.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

SUFFICIENCY_FEATURES: Final = (
    "depth",
    "log_depth",
    "empty",
    "remaining",
    "top_score",
    "top_gap",
    "drop_last",
    "drop_next",
    "gap_last_next",
    "score_mass",
)
"""Cost-free features of prefix ``k`` for the sufficiency estimate."""

CAMDF_FEATURES: Final = (
    "lambda",
    "depth",
    "empty",
    "remaining",
    "list_length",
    "score_cur",
    "score_next",
    "score_after",
    "score_gap",
    "gap_next_after",
    "drop_next",
    "cost_next",
    "cost_after",
    "cum_cost",
    "cost_cv",
    "cost_next_rel",
    "score_per_cost_next",
    "lambda_cost_next",
    "lambda_cum_cost",
    "p_suff",
    "p_suff_next",
    "p_gain",
    "marginal_value",
    "lookahead_gap",
)
"""Every feature of decision point ``t`` (the full CAM-DF stopper uses them all)."""

LITE_FEATURES: Final = (
    "score_next",
    "score_gap",
    "depth",
    "cost_next",
    "cum_cost",
    "cost_cv",
    "p_suff",
    "p_gain",
    "lambda_cost_next",
    "marginal_value",
)
"""CAM-DF-lite's ten interpretable features (see :func:`decision_features` for each)."""


def _sigmoid(z: FloatArray) -> FloatArray:
    out: FloatArray = 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))
    return out


@dataclass(frozen=True)
class LinearModel:
    """A fitted logistic regression as plain numbers: ``P(y=1) = σ(w·(x−μ)/s + b)``."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float

    @classmethod
    def fit(
        cls,
        x: FloatArray,
        y: NDArray[np.int_],
        features: Sequence[str],
        *,
        weight: FloatArray | None = None,
        c: float = 1.0,
    ) -> LinearModel:
        """Fit with scikit-learn's ``LogisticRegression`` on standardised features.

        Weights are rescaled to mean 1 so that ``c`` means the same whatever their unit. When
        the (positively weighted) labels hold one class only, the model is that constant.
        """
        from sklearn.linear_model import LogisticRegression

        w = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=np.float64)
        mean = x.mean(axis=0) if len(x) else np.zeros(len(features))
        scale = x.std(axis=0) if len(x) else np.ones(len(features))
        scale = np.where(scale > 1e-12, scale, 1.0)
        classes = set(np.asarray(y)[w > 0].tolist())
        if len(classes) < 2:
            only = classes.pop() if classes else 1
            zeros = (0.0,) * len(features)
            return cls(tuple(features), tuple(mean), tuple(scale), zeros, 20.0 if only else -20.0)
        model = LogisticRegression(C=c, max_iter=2000)
        model.fit((x - mean) / scale, y, sample_weight=w / w.mean())
        return cls(
            tuple(features),
            tuple(float(v) for v in mean),
            tuple(float(v) for v in scale),
            tuple(float(v) for v in model.coef_[0]),
            float(model.intercept_[0]),
        )

    def proba(self, x: FloatArray) -> FloatArray:
        """``P(y=1)`` for each row of ``x`` (columns in :attr:`features` order)."""
        z = (x - np.array(self.mean)) / np.array(self.scale) @ np.array(self.coef)
        return _sigmoid(z + self.intercept)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "coef": list(self.coef),
            "intercept": self.intercept,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LinearModel:
        """The inverse of :meth:`to_dict`."""
        return cls(
            tuple(str(f) for f in data["features"]),
            tuple(float(v) for v in data["mean"]),
            tuple(float(v) for v in data["scale"]),
            tuple(float(v) for v in data["coef"]),
            float(data["intercept"]),
        )


def sufficiency_features(scores: FloatArray) -> FloatArray:
    """Rows for prefixes ``k = 0..n`` (shape ``(n+1, len(SUFFICIENCY_FEATURES))``)."""
    n = len(scores)
    k = np.arange(n + 1, dtype=np.float64)
    top = scores[0] if n else 0.0
    padded = np.concatenate((scores, [scores[-1] if n else 0.0]))
    last = np.concatenate(([top], scores))  # score of the k-th (last exposed) item; top at k=0
    nxt = padded[: n + 1]  # score of item k+1 (the last score repeated past the end)
    positive = np.clip(scores, 0.0, None)
    total = positive.sum()
    mass = np.concatenate(([0.0], np.cumsum(positive))) / total if total > 0 else k / max(n, 1)
    columns = {
        "depth": k,
        "log_depth": np.log1p(k),
        "empty": (k == 0).astype(np.float64),
        "remaining": n - k,
        "top_score": np.full(n + 1, top),
        "top_gap": np.full(n + 1, scores[0] - scores[1] if n > 1 else 0.0),
        "drop_last": top - last,
        "drop_next": top - nxt,
        "gap_last_next": np.where(k == 0, 0.0, last - nxt),
        "score_mass": mass,
    }
    return np.column_stack([columns[name] for name in SUFFICIENCY_FEATURES])


@dataclass(frozen=True)
class SufficiencyModel:
    """``p_k``, the calibrated estimate that the top ``k`` hold every required skill."""

    model: LinearModel

    def estimate(self, scores: FloatArray) -> FloatArray:
        """``p_k`` for ``k = 0..n``, non-decreasing in ``k``."""
        raw = self.model.proba(sufficiency_features(scores))
        out: FloatArray = np.maximum.accumulate(raw)
        return out

    @classmethod
    def fit(
        cls, lists: Sequence[FloatArray], labels: Sequence[FloatArray], c: float = 1.0
    ) -> SufficiencyModel:
        """Fit on ranked score lists and their sufficiency vectors (``1{G ⊆ A_k}``, ``k=0..n``)."""
        x = np.vstack([sufficiency_features(s) for s in lists])
        y = np.concatenate(labels).astype(np.int_)
        return cls(LinearModel.fit(x, y, SUFFICIENCY_FEATURES, c=c))


def decision_features(
    scores: FloatArray, costs: FloatArray, p_suff: FloatArray, lam: float
) -> dict[str, FloatArray]:
    """Every feature of decision points ``t = 0..n−1`` as named columns of length ``n``.

    At ``t`` the top ``t`` are exposed and candidate ``t+1`` (index ``t``) is "next":
    ``score_cur`` is the last exposed score (the top score at ``t = 0``), ``score_gap`` the drop
    from it to the next, ``cum_cost`` the cost exposed so far, ``cost_cv`` the list's cost
    dispersion (std / mean), ``p_suff``/``p_suff_next`` the sufficiency estimate now and after
    adding the next, ``marginal_value`` = ``p_gain − λ·cost_next`` (the one-step value of
    continuing), and ``lookahead_gap`` = ``p_t − max_{k>t}(p_k − λ(C_k − C_t))``, the estimate
    of ``Δ_t`` the sufficiency model implies.
    """
    n = len(scores)
    t = np.arange(n, dtype=np.float64)
    top = scores[0] if n else 0.0
    cur = np.concatenate(([top], scores[:-1]))[:n]
    after = np.concatenate((scores[1:], scores[-1:]))[:n]
    cost_after = np.concatenate((costs[1:], [0.0]))[:n]
    cum_all = np.concatenate(([0.0], np.cumsum(costs)))
    mean_cost = float(costs.mean()) if n else 1.0
    cv = float(costs.std() / mean_cost) if n and mean_cost > 0 else 0.0
    value = p_suff - lam * cum_all  # estimated payoff of each prefix k = 0..n
    best_after = np.maximum.accumulate(value[::-1])[::-1][1:]
    return {
        "lambda": np.full(n, lam),
        "depth": t,
        "empty": (t == 0).astype(np.float64),
        "remaining": n - t,
        "list_length": np.full(n, float(n)),
        "score_cur": cur,
        "score_next": scores,
        "score_after": after,
        "score_gap": cur - scores,
        "gap_next_after": scores - after,
        "drop_next": top - scores,
        "cost_next": costs,
        "cost_after": cost_after,
        "cum_cost": cum_all[:n],
        "cost_cv": np.full(n, cv),
        "cost_next_rel": costs / mean_cost if mean_cost > 0 else costs,
        "score_per_cost_next": scores / np.maximum(costs, 1e-9),
        "lambda_cost_next": lam * costs,
        "lambda_cum_cost": lam * cum_all[:n],
        "p_suff": p_suff[:n],
        "p_suff_next": p_suff[1:],
        "p_gain": p_suff[1:] - p_suff[:n],
        "marginal_value": p_suff[1:] - p_suff[:n] - lam * costs,
        "lookahead_gap": value[:n] - best_after,
    }


def feature_matrix(columns: dict[str, FloatArray], names: Sequence[str]) -> FloatArray:
    """Stack the named columns (in ``names`` order) into a ``(n, len(names))`` matrix."""
    n = len(next(iter(columns.values()))) if columns else 0
    if n == 0:
        return np.zeros((0, len(names)))
    return np.column_stack([columns[name] for name in names])
