"""Deterministic top-k over a score vector, shared by every recaller.

Ties are broken by catalog position (earlier skill first), also at the k-th place, so the same
scores always give the same ranking: ``np.argpartition`` alone would pick among tied scores at
the boundary arbitrarily, which would make recall unreplayable.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def top_k(
    scores: NDArray[np.floating], k: int, *, min_score: float | None = None
) -> NDArray[np.intp]:
    """Indices of the ``k`` highest scores, best first, ties in index order.

    Args:
        scores: one score per skill, in catalog order.
        k: how many to keep (fewer if there are fewer skills).
        min_score: drop indices whose score is not strictly above this (``None`` keeps all).

    Returns:
        An index array of length at most ``k``.
    """
    if min_score is not None:
        # only scores above the floor can be returned: rank those alone (BM25 score vectors
        # are mostly zeros, and partitioning the whole catalog dominated its recall time)
        keep = np.flatnonzero(scores > min_score)
        if len(keep) < int(scores.shape[0]):
            return keep[_top_k_all(scores[keep], k)]
    return _top_k_all(scores, k)


def _top_k_all(scores: NDArray[np.floating], k: int) -> NDArray[np.intp]:
    n = int(scores.shape[0])
    k = min(k, n)
    if k <= 0:
        return np.empty(0, dtype=np.intp)
    if k == n:
        idx = np.arange(n, dtype=np.intp)
    else:
        threshold = np.partition(scores, n - k)[n - k]
        above = np.flatnonzero(scores > threshold)
        tied = np.flatnonzero(scores == threshold)[: k - len(above)]
        idx = np.concatenate([above, tied]).astype(np.intp)
    order = np.lexsort((idx, -scores[idx]))
    return idx[order]
