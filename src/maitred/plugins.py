"""Interchangeable parts found by name: built-ins listed here, third parties by entry point.

maitred's registries -- recall methods, embedders, depth rules, state-provider schemes, log
backends, policy packs -- know names, not modules. There is one mechanism per kind, in two halves:

* **Built-ins are listed in code**, in :data:`BUILTINS`, as ``"module:attribute"`` references
  (text, so nothing is imported until a name is asked for). They need no installed package
  metadata: ``PYTHONPATH=src python -m maitred.cli.main ...`` finds every built-in.
* **Third parties declare entry points** in the group of the kind (:data:`GROUPS`)::

      [project.entry-points."maitred.depth_rules"]
      my_rule = "my_package.rules:make_my_rule"

  A third-party entry point that reuses a built-in name is ignored (the built-in stays what
  the name means, so an installed package cannot silently replace ``bm25`` or ``sqlite``).

A reference may name the extra it needs, as in
``native = "maitred.native.methods:make_native [native]"``; when that extra is missing, loading
it raises :class:`~maitred.errors.MissingExtraError` with the install command. A registry
therefore never imports its plugins, and an optional part (native routing, with torch) forms
no import cycle with the core.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from maitred.errors import ConfigError, MissingExtraError

GROUPS = {
    "recall": "maitred.recall_methods",
    "depth": "maitred.depth_rules",
    "state": "maitred.state_providers",
    "log": "maitred.log_backends",
    "packs": "maitred.policy_packs",
    "embedder": "maitred.embedders",
    "analyzer": "maitred.analyzers",
}


#: kind -> name -> ``"module:attribute [extra]"``: the parts maitred itself ships
BUILTINS: dict[str, dict[str, str]] = {
    "recall": {
        "adaptive": "maitred.recall.registry:_make_adaptive",
        "bm25": "maitred.recall.registry:_make_bm25",
        "bm25-plain": "maitred.recall.registry:_make_bm25_plain",
        "dense": "maitred.recall.registry:_make_dense",
        "dense-tools": "maitred.recall.registry:_make_dense_tools",
        "fused": "maitred.recall.registry:_make_fused",
        "fused-tools": "maitred.recall.registry:_make_fused_tools",
        "hybrid": "maitred.recall.registry:_make_hybrid",
        "native": "maitred.native.methods:make_native [native]",
        "native-glance": "maitred.native.methods:make_native_glance [native]",
        "native-rerank": "maitred.native.methods:make_native_rerank [native]",
        "native-progressive": "maitred.native.methods:make_native_progressive [native]",
    },
    "embedder": {
        "minilm": "maitred.recall.embedders:make_minilm",
        "minilm-tools": "maitred.recall.embedders:make_minilm_tools",
        "minilm-tools2": "maitred.recall.embedders:make_minilm_tools2",
        "minilm-l3": "maitred.recall.embedders:make_minilm_l3",
        "e5-small": "maitred.recall.embedders:make_e5_small",
    },
    "analyzer": {
        "scripts": "maitred.recall.analyzers:ScriptAnalyzer",
        "words": "maitred.recall.analyzers:WordAnalyzer",
        "jieba": "maitred.recall.analyzers:JiebaAnalyzer",
    },
    "packs": {
        "tau2-airline": "maitred.actions.packs.tau2_airline:PACK",
        "retail-control": "maitred.actions.packs.retail_control:PACK",
    },
    "state": {
        "json": "maitred.state.registry:JSON",
        "postgres": "maitred.state.registry:POSTGRES",
        "postgresql": "maitred.state.registry:POSTGRESQL",
        "sqlite": "maitred.state.registry:SQLITE",
    },
    "log": {
        "sqlite": "maitred.log.sqlite:SqliteLog",
        "postgresql": "maitred.log.postgres:PostgresLog [postgres]",
        "postgres": "maitred.log.postgres:PostgresLog [postgres]",
    },
    "depth": {
        "full": "maitred.depth.rules:ExposeAll",
        "fixed_k": "maitred.depth.rules:FixedK",
        "score_threshold": "maitred.depth.rules:ScoreThreshold",
        "score_per_cost": "maitred.depth.rules:ScorePerCost",
        "predict_then_threshold": "maitred.depth.camdf:make_predict_then_threshold",
        "camdf": "maitred.depth.camdf:make_camdf_rule",
        "camdf_lite": "maitred.depth.camdf:make_camdf_rule",
    },
}


@cache
def _entries(group: str) -> dict[str, EntryPoint]:
    """The built-ins of ``group``'s kind, then the installed entry points of other names."""
    kind = next(k for k, g in GROUPS.items() if g == group)
    found = {name: EntryPoint(name, value, group) for name, value in BUILTINS.get(kind, {}).items()}
    for ep in entry_points(group=group):
        found.setdefault(ep.name, ep)
    return found


def names(kind: str) -> list[str]:
    """Every registered name of a kind (``"recall"``, ``"depth"``, ``"state"``, ``"log"``,
    ``"packs"``), sorted."""
    return sorted(_entries(GROUPS[kind]))


def load(kind: str, name: str, *, what: str | None = None) -> Any:
    """The object registered as ``name`` (imported now).

    Raises:
        ConfigError: no part of that kind has that name (the message lists the names), or the
            package that declared it cannot be imported.
    """
    group = GROUPS[kind]
    entry = _entries(group).get(name)
    label = what or kind
    if entry is None:
        known = names(kind)
        raise ConfigError(f"unknown {label} {name!r}; choose one of {known}")
    try:
        return entry.load()
    except ModuleNotFoundError as exc:
        if entry.extras:  # declared as "module:attr [extra]": that extra is not installed
            raise MissingExtraError(f"{label} {name!r}", entry.extras[0], exc.name) from exc
        raise ConfigError(
            f"{label} {name!r} is declared by {entry.value!r}, which cannot be imported: {exc}"
        ) from exc
    except ImportError as exc:
        raise ConfigError(
            f"{label} {name!r} is declared by {entry.value!r}, which cannot be imported: {exc}"
        ) from exc
