"""The one combiner of the score-mixing two-halves methods, ``fused`` and ``adaptive``.

Both read a query the same way (:func:`read_halves`): every skill's BM25F score, the dense
index's top ``depth``, and a *pool* of the skills in either half's top ``depth`` with their exact
cosines. Each then puts the pool's two halves on its own scale (``fused``: per-query [0, 1];
``adaptive``: standouts) and both rank the same way (:func:`mix_halves`): ``a * lexical +
(1 - a) * semantic``, ties to the better cosine, then catalog order; every candidate carries its
method's score, ``bm25`` (raw BM25F) and ``dense`` (exact cosine) in ``components``.

``hybrid`` fuses ranks, not scores (reciprocal-rank fusion), so it has no mix to share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from maitred.recall._rank import top_k
from maitred.recall.base import Candidate
from maitred.recall.bm25 import BM25Recaller
from maitred.recall.dense import DenseRecaller


@dataclass(frozen=True)
class Halves:
    """Both halves read for one query.

    Attributes:
        bm25: every skill's BM25F score, in catalog order.
        pool: catalog rows of the skills in either half's top ``depth`` (sorted).
        cosines: the pool's exact cosines.
        ref: the cosine of the dense half's ``depth``-th skill (its last; 0.0 when it has none).
    """

    bm25: NDArray[np.float32]
    pool: NDArray[np.intp]
    cosines: NDArray[np.float32]
    ref: float


def read_halves(
    bm25: BM25Recaller, dense: DenseRecaller, text: str, query: NDArray[np.float32], depth: int
) -> Halves:
    """Read ``text`` (with ``query``, its unit vector) ``depth`` deep in both halves."""
    scores = bm25.scores(text)
    rows, found = dense.index.search(query, depth)
    ref = float(found[-1]) if len(found) else 0.0
    pool = np.union1d(rows, top_k(scores, depth, min_score=0.0)).astype(np.intp)
    return Halves(scores, pool, dense.index.cosines(query, pool), ref)


def mix_halves(
    method: str,
    names: tuple[str, ...],
    pool: NDArray[np.intp],
    lexical: NDArray[np.floating],
    semantic: NDArray[np.floating],
    weight: float | np.floating,
    bm25: NDArray[np.float32],
    cosines: NDArray[np.float32],
    k: int,
) -> list[Candidate]:
    """The best ``k`` of the pool by ``weight * lexical + (1 - weight) * semantic``.

    Args:
        method: the score's name in ``components`` (``fused``, ``adaptive``).
        names: the catalog's skill names (rows index them).
        pool: the candidates' catalog rows.
        lexical, semantic: each pool skill's two halves, on the method's scale; the mix keeps
            their dtype and ``weight``'s (a float32 weight over float32 halves mixes in float32).
        weight: the lexical half's weight ``a``.
        bm25, cosines: each pool skill's raw BM25F score and exact cosine (for ``components``).
        k: how many.
    """
    score = weight * lexical + (1 - weight) * semantic
    # ties: higher cosine first, then catalog order
    order = np.lexsort((pool, -cosines, -score))[:k]
    return [
        Candidate(
            names[pool[j]],
            r,
            float(score[j]),
            {method: float(score[j]), "bm25": float(bm25[j]), "dense": float(cosines[j])},
        )
        for r, j in enumerate(order, start=1)
    ]
