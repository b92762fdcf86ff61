"""Stage 3, depth: how many of the ranked, gated skills to expose.

A :class:`DepthRule` looks at the visible candidates in rank order (with their scores and costs)
and returns how many of the top of that list to expose. The foundation ships two rules:

* ``all`` -- expose every visible candidate (what the paper's deployment did);
* ``fixed-k`` -- expose at most ``k``.

Cost-aware rules (score thresholds, score-per-cost, CAM-DF) register here by name too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from maitred.errors import ConfigError


@dataclass(frozen=True)
class Ranked:
    """One visible candidate as depth rules see it."""

    name: str
    score: float
    cost: float


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

    name: str = "all"

    def choose(self, ranked: Sequence[Ranked]) -> int:
        return len(ranked)


@dataclass(frozen=True)
class FixedK:
    """Expose at most ``k`` visible candidates."""

    k: int = 5
    name: str = "fixed-k"

    def __post_init__(self) -> None:
        if self.k < 0:
            raise ConfigError(f"fixed-k depth needs k >= 0, got {self.k}")

    def choose(self, ranked: Sequence[Ranked]) -> int:
        return min(self.k, len(ranked))


DEPTH_RULES: dict[str, Callable[..., DepthRule]] = {"all": ExposeAll, "fixed-k": FixedK}


def make_depth_rule(name: str, **params: Any) -> DepthRule:
    """Build a registered depth rule by name."""
    try:
        factory = DEPTH_RULES[name]
    except KeyError:
        raise ConfigError(
            f"unknown depth rule {name!r}; choose one of {sorted(DEPTH_RULES)}"
        ) from None
    return factory(**params)
