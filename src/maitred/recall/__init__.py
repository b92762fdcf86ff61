"""Stage 1, recall: rank the catalog's skills for a message, blind to account state.

Methods are chosen by name (:func:`make_recaller`): ``"bm25"`` (BM25F: every field of a skill
in one document, field weights applied before saturation), ``"bm25-plain"`` (one Okapi BM25
over all of a skill's text, the lexical baseline), ``"dense"`` (MiniLM sentence embeddings,
cosine; exact search up to 20k skills, HNSW above), ``"hybrid"`` (reciprocal-rank fusion of
both), ``"fused"`` (per-query normalised BM25F and dense scores, mixed) and ``"adaptive"``
(each half scored by how far a skill stands out in the catalog, then mixed). A :class:`Cutoff`
turns a ranking into candidates; :func:`expand_families` optionally widens them to whole skill
families. Indexes persist per catalog version (:class:`IndexStore`); :func:`evaluate_routing`
measures routing accuracy on a labelled query set, and :func:`load_sets` reads several sets.

Nothing in this package imports :mod:`maitred.state` or :mod:`maitred.gate`.
"""

from maitred.recall.adaptive import AdaptiveRecaller
from maitred.recall.base import Candidate, Cutoff, Recaller
from maitred.recall.bm25 import DEFAULT_FIELD_WEIGHTS, BM25Recaller
from maitred.recall.bm25_plain import PlainBM25Recaller
from maitred.recall.dense import (
    DEFAULT_FIELD_MIX,
    DenseRecaller,
    Embedder,
    MiniLMEmbedder,
    embed_fields,
    mix_fields,
)
from maitred.recall.evaluate import (
    EvalSet,
    Query,
    evaluate_routing,
    load_queries,
    load_sets,
    query_metrics,
)
from maitred.recall.family import expand_families
from maitred.recall.fields import FIELDS, Field, skill_fields
from maitred.recall.fusion import FusedRecaller
from maitred.recall.hybrid import HybridRecaller, rrf_scores
from maitred.recall.registry import make_recaller, recaller_names, register_recaller
from maitred.recall.store import IndexStore
from maitred.recall.vectors import VectorIndex

__all__ = [
    "DEFAULT_FIELD_MIX",
    "DEFAULT_FIELD_WEIGHTS",
    "FIELDS",
    "AdaptiveRecaller",
    "BM25Recaller",
    "Candidate",
    "Cutoff",
    "DenseRecaller",
    "Embedder",
    "EvalSet",
    "Field",
    "FusedRecaller",
    "HybridRecaller",
    "IndexStore",
    "MiniLMEmbedder",
    "PlainBM25Recaller",
    "Query",
    "Recaller",
    "VectorIndex",
    "embed_fields",
    "evaluate_routing",
    "expand_families",
    "load_queries",
    "load_sets",
    "make_recaller",
    "mix_fields",
    "query_metrics",
    "recaller_names",
    "register_recaller",
    "rrf_scores",
    "skill_fields",
]
