"""Multi-intent recall on multi-tool queries: ``fused``, always splitting, and ``fused+intents``.

Splits each routing set's queries by how many distinct tools they need (2+ vs 1) and scores, on
each half, three rankings built over one set of indexes:

- ``fused``: the whole message, unsplit (the default method);
- ``fused+intents-all``: every message that ``split_intents`` cuts is split, every piece
  ranked and the rankings interleaved (the first ``+intents``);
- ``fused+intents``: the split decided per message (:mod:`maitred.recall.intents`: split only
  where a piece's best skill is not among the whole text's first few, by BM25 first and then by
  the wrapped method).

Each method gets its own recaller (so no method finds the others' query embeddings cached); the
methods take turns going first on each query, so load on a shared machine falls on all alike;
the time column is a method's mean per-query time over the half divided by ``fused``'s, both
measured in this run. "split" is the share of the half's queries whose ranking was merged from
pieces. The sets are those of ``benchmarks/routing_sets.py``: ``--sets-dir`` holds
``<set>/{tools,queries}.jsonl`` (``bench-out/sets``), ``--metatool`` MetaTool's ``tools.jsonl``
and ``test.jsonl`` (``bench-out/metatool``); every one-tool half is cut to ``--single-limit``
queries (file order). Nothing is fitted here.

    .venv/bin/python benchmarks/intents_split.py --sets-dir bench-out/sets \\
        --metatool bench-out/metatool --cache-dir bench-out/cache
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

from maitred.recall import load_queries, make_recaller
from maitred.recall.base import Recaller
from maitred.recall.evaluate import MRR_DEPTH, QUALITY_KEYS, Query, query_metrics
from maitred.skills.catalog import load_catalog
from maitred.skills.model import Catalog

SETS = ("toolalpaca", "api-bank", "bfcl", "apibench-hf", "metatool")
METHODS = ("fused", "fused+intents-all", "fused+intents")


def set_files(name: str, sets_dir: Path, metatool: Path) -> tuple[Path, Path]:
    """The tools and queries files of one set."""
    if name == "metatool":
        return metatool / "tools.jsonl", metatool / "test.jsonl"
    return sets_dir / name / "tools.jsonl", sets_dir / name / "queries.jsonl"


def halves(queries: Sequence[Query], single_limit: int) -> dict[str, list[Query]]:
    """The 2+-tool queries and the first ``single_limit`` one-tool ones."""
    return {
        "2+ tools": [q for q in queries if len(q.gold) >= 2],
        "1 tool": [q for q in queries if len(q.gold) == 1][:single_limit],
    }


def build(method: str, catalog: Catalog, cache_dir: Path | None) -> Recaller:
    """A fresh recaller for ``method`` (its own query-embedding cache)."""
    return make_recaller(method, catalog, cache_dir=cache_dir)


def score(recallers: dict[str, Recaller], queries: Sequence[Query]) -> dict[str, dict[str, float]]:
    """Every method on every query, the methods taking turns first (so load on a shared
    machine falls on all of them alike): mean metrics, ms per query and the split share."""
    totals = {m: dict.fromkeys((*QUALITY_KEYS, "ms_per_query", "split"), 0.0) for m in recallers}
    order = list(recallers)
    for i, q in enumerate(queries):
        for method in order[i % len(order) :] + order[: i % len(order)]:
            start = time.perf_counter()
            ranked = recallers[method].rank(q.text, MRR_DEPTH)
            totals[method]["ms_per_query"] += 1000.0 * (time.perf_counter() - start)
            totals[method]["split"] += bool(ranked and ranked[0].components.get("intents"))
            for key, value in query_metrics([c.name for c in ranked], q.gold).items():
                totals[method][key] += value
    return {m: {k: v / len(queries) for k, v in t.items()} for m, t in totals.items()}


def run_set(
    name: str, tools: Path, queries_file: Path, args: argparse.Namespace
) -> list[dict[str, Any]]:
    """Every method on both halves of one set, as rows."""
    catalog = load_catalog(tools)
    known = set(catalog.names)
    queries = [q for q in load_queries(queries_file) if all(g in known for g in q.gold)]
    rows = []
    for tag, part in halves(queries, args.single_limit).items():
        if not part:
            continue
        recallers = {m: build(m, catalog, args.cache_dir) for m in METHODS}
        results = score(recallers, part)
        for method, result in results.items():
            result["time_ratio"] = result["ms_per_query"] / results["fused"]["ms_per_query"]
            rows.append(
                {"set": name, "half": tag, "method": method, "n_queries": len(part), **result}
            )
            print(
                f"{name:12} {tag:8} {method:22} n {len(part):4} "
                f"R@10 {result['recall_at_10']:.3f} nDCG@10 {result['ndcg_at_10']:.3f} "
                f"C@10 {result['complete_at_10']:.3f} {result['ms_per_query']:.1f} ms "
                f"split {result['split']:.2f}",
                file=sys.stderr,
                flush=True,
            )
    return rows


def table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown: one row per set, half and method."""
    lines = [
        "| set | tools | method | n | R@10 | nDCG@10 | complete@10 | split | time vs fused |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['set']} | {r['half']} | {r['method']} | {r['n_queries']} | "
            f"{r['recall_at_10']:.3f} | {r['ndcg_at_10']:.3f} | {r['complete_at_10']:.3f} | "
            f"{r['split']:.2f} | {r['time_ratio']:.2f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets-dir", type=Path, default=Path("bench-out/sets"))
    parser.add_argument("--metatool", type=Path, default=Path("bench-out/metatool"))
    parser.add_argument("--single-limit", type=int, default=600)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--only", default="", help="comma-separated set names to run")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    only = {n for n in args.only.split(",") if n}
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    for name in SETS:
        if only and name not in only:
            continue
        tools, queries = set_files(name, args.sets_dir, args.metatool)
        if not tools.is_file() or not queries.is_file():
            print(f"skipping {name}: {tools} or {queries} is missing", file=sys.stderr)
            continue
        rows.extend(run_set(name, tools, queries, args))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(table(rows))
    print(f"\n({time.perf_counter() - start:.0f} s in all)")


if __name__ == "__main__":
    main()
