"""``native``: the full Gavel ruling -- glance over the catalog, verdict on its shortlist, fused.

For a task:

1. the **glance** (:mod:`maitred.native.recall`) scores every skill;
2. its top :data:`DEFAULT_SHORTLIST` skills get **verdict** scores (:mod:`maitred.native.verdict`:
   the task's likelihood given the skill, and the yes/no judgment);
3. the **ruling** (:mod:`maitred.native.ruling`) fuses glance, likelihood and judgment -- and,
   going beyond the paper, maitred's own ``dense`` and ``bm25`` scores -- as a weighted sum of
   per-query standardised scores over the whole catalog.

**Skills outside the shortlist** get the shortlist's *minimum* likelihood and judgment (they
were not read, and the verdict's lowest opinion is the kindest guess that never lifts them over
a skill the verdict did read). They can therefore still outrank a shortlisted skill when the
glance, dense and BM25 rate them higher: the dense and BM25 experts look at the whole catalog,
and a gold skill the glance missed can come back through them. It also makes the calibration
guarantee hold against each expert's *catalog-wide* ranking: "dense alone" in the grid is exactly
the dense recaller's ranking.

**Shortlist size.** 10: the verdict costs one resumed pass per shortlisted skill (~40 tokens
each), so its cost grows linearly with the shortlist, while on MetaTool's validation tools the
trained glance's recall grows slowly past 10 (Recall@5 / @10 / @20 = 0.75 / 0.85 / 0.92 on 60
val queries, ``benchmarks/native_verdict.py``); the paper prunes to nine.

**Weights** come from :func:`ruling_weights_path` (``ruling.json`` beside the active glance maps),
written by :func:`calibrate_ruling` (``maitred native calibrate``). Without calibrated weights
for the loaded backbone, :data:`DEFAULT_WEIGHTS` are used, with a warning.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from maitred.errors import ConfigError
from maitred.native import backbone as backbone_module
from maitred.native.backbone import Backbone, Progress
from maitred.native.data import skill_text
from maitred.native.recall import NativeGlanceRecaller, active_maps_path, build_recaller
from maitred.native.ruling import (
    RulingWeights,
    fuse,
    load_weights,
)
from maitred.native.verdict import Verdict
from maitred.recall.base import Candidate
from maitred.recall.bm25 import BM25Recaller
from maitred.recall.dense import DenseRecaller, Embedder
from maitred.recall.registry import make_recaller
from maitred.recall.store import IndexStore
from maitred.skills.model import Catalog

logger = logging.getLogger(__name__)

F32 = NDArray[np.float32]

DEFAULT_SHORTLIST: Final = 10
"""Skills the verdict reads per task (see the module doc)."""

EXPERTS: Final = ("glance", "likelihood", "judgment", "dense", "bm25")

DEFAULT_WEIGHTS: Final[Mapping[str, float]] = {
    "glance": 0.25,
    "likelihood": 0.25,
    "judgment": 0.0,
    "dense": 1.0,
    "bm25": 0.25,
}
"""Used until ``maitred native calibrate`` has run. Measured on MetaTool's held-out validation
tools with SmolLM2-135M (``benchmarks/native_verdict.py``, 60 queries): dense is the strongest
single expert and leads; glance and BM25 add to it at 0.25; the verdict's likelihood is kept at
0.25 (val MRR 0.839, against 0.855 for the grid's optimum, which drops the verdict -- within
noise on 60 queries); the judgment gets 0 because the 135M model's yes/no log-odds rank the
shortlist no better than chance (they follow the skill text's length). Recalibrate for another
backbone: a larger model's judgment is the paper's strongest verdict signal."""


def ruling_weights_path() -> Path:
    """Where calibrated ruling weights live: ``ruling.json`` beside the active glance maps."""
    return active_maps_path().parent / "ruling.json"


def fill_shortlist(values: F32, shortlist: Sequence[int], n: int) -> F32:
    """A catalog-wide vector: ``values`` on the shortlist, their minimum everywhere else."""
    out = np.full(n, float(values.min()) if len(values) else 0.0, dtype=np.float32)
    out[list(shortlist)] = values
    return out


def resolve_weights(
    method: str,
    defaults: Mapping[str, float],
    backbone_id: str,
    *,
    path: Path | None = None,
    shortlist: int = DEFAULT_SHORTLIST,
) -> RulingWeights:
    """Calibrated weights for ``method`` on this backbone, else ``defaults`` with a warning."""
    where = path or ruling_weights_path()
    found = load_weights(where, method)
    if found is not None and found.backbone_id == backbone_id:
        return found
    why = "none calibrated" if found is None else f"calibrated for {found.backbone_id!r}"
    logger.warning(
        "%s: %s in %s; using the default weights %s. Calibrate them with "
        "`maitred native calibrate`",
        method,
        why,
        where,
        dict(defaults),
    )
    return RulingWeights(method, dict(defaults), shortlist, backbone_id, calibrated=False)


def shared_backbone(model: Any, tokenizer: Any, model_id: str, layer: int | None) -> Backbone:
    """A :class:`Backbone` over the same weights as ``model`` (no second copy in memory).

    ``Backbone`` drops the decoder blocks above its layer by reassigning ``model.model.layers``;
    it gets a shallow copy of the decoder with its own module table, so the full model keeps
    every block.
    """
    body = copy.copy(model.model)
    body.__dict__["_modules"] = dict(body._modules)
    view = SimpleNamespace(config=model.config, model=body)
    return Backbone(view, tokenizer, model_id, layer=layer)


def dense_scores(dense: DenseRecaller, text: str) -> F32:
    """Cosine of ``text`` with every skill, in catalog order (zeros for a blank text)."""
    query = dense.query_vector(text)
    if query is None:
        return np.zeros(len(dense.catalog), np.float32)
    return np.asarray(dense.index.vectors @ query, dtype=np.float32)


class NativeRecaller:
    """Glance, verdict on the glance's shortlist, and the ruling (see the module doc).

    Attributes:
        name: ``"native"``.
        catalog: the catalog it ranks.
        glance: the glance recaller (its backbone reads the task).
        verdict: reads the shortlist with the full LM.
        dense, bm25: the extra experts (``None`` leaves one out).
        weights: the ruling's weights.
        shortlist: skills the verdict reads per task.
    """

    name = "native"

    def __init__(
        self,
        glance: NativeGlanceRecaller,
        verdict: Verdict,
        weights: RulingWeights,
        *,
        dense: DenseRecaller | None = None,
        bm25: BM25Recaller | None = None,
        shortlist: int = DEFAULT_SHORTLIST,
    ) -> None:
        if shortlist < 1:
            raise ConfigError(f"shortlist must be >= 1, got {shortlist}")
        self.catalog = glance.catalog
        self.glance = glance
        self.verdict = verdict
        self.dense = dense
        self.bm25 = bm25
        self.shortlist = shortlist
        present = {"glance", "likelihood", "judgment"}
        present |= {"dense"} if dense is not None else set()
        present |= {"bm25"} if bm25 is not None else set()
        kept = {k: w for k, w in weights.weights.items() if k in present and w}
        if not kept:
            raise ConfigError(
                f"the ruling weights {dict(weights.weights)} give no weight to the experts "
                f"present ({', '.join(sorted(present))}); recalibrate"
            )
        self.weights = weights
        self._fused = kept
        self._texts = [skill_text(s) for s in self.catalog]

    def base_experts(self, text: str) -> dict[str, F32]:
        """The catalog-wide experts: glance, and dense and BM25 when present."""
        states = self.glance.backbone.states([text])[0]
        glance = self.glance.bank.scores(self.glance.maps.queries(states), self.glance.top_k)
        out = {"glance": np.asarray(glance, np.float32)}
        if self.dense is not None:
            out["dense"] = dense_scores(self.dense, text)
        if self.bm25 is not None:
            out["bm25"] = self.bm25.scores(text).astype(np.float32)
        return out

    def experts(self, text: str) -> tuple[list[int], dict[str, F32]]:
        """The glance shortlist and every expert's catalog-wide scores for ``text``.

        Verdict scores outside the shortlist are the shortlist's minimum.
        """
        base = self.base_experts(text)
        order = np.argsort(-base["glance"], kind="stable")[: self.shortlist]
        picked = [int(i) for i in order]
        read = self.verdict.score(text, [self._texts[i] for i in picked])
        n = len(self.catalog)
        base["likelihood"] = fill_shortlist(read.likelihood, picked, n)
        base["judgment"] = fill_shortlist(read.judgment, picked, n)
        return picked, base

    def rank(self, text: str, k: int) -> list[Candidate]:
        """The best ``k`` skills for ``text`` (empty for a blank text)."""
        if not text.strip():
            return []
        picked, experts = self.experts(text)
        fused = fuse(experts, self._fused)
        on_list = set(picked)
        names = self.catalog.names
        out = []
        for rank, i in enumerate(np.argsort(-fused, kind="stable")[:k], start=1):
            components = {
                name: float(scores[i])
                for name, scores in experts.items()
                if int(i) in on_list or name not in ("likelihood", "judgment")
            }
            out.append(Candidate(names[i], rank, float(fused[i]), components))
        return out


def extra_experts(
    catalog: Catalog,
    store: IndexStore | None,
    bm25_weights: Mapping[str, float] | None,
    embedder: Embedder | None,
    progress: Progress | None,
) -> tuple[DenseRecaller, BM25Recaller]:
    """maitred's own ``dense`` and ``bm25`` recallers, built (or loaded) as the registry does."""
    cache_dir = None if store is None else store.root
    dense = make_recaller(
        "dense", catalog, cache_dir=cache_dir, embedder=embedder, progress=progress
    )
    bm25 = make_recaller("bm25", catalog, cache_dir=cache_dir, weights=bm25_weights)
    assert isinstance(dense, DenseRecaller) and isinstance(bm25, BM25Recaller)
    return dense, bm25


def load_verdict_and_backbone(
    maps_path: Path | None = None, model_path: str | Path | None = None
) -> tuple[Verdict, Backbone]:
    """The full LM once: a :class:`Verdict` over it and a glance backbone sharing its weights
    (at the active maps' layer when there are maps)."""
    from maitred.native.glance import GlanceMaps

    path = maps_path or active_maps_path()
    layer = GlanceMaps.load(path).layer if path.is_file() else None
    model, tokenizer, model_id = backbone_module.load_causal_lm(model_path)
    verdict = Verdict(model, tokenizer, model_id)
    return verdict, shared_backbone(model, tokenizer, model_id, layer)


def build_native(
    catalog: Catalog,
    *,
    verdict: Verdict | None = None,
    backbone: Backbone | None = None,
    maps_path: Path | None = None,
    weights_path: Path | None = None,
    store: IndexStore | None = None,
    bm25_weights: Mapping[str, float] | None = None,
    embedder: Embedder | None = None,
    shortlist: int = DEFAULT_SHORTLIST,
    progress: Progress | None = None,
) -> NativeRecaller:
    """Build the ``native`` recaller: the glance, the verdict, dense and BM25, the weights.

    Args:
        catalog: the skills.
        verdict, backbone: already loaded ones (default: the full LM loaded once, shared).
        maps_path: glance maps (default the active maps).
        weights_path: ruling weights (default :func:`ruling_weights_path`).
        store: caches skill states and the dense / BM25 indexes.
        bm25_weights: BM25 field weights (default maitred's tuned ones).
        embedder: the dense model (default MiniLM).
        shortlist: skills the verdict reads per task.
        progress: ``progress(done, total)`` while reading skills.
    """
    if verdict is None or backbone is None:
        verdict, backbone = load_verdict_and_backbone(maps_path)
    glance = build_recaller(
        catalog, maps_path=maps_path, backbone=backbone, store=store, progress=progress
    )
    dense, bm25 = extra_experts(catalog, store, bm25_weights, embedder, progress)
    weights = resolve_weights(
        "native", DEFAULT_WEIGHTS, verdict.model_id, path=weights_path, shortlist=shortlist
    )
    return NativeRecaller(glance, verdict, weights, dense=dense, bm25=bm25, shortlist=shortlist)
