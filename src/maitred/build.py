"""Assemble a :class:`~maitred.pipeline.Pipeline` from names and paths.

The CLI, the demo and the service all build their pipeline here, so that one set of options
means the same thing everywhere.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from maitred.contract.typecheck import require_policy_arguments, require_typed_state
from maitred.depth.rules import make_depth_rule
from maitred.errors import ConfigError, ProviderError
from maitred.gate.executability import require_coverage
from maitred.menu.render import MenuRenderer
from maitred.pipeline import Pipeline
from maitred.recall.analyzers import DEFAULT_ANALYZER
from maitred.recall.base import Cutoff
from maitred.recall.dense import Progress
from maitred.recall.embedders import AUTO
from maitred.recall.registry import make_recaller
from maitred.skills.catalog import load_catalog
from maitred.skills.model import Catalog
from maitred.state.answer import DEFAULT_CLOCK_SKEW_S
from maitred.state.registry import open_provider
from maitred.state.snapshot import StateProvider, now

#: the score components each built-in recall method puts on its candidates
COMPONENTS: dict[str, frozenset[str]] = {
    "bm25": frozenset({"bm25"}),
    "dense": frozenset({"dense"}),
    "hybrid": frozenset({"bm25", "dense", "rrf"}),
    "fused": frozenset({"bm25", "dense", "fused"}),
    "adaptive": frozenset({"adaptive", "bm25", "dense"}),
}


@dataclass(frozen=True)
class PipelineOptions:
    """Every knob of a pipeline, as plain values (what a run logs as its config).

    Attributes:
        method: recall method (``adaptive`` by default: BM25F + dense, each half weighed by
            how far its best skills stand out in the catalog for the query; within 0.01 nDCG@10
            of the best single method on every development set, leave-one-set-out; ``fused``,
            ``bm25``, ``dense``, ``hybrid``, ``bm25-plain``, or any registered name).
        top_k: candidates kept from the ranking.
        min_score: minimum score to keep a candidate (``None``: no threshold).
        score_on: which score ``min_score`` applies to (``score`` or a component: ``dense``).
        family: family-level recall (a matched family brings all its skills).
        depth: depth rule name; ``depth_params`` its parameters.
        menu_format: ``openai``, ``anthropic``, ``mcp`` or ``agentskills``.
        analyzer: how lexical recall cuts text into terms (``scripts``: each script its own
            way, Chinese/Japanese/Korean by characters and bigrams; ``words``; ``jieba``).
        embedder: the dense half's model (``auto``: ``minilm``, or ``e5-small`` for a catalog
            mostly not in English; or any embedder name).
    """

    method: str = "adaptive"
    top_k: int = 10
    min_score: float | None = None
    score_on: str = "score"
    family: bool = False
    depth: str = "full"
    depth_params: Mapping[str, Any] = field(default_factory=dict)
    menu_format: str = "openai"
    analyzer: str = DEFAULT_ANALYZER
    embedder: str = AUTO

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["depth_params"] = dict(self.depth_params)
        return out


def build_pipeline(
    catalog: Catalog | Sequence[str | Path],
    provider: StateProvider | str,
    options: PipelineOptions | None = None,
    *,
    tables: Mapping[str, Any] | None = None,
    cache_dir: str | Path | None = None,
    log: Any = None,
    progress: Progress | None = None,
    clock: Callable[[], float] | None = None,
    clock_skew_s: float = DEFAULT_CLOCK_SKEW_S,
) -> Pipeline:
    """Build a pipeline.

    Args:
        catalog: a loaded catalog, or skill folders / tool files to load.
        provider: a state provider, or a spec for :func:`maitred.state.open_provider`.
        options: the pipeline's knobs.
        tables: key root -> table, for a SQL provider spec.
        cache_dir: where recall indexes persist (rebuilt only when the catalog changes).
        log: an open decision log, if turns should be logged.
        progress: ``progress(done, total)`` while the index is built.
        clock: the gates' "now" (unix seconds); the wall clock by default.
        clock_skew_s: how far a state key's date may run ahead of ``clock`` and still be
            current; a key dated further ahead is invalid (:mod:`maitred.state.answer`).

    Raises:
        ConfigError: among others, a provider that has no source for a key root the catalog's
            predicates read (:func:`~maitred.gate.executability.require_coverage`), a key with
            no column, or a CEL predicate that does not type-check against the store's column
            types (:func:`~maitred.contract.typecheck.require_typed_state`).
    """
    opts = options or PipelineOptions()
    components = COMPONENTS.get(opts.method)
    if components is not None and opts.score_on != "score" and opts.score_on not in components:
        raise ConfigError(
            f"--score-on {opts.score_on!r} is not a score {opts.method} recall produces; choose "
            f"one of {['score', *sorted(components)]}"
        )
    cat = catalog if isinstance(catalog, Catalog) else load_catalog(list(catalog))
    prov = open_provider(provider, tables) if isinstance(provider, str) else provider
    check_against_state(cat, prov)
    recaller = make_recaller(
        opts.method,
        cat,
        cache_dir=cache_dir,
        progress=progress,
        analyzer=opts.analyzer,
        embedder=opts.embedder,
    )
    return Pipeline(
        cat,
        recaller,
        prov,
        cutoff=Cutoff(top_k=opts.top_k, min_score=opts.min_score, on=opts.score_on),
        family_mode=opts.family,
        depth=make_depth_rule(opts.depth, **dict(opts.depth_params)),
        renderer=MenuRenderer(cat, opts.menu_format),
        log=log,
        clock=clock or now,
        config=opts.to_json(),
        clock_skew_s=_skew(clock_skew_s),
    )


def _skew(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e9:
        raise ConfigError(
            f"clock_skew_s must be a number of seconds from 0 up (got {value!r}); it is how far "
            f"a state key's date may run ahead of the gate's clock (default "
            f"{DEFAULT_CLOCK_SKEW_S:g})"
        )
    return float(value)


def check_against_state(catalog: Catalog, provider: StateProvider) -> None:
    """The load-time checks of a catalog against its state store, for every engine built.

    Every key root has a source (:func:`~maitred.gate.executability.require_coverage`); in a
    typed store every key read has a column and every CEL predicate type-checks
    (:func:`~maitred.contract.typecheck.require_typed_state`); a call policy's ``args.x`` is an
    argument of its tool (:func:`~maitred.contract.typecheck.require_policy_arguments`). A store
    that does not answer now skips the typed check with a warning: the engine starts, every
    turn that reads state fails closed until it answers, and a column a key lacks is then
    refused on each read.

    Raises:
        ConfigError: naming each problem (key, table, skills, file and line).
    """
    require_coverage(catalog, provider)
    try:
        require_typed_state(catalog, provider)
    except ProviderError as exc:
        warnings.warn(
            f"typed-state checks skipped: {exc}; they run against the store with "
            "`maitred skills validate --state`",
            RuntimeWarning,
            stacklevel=3,
        )
    require_policy_arguments(catalog)
