"""How the recall defaults were fitted: on MetaTool dev queries, and on nothing else.

Two numbers are fitted, each by a small grid on the MetaTool *dev* split written by
``benchmarks/metatool_routing.py`` (``bench-out/metatool/dev.jsonl``; its test split and the
public sets of ``routing_sets.py`` are never looked at here):

1. the BM25F field weights (:data:`maitred.recall.bm25.DEFAULT_FIELD_WEIGHTS`): ``name`` and
   ``description`` in 1-4, ``body`` in {0.5, 1} (at least half a description: the issue was
   that long documentation was muted), ``params`` fixed at 1 (MetaTool tools have none);
2. the fusion weight (:data:`maitred.recall.fusion.LEXICAL_WEIGHT`) in 0.1-0.7, with the
   BM25F weights of step 1.

The objective is mean nDCG@10. The script prints each grid's best and the defaults in the code,
and flags a difference. Run: ``.venv/bin/python benchmarks/routing_tune.py`` (a few minutes:
the dev queries are embedded once).
"""

from __future__ import annotations

import itertools
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from maitred.recall import Query, evaluate_routing, load_queries, make_recaller
from maitred.recall.bm25 import DEFAULT_FIELD_WEIGHTS, BM25Recaller
from maitred.recall.dense import DenseRecaller
from maitred.recall.fusion import LEXICAL_WEIGHT, FusedRecaller
from maitred.skills.catalog import load_catalog
from maitred.skills.model import Catalog

REPO = Path(__file__).resolve().parents[1]
META = REPO / "bench-out" / "metatool"


def fit_bm25f(catalog: Catalog, dev: Sequence[Query]) -> tuple[float, dict[str, float]]:
    """The BM25F field weights of the grid with the best dev nDCG@10 (first best wins)."""
    grid = []
    for name, desc, body in itertools.product((1, 2, 3, 4), (1, 2, 3, 4), (0.5, 1.0)):
        weights = {"name": float(name), "description": float(desc), "body": body, "params": 1.0}
        recaller = BM25Recaller.build(catalog, weights=weights)
        grid.append((evaluate_routing(recaller, dev, "bm25")["ndcg_at_10"], weights))
    return max(grid, key=lambda g: g[0])


def main() -> None:
    logging.basicConfig(level=logging.ERROR)
    if not (META / "dev.jsonl").exists():
        sys.exit("run benchmarks/metatool_routing.py first (it writes bench-out/metatool)")
    catalog = load_catalog([META / "tools.jsonl"])
    dev = load_queries(META / "dev.jsonl")
    score, weights = fit_bm25f(catalog, dev)
    print(f"BM25F: best dev nDCG@10 {score:.4f} with {weights}")
    print(f"       code default {dict(DEFAULT_FIELD_WEIGHTS)}")
    flag = weights != dict(DEFAULT_FIELD_WEIGHTS)
    bm25 = BM25Recaller.build(catalog, weights=weights)
    dense = make_recaller("dense", catalog, cache_dir=REPO / "bench-out" / "cache")
    assert isinstance(dense, DenseRecaller)
    dense.query_vectors([q.text for q in dev])  # embed once; later passes hit its cache
    fusion = []
    for a in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7):
        fused = FusedRecaller(bm25, dense, lexical_weight=a)
        fusion.append((evaluate_routing(fused, dev, "fused")["ndcg_at_10"], a))
        print(f"fused a={a}: dev nDCG@10 {fusion[-1][0]:.4f}")
    best_score, best_a = max(fusion)
    print(f"fusion: best dev nDCG@10 {best_score:.4f} at a={best_a}; code default {LEXICAL_WEIGHT}")
    flag = flag or best_a != LEXICAL_WEIGHT
    print("defaults differ from this fit: update them" if flag else "defaults match this fit")


if __name__ == "__main__":
    main()
