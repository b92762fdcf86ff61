"""What label-free tuning adds: ``bm25`` and ``fused`` untuned vs tuned on every set.

For each set, :func:`maitred.recall.tune.tune_catalog` is run on the set's *catalog alone*
(held-out pseudo-queries of the tools' own text; no query or label of the set is read), and
the set's labelled queries then score four recallers: ``bm25`` and ``fused`` with the code's
defaults, and the same with the tuning's field weights and lexical weight. The dense half is
the same index in both (the tuning does not change it).

Sets: the committed samples (``benchmarks/sets/<set>/sample``: a few dozen tools, 12 queries:
too small to read much into) always; the full sets of ``routing_sets.py`` (MetaTool test split,
sitecare, and the public sets) when they have been built under ``bench-out/sets`` (run
``routing_sets.py --toolalpaca ... --methods bm25`` once to build them; or pass the sources
here, ``--toolalpaca DIR --gorilla DIR --damo-convai DIR``, which builds them the same way).

Run::

    .venv/bin/python benchmarks/routing_tuned.py [--full] [--only bfcl,api-bank] [--seed 0]

It prints a markdown table (one row per set: nDCG@10 and MRR of each recaller, the chosen
settings, the pseudo-query count and the tuning time) and writes ``bench-out/routing_tuned.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from maitred.recall import evaluate_routing, load_queries, make_recaller
from maitred.recall.bm25 import BM25Recaller
from maitred.recall.dense import DenseRecaller
from maitred.recall.evaluate import EvalSet, load_sets
from maitred.recall.fusion import FusedRecaller
from maitred.recall.tune import tune_catalog
from maitred.skills.catalog import load_catalog

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import routing_sets  # noqa: E402

SAMPLES = ("toolalpaca", "bfcl", "apibench-hf", "api-bank")


def sample_sets() -> list[EvalSet]:
    """The committed samples, as evaluation sets named ``<set> (sample)``."""
    root = REPO / "benchmarks" / "sets"
    return [
        EvalSet(f"{name} (sample)", (root / name / "sample" / "tools.jsonl",),
                root / name / "sample" / "queries.jsonl")
        for name in SAMPLES
    ]  # fmt: skip


def run_set(spec: EvalSet, cache: Path, seed: int) -> dict[str, Any]:
    """Tune on the catalog alone, then score untuned and tuned recallers on the labels."""
    catalog = load_catalog(spec.catalog)
    queries = load_queries(spec.queries)
    dense = make_recaller("dense", catalog, cache_dir=cache)
    assert isinstance(dense, DenseRecaller)
    dense.query_vectors([q.text for q in queries])  # embedded once for both fused recallers
    start = time.perf_counter()
    tuning = tune_catalog(catalog, seed=seed)
    tune_s = time.perf_counter() - start
    bm25 = BM25Recaller.build(catalog)
    tuned_bm25 = BM25Recaller.build(catalog, weights=tuning.field_weights)
    recallers = {
        "bm25": bm25,
        "bm25_tuned": tuned_bm25,
        "fused": FusedRecaller(bm25, dense),
        "fused_tuned": FusedRecaller(tuned_bm25, dense, lexical_weight=tuning.lexical_weight),
    }
    row: dict[str, Any] = {
        "set": spec.name,
        "skills": len(catalog),
        "queries": len(queries),
        "pseudo_queries": tuning.n_queries,
        "field_weights": tuning.field_weights,
        "lexical_weight": tuning.lexical_weight,
        "pseudo_before": tuning.before,
        "pseudo_after": tuning.after,
        "tune_s": tune_s,
    }
    for key, recaller in recallers.items():
        result = evaluate_routing(recaller, queries, key, on_unknown=lambda _: None)
        row[key] = {"ndcg_at_10": result["ndcg_at_10"], "mrr": result["mrr"]}
    print(
        f"{spec.name:22} fused {row['fused']['ndcg_at_10']:.4f} -> "
        f"{row['fused_tuned']['ndcg_at_10']:.4f}  bm25 {row['bm25']['ndcg_at_10']:.4f} -> "
        f"{row['bm25_tuned']['ndcg_at_10']:.4f}  ({tune_s:.0f}s to tune)",
        flush=True,
    )
    return row


def _weights(w: dict[str, float]) -> str:
    return "/".join(f"{w[f]:g}" for f in ("name", "description", "body", "params"))


def table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown: per set, nDCG@10 untuned -> tuned for fused and bm25, and what was chosen."""
    lines = [
        "| set (skills, queries) | fused nDCG@10 | tuned | Δ | bm25 nDCG@10 | tuned | Δ "
        "| fused MRR Δ | chosen a; weights n/d/b/p | pseudo-queries | tune s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        f0, f1 = r["fused"]["ndcg_at_10"], r["fused_tuned"]["ndcg_at_10"]
        b0, b1 = r["bm25"]["ndcg_at_10"], r["bm25_tuned"]["ndcg_at_10"]
        mrr = r["fused_tuned"]["mrr"] - r["fused"]["mrr"]
        lines.append(
            f"| {r['set']} ({r['skills']}, {r['queries']}) | {f0:.3f} | {f1:.3f} | {f1 - f0:+.3f} "
            f"| {b0:.3f} | {b1:.3f} | {b1 - b0:+.3f} | {mrr:+.3f} "
            f"| {r['lexical_weight']:g}; {_weights(r['field_weights'])} "
            f"| {r['pseudo_queries']} | {r['tune_s']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="also the full sets (bench-out/sets)")
    parser.add_argument("--toolalpaca", type=Path, help="ToolAlpaca checkout or git dir")
    parser.add_argument("--gorilla", type=Path, help="gorilla checkout or git dir")
    parser.add_argument("--damo-convai", type=Path, help="DAMO-ConvAI checkout or git dir")
    parser.add_argument("--metatool", type=Path, default=REPO / ".." / "shared/data/metatool")
    parser.add_argument("--out", type=Path, default=REPO / "bench-out" / "sets")
    parser.add_argument("--cache", type=Path, default=REPO / "bench-out" / "cache")
    parser.add_argument("--max-queries", type=int, default=1000)
    parser.add_argument("--only", default="", help="comma-separated full-set names to run")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    sets = sample_sets()
    if args.full:
        only = {n for n in args.only.split(",") if n}
        sets += [s for s in load_sets(routing_sets.prepare(args)) if not only or s.name in only]
    rows = [run_set(spec, args.cache, args.seed) for spec in sets]
    out = REPO / "bench-out" / "routing_tuned.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1), "utf-8")
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
