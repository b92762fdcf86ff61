"""Routing accuracy of every recall method on every evaluation set: the README table.

Sets (each a catalog and labelled queries; see ``benchmarks/sets/README.md``):

- ``sitecare``: the built-in domain's 11 skills and the 4,712 messages with a gold skill among
  20,000 generated with seed 11 (1,000 accounts), as in the README's earlier table;

- ``metatool``: the MetaTool test split written by ``benchmarks/metatool_routing.py`` (its
  ``prepare`` step runs here when ``bench-out/metatool/test.jsonl`` is missing);
- ``toolalpaca``, ``bfcl``, ``apibench-hf``, ``api-bank``: converted by
  ``benchmarks/sets/build.py`` from fetched copies of the public repositories
  (``--toolalpaca DIR``, ``--gorilla DIR``, ``--damo-convai DIR``; a set is skipped with a note
  when its source is missing and it was not converted before);
- ``mcptoolbench``, ``mcp-bench``, ``mcp-bench-steps``: real MCP servers' tools, converted the
  same way (``--mcptoolbench DIR``, ``--mcp-bench DIR``); ``mcp-bench-steps`` is step-wise
  (its tasks' steps asked one by one, ``step_complete_at_k``), printed in a second table;
- ``acebench-zh``, ``acebench-en``: ACEBench's Chinese and English halves (``--acebench DIR``;
  the test side, ``queries.jsonl``; ``benchmarks/routing_lang.py`` reports both sides and
  more per language).

Methods: ``bm25-plain`` (single-document Okapi BM25, the lexical bar), ``bm25`` (BM25F),
``dense`` (MiniLM), ``hybrid`` (RRF), ``fused`` (normalised-score fusion) and ``adaptive``
(standout-weighted fusion, the default). Every figure is
``maitred.recall.evaluate_routing`` on recallers built by ``make_recaller`` with the code's
defaults, exactly what ``maitred eval routing --sets bench-out/sets/sets.json -m ...`` prints.
Nothing is tuned here: the BM25F weights and ``fused``'s weight were fitted on MetaTool dev
queries by ``benchmarks/routing_tune.py``, ``adaptive``'s pair by ``benchmarks/routing_loso.py``.

Run::

    .venv/bin/python benchmarks/routing_sets.py --toolalpaca ~/src/ToolAlpaca \\
        --gorilla ~/src/gorilla --damo-convai ~/src/DAMO-ConvAI \\
        --mcptoolbench ~/src/MCPToolBenchPP --mcp-bench ~/src/mcp-bench \\
        [--methods bm25-plain,bm25,dense,hybrid,fused] [--only bfcl,api-bank]

It prints a markdown table (rows: set x method), one more for the step-wise sets, and writes
``bench-out/routing_sets.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from maitred.lab.domains.sitecare.generate import generate_messages
from maitred.recall import evaluate_routing, load_queries, make_recaller
from maitred.recall.evaluate import EvalSet, load_sets
from maitred.skills.catalog import load_catalog

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import metatool_routing  # noqa: E402


def _load_converters() -> ModuleType:
    """``benchmarks/sets/build.py`` by path (the name ``build`` is also a PyPI package)."""
    spec = importlib.util.spec_from_file_location("sets_build", REPO / "benchmarks/sets/build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sets_build = _load_converters()

METHODS = ("bm25-plain", "bm25", "dense", "hybrid", "fused", "adaptive")
COLUMNS = (
    ("hit_at_1", "Hit@1"),
    ("recall_at_5", "R@5"),
    ("recall_at_10", "R@10"),
    ("mrr", "MRR"),
    ("ndcg_at_10", "nDCG@10"),
    ("complete_at_10", "C@10"),
)


def prepare(args: argparse.Namespace) -> Path:
    """Make sure every set's files exist; write and return the sets file."""
    out: Path = args.out
    meta = REPO / "bench-out" / "metatool"
    if not (meta / "test.jsonl").exists():
        metatool_routing.prepare(
            argparse.Namespace(data=args.metatool, out=meta, seed=0, dev_size=2000, test_size=3000)
        )
    site = out / "sitecare" / "queries.jsonl"
    if not site.exists():
        site.parent.mkdir(parents=True, exist_ok=True)
        rows = [
            {"id": m["id"], "text": m["text"], "gold": [m["gold"]]}
            for m in generate_messages(20_000, 1_000, seed=11)
            if m["gold"]
        ]
        site.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    sets: list[dict[str, Any]] = [
        {
            "name": "sitecare",
            "catalog": str(REPO / "src" / "maitred" / "lab" / "domains" / "sitecare" / "skills"),
            "queries": str(site.resolve()),
        },
        {
            "name": "metatool",
            "catalog": str(meta / "tools.jsonl"),
            "queries": str(meta / "test.jsonl"),
        },
    ]
    sources = {
        "toolalpaca": args.toolalpaca,
        "bfcl": args.gorilla,
        "apibench-hf": args.gorilla,
        "api-bank": args.damo_convai,
        "mcptoolbench": args.mcptoolbench,
        "mcp-bench": args.mcp_bench,
        "mcp-bench-steps": args.mcp_bench,
        "acebench-zh": args.acebench,
        "acebench-en": args.acebench,
    }
    for name, src in sources.items():
        folder = out / name
        if src is not None:
            info = sets_build.build(name, src, out, max_queries=args.max_queries)
            print(f"converted {name}: {info['tools']} tools, {info['queries']} queries")
        if not (folder / "queries.jsonl").exists():
            print(f"note: {name} skipped (give its source: --toolalpaca, --gorilla, ...)")
            continue
        sets.append(
            {
                "name": name,
                "catalog": str((folder / "tools.jsonl").resolve()),
                "queries": str((folder / "queries.jsonl").resolve()),
            }
        )
    path = out / "sets.json"
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"sets": sets}, indent=1) + "\n", "utf-8")
    return path


def run_set(spec: EvalSet, methods: Sequence[str], cache: Path) -> list[dict[str, Any]]:
    """Every method on one set, as rows."""
    catalog = load_catalog(spec.catalog)
    queries = load_queries(spec.queries)
    rows = []
    for method in methods:
        start = time.perf_counter()
        recaller = make_recaller(method, catalog, cache_dir=cache)
        built = time.perf_counter() - start
        result = evaluate_routing(recaller, queries, method, on_unknown=lambda _: None)
        rows.append({"set": spec.name, "skills": len(catalog), "build_s": built, **result})
        print(
            f"{spec.name:12} {method:10} nDCG@10 {result['ndcg_at_10']:.4f} "
            f"({result['ms_per_query']:.2f} ms/query)",
            flush=True,
        )
    return rows


def table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown: one row per set and method; the best nDCG@10 of each set in bold."""
    head = "| set (skills, queries) | method | " + " | ".join(c for _, c in COLUMNS)
    lines = [head + " | ms/query |", "|---|---|" + "---:|" * (len(COLUMNS) + 1)]
    best = {}
    for row in rows:
        best[row["set"]] = max(best.get(row["set"], 0.0), row["ndcg_at_10"])
    for row in rows:
        cells = []
        for key, _ in COLUMNS:
            text = f"{row[key]:.3f}"
            if key == "ndcg_at_10" and row[key] == best[row["set"]]:
                text = f"**{text}**"
            cells.append(text)
        where = f"{row['set']} ({row['skills']}, {row['n_queries']})"
        lines.append(
            f"| {where} | {row['method']} | "
            + " | ".join(cells)
            + f" | {row['ms_per_query']:.2f} |"
        )
    return "\n".join(lines)


STEP_COLUMNS = (
    ("step_complete_at_k", "step-wise C@10"),
    ("step_exposed", "tools shown"),
    ("oneshot_complete_at_exposed", "one-shot C@shown"),
    ("complete_at_10", "one-shot C@10"),
)


def step_table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown: the step-wise figures of the sets whose queries have steps ('' if none)."""
    stepped = [r for r in rows if "step_k" in r]
    if not stepped:
        return ""
    head = "| set (skills, step-wise tasks) | method | " + " | ".join(c for _, c in STEP_COLUMNS)
    lines = [head + " |", "|---|---|" + "---:|" * len(STEP_COLUMNS)]
    for row in stepped:
        cells = [
            f"{row[k]:.1f}" if k == "step_exposed" else f"{row[k]:.3f}" for k, _ in STEP_COLUMNS
        ]
        where = f"{row['set']} ({row['skills']}, {row['n_step_queries']})"
        lines.append(f"| {where} | {row['method']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--toolalpaca", type=Path, help="ToolAlpaca checkout or git dir")
    parser.add_argument("--gorilla", type=Path, help="gorilla checkout or git dir")
    parser.add_argument("--damo-convai", type=Path, help="DAMO-ConvAI checkout or git dir")
    parser.add_argument("--mcptoolbench", type=Path, help="MCPToolBenchPP checkout or git dir")
    parser.add_argument("--mcp-bench", type=Path, help="mcp-bench checkout or git dir")
    parser.add_argument("--acebench", type=Path, help="ACEBench checkout or git dir")
    parser.add_argument("--only", default="", help="comma-separated set names to run")
    parser.add_argument("--metatool", type=Path, default=REPO / ".." / "shared/data/metatool")
    parser.add_argument("--out", type=Path, default=REPO / "bench-out" / "sets")
    parser.add_argument("--cache", type=Path, default=REPO / "bench-out" / "cache")
    parser.add_argument("--max-queries", type=int, default=1000)
    parser.add_argument("--methods", default=",".join(METHODS))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    sets_file = prepare(args)
    methods = [m for m in args.methods.split(",") if m]
    rows: list[dict[str, Any]] = []
    only = {n for n in args.only.split(",") if n}
    for spec in load_sets(sets_file):
        if only and spec.name not in only:
            continue
        rows.extend(run_set(spec, methods, args.cache))
    name = "routing_sets" + ("-" + "-".join(sorted(only)) if only else "") + ".json"
    (REPO / "bench-out" / name).write_text(json.dumps(rows, indent=1), "utf-8")
    print()
    print(table(rows))
    steps = step_table(rows)
    if steps:
        print()
        print(steps)


if __name__ == "__main__":
    main()
