"""Stage 3, depth: how many of the ranked, gated skills to expose.

A :class:`DepthRule` looks at the visible candidates in rank order (with their scores and costs)
and returns how many of the top of that list to expose -- always a *prefix*. Rules, by
registered name (:data:`DEPTH_RULES`, :func:`make_depth_rule`):

* ``full`` -- expose every visible candidate (what the paper's deployment did; alias ``all``);
* ``fixed_k`` -- expose at most ``k`` (alias ``fixed-k``);
* ``score_threshold`` -- expose while the score is at least ``threshold``;
* ``score_per_cost`` -- expose while the marginal score per unit cost, ``score / cost``, is at
  least ``threshold``;
* ``predict_then_threshold`` -- expose the shortest prefix whose calibrated sufficiency estimate
  ``p_k`` (:class:`~maitred.depth.features.SufficiencyModel`) reaches ``threshold``;
* ``camdf`` / ``camdf_lite`` -- the learned cost-aware stopper (:mod:`maitred.depth.camdf`),
  built from a saved model: ``make_depth_rule("camdf", model="model.json")``.

Thresholds and ``k`` are tuned per ``λ`` on training tasks (:mod:`maitred.lab.depth.tuning`). The
``oracle`` (best prefix in hindsight) needs the required set, so it is not a rule here: it lives
in :func:`maitred.depth.payoff.oracle_depth`, for evaluation only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

import numpy as np

import maitred.plugins as plugins
from maitred.depth.features import SufficiencyModel
from maitred.errors import ConfigError


@dataclass(frozen=True)
class Ranked:
    """One visible candidate as depth rules see it."""

    name: str
    score: float
    cost: float


@runtime_checkable
class DepthRule(Protocol):
    """Decides the prefix of visible candidates to expose."""

    @property
    def name(self) -> str:
        """The rule's registered name (logged with every turn)."""
        ...

    def choose(self, ranked: Sequence[Ranked]) -> int:
        """How many of ``ranked`` (best first) to expose, 0..len(ranked)."""
        ...


@dataclass(frozen=True)
class ExposeAll:
    """Expose every visible candidate."""

    name: str = "full"

    def choose(self, ranked: Sequence[Ranked]) -> int:
        return len(ranked)


@dataclass(frozen=True)
class FixedK:
    """Expose at most ``k`` visible candidates."""

    k: int = 5
    name: str = "fixed_k"

    def __post_init__(self) -> None:
        if self.k < 0:
            raise ConfigError(f"fixed_k depth needs k >= 0, got {self.k}")

    def choose(self, ranked: Sequence[Ranked]) -> int:
        return min(self.k, len(ranked))


def _first_failing(passes: Sequence[bool]) -> int:
    """The length of the leading run of ``True`` (the prefix every candidate passes)."""
    for i, ok in enumerate(passes):
        if not ok:
            return i
    return len(passes)


@dataclass(frozen=True)
class ScoreThreshold:
    """Expose the leading candidates whose score is at least ``threshold``."""

    threshold: float = 0.0
    name: str = "score_threshold"

    def choose(self, ranked: Sequence[Ranked]) -> int:
        return _first_failing([r.score >= self.threshold for r in ranked])


@dataclass(frozen=True)
class ScorePerCost:
    """Expose the leading candidates whose ``score / cost`` is at least ``threshold``."""

    threshold: float = 0.0
    name: str = "score_per_cost"

    def choose(self, ranked: Sequence[Ranked]) -> int:
        return _first_failing([r.score / max(r.cost, 1e-9) >= self.threshold for r in ranked])


@dataclass(frozen=True)
class PredictThenThreshold:
    """Expose the shortest prefix whose sufficiency estimate reaches ``threshold`` (else all)."""

    model: SufficiencyModel
    threshold: float = 0.5
    name: str = "predict_then_threshold"

    def choose(self, ranked: Sequence[Ranked]) -> int:
        if not ranked:
            return 0
        p = self.model.estimate(np.array([r.score for r in ranked], dtype=np.float64))
        hits = np.flatnonzero(p >= self.threshold)
        return int(hits[0]) if len(hits) else len(ranked)

    def prefix_probabilities(self, ranked: Sequence[Ranked]) -> list[float]:
        """The calibrated sufficiency estimate at each prefix (kept in the decision log)."""
        if not ranked:
            return []
        scores = np.array([r.score for r in ranked], dtype=np.float64)
        return [float(p) for p in self.model.estimate(scores)]


def rule_names() -> list[str]:
    """Every registered depth rule's name (entry-point group ``maitred.depth_rules``)."""
    return plugins.names("depth")


ALIASES: Final = {"all": "full", "fixed-k": "fixed_k"}
"""Earlier names, still accepted by :func:`make_depth_rule`."""


def make_depth_rule(name: str, **params: Any) -> DepthRule:
    """Build a registered depth rule by name (or by an alias in :data:`ALIASES`).

    Rules are found by name (:mod:`maitred.plugins`: the built-ins listed there, a third
    party's as entry points of ``maitred.depth_rules``), so this module never imports the
    rules it does not define.
    """
    factory = plugins.load("depth", ALIASES.get(name, name), what="depth rule")
    try:
        rule = factory(**params)
    except TypeError as exc:
        raise ConfigError(f"depth rule {name!r}: bad parameters {sorted(params)}: {exc}") from None
    if not isinstance(rule, DepthRule):
        raise ConfigError(f"depth rule {name!r}: its entry point did not make a depth rule")
    return rule
