"""pass^k and paired-bootstrap intervals over tasks.

**pass^k** (tau-bench): the chance that all ``k`` of ``k`` independent trials of a task succeed,
averaged over tasks. From ``n`` trials of a task with ``c`` successes the unbiased estimate is
``C(c, k) / C(n, k)`` (hypergeometric: draw ``k`` of the ``n`` trials without replacement, all
must be successes); ``pass^1`` is the plain success rate.

**Paired bootstrap**: both arms (gates on, gates off) ran the same tasks, so the difference is
taken per task and tasks are resampled with replacement; the interval is the percentile interval
of the resampled mean differences. A difference that is exactly 0 on every task gives ``[0, 0]``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from math import comb


def pass_hat_k(successes: int, trials: int, k: int) -> float:
    """Unbiased pass^k for one task: ``C(successes, k) / C(trials, k)``.

    Raises:
        ValueError: ``k`` is not between 1 and ``trials``.
    """
    if not 1 <= k <= trials:
        raise ValueError(f"pass^k needs 1 <= k <= trials; got k={k}, trials={trials}")
    return comb(successes, k) / comb(trials, k)


@dataclass(frozen=True)
class Interval:
    """A point estimate (mean over tasks of on - off) and its bootstrap interval."""

    diff: float
    low: float
    high: float
    n_tasks: int

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in ``[low, high]``."""
        return self.low <= value <= self.high

    def to_json(self) -> dict[str, float | int]:
        return {"diff": self.diff, "low": self.low, "high": self.high, "n_tasks": self.n_tasks}


def paired_bootstrap(
    on: Sequence[float],
    off: Sequence[float],
    *,
    rounds: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Interval:
    """Percentile interval of ``mean(on - off)`` with tasks resampled (``on[i]`` pairs ``off[i]``).

    Raises:
        ValueError: the two arms have different lengths.
    """
    if len(on) != len(off):
        raise ValueError(f"paired arms differ in length: {len(on)} on vs {len(off)} off")
    diffs = [a - b for a, b in zip(on, off, strict=True)]
    n = len(diffs)
    if n == 0:
        return Interval(0.0, 0.0, 0.0, 0)
    point = sum(diffs) / n
    rng = random.Random(seed)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds))
    tail = (1 - level) / 2
    low = means[int(tail * (rounds - 1))]
    high = means[round((1 - tail) * (rounds - 1))]
    return Interval(point, low, high, n)
