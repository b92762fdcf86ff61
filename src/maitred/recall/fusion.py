"""Fused recall: BM25F and dense scores, normalised per query and mixed, ``fused``.

Reciprocal-rank fusion (``hybrid``) gives both rankings an equal vote whatever either one is
worth, so it lands between its halves: on a catalog where one method is far better it loses to
that method. ``fused`` keeps the scores, puts them on one scale *for each query*, and mixes::

    lexical(s) = bm25(s) / max over skills of bm25                         in [0, 1]
    semantic(s) = max(0, (cos(s) - ref) / (cos_max - ref))                  in [0, 1]
    fused(s)   = a * lexical(s) + (1 - a) * semantic(s)                     a = LEXICAL_WEIGHT

``ref`` is the cosine of the :data:`FUSION_DEPTH`-th most similar skill (the least similar one
in a smaller catalog): the scale runs from "as similar as a random hundredth skill" to "the most
similar". Both halves adapt to the query: a query with strong lexical evidence gets a peaked
lexical half, a query whose words the catalog does not know gets none (its lexical half is 0
and the dense ranking alone decides), a query on which the embedding cannot separate skills gets
a semantic half that is flat except at the top.

``a`` is the one fitted number: 0.3, the best of 0.1-0.7 on MetaTool dev queries
(``benchmarks/routing_tune.py``); no query of any reported set was used. On every set of
``benchmarks/routing_sets.py`` the result is at or above the better of its two halves.

Only skills in either method's top :data:`FUSION_DEPTH` are fused; any other skill scores at
most ``a`` times the depth-th lexical score and so cannot enter a top-``k`` of ``k <= depth``.
Every candidate carries ``fused``, ``bm25`` (raw BM25F score) and ``dense`` (exact cosine)
in ``components``, so ``Cutoff(on="dense", min_score=0.35)`` keeps working as with ``dense``
or ``hybrid``. Ties go to the better dense rank, then catalog order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
from numpy.typing import NDArray

from maitred.errors import ConfigError
from maitred.recall._halves import mix_halves, read_halves
from maitred.recall.base import Candidate
from maitred.recall.bm25 import BM25Recaller
from maitred.recall.dense import DenseRecaller

LEXICAL_WEIGHT: Final = 0.3
"""Weight of the normalised BM25F half (the dense half gets the rest); fitted on MetaTool dev."""

FUSION_DEPTH: Final = 100
"""How deep each method's ranking is read, and which cosine is the semantic scale's zero."""


def lexical_scale(scores: NDArray[np.float32]) -> NDArray[np.float32]:
    """BM25 scores divided by the query's best (all zeros when nothing matched)."""
    best = float(scores.max(initial=0.0))
    if best <= 0.0:
        return np.zeros_like(scores)
    return np.asarray(scores / np.float32(best), dtype=np.float32)


def semantic_scale(cosines: NDArray[np.float32], ref: float) -> NDArray[np.float32]:
    """Cosines mapped to [0, 1]: ``ref`` and below -> 0, the best cosine -> 1."""
    best = float(cosines.max(initial=ref))
    span = best - ref
    if span <= 1e-9:
        return np.zeros_like(cosines)
    return np.asarray(np.clip((cosines - ref) / span, 0.0, None), dtype=np.float32)


class FusedRecaller:
    """BM25F and dense recall, mixed as per-query normalised scores.

    Attributes:
        name: ``"fused"``.
        bm25: the lexical recaller.
        dense: the dense recaller (same catalog).
        lexical_weight: ``a`` of the module docstring.
        depth: how deep each method is read.
    """

    name = "fused"

    def __init__(
        self,
        bm25: BM25Recaller,
        dense: DenseRecaller,
        *,
        lexical_weight: float = LEXICAL_WEIGHT,
        depth: int = FUSION_DEPTH,
    ) -> None:
        """Fuse two recallers built over the same catalog.

        Raises:
            ConfigError: different catalogs, a weight outside [0, 1], or depth < 1.
        """
        if bm25.catalog.version != dense.catalog.version:
            raise ConfigError(
                "fused recall needs BM25 and dense recallers over the same catalog; got "
                f"{bm25.catalog.version!r} and {dense.catalog.version!r}"
            )
        if not 0.0 <= lexical_weight <= 1.0:
            raise ConfigError(f"the lexical weight must be in [0, 1], got {lexical_weight}")
        if depth < 1:
            raise ConfigError(f"the fusion depth must be >= 1, got {depth}")
        self.bm25 = bm25
        self.dense = dense
        self.catalog = bm25.catalog
        self.lexical_weight = lexical_weight
        self.depth = depth
        self._names = self.catalog.names

    @property
    def settings(self) -> dict[str, str]:
        """Both halves' settings: the analyzer and the embedder (what the log records)."""
        return {**self.bm25.settings, **self.dense.settings}

    def rank(self, text: str, k: int) -> list[Candidate]:
        """The best ``k`` skills by fused score (empty for a blank text).

        Returns:
            Candidates with ``score`` = fused score and ``components`` ``fused``, ``bm25``,
            ``dense``.
        """
        return self._fuse(text, self.dense.query_vector(text), k)

    def rank_batch(self, texts: Sequence[str], k: int) -> list[list[Candidate]]:
        """:meth:`rank` for many texts, embedding them in batches (same results)."""
        vectors = self.dense.query_vectors(texts)
        return [self._fuse(t, q, k) for t, q in zip(texts, vectors, strict=True)]

    def _fuse(self, text: str, query: NDArray[np.float32] | None, k: int) -> list[Candidate]:
        if query is None or k <= 0:
            return []
        h = read_halves(self.bm25, self.dense, text, query, max(self.depth, k))
        return mix_halves(
            "fused",
            self._names,
            h.pool,
            lexical_scale(h.bm25)[h.pool],
            semantic_scale(h.cosines, h.ref),
            np.float32(self.lexical_weight),
            h.bm25[h.pool],
            h.cosines,
            k,
        )
