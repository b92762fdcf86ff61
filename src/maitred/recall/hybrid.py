"""Hybrid recall: reciprocal-rank fusion (RRF) of the BM25 and the dense ranking.

RRF (Cormack, Clarke & Büttcher, 2009) ignores the two methods' incomparable score scales and
fuses ranks only::

    rrf(s) = sum over rankings r containing s of  1 / (k + rank_r(s))        k = 60

Each ranking is taken ``depth`` deep (default 100, and never less than the number of results
asked for), deeper than the fused list returned, so a skill ranked 30th by both methods can beat
one ranked 5th by only one. Ties in fused score go to the better BM25 rank, then to catalog
order, so the result is deterministic.

Every candidate carries all three numbers in ``components``: ``rrf``, ``bm25`` (0 when BM25
found no shared term) and ``dense`` (the exact cosine, computed for every fused candidate even
when it was outside the dense list). That lets ``Cutoff(on="dense", min_score=0.3)`` keep RRF's
ordering but drop candidates that are not semantically close, which raw RRF scores cannot do:
they depend only on ranks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import numpy as np
from numpy.typing import NDArray

from maitred.errors import ConfigError
from maitred.recall.base import Candidate
from maitred.recall.bm25 import BM25Recaller
from maitred.recall.dense import DenseRecaller

RRF_K: Final = 60
"""The RRF constant of the original paper; larger k flattens the rank discount."""

FUSION_DEPTH: Final = 100
"""How deep each input ranking is read before fusing."""


def rrf_scores(rankings: Mapping[str, Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Reciprocal-rank fusion of named rankings.

    Args:
        rankings: method -> skill names, best first (rank 1 = index 0).
        k: the RRF constant (> 0).

    Returns:
        skill name -> fused score, for every skill in any ranking (insertion order: first
        ranking first).

    Example:
        >>> rrf_scores({"a": ["x", "y"], "b": ["y"]}, k=60)["y"] == 1 / 62 + 1 / 61
        True
    """
    if k <= 0:
        raise ConfigError(f"the RRF constant k must be > 0, got {k}")
    fused: dict[str, float] = {}
    for names in rankings.values():
        for position, name in enumerate(names, start=1):
            fused[name] = fused.get(name, 0.0) + 1.0 / (k + position)
    return fused


class HybridRecaller:
    """BM25 and dense recall fused by reciprocal rank.

    Attributes:
        name: ``"hybrid"``.
        bm25: the lexical recaller.
        dense: the dense recaller (same catalog).
        k: the RRF constant.
        depth: how deep each input ranking is read.
    """

    name = "hybrid"

    def __init__(
        self,
        bm25: BM25Recaller,
        dense: DenseRecaller,
        *,
        k: int = RRF_K,
        depth: int = FUSION_DEPTH,
    ) -> None:
        """Fuse two recallers built over the same catalog.

        Raises:
            ConfigError: the two were built over different catalogs, or k/depth are not
                positive.
        """
        if bm25.catalog.version != dense.catalog.version:
            raise ConfigError(
                "hybrid recall needs BM25 and dense recallers over the same catalog; got "
                f"{bm25.catalog.version!r} and {dense.catalog.version!r}"
            )
        if k <= 0 or depth <= 0:
            raise ConfigError(f"RRF k ({k}) and fusion depth ({depth}) must be > 0")
        self.bm25 = bm25
        self.dense = dense
        self.catalog = bm25.catalog
        self.k = k
        self.depth = depth
        self._row = {name: i for i, name in enumerate(self.catalog.names)}

    @property
    def settings(self) -> dict[str, str]:
        """Both halves' settings: the analyzer and the embedder (what the log records)."""
        return {**self.bm25.settings, **self.dense.settings}

    def rank(self, text: str, k: int) -> list[Candidate]:
        """The best ``k`` skills by RRF of the two rankings (empty for a blank text).

        Returns:
            Candidates with ``score`` = RRF score and ``components`` ``rrf``, ``bm25``,
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
        depth = max(self.depth, k)
        lexical = self.bm25.rank(text, depth)
        semantic = self.dense.rank_vector(query, depth)
        fused = rrf_scores(
            {"bm25": [c.name for c in lexical], "dense": [c.name for c in semantic]}, self.k
        )
        bm25_rank = {c.name: c.rank for c in lexical}
        bm25_score = {c.name: c.score for c in lexical}
        order = sorted(
            fused,
            key=lambda n: (-fused[n], bm25_rank.get(n, depth + 1), self._row[n]),
        )[:k]
        rows = np.asarray([self._row[n] for n in order], dtype=np.intp)
        cosines = self.dense.index.cosines(query, rows) if len(rows) else np.empty(0)
        return [
            Candidate(
                name,
                position,
                fused[name],
                {"rrf": fused[name], "bm25": bm25_score.get(name, 0.0), "dense": float(cosine)},
            )
            for position, (name, cosine) in enumerate(zip(order, cosines, strict=True), start=1)
        ]
