"""The ruling on MetaTool's held-out tools: glance + dense (+ BM25), weights calibrated on val.

Needs `benchmarks/native_prep.py` and `benchmarks/native_eval.py` to have run (cached states and
the trained maps `bench-out/native/maps-L24.npz`). Prints Hit@1 / Recall@5 / MRR on the test
queries for each expert alone and for the calibrated ruling; writes
bench-out/native/fusion.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from maitred.native.glance import GlanceMaps, KeyBank
from maitred.native.ruling import calibrate, fuse
from maitred.native.states import load_states
from maitred.recall.bm25 import BM25Recaller
from maitred.recall.dense import DenseRecaller
from maitred.recall.evaluate import load_queries, query_metrics
from maitred.skills.catalog import load_catalog

OUT = Path("bench-out/native")
KEYS = ("hit_at_1", "recall_at_5", "mrr")


def experts(split: str, names, bank, maps, dense, bm25):  # type: ignore[no-untyped-def]
    queries = load_queries(OUT / f"metatool/{split}.jsonl")
    _, states = load_states(OUT / f"states/metatool/{split}-L24.npz")
    out = []
    for query, state in zip(queries, states, strict=True):
        q = dense.query_vector(query.text)
        out.append(
            {
                "glance": bank.scores(maps.queries(state), 3),
                "dense": (dense.index.vectors @ q).astype(np.float32),
                "bm25": bm25.scores(query.text).astype(np.float32),
            }
        )
    return queries, out


def score(queries, per_query, names, weights):  # type: ignore[no-untyped-def]
    totals = dict.fromkeys(KEYS, 0.0)
    for query, ex in zip(queries, per_query, strict=True):
        ranked = [names[i] for i in np.argsort(-fuse(ex, weights), kind="stable")]
        metrics = query_metrics(ranked, query.gold)
        for key in KEYS:
            totals[key] += metrics[key]
    return {k: round(v / len(queries), 4) for k, v in totals.items()}


def main() -> None:
    catalog = load_catalog("bench-out/metatool/tools.jsonl")
    names, tools = load_states(OUT / "states/metatool/tools-L24.npz")
    assert tuple(names) == catalog.names
    maps = GlanceMaps.load(OUT / "maps-L24.npz")
    bank = KeyBank.build(list(names), tools, maps)
    dense, bm25 = DenseRecaller.build(catalog), BM25Recaller.build(catalog)
    index = {n: i for i, n in enumerate(names)}
    val_q, val_x = experts("val", names, bank, maps, dense, bm25)
    test_q, test_x = experts("test", names, bank, maps, dense, bm25)
    gold = [{index[g] for g in q.gold} for q in val_q]
    result: dict[str, object] = {}
    for alone in ("glance", "dense", "bm25"):
        result[alone] = score(test_q, test_x, names, {alone: 1.0})
    for label, pick in (
        ("glance+dense", ("glance", "dense")),
        ("all", ("glance", "dense", "bm25")),
    ):
        weights, val_mrr = calibrate([{k: x[k] for k in pick} for x in val_x], gold)
        result[f"ruling {label}"] = {
            **score(test_q, test_x, names, weights),
            "weights": weights,
            "val_mrr": round(val_mrr, 4),
        }
    (OUT / "fusion.json").write_text(json.dumps(result, indent=1) + "\n")
    for key, value in result.items():
        print(key, value)


if __name__ == "__main__":
    main()
