"""The glance: two linear maps, per-skill key banks, token-level max-sim and voting.

**Maps.** A hidden state x (width H) is first standardised per dimension,
``z = (x - mean) / std`` with mean and spread measured on training tokens -- a few dimensions of
a causal LM carry activations hundreds of times larger than the rest and would otherwise decide
every cosine. Then two bias-free linear maps of shape ``[d, H]`` give a query ``Wq z`` (task
tokens) and a key ``Wk z`` (skill tokens), each scaled to unit length. They are the only trained
parameters (:mod:`maitred.lab.native.train`); :meth:`GlanceMaps.pca` builds the untrained start,
both maps equal to the top-d principal components of standardised training tokens, so that before
training the glance is plain cosine in the model's dominant subspace.

**Banks.** A skill's bank holds the unit keys of every token of its text (one forward pass per
skill), optionally compressed to an epsilon-cover (:mod:`maitred.native.cover`). All banks sit
in one ``[N, d]`` matrix sorted by skill, so a query is scored against the whole library with one
matrix product.

**Score.** For task tokens i and skill s, ``m[i, s] = max over keys k of s of q_i . k`` (each
token keeps its best match in each bank). Token i then *votes* for its ``top_k`` skills with
weight ``w_i * m[i, s]`` (uniform ``w_i = 1/T`` for written tasks; recency decay belongs to
mid-rollout routing); a skill's glance score is the sum of its votes. Voting, unlike averaging
``m`` over the span, lets a few decisive tokens ("invoice", "DNS") outvote many filler tokens that
match every skill alike. Skills no token voted for keep a tiny share of their span average
(:data:`TIE_SHARE`) so the whole library is still ranked. ``top_k=None`` votes for every skill:
the span average (ColBERT's score), which is also the differentiable surrogate used in training.

Pure numpy: scoring needs no torch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from maitred.errors import ConfigError, IndexMismatchError
from maitred.native.cover import epsilon_cover

MAPS_FORMAT: Final = "maitred-glance-maps/1"
"""Version written into every maps file; a file of another format is refused."""

TIE_SHARE: Final = 1e-3
"""Share of the span average added to the votes: only orders skills that got equal votes."""

DEFAULT_TOP_K: Final = 3
"""Skills each task token votes for (tuned on MetaTool val tools; see docs/native.md)."""

F32 = NDArray[np.float32]


def unit_rows(x: NDArray[np.floating[Any]]) -> F32:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.asarray(x / np.maximum(norms, 1e-12), dtype=np.float32)


@dataclass(frozen=True)
class GlanceMaps:
    """Standardisation and the two maps, tied to one backbone and layer.

    Attributes:
        mean, std: per-dimension statistics of training tokens, ``[H]``.
        w_query, w_key: the maps, ``[d, H]``.
        backbone_id, layer: what the states came from.
        meta: how they were made (training config, data, steps), written to the file.
    """

    mean: F32
    std: F32
    w_query: F32
    w_key: F32
    backbone_id: str
    layer: int
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def dim(self) -> int:
        """The projection size d."""
        return int(self.w_query.shape[0])

    def queries(self, states: F32) -> F32:
        """Unit query vectors ``[T, d]`` of task-token states ``[T, H]``."""
        return unit_rows(((states - self.mean) / self.std) @ self.w_query.T)

    def keys(self, states: F32) -> F32:
        """Unit key vectors ``[T, d]`` of skill-token states ``[T, H]``."""
        return unit_rows(((states - self.mean) / self.std) @ self.w_key.T)

    @classmethod
    def pca(
        cls, tokens: F32, dim: int, *, backbone_id: str, layer: int, standardise: bool = True
    ) -> GlanceMaps:
        """Both maps = the top-``dim`` principal components of standardised ``tokens``.

        Args:
            tokens: ``[n, H]`` training token states (queries' and skills' together).
            dim: projection size (at most H).
            backbone_id, layer: recorded in the maps.
            standardise: ``False`` keeps raw states (mean 0, std 1): the raw-cosine ablation
                when ``dim == H``.
        """
        hidden = tokens.shape[1]
        if not 1 <= dim <= hidden:
            raise ConfigError(f"projection size {dim} must be in 1..{hidden}")
        mean = tokens.mean(axis=0) if standardise else np.zeros(hidden, np.float32)
        std = tokens.std(axis=0) + 1e-6 if standardise else np.ones(hidden, np.float32)
        z = (tokens - mean) / std
        _, svals, vt = np.linalg.svd(z - z.mean(axis=0), full_matrices=False)
        top = vt[:dim] if dim < hidden or standardise else np.eye(hidden)
        explained = float((svals[:dim] ** 2).sum() / max((svals**2).sum(), 1e-12))
        w = np.ascontiguousarray(top, dtype=np.float32)
        return cls(
            mean.astype(np.float32),
            std.astype(np.float32),
            w,
            w.copy(),
            backbone_id,
            layer,
            {"init": "pca", "standardise": standardise, "explained_variance": explained},
        )

    def save(self, path: Path) -> None:
        """Write the maps as one ``.npz`` (a few hundred KB) with their provenance."""
        meta = {
            "format": MAPS_FORMAT,
            "backbone_id": self.backbone_id,
            "layer": self.layer,
            **self.meta,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as f:
            np.savez(
                f,
                mean=self.mean,
                std=self.std,
                w_query=self.w_query,
                w_key=self.w_key,
                meta=np.array(json.dumps(meta, default=str)),
            )

    @classmethod
    def load(
        cls, path: Path, *, backbone_id: str | None = None, layer: int | None = None
    ) -> GlanceMaps:
        """Read a maps file, checking its format, backbone and layer.

        Raises:
            IndexMismatchError: another format, backbone or layer than asked for.
        """
        with np.load(path) as data:
            meta: dict[str, Any] = json.loads(str(data["meta"]))
            arrays = {k: data[k].astype(np.float32) for k in ("mean", "std", "w_query", "w_key")}
        if meta.get("format") != MAPS_FORMAT:
            raise IndexMismatchError(f"{path} is not a {MAPS_FORMAT} file; retrain the maps")
        for what, want in (("backbone_id", backbone_id), ("layer", layer)):
            if want is not None and meta.get(what) != want:
                raise IndexMismatchError(
                    f"maps in {path} were trained for {what} {meta.get(what)!r}, not {want!r}; "
                    "train maps for this backbone and layer (`maitred native train`)"
                )
        return cls(
            arrays["mean"],
            arrays["std"],
            arrays["w_query"],
            arrays["w_key"],
            str(meta["backbone_id"]),
            int(meta["layer"]),
            {k: v for k, v in meta.items() if k not in ("format", "backbone_id", "layer")},
        )


@dataclass(frozen=True)
class KeyBank:
    """Every skill's unit keys in one matrix, sorted by skill.

    Attributes:
        names: skill names, in catalog order.
        keys: ``[N, d]`` unit keys; skill j owns rows ``starts[j]:starts[j+1]``.
        starts: ``[n_skills + 1]`` offsets.
        total: keys before compression, per skill (for reporting kept/total).
    """

    names: tuple[str, ...]
    keys: F32
    starts: NDArray[np.int64]
    total: tuple[int, ...]

    @classmethod
    def build(
        cls,
        names: Sequence[str],
        states: Sequence[F32],
        maps: GlanceMaps,
        *,
        epsilon: float | None = None,
    ) -> KeyBank:
        """Project each skill's token states to keys and (optionally) epsilon-cover them.

        Raises:
            ConfigError: a skill with no tokens (every skill text has at least its name).
        """
        banks: list[F32] = []
        for name, st in zip(names, states, strict=True):
            if len(st) == 0:
                raise ConfigError(f"skill {name!r} has no tokens to build a key bank from")
            keys = maps.keys(st)
            banks.append(keys if epsilon is None else keys[epsilon_cover(keys, epsilon)])
        starts = np.cumsum([0] + [len(b) for b in banks]).astype(np.int64)
        return cls(tuple(names), np.concatenate(banks), starts, tuple(len(s) for s in states))

    def max_sim(self, queries: F32) -> F32:
        """``m[i, s]``: each query row's best score in each skill's bank, ``[T, n_skills]``."""
        sims = queries @ self.keys.T
        return np.asarray(np.maximum.reduceat(sims, self.starts[:-1], axis=1), dtype=np.float32)

    def scores(
        self, queries: F32, top_k: int | None = DEFAULT_TOP_K, weights: F32 | None = None
    ) -> F32:
        """Glance score of every skill for unit task-token queries ``[T, d]``.

        Args:
            queries: unit query vectors, one per task token.
            top_k: skills each token votes for; ``None`` for all (the span average).
            weights: per-token vote weights (default uniform ``1/T``).

        Returns:
            ``[n_skills]`` scores, higher is better (zeros for an empty query).
        """
        n = len(self.names)
        if len(queries) == 0:
            return np.zeros(n, np.float32)
        m = self.max_sim(queries)
        w = np.full(len(queries), 1.0 / len(queries), np.float32) if weights is None else weights
        span = w @ m
        if top_k is None or top_k >= n:
            return span.astype(np.float32)
        cut = np.partition(m, n - top_k, axis=1)[:, n - top_k : n - top_k + 1]
        votes = (w[:, None] * np.where(m >= cut, m, 0.0)).sum(axis=0)
        return np.asarray(votes + TIE_SHARE * span, dtype=np.float32)

    def sizes(self) -> tuple[int, int]:
        """``(kept, total)`` keys over all skills."""
        return len(self.keys), int(sum(self.total))
