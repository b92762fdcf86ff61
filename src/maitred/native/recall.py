"""``native-glance``: the glance as a maitred recall method (and where every native method is
registered).

Importing this module registers ``"native-glance"``, ``"native"`` (glance + verdict + ruling,
:mod:`maitred.native.gavel`), ``"native-rerank"`` and ``"native-progressive"``
(:mod:`maitred.native.baselines`) as built-in recall methods (listed in
:data:`maitred.plugins.BUILTINS`): the registry loads this module only when such a name is
asked for, so the core never imports it, nor torch.

The glance recaller reads each query with the backbone, maps its token states to unit queries
and ranks the whole catalog by token voting over the skills' key banks.

Which maps: the *active maps file* :func:`active_maps_path` (``maitred native train`` writes it);
its backbone and layer decide which backbone is loaded. Without one, the glance runs untrained:
both maps are the top principal components of the catalog's own skill tokens (plain
standardised cosine), with a warning.

What is cached (with a cache folder, through :class:`~maitred.recall.store.IndexStore`): the
skills' raw token states, keyed by catalog version, backbone id, layer and text settings. The
banks are rebuilt from them (a matrix product) so new maps never need a new forward pass.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import numpy as np
from numpy.typing import NDArray

from maitred.native import require_torch
from maitred.native.backbone import Backbone, Progress, native_cache_dir
from maitred.native.data import SKILL_TEXT_CHARS, skill_text
from maitred.native.glance import DEFAULT_TOP_K, GlanceMaps, KeyBank
from maitred.native.states import load_states, save_states
from maitred.recall.base import Candidate
from maitred.recall.store import IndexStore
from maitred.skills.model import Catalog

require_torch()  # loaded only when a native method is asked for: fail with the install command

logger = logging.getLogger(__name__)

DEFAULT_DIM: Final = 256
"""Projection size d. SmolLM2-135M's states are 576 wide; on MetaTool training tokens the top
256 standardised principal components hold most of the variance (the share is printed by
``maitred native train``), and d*H per map stays small (147k numbers) for ~140 training tools,
where a wider map only adds room to memorise them."""

SKILL_TOKENS: Final = 64
"""Tokens of a skill's text read into its bank (name, description, start of the body)."""

F32 = NDArray[np.float32]


def active_maps_path() -> Path:
    """Where ``maitred native train`` writes, and ``native-glance`` reads, the maps."""
    return native_cache_dir() / "maps" / "glance.npz"


class NativeGlanceRecaller:
    """Ranks skills by the glance.

    Attributes:
        name: ``"native-glance"``.
        catalog: the catalog it ranks.
        backbone: reads queries.
        maps: the query/key maps.
        bank: the skills' (possibly compressed) key banks.
        top_k: skills each query token votes for.
    """

    name = "native-glance"

    def __init__(
        self,
        catalog: Catalog,
        backbone: Backbone,
        maps: GlanceMaps,
        bank: KeyBank,
        *,
        top_k: int | None = DEFAULT_TOP_K,
    ) -> None:
        self.catalog = catalog
        self.backbone = backbone
        self.maps = maps
        self.bank = bank
        self.top_k = top_k

    def rank_states(self, states: F32, k: int) -> list[Candidate]:
        """Rank from a query's token states (already read at the maps' layer)."""
        if len(states) == 0:
            return []
        scores = self.bank.scores(self.maps.queries(states), self.top_k)
        order = np.argsort(-scores, kind="stable")[:k]
        names = self.bank.names
        return [
            Candidate(names[i], r, float(scores[i]), {"glance": float(scores[i])})
            for r, i in enumerate(order, start=1)
        ]

    def rank(self, text: str, k: int) -> list[Candidate]:
        """The best ``k`` skills for ``text`` (empty for a blank text)."""
        if not text.strip():
            return []
        return self.rank_states(self.backbone.states([text])[0], k)


def skill_states(
    catalog: Catalog,
    backbone: Backbone,
    *,
    store: IndexStore | None = None,
    progress: Progress | None = None,
) -> list[F32]:
    """Every skill's token states at the backbone's layer (from ``store`` when cached)."""

    def build() -> list[F32]:
        texts = [skill_text(s) for s in catalog]
        return backbone.states(texts, max_tokens=SKILL_TOKENS, progress=progress)

    if store is None:
        return build()
    params: Mapping[str, object] = {
        "backbone_id": backbone.backbone_id,
        "layer": backbone.layer,
        "tokens": SKILL_TOKENS,
        "chars": SKILL_TEXT_CHARS,
    }

    def read(folder: Path) -> list[F32]:
        _, arrays = load_states(
            folder / "states.npz", backbone_id=backbone.backbone_id, layer=backbone.layer
        )
        return arrays

    def write(arrays: list[F32], folder: Path) -> None:
        save_states(
            folder / "states.npz",
            arrays,
            backbone_id=backbone.backbone_id,
            layer=backbone.layer,
            keys=catalog.names,
        )

    return store.load_or_build(
        catalog, "native-states", params, reader=read, build=build, writer=write
    )


def build_recaller(
    catalog: Catalog,
    *,
    maps_path: Path | None = None,
    backbone: Backbone | None = None,
    store: IndexStore | None = None,
    epsilon: float | None = None,
    top_k: int | None = DEFAULT_TOP_K,
    progress: Progress | None = None,
) -> NativeGlanceRecaller:
    """Load the backbone and maps, read every skill once and build the banks.

    Args:
        catalog: the skills.
        maps_path: trained maps (default :func:`active_maps_path`, if it exists).
        backbone: an already loaded backbone (default: the one the maps were trained on).
        store: caches the skills' states.
        epsilon: compress each bank to an epsilon-cover (``None``: keep every key).
        top_k: skills each query token votes for.
        progress: ``progress(done, total)`` while reading skills.
    """
    path = maps_path or active_maps_path()
    maps = GlanceMaps.load(path) if path.is_file() else None
    if backbone is None:
        backbone = Backbone.load(layer=None if maps is None else maps.layer)
    states = skill_states(catalog, backbone, store=store, progress=progress)
    if maps is None:
        logger.warning(
            "no trained glance maps at %s; ranking with untrained (principal-component) maps. "
            "Train them with `maitred native train`",
            path,
        )
        tokens = np.concatenate(states)
        dim = min(DEFAULT_DIM, backbone.hidden_size, len(tokens))
        maps = GlanceMaps.pca(tokens, dim, backbone_id=backbone.backbone_id, layer=backbone.layer)
    elif (maps.backbone_id, maps.layer) != (backbone.backbone_id, backbone.layer):
        maps = GlanceMaps.load(path, backbone_id=backbone.backbone_id, layer=backbone.layer)
    bank = KeyBank.build(catalog.names, states, maps, epsilon=epsilon)
    return NativeGlanceRecaller(catalog, backbone, maps, bank, top_k=top_k)
