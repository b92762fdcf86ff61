"""The ruling: combine several experts' scores over the whole catalog into one ranking.

Each expert (the glance, the verdict's likelihood and judgment, and -- going beyond the paper --
maitred's dense and BM25 recall) gives one score per skill for a query. Scores on different
scales are made comparable per query by standardising them (mean 0, spread 1 over the catalog);
the ruling is then the weighted sum, i.e. a log-linear pool (a weighted product of experts whose
log-scores are the standardised scores). Weights are calibrated on validation queries by a grid
search on MRR, and the grid always contains "one expert alone" for each expert, so on validation
data the ruling is never worse than its best single expert.

Calibrated weights live in a small versioned JSON file (:data:`WEIGHTS_FORMAT`), one entry per
recall method that fuses (``native``, ``native-rerank``), with the backbone they were measured
on: :func:`save_weights` merges an entry in, :func:`load_weights` reads one back.

No torch here: the inputs are score vectors, so any expert can take part.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from maitred.errors import ConfigError, IndexMismatchError

F32 = NDArray[np.float32]
F64 = NDArray[np.float64]

GRID: Final = (0.0, 0.25, 0.5, 0.75, 1.0)
"""Weights tried for each expert by :func:`calibrate`."""

WEIGHTS_FORMAT: Final = "maitred-native-ruling/1"
"""Version written into the weights file; a file of another format is refused."""

METRICS: Final = ("hit_at_1", "recall_at_5", "mrr")


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


def metrics(scores: F32, gold: set[int]) -> dict[str, float]:
    """Hit@1, Recall@5 and reciprocal rank of one query (ties broken by catalog order)."""
    order = np.argsort(-scores, kind="stable")
    top5 = {int(i) for i in order[:5]}
    return {
        "hit_at_1": 1.0 if gold and int(order[0]) in gold else 0.0,
        "recall_at_5": len(gold & top5) / len(gold) if gold else 0.0,
        "mrr": reciprocal_rank(scores, gold),
    }


def mean_metrics(per_query: Sequence[F32], gold: Sequence[set[int]]) -> dict[str, float]:
    """:func:`metrics` averaged over queries."""
    rows = [metrics(s, g) for s, g in zip(per_query, gold, strict=True)]
    return {k: float(np.mean([r[k] for r in rows])) for k in METRICS}


def _ranks(fused: F64, gold: set[int]) -> NDArray[np.int64]:
    """Rank of the best gold skill under each row of ``fused`` ``[combos, n]``, catalog-order
    ties (as :func:`reciprocal_rank`); ``n + 1`` without a gold."""
    best = np.full(len(fused), fused.shape[1] + 1, dtype=np.int64)
    for g in gold:
        mine = fused[:, g : g + 1]
        rank = (fused > mine).sum(axis=1) + (fused[:, :g] == mine).sum(axis=1) + 1
        best = np.minimum(best, rank)
    return best


def calibrate(
    queries: Sequence[Mapping[str, F32]],
    gold: Sequence[set[int]],
    grid: Sequence[float] = GRID,
) -> tuple[dict[str, float], float]:
    """The weights (one per expert, from ``grid``) with the best mean reciprocal rank.

    Every weight vector of the grid is scored at once per query (a matrix product over the
    standardised experts), so five experts (3,125 vectors) take a second or two for 100 queries.

    Returns:
        ``(weights, validation MRR)``. Weight vectors that are all zero are skipped; ties keep
        the first found, which prefers fewer experts.
    """
    names = sorted(queries[0])
    combos = np.array(
        [c for c in itertools.product(grid, repeat=len(names)) if any(c)], dtype=np.float64
    )
    total = np.zeros(len(combos), dtype=np.float64)
    for experts, g in zip(queries, gold, strict=True):
        z = np.stack([standardise(experts[name]) for name in names]).astype(np.float64)
        ranks = _ranks(combos @ z, g)
        total += np.where(ranks <= z.shape[1], 1.0 / ranks, 0.0)
    mrr = total / max(len(queries), 1)
    best = int(np.argmax(mrr > mrr.max() - 1e-12))  # the first within rounding of the best
    return {n: float(w) for n, w in zip(names, combos[best], strict=True)}, float(mrr[best])


@dataclass(frozen=True)
class AblationRow:
    """One line of :func:`ablation`: a set of experts, its weights and its test metrics."""

    label: str
    weights: Mapping[str, float]
    val_mrr: float
    hit_at_1: float
    recall_at_5: float
    mrr: float


def ablation(
    val: Sequence[Mapping[str, F32]],
    val_gold: Sequence[set[int]],
    test: Sequence[Mapping[str, F32]],
    test_gold: Sequence[set[int]],
    grid: Sequence[float] = GRID,
) -> list[AblationRow]:
    """Each signal's contribution: every expert alone, every leave-one-out, the full ruling.

    Weights are calibrated on ``val`` (an expert alone needs none); metrics are on ``test``.

    Returns:
        ``"<e> alone"`` rows, then ``"without <e>"`` rows, then ``"ruling"``.
    """
    names = sorted(val[0])

    def row(label: str, pick: Sequence[str]) -> AblationRow:
        if len(pick) == 1:
            weights = {pick[0]: 1.0}
            val_mrr = mean_metrics([standardise(q[pick[0]]) for q in val], val_gold)["mrr"]
        else:
            weights, val_mrr = calibrate([{k: q[k] for k in pick} for q in val], val_gold, grid)
        scored = mean_metrics([fuse(q, weights) for q in test], test_gold)
        return AblationRow(label, weights, val_mrr, **scored)

    rows = [row(f"{name} alone", [name]) for name in names]
    if len(names) > 2:
        rows += [row(f"without {name}", [n for n in names if n != name]) for name in names]
    rows.append(row("ruling", names))
    return rows


@dataclass(frozen=True)
class RulingWeights:
    """Calibrated (or default) fusion weights of one recall method.

    Attributes:
        method: the recall method (``"native"``, ``"native-rerank"``).
        weights: expert -> weight.
        shortlist: skills the verdict scored per query when calibrating.
        backbone_id: the model the verdict and glance ran on.
        val_mrr: validation MRR of these weights (``None`` for defaults).
        n_queries: validation queries used (0 for defaults).
        calibrated: ``False`` for documented defaults.
        meta: anything else worth keeping (query file, grid).
    """

    method: str
    weights: Mapping[str, float]
    shortlist: int
    backbone_id: str
    val_mrr: float | None = None
    n_queries: int = 0
    calibrated: bool = True
    meta: Mapping[str, Any] = field(default_factory=dict)


def save_weights(path: Path, entry: RulingWeights) -> None:
    """Merge ``entry`` into the weights file (other methods' entries are kept); atomic."""
    data: dict[str, Any] = {"format": WEIGHTS_FORMAT, "methods": {}}
    if path.is_file():
        data = _read(path)
    data["methods"][entry.method] = {k: v for k, v in asdict(entry).items() if k != "method"}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)


def load_weights(path: Path, method: str) -> RulingWeights | None:
    """The entry for ``method`` (``None`` when the file or the entry is missing).

    Raises:
        IndexMismatchError: the file is of another format.
    """
    if not path.is_file():
        return None
    raw = _read(path)["methods"].get(method)
    if raw is None:
        return None
    return RulingWeights(method=method, **raw)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read ruling weights {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != WEIGHTS_FORMAT:
        raise IndexMismatchError(
            f"{path} is not a {WEIGHTS_FORMAT} file; recalibrate (`maitred native calibrate`)"
        )
    return data
