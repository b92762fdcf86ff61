"""Adaptive fusion: each half weighed by how far its best skills stand out, ``adaptive``.

``fused`` puts both halves on a [0, 1] scale per query (the best skill of each half gets 1
whatever it scored), then mixes them with one fixed weight. That weight was fitted on a catalog
where the dense half is the better one; on a catalog whose embedding cannot tell the tools apart
the dense half still hands out a full 1 to its (wrong) best skill, and the mix follows it. Which
half deserves the vote changes with the catalog and with the query, and a fixed weight cannot
see that.

``adaptive`` scores each half by how unusual a skill's score is *in this catalog, for this
query*: the number of standard deviations above the catalog's mean score, floored at 0, raised to
a power ``p`` above 1 so that a skill far out of the crowd counts more than proportionally::

    lexical(s)  = max(0, (bm25(s) - mean_bm25) / sd_bm25) ** p    over every skill of the catalog
    semantic(s) = max(0, (cos(s) - mean_cos) / sd_cos) ** p        over every skill of the catalog
    adaptive(s) = a * lexical(s) + (1 - a) * semantic(s)           a = LEXICAL_WEIGHT, p = POWER

A half that is sure of a few skills (a query whose rare words only two tools share; a query one
tool's embedding sits far closer to than the rest of the catalog) gives them a large score and
so carries the mix; a half that sees many skills as about equally good (a query of common
words; an embedding under which every tool looks alike) gives small scores and little weight.
The lexical half's share of the evidence (:meth:`Evidence.lexical_share`) therefore moves with
each query, and with the catalog: on a catalog where one half is weak, that half rarely stands
out. A query sharing no word with the catalog has no lexical half (all zeros) and the dense
ranking alone decides; a catalog whose embedding gives every skill the same cosine has no
semantic half.

The cosine mean and deviation over the whole catalog are exact without scoring every skill:
with the catalog's mean vector ``m`` and second-moment matrix ``M = V^T V / n`` (computed once),
``mean_cos = q . m`` and ``E[cos^2] = q^T M q`` for a query ``q`` (``d x d`` work per query, not
``n x d``), so the approximate (HNSW) index of a large catalog stays approximate.

``a`` and ``p`` are the fitted numbers: the pair ``benchmarks/routing_loso.py --stress`` chooses
on all development sets and their weak-dense variants (each set again with a dense half that
embeds only the tools' names). Its leave-one-set-out folds, each fitted without the set it
scores, chose the same pair on 7 of 8 folds (0.4 and 1 on the eighth); see BENCHMARKS.md.

Only skills in either half's top :data:`FUSION_DEPTH` are fused (as in ``fused``). Every
candidate carries ``adaptive``, ``bm25`` (raw BM25F score) and ``dense`` (exact cosine) in
``components``, so ``Cutoff(on="dense", min_score=0.35)`` works as with ``dense``. Ties go to the
better cosine, then catalog order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from maitred.errors import ConfigError
from maitred.recall._halves import mix_halves, read_halves
from maitred.recall.base import Candidate
from maitred.recall.bm25 import BM25Recaller
from maitred.recall.dense import DenseRecaller

LEXICAL_WEIGHT: Final = 0.35
"""Weight of the lexical half (the dense half gets the rest); see the module docstring."""

POWER: Final = 1.5
"""Exponent of the standouts (1: proportional; above 1: a clear standout counts more)."""

FUSION_DEPTH: Final = 100
"""How deep each half's ranking is read."""

_FLAT: Final = 1e-9
"""A standard deviation at or below this means the half cannot tell skills apart."""


def standout(
    scores: NDArray[np.floating], mean: float, sd: float, power: float = 1.0
) -> NDArray[np.float64]:
    """Standard deviations above ``mean``, floored at 0, to ``power`` (zeros when ``sd`` ~ 0).

    >>> standout(np.array([5.0, 1.0, 0.0]), 1.0, 2.0, 2.0).tolist()
    [4.0, 0.0, 0.0]
    """
    if not sd > _FLAT:
        return np.zeros(len(scores), dtype=np.float64)
    above = np.maximum((np.asarray(scores, dtype=np.float64) - mean) / sd, 0.0)
    return above if power == 1.0 else np.asarray(above**power, dtype=np.float64)


@dataclass(frozen=True)
class Evidence:
    """Both halves' scores for one query over the fusion pool (what :meth:`mix` ranks).

    Attributes:
        pool: catalog rows of the skills in either half's top ``depth``.
        lexical: each pool skill's lexical standout (see the module docstring).
        semantic: each pool skill's semantic standout.
        bm25: raw BM25F scores of the pool.
        cosines: exact cosines of the pool.
    """

    pool: NDArray[np.intp]
    lexical: NDArray[np.float64]
    semantic: NDArray[np.float64]
    bm25: NDArray[np.float32]
    cosines: NDArray[np.float32]

    def lexical_share(self, lexical_weight: float) -> float:
        """The lexical half's share of the best evidence: ``a * max lexical`` over that plus
        ``(1 - a) * max semantic`` (0.0 when neither half has any). A fixed-weight mix would
        give every query the same share; this one moves with the two distributions."""
        lex = lexical_weight * float(self.lexical.max(initial=0.0))
        sem = (1.0 - lexical_weight) * float(self.semantic.max(initial=0.0))
        return lex / (lex + sem) if lex + sem > 0.0 else 0.0


def weigh(
    bm25: NDArray[np.float32],
    pool: NDArray[np.intp],
    cosines: NDArray[np.float32],
    cosine_mean: float,
    cosine_sd: float,
    power: float = POWER,
) -> Evidence:
    """Evidence for one query from every skill's BM25F score (catalog order), the pool's rows,
    their cosines, and the mean and standard deviation of the cosine over the whole catalog."""
    lexical = standout(bm25[pool], float(bm25.mean()), float(bm25.std()), power)
    semantic = standout(cosines, cosine_mean, cosine_sd, power)
    return Evidence(pool, lexical, semantic, bm25[pool], cosines)


class AdaptiveRecaller:
    """BM25F and dense recall, each half scored by how far a skill stands out in the catalog.

    Attributes:
        name: ``"adaptive"``.
        bm25: the lexical recaller.
        dense: the dense recaller (same catalog).
        lexical_weight: ``a`` of the module docstring.
        power: ``p`` of the module docstring.
        depth: how deep each half is read.
    """

    name = "adaptive"

    def __init__(
        self,
        bm25: BM25Recaller,
        dense: DenseRecaller,
        *,
        lexical_weight: float = LEXICAL_WEIGHT,
        power: float = POWER,
        depth: int = FUSION_DEPTH,
    ) -> None:
        """Fuse two recallers built over the same catalog.

        Raises:
            ConfigError: different catalogs, a weight outside [0, 1], a power outside
                [0.5, 4], or depth < 1.
        """
        if not 0.5 <= power <= 4.0:
            raise ConfigError(f"the standout power must be in [0.5, 4], got {power}")
        if bm25.catalog.version != dense.catalog.version:
            raise ConfigError(
                "adaptive recall needs BM25 and dense recallers over the same catalog; got "
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
        self.power = power
        self.depth = depth
        self._names = self.catalog.names
        vectors = np.asarray(dense.index.vectors, dtype=np.float64)
        n = max(len(vectors), 1)
        self._mean_vector = vectors.sum(axis=0) / n
        self._second_moment = (vectors.T @ vectors) / n

    def cosine_moments(self, query: NDArray[np.float32]) -> tuple[float, float]:
        """Mean and standard deviation of ``query``'s cosine over every skill of the catalog."""
        q = np.asarray(query, dtype=np.float64)
        mean = float(q @ self._mean_vector)
        var = float(q @ self._second_moment @ q) - mean * mean
        return mean, float(np.sqrt(max(var, 0.0)))

    def evidence(
        self, text: str, query: NDArray[np.float32], k: int, power: float | None = None
    ) -> Evidence:
        """Both halves' standouts over the pool for one query (``query`` = its unit vector;
        ``power`` defaults to this recaller's)."""
        h = read_halves(self.bm25, self.dense, text, query, max(self.depth, k))
        mean, sd = self.cosine_moments(query)
        return weigh(h.bm25, h.pool, h.cosines, mean, sd, self.power if power is None else power)

    def mix(
        self, evidence: Evidence, k: int, lexical_weight: float | None = None
    ) -> list[Candidate]:
        """The best ``k`` of the pool by ``a * lexical + (1 - a) * semantic``.

        Args:
            evidence: from :meth:`evidence`.
            k: how many.
            lexical_weight: ``a`` (default: this recaller's); a benchmark fitting ``a`` ranks
                the same evidence under several weights.
        """
        a = self.lexical_weight if lexical_weight is None else lexical_weight
        e = evidence
        return mix_halves(
            "adaptive", self._names, e.pool, e.lexical, e.semantic, a, e.bm25, e.cosines, k
        )

    @property
    def settings(self) -> dict[str, str]:
        """Both halves' settings: the analyzer and the embedder (what the log records)."""
        return {**self.bm25.settings, **self.dense.settings}

    def rank(self, text: str, k: int) -> list[Candidate]:
        """The best ``k`` skills by adaptive score (empty for a blank text).

        Returns:
            Candidates with ``score`` = adaptive score and ``components`` ``adaptive``,
            ``bm25``, ``dense``.
        """
        return self._rank(text, self.dense.query_vector(text), k)

    def rank_batch(self, texts: Sequence[str], k: int) -> list[list[Candidate]]:
        """:meth:`rank` for many texts, embedding them in batches (same results)."""
        vectors = self.dense.query_vectors(texts)
        return [self._rank(t, q, k) for t, q in zip(texts, vectors, strict=True)]

    def _rank(self, text: str, query: NDArray[np.float32] | None, k: int) -> list[Candidate]:
        if query is None or k <= 0:
            return []
        return self.mix(self.evidence(text, query, k), k)
