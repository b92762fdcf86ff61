"""Compressed key banks: the farthest-first epsilon-cover.

A skill's key bank holds one unit vector per token of its text. Most are near-duplicates for
routing purposes, so the bank is replaced by a subset C of its keys chosen greedily: start from
the first key, and while some key lies farther than epsilon (Euclidean) from every kept key, keep
the farthest one. When it stops:

- **cover**: every key k lies within epsilon of some kept key c;
- **separation**: kept keys are pairwise more than epsilon apart, so |C| lies between the
  covering and the packing number of the bank (it never keeps a redundant key).

**The guarantee.** For a unit query q, the max-sim score over the cover never rises (C is a
subset of the bank) and drops by at most epsilon: if k* is the best key and c covers it,
``q.c = q.k* - q.(k* - c) >= q.k* - |q| |k* - c| >= q.k* - epsilon`` (Cauchy-Schwarz). A skill's
token vote therefore changes by at most epsilon per token unless the token sits within epsilon of
its top-k boundary. ``tests/native/test_cover.py`` checks this as a property.

Pure numpy; deterministic (ties go to the lowest index).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from maitred.errors import ConfigError


def epsilon_cover(keys: NDArray[np.float32], epsilon: float) -> NDArray[np.int64]:
    """Indices (ascending) of a farthest-first epsilon-cover of ``keys``.

    Args:
        keys: ``[n, d]`` vectors (unit vectors for the score guarantee to hold).
        epsilon: covering radius (Euclidean); 0 keeps every distinct key.

    Returns:
        Indices into ``keys``; empty for an empty bank.

    Raises:
        ConfigError: a negative or non-finite epsilon.
    """
    if not np.isfinite(epsilon) or epsilon < 0:
        raise ConfigError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    work = keys.astype(np.float64)
    kept = [0]
    dist = np.linalg.norm(work - work[0], axis=1)
    while True:
        far = int(np.argmax(dist))
        if dist[far] <= epsilon:
            break
        kept.append(far)
        dist = np.minimum(dist, np.linalg.norm(work - work[far], axis=1))
    return np.asarray(sorted(kept), dtype=np.int64)
