"""Multi-intent recall on multi-tool queries: ``fused`` against ``fused+intents``.

Splits each routing set's queries by how many tools they need (2+ vs 1) and scores both methods
on each half with ``maitred eval routing``. The sets come from ``benchmarks/routing_sets.py``
(its ``bench-out/sets`` folder and MetaTool's ``bench-out/metatool``); MetaTool's one-tool half
is cut to ``--single-limit`` queries.

    .venv/bin/python benchmarks/intents_split.py --sets-dir bench-out --out bench-out/intents
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

SETS = {
    "toolalpaca": "sets/toolalpaca",
    "api-bank": "sets/api-bank",
    "bfcl": "sets/bfcl",
    "metatool": "metatool",
}


def build(sets_dir: Path, out: Path, single_limit: int) -> Path:
    """Write the 2+-tool and 1-tool halves of every set found, and a ``--sets`` file."""
    out.mkdir(parents=True, exist_ok=True)
    listed = []
    for name, sub in SETS.items():
        folder = sets_dir / sub
        queries = folder / ("test.jsonl" if name == "metatool" else "queries.jsonl")
        tools = folder / "tools.jsonl"
        if not queries.is_file() or not tools.is_file():
            print(f"skipping {name}: {queries} or {tools} is missing", file=sys.stderr)
            continue
        rows = [json.loads(line) for line in queries.read_text().splitlines() if line.strip()]
        halves = {
            "multi": [q for q in rows if len(q.get("gold", [])) >= 2],
            "single": [q for q in rows if len(q.get("gold", [])) == 1],
        }
        if name == "metatool":
            halves["single"] = halves["single"][:single_limit]
        for tag, part in halves.items():
            path = out / f"{name}-{tag}.jsonl"
            path.write_text("".join(json.dumps(q) + "\n" for q in part), encoding="utf-8")
            listed.append(
                {"name": f"{name}-{tag}", "catalog": [str(tools)], "queries": str(path.resolve())}
            )
    sets_file = out / "sets.json"
    sets_file.write_text(json.dumps({"sets": listed}, indent=1), encoding="utf-8")
    return sets_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets-dir", type=Path, default=Path("bench-out"))
    parser.add_argument("--out", type=Path, default=Path("bench-out/intents"))
    parser.add_argument("--single-limit", type=int, default=600)
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args()
    sets_file = build(args.sets_dir, args.out, args.single_limit)
    cmd = [
        sys.executable, "-m", "maitred.cli.main", "eval", "routing", "--sets", str(sets_file),
        "-m", "fused", "-m", "fused+intents", "--json",
    ]  # fmt: skip
    if args.cache_dir is not None:
        cmd += ["--cache-dir", str(args.cache_dir)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):  # 1: some queries were left out (reported on stderr)
        sys.exit(done.stderr)
    results = json.loads(done.stdout)["results"]
    print("| set | method | n | R@10 | nDCG@10 | complete@10 | ms/query |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['set']} | {r['method']} | {r['n_queries']} | {r['recall_at_10']:.3f} | "
            f"{r['ndcg_at_10']:.3f} | {r['complete_at_10']:.3f} | {r['ms_per_query']:.0f} |"
        )


if __name__ == "__main__":
    main()
