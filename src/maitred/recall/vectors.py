"""Nearest skill vectors by cosine: exact up to a size, approximate (HNSW) above it.

Skill vectors are unit length, so cosine is a dot product. Up to :data:`ANN_THRESHOLD` skills
one matrix-vector product over all of them is both exact and fast (about a millisecond at 20k x
384). Above it the cost grows with the catalog, so a ``usearch`` HNSW graph (cosine metric)
finds a shortlist in roughly logarithmic time, and the shortlist is re-scored exactly against the
stored vectors. Returned scores are therefore always true cosines and ties are broken by catalog
position either way; only *which* skills make the shortlist can differ from the exact answer.

HNSW construction is multi-threaded and not bit-for-bit reproducible; persist the index
(:mod:`maitred.recall.store`) when replays must see the very same graph.

.. note:: ``usearch`` must be imported *after* ``onnxruntime`` in one process: with the wheels
   this project pins, loading ``onnxruntime``'s shared library after ``usearch.compiled``
   crashes the interpreter (SIGSEGV). :func:`_usearch_index_class` takes care of the order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from maitred.errors import ConfigError, RecallError
from maitred.recall._rank import top_k

ANN_THRESHOLD: Final = 20_000
"""Catalogs larger than this are searched with an HNSW index instead of a full product."""

IndexKind = Literal["exact", "usearch"]

_ANN_FILE = "ann.usearch"


def _usearch_index_class() -> Any:
    import onnxruntime  # noqa: F401  # must be loaded before usearch: see module note
    from usearch.index import Index

    return Index


def normalize_rows(vectors: NDArray[np.floating]) -> NDArray[np.float32]:
    """Rows scaled to unit L2 norm (all-zero rows stay zero)."""
    out = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(out, axis=-1, keepdims=True)
    unit: NDArray[np.float32] = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
    return unit


class VectorIndex:
    """Cosine search over unit vectors, exact or HNSW by catalog size.

    Attributes:
        vectors: the ``[n, d]`` float32 unit vectors, row i = skill i.
        kind: ``"exact"`` or ``"usearch"``.
    """

    def __init__(
        self,
        vectors: NDArray[np.float32],
        *,
        kind: IndexKind | None = None,
        ann_threshold: int = ANN_THRESHOLD,
        ann: Any = None,
        connectivity: int = 16,
        expansion_add: int = 128,
        expansion_search: int = 128,
    ) -> None:
        """Index ``vectors``.

        Args:
            vectors: ``[n, d]`` unit vectors.
            kind: force ``"exact"`` or ``"usearch"``; by default exact up to ``ann_threshold``.
            ann_threshold: largest catalog searched exactly when ``kind`` is not given.
            ann: an already built or loaded ``usearch`` index over these vectors (keys 0..n-1).
            connectivity: HNSW edges per node.
            expansion_add: HNSW build-time beam width.
            expansion_search: HNSW query-time beam width (raised to ``k`` when ``k`` is larger).
        """
        if vectors.ndim != 2:
            raise ConfigError(f"skill vectors must be a 2-d array, got shape {vectors.shape}")
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.kind: IndexKind = kind or ("usearch" if len(self.vectors) > ann_threshold else "exact")
        if self.kind not in ("exact", "usearch"):
            raise ConfigError(f"unknown vector index kind {kind!r}; choose one of exact, usearch")
        self._expansion_search = expansion_search
        self._ann = ann
        if self.kind == "usearch" and self._ann is None:
            self._ann = self._build_ann(connectivity, expansion_add)

    def _build_ann(self, connectivity: int, expansion_add: int) -> Any:
        index_class = _usearch_index_class()
        index = index_class(
            ndim=self.vectors.shape[1],
            metric="cos",
            dtype="f32",
            connectivity=connectivity,
            expansion_add=expansion_add,
            expansion_search=self._expansion_search,
        )
        if len(self.vectors):
            index.add(np.arange(len(self.vectors), dtype=np.uint64), self.vectors)
        return index

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    def search(
        self, query: NDArray[np.float32], k: int
    ) -> tuple[NDArray[np.intp], NDArray[np.float32]]:
        """The ``k`` rows most similar to ``query``, best first.

        Args:
            query: a ``[d]`` unit vector.
            k: how many.

        Returns:
            ``(row indices, cosines)``, both of length ``min(k, n)``.
        """
        if len(self) == 0 or k <= 0:
            return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.float32)
        if self.kind == "exact":
            sims = self.vectors @ query
            idx = top_k(sims, k)
            return idx, sims[idx]
        if self._expansion_search < k:
            self._ann.expansion_search = k
        matches = self._ann.search(query, min(k, len(self)))
        shortlist = np.asarray(matches.keys, dtype=np.intp)
        sims = self.vectors[shortlist] @ query
        order = top_k(sims, len(shortlist))
        return shortlist[order], sims[order]

    def cosines(self, query: NDArray[np.float32], rows: NDArray[np.intp]) -> NDArray[np.float32]:
        """Exact cosines of ``query`` with the given rows."""
        return np.asarray(self.vectors[rows] @ query, dtype=np.float32)

    def save(self, folder: Path) -> None:
        """Write the vectors (``vectors.npy``) and, for HNSW, the graph (``ann.usearch``)."""
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / "vectors.npy", self.vectors, allow_pickle=False)
        if self.kind == "usearch":
            self._ann.save(str(folder / _ANN_FILE))

    @classmethod
    def load(cls, folder: Path, *, kind: IndexKind) -> VectorIndex:
        """Read what :meth:`save` wrote.

        Raises:
            RecallError: a file is missing or does not match the vectors.
        """
        vectors = np.load(folder / "vectors.npy", allow_pickle=False)
        if kind == "exact":
            return cls(vectors, kind="exact")
        path = folder / _ANN_FILE
        if not path.is_file():
            raise RecallError(f"HNSW index file {path} is missing; delete {folder} to rebuild")
        index_class = _usearch_index_class()
        ann = index_class.restore(str(path))
        if ann is None or len(ann) != len(vectors):
            raise RecallError(
                f"HNSW index {path} does not match {folder / 'vectors.npy'}; "
                f"delete {folder} to rebuild"
            )
        return cls(vectors, kind="usearch", ann=ann)
