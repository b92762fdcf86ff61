"""Stage 1, recall: the state-blind ranking of skills for a message.

Recall reads the message and the catalog, never account state (nothing in this package may
import :mod:`maitred.state`). A :class:`Recaller` ranks skills; a :class:`Cutoff` decides how
many of the ranking become candidates C(m). ``matched`` means C(m) is not empty.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from maitred.errors import ConfigError


@dataclass(frozen=True)
class Candidate:
    """One ranked skill.

    Attributes:
        name: the skill.
        rank: 1-based position in the ranking.
        score: the method's score (higher is better).
        components: per-method scores behind it (e.g. ``{"bm25": 7.1, "dense": 0.52}``).
    """

    name: str
    rank: int
    score: float
    components: Mapping[str, float] = field(default_factory=dict)


@runtime_checkable
class Recaller(Protocol):
    """Ranks the catalog's skills for a text. Implementations are registered by name."""

    name: str

    def rank(self, text: str, k: int) -> list[Candidate]:
        """The best ``k`` skills for ``text``, best first, ranks 1..k."""
        ...


@dataclass(frozen=True)
class Cutoff:
    """How a ranking becomes candidates.

    Attributes:
        top_k: keep at most this many.
        min_score: keep only candidates whose score (or ``on`` component) is at least this.
        on: which score ``min_score`` applies to: ``"score"`` or a component name
            (``"dense"`` lets hybrid recall keep RRF ranking but threshold on cosine).
    """

    top_k: int = 10
    min_score: float | None = None
    on: str = "score"

    def __post_init__(self) -> None:
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 1:
            raise ConfigError(f"cut-off top_k must be an integer >= 1, got {self.top_k!r}")
        if self.min_score is not None and not math.isfinite(self.min_score):
            raise ConfigError(f"cut-off min_score must be a finite number, got {self.min_score!r}")
        if not self.on or not self.on.replace("_", "").isalnum():
            raise ConfigError(
                f"cut-off `on` must be 'score' or a component name such as 'dense', got {self.on!r}"
            )

    def apply(self, ranked: list[Candidate]) -> list[Candidate]:
        kept = ranked[: self.top_k]
        if self.min_score is None:
            return kept
        bound = self.min_score
        if self.on == "score":
            return [c for c in kept if c.score >= bound]
        return [c for c in kept if c.components.get(self.on, float("-inf")) >= bound]


def method_label(recaller: Recaller, suffix: str = "") -> str:
    """The recaller's name (and ``suffix``) with the settings it was built with, as the decision
    log records it: ``adaptive[analyzer=scripts,embedder=multilingual-e5-small-q4]``; the bare
    name for a recaller without ``settings`` (a third party's, native routing)."""
    settings: Mapping[str, str] = getattr(recaller, "settings", None) or {}
    label = recaller.name + suffix
    if not settings:
        return label
    return label + "[" + ",".join(f"{k}={v}" for k, v in settings.items()) + "]"
