"""The native extra's recall methods, listed by name in :data:`maitred.plugins.BUILTINS`.

``native-glance`` (the glance alone), ``native`` (the full ruling), ``native-rerank`` and
``native-progressive`` (the baselines on the same backbone). The registry in
:mod:`maitred.recall.registry` loads this module only when one of these names is asked for, so
nothing outside :mod:`maitred.native` imports it, nor torch.
"""

from __future__ import annotations

from collections.abc import Mapping

from maitred.native.backbone import Progress
from maitred.native.baselines import build_progressive, build_rerank
from maitred.native.gavel import build_native
from maitred.native.recall import build_recaller
from maitred.recall.base import Recaller
from maitred.recall.dense import Embedder
from maitred.recall.store import IndexStore
from maitred.skills.model import Catalog


def make_native_glance(
    catalog: Catalog,
    *,
    store: IndexStore | None,
    weights: Mapping[str, float] | None,
    embedder: Embedder | None,
    progress: Progress | None,
    analyzer: str = "scripts",
) -> Recaller:
    """``native-glance``: the trained glance over the catalog."""
    return build_recaller(catalog, store=store, progress=progress)


def make_native(
    catalog: Catalog,
    *,
    store: IndexStore | None,
    weights: Mapping[str, float] | None,
    embedder: Embedder | None,
    progress: Progress | None,
    analyzer: str = "scripts",
) -> Recaller:
    """``native``: glance, verdict, dense and BM25 pooled by calibrated weights."""
    return build_native(
        catalog, store=store, bm25_weights=weights, embedder=embedder, progress=progress
    )


def make_native_rerank(
    catalog: Catalog,
    *,
    store: IndexStore | None,
    weights: Mapping[str, float] | None,
    embedder: Embedder | None,
    progress: Progress | None,
    analyzer: str = "scripts",
) -> Recaller:
    """``native-rerank``: dense top 10 re-ranked by the verdict."""
    return build_rerank(catalog, store=store, embedder=embedder, progress=progress)


def make_native_progressive(
    catalog: Catalog,
    *,
    store: IndexStore | None,
    weights: Mapping[str, float] | None,
    embedder: Embedder | None,
    progress: Progress | None,
    analyzer: str = "scripts",
) -> Recaller:
    """``native-progressive``: the menu of names in the prompt, scored by likelihood."""
    return build_progressive(catalog)
