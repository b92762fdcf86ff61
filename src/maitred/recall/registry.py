"""Recall methods by name, and the one function that builds them.

``make_recaller("hybrid", catalog, cache_dir=".maitred-cache")`` is how the pipeline, the CLI and
the service get a recaller: the method is a name from configuration, resolved here. Each name
maps to a factory: the built-ins are listed in :data:`maitred.plugins.BUILTINS` (the factories
below), a third party's come from entry points, and :func:`register_recaller` adds one in this
process. Every "choose one of" message is generated from these names, so it cannot fall behind
the methods that exist.

Built-in methods:

- ``"bm25"``: :class:`~maitred.recall.bm25.BM25Recaller`, BM25F (``weights`` = field weights);
- ``"bm25-plain"``: :class:`~maitred.recall.bm25_plain.PlainBM25Recaller`, one Okapi BM25 over
  all of a skill's text (the baseline ``bm25`` must beat; built in memory, never cached);
- ``"dense"``: :class:`~maitred.recall.dense.DenseRecaller` (``embedder`` defaults to the model
  named :data:`~maitred.recall.embedders.DEFAULT_EMBEDDER`; others by name with
  :func:`~maitred.recall.embedders.make_embedder`);
- ``"hybrid"``: :class:`~maitred.recall.hybrid.HybridRecaller`, RRF of the two;
- ``"fused"``: :class:`~maitred.recall.fusion.FusedRecaller`, per-query normalised BM25F and
  dense scores mixed with a fitted weight (at or above its better half on every set measured);
- ``"adaptive"``: :class:`~maitred.recall.adaptive.AdaptiveRecaller`, each half scored by how
  many standard deviations a skill stands out in the catalog for this query, then mixed (a
  half that cannot tell skills apart gets little say).

``bm25`` and ``fused`` use a tuning stored by ``maitred tune`` (:mod:`maitred.recall.tune`) in
``cache_dir`` for the same catalog version, unless ``weights`` are given; the recaller is then
named ``bm25(tuned)`` / ``fused(tuned)``, which the decision log records.

Names starting with ``native`` (``"native-glance"``) belong to the optional :mod:`maitred.native`
package: it is imported only when such a name is asked for (so the core never imports torch), and
a missing ``native`` extra raises :class:`~maitred.errors.MissingExtraError`.

With ``cache_dir``, indexes are stored and reused through :class:`~maitred.recall.store.IndexStore`.

Two settings apply to every method that has the half they name: ``analyzer`` (how the lexical
half cuts text into terms, :mod:`maitred.recall.analyzers`; default ``scripts``) and
``embedder`` (the dense half's model, :mod:`maitred.recall.embedders`; default ``auto``: the
English MiniLM, or the multilingual ``e5-small`` when most of the catalog's words are in
another language, :mod:`maitred.recall.languages`). The values a recaller was built with are
its ``settings``, which :func:`method_label` appends to the name the decision log records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

import maitred.plugins as plugins
from maitred.errors import ConfigError, EmptyCatalogError
from maitred.recall.adaptive import AdaptiveRecaller
from maitred.recall.analyzers import DEFAULT_ANALYZER, DEFAULT_STEMMER, check_analyzer
from maitred.recall.base import Recaller
from maitred.recall.bm25 import (
    DEFAULT_B,
    DEFAULT_FIELD_WEIGHTS,
    DEFAULT_K1,
    LEXICAL_BODY_CHARS,
    BM25Recaller,
    check_weights,
)
from maitred.recall.bm25_plain import PlainBM25Recaller
from maitred.recall.dense import (
    DEFAULT_FIELD_MIX,
    DenseRecaller,
    Embedder,
    Progress,
    check_mix,
)
from maitred.recall.embedders import AUTO, auto_embedder, make_embedder
from maitred.recall.fields import BODY_CHARS, FIELDS_VERSION
from maitred.recall.fusion import FusedRecaller
from maitred.recall.hybrid import HybridRecaller
from maitred.recall.intents import IntentSplitRecaller
from maitred.recall.servers import ServerRecaller
from maitred.recall.store import IndexStore
from maitred.recall.tune import Tuning, load_tuning
from maitred.recall.vectors import ANN_THRESHOLD
from maitred.skills.model import Catalog


class RecallerFactory(Protocol):
    """Builds a recaller for a catalog (registered under a method name)."""

    def __call__(
        self,
        catalog: Catalog,
        *,
        store: IndexStore | None,
        weights: Mapping[str, float] | None,
        embedder: Embedder | None,
        progress: Progress | None,
        analyzer: str,
    ) -> Recaller: ...


_REGISTRY: dict[str, RecallerFactory] = {}


def register_recaller(name: str) -> Callable[[RecallerFactory], RecallerFactory]:
    """Register a recaller factory under ``name`` in this process (a decorator).

    Raises:
        ConfigError: ``name`` is already registered, built in or declared as an entry point.
    """

    def add(factory: RecallerFactory) -> RecallerFactory:
        if name in _REGISTRY or name in plugins.names("recall"):
            raise ConfigError(f"a recall method named {name!r} is already registered")
        _REGISTRY[name] = factory
        return factory

    return add


#: ``METHOD+intents`` ranks the requests of a multi-request message apart when they point to
#: other skills than the whole text does (see recall.intents)
INTENTS_SUFFIX = "intents"
#: ``METHOD+intents-all`` splits every message that cuts into requests, without that test
ALWAYS_SUFFIX = "intents-all"
#: ``METHOD+servers`` lifts the tools of a ranking's dominant MCP server (see recall.servers);
#: it may follow the other suffixes (``adaptive+intents+servers``)
SERVERS_SUFFIX = "servers"


def recaller_names() -> tuple[str, ...]:
    """Every recall method name, sorted: those registered in this process and those declared
    as entry points (group ``maitred.recall_methods``), such as the native extra's."""
    return tuple(sorted(set(_REGISTRY) | set(plugins.names("recall"))))


def make_recaller(
    method: str,
    catalog: Catalog,
    *,
    cache_dir: Path | str | None = None,
    weights: Mapping[str, float] | None = None,
    embedder: Embedder | str | None = None,
    progress: Progress | None = None,
    analyzer: str | None = None,
) -> Recaller:
    """Build (or load from ``cache_dir``) the recaller registered as ``method``.

    Args:
        method: a registered name (see :func:`recaller_names`); ``NAME+intents`` wraps that
            method in :class:`~maitred.recall.intents.IntentSplitRecaller` (the requests of a
            multi-request message that point elsewhere are ranked too, and the rankings
            interleaved); ``NAME+intents-all`` splits every multi-request message;
            ``NAME+servers`` (last) wraps it in :class:`~maitred.recall.servers.ServerRecaller`
            (the tools of a ranking's dominant MCP server lifted into one block; a catalog
            with fewer than two servers is ranked as by ``NAME``).
        catalog: the :class:`~maitred.skills.model.Catalog` to rank.
        cache_dir: where indexes are stored and reused; ``None`` builds in memory.
        weights: BM25 field weights (``bm25`` and ``hybrid``; default tuned weights).
        embedder: the sentence-embedding model of the dense half, or its name; ``None`` or
            ``"auto"`` chooses by the catalog's languages (:func:`auto_embedder`).
        progress: ``progress(done, total)`` while embedding skills.
        analyzer: the lexical half's analyzer name (default ``scripts``).

    Returns:
        The recaller.

    Raises:
        ConfigError: unknown method, analyzer or embedder (the message lists the known ones).
        EmptyCatalogError: the catalog holds no skills.
    """
    chosen = check_analyzer(DEFAULT_ANALYZER if analyzer is None else analyzer)
    model = make_embedder(embedder) if isinstance(embedder, str) and embedder != AUTO else embedder
    model = None if isinstance(model, str) else model
    inner_method, plus, last = method.rpartition("+")
    if plus and last == SERVERS_SUFFIX and inner_method:
        inner = make_recaller(
            inner_method,
            catalog,
            cache_dir=cache_dir,
            weights=weights,
            embedder=model,
            progress=progress,
            analyzer=chosen,
        )
        return ServerRecaller(inner, catalog)
    base, plus, suffix = method.partition("+")
    if plus:
        if suffix not in (INTENTS_SUFFIX, ALWAYS_SUFFIX):
            raise ConfigError(
                f"unknown recall method {method!r}: the suffixes are '+{INTENTS_SUFFIX}', "
                f"'+{ALWAYS_SUFFIX}' and '+{SERVERS_SUFFIX}' (e.g. 'fused+{INTENTS_SUFFIX}', "
                f"'adaptive+{SERVERS_SUFFIX}')"
            )
        inner = make_recaller(
            base,
            catalog,
            cache_dir=cache_dir,
            weights=weights,
            embedder=model,
            progress=progress,
            analyzer=chosen,
        )
        return IntentSplitRecaller(inner, always=suffix == ALWAYS_SUFFIX)
    factory = _REGISTRY.get(method)
    if factory is None:
        if method not in plugins.names("recall"):
            raise ConfigError(
                f"unknown recall method {method!r}; choose one of {', '.join(recaller_names())}"
            )
        factory = plugins.load("recall", method, what="recall method")
    if len(catalog) == 0:
        raise EmptyCatalogError(
            "the catalog holds no skills or tools, so there is nothing to recall; "
            "check the catalog path"
        )
    store = IndexStore(cache_dir) if cache_dir is not None else None
    return factory(
        catalog, store=store, weights=weights, embedder=model, progress=progress, analyzer=chosen
    )


def _bm25(
    catalog: Catalog,
    store: IndexStore | None,
    weights: Mapping[str, float] | None,
    analyzer: str = DEFAULT_ANALYZER,
) -> BM25Recaller:
    if store is None:
        return BM25Recaller.build(catalog, weights=weights, analyzer=analyzer)
    params = {
        "k1": DEFAULT_K1,
        "b": DEFAULT_B,
        "stemmer": DEFAULT_STEMMER,
        "analyzer": analyzer,
        "body_chars": LEXICAL_BODY_CHARS,
        "fields": FIELDS_VERSION,
        "weights": check_weights(DEFAULT_FIELD_WEIGHTS if weights is None else weights),
    }
    return store.load_or_build(
        catalog,
        "bm25f",
        params,
        reader=lambda folder: BM25Recaller.load(folder, catalog, weights=weights),
        build=lambda: BM25Recaller.build(catalog, weights=weights, analyzer=analyzer),
        writer=lambda recaller, folder: recaller.save(folder),
    )


def _dense(
    catalog: Catalog, store: IndexStore | None, embedder: Embedder | None, progress: Progress | None
) -> DenseRecaller:
    model = embedder or make_embedder(auto_embedder(catalog))
    if store is None:
        return DenseRecaller.build(catalog, model, progress=progress)
    params = {
        "model_id": model.model_id,
        "field_mix": check_mix(DEFAULT_FIELD_MIX),
        "body_chars": BODY_CHARS,
        "fields": FIELDS_VERSION,
        "ann_threshold": ANN_THRESHOLD,
    }
    return store.load_or_build(
        catalog,
        "dense",
        params,
        reader=lambda folder: DenseRecaller.load(folder, catalog, model),
        build=lambda: DenseRecaller.build(catalog, model, progress=progress),
        writer=lambda recaller, folder: recaller.save(folder),
    )


def _make_bm25(
    catalog: Catalog,
    *,
    store: IndexStore | None,
    weights: Mapping[str, float] | None,
    embedder: Embedder | None,
    progress: Progress | None,
    analyzer: str = DEFAULT_ANALYZER,
) -> Recaller:
    tuning = _tuning(catalog, store, weights)
    if tuning is None:
        return _bm25(catalog, store, weights, analyzer)
    bm25 = _bm25(catalog, store, tuning.field_weights, analyzer)
    bm25.name = "bm25(tuned)"
    return bm25


def _make_bm25_plain(
    catalog: Catalog,
    *,
    store: IndexStore | None,
    weights: Mapping[str, float] | None,
    embedder: Embedder | None,
    progress: Progress | None,
    analyzer: str = DEFAULT_ANALYZER,
) -> Recaller:
    return PlainBM25Recaller.build(catalog, analyzer=analyzer)


def _make_dense(
    catalog: Catalog,
    *,
    store: IndexStore | None,
    weights: Mapping[str, float] | None,
    embedder: Embedder | None,
    progress: Progress | None,
    analyzer: str = DEFAULT_ANALYZER,
) -> Recaller:
    return _dense(catalog, store, embedder, progress)


def _make_hybrid(
    catalog: Catalog,
    *,
    store: IndexStore | None,
    weights: Mapping[str, float] | None,
    embedder: Embedder | None,
    progress: Progress | None,
    analyzer: str = DEFAULT_ANALYZER,
) -> Recaller:
    return HybridRecaller(
        _bm25(catalog, store, weights, analyzer), _dense(catalog, store, embedder, progress)
    )


def _make_fused(
    catalog: Catalog,
    *,
    store: IndexStore | None,
    weights: Mapping[str, float] | None,
    embedder: Embedder | None,
    progress: Progress | None,
    analyzer: str = DEFAULT_ANALYZER,
) -> Recaller:
    tuning = _tuning(catalog, store, weights)
    if tuning is None:
        return FusedRecaller(
            _bm25(catalog, store, weights, analyzer), _dense(catalog, store, embedder, progress)
        )
    fused = FusedRecaller(
        _bm25(catalog, store, tuning.field_weights, analyzer),
        _dense(catalog, store, embedder, progress),
        lexical_weight=tuning.lexical_weight,
    )
    fused.name = "fused(tuned)"
    return fused


def _make_adaptive(
    catalog: Catalog,
    *,
    store: IndexStore | None,
    weights: Mapping[str, float] | None,
    embedder: Embedder | None,
    progress: Progress | None,
    analyzer: str = DEFAULT_ANALYZER,
) -> Recaller:
    """``adaptive``: BM25F (``weights`` = its field weights) and dense, standouts mixed."""
    return AdaptiveRecaller(
        _bm25(catalog, store, weights, analyzer), _dense(catalog, store, embedder, progress)
    )


def _make_dense_tools(
    catalog: Catalog,
    *,
    store: IndexStore | None,
    weights: Mapping[str, float] | None,
    embedder: Embedder | None,
    progress: Progress | None,
    analyzer: str = DEFAULT_ANALYZER,
) -> Recaller:
    """``dense`` with the tool-tuned MiniLM (``docs/embedder.md``) unless an embedder is given."""
    model = embedder or make_embedder("minilm-tools")
    recaller = _dense(catalog, store, model, progress)
    recaller.name = "dense-tools"
    return recaller


def _make_fused_tools(
    catalog: Catalog,
    *,
    store: IndexStore | None,
    weights: Mapping[str, float] | None,
    embedder: Embedder | None,
    progress: Progress | None,
    analyzer: str = DEFAULT_ANALYZER,
) -> Recaller:
    """``fused`` whose dense half is the tool-tuned MiniLM (``docs/embedder.md``)."""
    model = embedder or make_embedder("minilm-tools")
    fused = _make_fused(
        catalog, store=store, weights=weights, embedder=model, progress=progress, analyzer=analyzer
    )
    fused.name = fused.name.replace("fused", "fused-tools", 1)
    return fused


def _tuning(
    catalog: Catalog, store: IndexStore | None, weights: Mapping[str, float] | None
) -> Tuning | None:
    """The stored tuning for this catalog version, when there is one and no weights were given."""
    if store is None or weights is not None:
        return None
    return load_tuning(store.root, catalog)
