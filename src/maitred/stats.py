"""Statistics the evaluations share: the Wilson score interval for a binomial proportion.

The forced-invocation audit and the counterfactual replay report rates of rare or near-certain
events.
The plain ``p ± z·sqrt(p(1-p)/n)`` interval collapses to a point at ``p = 1`` -- exactly the
case a healthy gate produces -- so the audit reports the Wilson interval, which stays inside
[0, 1] and keeps a width at 0 and n successes::

    centre = (p + z²/2n) / (1 + z²/n)
    half   = z / (1 + z²/n) · sqrt(p(1-p)/n + z²/4n²)
"""

from __future__ import annotations

import math
from statistics import NormalDist


def z_for(confidence: float) -> float:
    """The two-sided normal quantile: 1.959963984540054 for 0.95."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval for ``successes`` out of ``trials``.

    Returns ``(0.0, 1.0)`` when there are no trials (nothing is known).

    Raises:
        ValueError: counts out of range, or a confidence outside (0, 1).
    """
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes} of {trials}")
    z = z_for(confidence)
    if trials == 0:
        return (0.0, 1.0)
    n, p = float(trials), successes / trials
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))
