"""CAM-DF: a regret-weighted logistic stopper over the ranked prefix.

Training (one model per ``λ``). For every training task and every decision point
``t = 0..n−1`` ("``t`` skills exposed; stop, or add the next?"):

* label ``1`` (stop) iff ``Δ_t = U_t − max_{k>t} U_k ≥ 0``, else ``0`` (continue) -- see
  :func:`~maitred.depth.payoff.stop_gaps`;
* sample weight ``|Δ_t|`` -- how much payoff a wrong decision there costs;
* features :func:`~maitred.depth.features.decision_features` (scores, gaps, ranks, the next
  candidate's cost, cumulative cost, cost dispersion, position, the calibrated sufficiency
  estimate, ``λ``); ``camdf`` uses all of them, ``camdf_lite`` the ten in
  :data:`~maitred.depth.features.LITE_FEATURES`.

The sufficiency model is fitted on the same training tasks first and its estimate enters as a
feature. At inference the rule walks the list and stops at the first decision point whose
predicted ``P(stop)`` reaches :attr:`CamDFModel.threshold`, or exposes the whole list.

The threshold. 0.5 is the Bayes point of the weighted loss, but the label compares stopping
with the *best* continuation in hindsight, which a deployed rule cannot play: once it continues
it does not know where the last required skill sits. On MetaTool the 0.5 rule therefore walks far
too deep (see docs/depth.md, ablation). So, exactly like every baseline's ``k`` or threshold, the
stop threshold is tuned per ``λ`` on the *training* tasks (:data:`THRESHOLDS`, best mean
training payoff, ties to the smaller exposure); ``tune=False`` keeps 0.5.

A model saves as JSON (:func:`save_model`): kind, ``λ``, threshold, feature list, the
standardisation and coefficients of both logistic models, and the content hash of the training
tasks, so a result can be traced to its data. :func:`load_model` refuses a file of another
format with a message that says what it found.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np

from maitred._canonical import content_hash
from maitred.depth.features import (
    CAMDF_FEATURES,
    LITE_FEATURES,
    FloatArray,
    LinearModel,
    SufficiencyModel,
    decision_features,
    feature_matrix,
)
from maitred.depth.payoff import DepthTask, select, stop_gaps, sufficiency
from maitred.depth.rules import DepthRule, PredictThenThreshold, Ranked
from maitred.errors import ConfigError

MODEL_FORMAT: Final = "maitred-camdf/1"

NEVER_STOP: Final = 1.01
"""A threshold no probability reaches: the rule exposes the whole list, like ``full``."""
"""The ``format`` field every saved model carries."""

Kind = Literal["camdf", "camdf_lite"]

THRESHOLDS: Final = (*(round(0.01 * i, 2) for i in range(1, 100)), NEVER_STOP)
"""The stop thresholds tried when tuning on training tasks (the last one never stops)."""


@dataclass(frozen=True)
class CamDFModel:
    """A trained stopper with everything needed to apply and trace it."""

    kind: Kind
    lam: float
    stopper: LinearModel
    sufficiency: SufficiencyModel
    data_hash: str
    threshold: float = 0.5

    @property
    def features(self) -> tuple[str, ...]:
        """The stopper's feature names, in coefficient order."""
        return self.stopper.features

    def stop_proba(self, scores: FloatArray, costs: FloatArray) -> FloatArray:
        """``P(stop)`` at each decision point ``t = 0..n−1``."""
        p = self.sufficiency.estimate(scores)
        columns = decision_features(scores, costs, p, self.lam)
        return self.stopper.proba(feature_matrix(columns, self.features))

    def depth(self, scores: FloatArray, costs: FloatArray) -> int:
        """How many to expose: the first ``t`` predicted "stop", else all."""
        if len(scores) == 0:
            return 0
        hits = np.flatnonzero(self.stop_proba(scores, costs) >= self.threshold)
        return int(hits[0]) if len(hits) else len(scores)

    def coefficients(self) -> list[tuple[str, float]]:
        """(feature, coefficient on the standardised feature), largest magnitude first."""
        pairs = zip(self.stopper.features, self.stopper.coef, strict=True)
        return sorted(pairs, key=lambda fc: -abs(fc[1]))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (see the module docstring)."""
        return {
            "format": MODEL_FORMAT,
            "kind": self.kind,
            "lambda": self.lam,
            "threshold": self.threshold,
            "features": list(self.features),
            "data_hash": self.data_hash,
            "stopper": self.stopper.to_dict(),
            "sufficiency": self.sufficiency.model.to_dict(),
        }


@dataclass(frozen=True)
class CamDFRule:
    """A trained CAM-DF model behind the :class:`~maitred.depth.rules.DepthRule` interface."""

    model: CamDFModel

    @property
    def name(self) -> str:
        return self.model.kind

    def choose(self, ranked: Sequence[Ranked]) -> int:
        scores = np.array([r.score for r in ranked], dtype=np.float64)
        costs = np.array([r.cost for r in ranked], dtype=np.float64)
        return self.model.depth(scores, costs)

    def prefix_probabilities(self, ranked: Sequence[Ranked]) -> list[float]:
        """The predicted stop probability at each prefix (what the decision log keeps)."""
        if not ranked:
            return []
        scores = np.array([r.score for r in ranked], dtype=np.float64)
        costs = np.array([r.cost for r in ranked], dtype=np.float64)
        return [float(p) for p in self.model.stop_proba(scores, costs)]


def tasks_hash(tasks: Sequence[DepthTask]) -> str:
    """The content hash of a task set (ids, candidates, required sets)."""
    return content_hash(
        [
            [t.id, [[c.name, c.score, c.cost] for c in t.candidates], sorted(t.required)]
            for t in tasks
        ]
    )


def fit_sufficiency(tasks: Sequence[DepthTask], c: float = 1.0) -> SufficiencyModel:
    """The calibrated sufficiency estimate, fitted on every prefix of every task."""
    usable = [t for t in tasks if t.n]
    return SufficiencyModel.fit([t.scores for t in usable], [sufficiency(t) for t in usable], c)


def training_rows(
    tasks: Sequence[DepthTask],
    lam: float,
    suff: SufficiencyModel,
    features: Sequence[str],
) -> tuple[FloatArray, np.ndarray[Any, np.dtype[np.int_]], FloatArray]:
    """``(X, y, w)``: one row per decision point of every task (see the module docstring)."""
    xs, ys, ws = [], [], []
    for task in tasks:
        if task.n == 0:
            continue
        scores, costs = task.scores, task.costs
        columns = decision_features(scores, costs, suff.estimate(scores), lam)
        gaps = stop_gaps(task, lam)
        xs.append(feature_matrix(columns, features))
        ys.append((gaps >= 0).astype(np.int_))
        ws.append(np.abs(gaps))
    if not xs:
        raise ConfigError("CAM-DF needs at least one training task with candidates")
    return np.vstack(xs), np.concatenate(ys), np.concatenate(ws)


def train_camdf(
    tasks: Sequence[DepthTask],
    lam: float,
    *,
    kind: Kind = "camdf",
    c: float = 1.0,
    suff: SufficiencyModel | None = None,
    tune: bool = True,
    floor: float | None = None,
) -> CamDFModel:
    """Train the regret-weighted stopper for one ``λ``.

    Args:
        tasks: training tasks (never the test split).
        lam: the cost weight ``λ`` the payoff uses.
        kind: ``camdf`` (every feature) or ``camdf_lite`` (the ten interpretable ones).
        c: inverse L2 strength of the logistic regression (on standardised features).
        suff: a sufficiency model already fitted on ``tasks`` (fitted here when ``None``).
        tune: tune the stop threshold on ``tasks`` (else keep 0.5).
        floor: only thresholds whose mean training sufficiency reaches it compete (see
            :mod:`maitred.lab.depth.tuning`).
    """
    if lam < 0:
        raise ConfigError(f"lambda must be >= 0, got {lam}")
    features = CAMDF_FEATURES if kind == "camdf" else LITE_FEATURES
    suff = suff or fit_sufficiency(tasks)
    x, y, w = training_rows(tasks, lam, suff, features)
    stopper = LinearModel.fit(x, y, features, weight=w, c=c)
    model = CamDFModel(kind, lam, stopper, suff, tasks_hash(tasks))
    return _tune_threshold(model, tasks, floor) if tune else model


def _tune_threshold(
    model: CamDFModel, tasks: Sequence[DepthTask], floor: float | None = None
) -> CamDFModel:
    """The model with the stop threshold of best mean training payoff (above ``floor``)."""
    usable = [t for t in tasks if t.n]
    probas = [model.stop_proba(t.scores, t.costs) for t in usable]
    # depth(τ) = first t with P_t ≥ τ = how many leading P stay below τ (running maximum)
    running = [np.maximum.accumulate(p) for p in probas]
    tau = select(
        usable,
        model.lam,
        THRESHOLDS,
        lambda tau: [int(np.sum(r < tau)) for r in running],
        floor=floor,
    )
    return replace(model, threshold=tau)


def save_model(model: CamDFModel, path: Path | str) -> None:
    """Write ``model`` as JSON."""
    Path(path).write_text(json.dumps(model.to_dict(), indent=2) + "\n", encoding="utf-8")


def load_model(path: Path | str) -> CamDFModel:
    """Read a model written by :func:`save_model`.

    Raises:
        ConfigError: the file cannot be read or is not a maitred CAM-DF model.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the CAM-DF model: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != MODEL_FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ConfigError(
            f"{path}: not a CAM-DF model (format {found!r}, expected {MODEL_FORMAT!r}); "
            "train one with `maitred depth train`"
        )
    kind = data["kind"]
    if kind not in ("camdf", "camdf_lite"):
        raise ConfigError(f"{path}: unknown model kind {kind!r}; expected camdf or camdf_lite")
    return CamDFModel(
        kind,
        float(data["lambda"]),
        LinearModel.from_dict(data["stopper"]),
        SufficiencyModel(LinearModel.from_dict(data["sufficiency"])),
        str(data["data_hash"]),
        float(data["threshold"]),
    )


def make_predict_then_threshold(model: str | Path, threshold: float = 0.5) -> DepthRule:
    """The ``predict_then_threshold`` rule from a trained model file (entry point)."""
    return PredictThenThreshold(load_model(model).sufficiency, threshold)


def make_camdf_rule(model: str | Path) -> DepthRule:
    """The ``camdf`` / ``camdf_lite`` rule from a trained model file (entry point)."""
    return CamDFRule(load_model(model))
