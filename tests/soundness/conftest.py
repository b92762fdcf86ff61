"""Budgets of the soundness suite: hypothesis settings profiles chosen by one variable.

* ``make test`` (no variable): a modest budget, ``derandomize=True`` and no example database,
  so a run in CI is deterministic and leaves nothing behind.
* ``MAITRED_SOUNDNESS_EXAMPLES=10000 pytest tests/soundness``: that many examples for the
  library-level properties; the HTTP service gets 40% of it and the MCP gateway 2% (each of
  its examples launches an upstream MCP server). Set ``MAITRED_SOUNDNESS_SEED=random`` to
  explore new inputs instead of the derandomised ones. With the variable set, interleavings
  are longer (30 steps instead of 12) and failures are shrunk.

Every test reads its budget through :func:`examples`, so the flag scales all of them at once.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

_DEFAULT = 25
_FLAG = "MAITRED_SOUNDNESS_EXAMPLES"


def budget() -> int:
    """The library-level example budget (the flag, or the modest default)."""
    raw = os.environ.get(_FLAG, "")
    try:
        return max(1, int(raw)) if raw else _DEFAULT
    except ValueError:
        raise SystemExit(f"{_FLAG} must be a whole number of examples, got {raw!r}") from None


def examples(share: float = 1.0, floor: int = 3) -> int:
    """This test's number of examples: ``share`` of the budget, at least ``floor``."""
    return max(floor, int(budget() * share))


_deep = bool(os.environ.get(_FLAG))
_random = os.environ.get("MAITRED_SOUNDNESS_SEED", "") == "random"
settings.register_profile(
    "soundness",
    deadline=None,
    derandomize=not _random,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    # the default budget reports a first counterexample unshrunk (the named regression tests
    # are the minimal ones); the deep run shrinks
    phases=tuple(Phase) if _deep else (Phase.explicit, Phase.reuse, Phase.generate),
    stateful_step_count=30 if _deep else 12,
)
SOUNDNESS = settings.get_profile("soundness")
