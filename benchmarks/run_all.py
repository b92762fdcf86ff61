"""Run every benchmark and rewrite BENCHMARKS.md from their JSON results (``make bench``).

1. ``stages.py``: per-stage times, the overhead and scale ratios, ``run`` throughput;
2. ``log_write.py``: decision-log write rate against 100,000 pair rows/s;
3. with ``--metatool``, ``metatool_routing.py`` (about 4 minutes); otherwise its last
   ``results.json`` is reported as it is, with its date;
4. with ``--gateway``, ``gateway.py``: the MCP gateway against a plain FastMCP proxy (about
   3 minutes; needs the ``mcp`` extra); otherwise its last ``gateway.json``, if any, with its date.

Each script runs in its own process and writes JSON under ``--out``; BENCHMARKS.md is then
generated from those files alone, so ``--report-only`` re-renders it without measuring again.
The text between ``<!-- notes -->`` and ``<!-- /notes -->`` in BENCHMARKS.md (a dated diagnosis
written by a person) is kept across rewrites; everything else is generated.

    .venv/bin/python benchmarks/run_all.py                  # everything but MetaTool
    .venv/bin/python benchmarks/run_all.py --metatool
    .venv/bin/python benchmarks/run_all.py --gateway
    .venv/bin/python benchmarks/run_all.py --quick          # smaller, for a smoke test
    .venv/bin/python benchmarks/run_all.py --report-only
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NOTES = re.compile(r"<!-- notes -->\n(.*?)<!-- /notes -->", re.DOTALL)
QUICK_STAGES = [
    "--sizes",
    "10,1000",
    "--messages",
    "60",
    "--run-messages",
    "500",
    "--profile",
    "30",
]


def _run(script: str, args: Sequence[str]) -> str:
    """Run a benchmark script with this interpreter; return the command as typed."""
    command = [sys.executable, str(HERE / script), *args]
    shown = f"python benchmarks/{script} " + " ".join(shlex.quote(a) for a in args)
    print(f"$ {shown}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    subprocess.run(command, check=True, cwd=REPO)
    print(f"  ({time.perf_counter() - start:,.0f}s)", file=sys.stderr, flush=True)
    return shown.strip()


def measure(args: argparse.Namespace) -> None:
    """Run the scripts; their JSON lands in ``args.out``."""
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    where = _rel(out)  # the scripts run in the repository root; shown commands stay short
    stages_args = ["--out", where, "--json-out", f"{where}/stages.json"]
    stages_args += QUICK_STAGES if args.quick else []
    stages_args += shlex.split(args.stages_args)
    _run("stages.py", stages_args)
    turns = "2000" if args.quick else str(args.log_turns)
    shown = _run("log_write.py", ["--turns", turns, "--json-out", f"{where}/log_write.json"])
    data = json.loads((out / "log_write.json").read_text(encoding="utf-8"))
    data.update(command=shown, date=_now())
    (out / "log_write.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    if args.metatool:
        _run("metatool_routing.py", ["--out", f"{where}/metatool"])
    if args.gateway:
        _run("gateway.py", ["--json-out", f"{where}/gateway.json"])


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def _load(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


# --------------------------------------------------------------------------- rendering


def _us(value: float) -> str:
    if value >= 10_000:
        return f"{value / 1000:,.1f} ms"
    return f"{value:,.0f} µs"


def _verdict(met: bool) -> str:
    return "**met**" if met else "**not met**"


def _num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def summary(stages: dict[str, Any] | None, logw: dict[str, Any] | None) -> list[str]:
    lines = ["## Summary", "", "| measure | goal | result |", "|---|---|---|"]
    if stages:
        size = int(stages["args"]["ratio_size"])
        large = max(int(s) for s in stages["args"]["sizes"])
        for method, row in stages["ratios"]["overhead"].items():
            lines.append(
                f"| gate+menu+log / recall, {method}, {size:,} skills | <= 0.1 | "
                f"{_num(row['median'], 3)} ({_verdict(row['met'])}) |"
            )
        for method, row in stages["ratios"]["scale"].items():
            lines.append(
                f"| recall at {large:,} / at {size:,} skills, {method} | <= 3x | "
                f"{_num(row['median'])}x ({_verdict(row['met'])}) |"
            )
        for row in stages["run"]:
            lines.append(
                f"| `Pipeline.run` throughput, {row['method']}, {row['size']:,} skills, SQLite "
                f"log | (no goal) | {row['messages_per_s']:,.0f} messages/s |"
            )
    if logw:
        for row in logw["results"]:
            lines.append(
                f"| decision-log write rate ({row['backend']}) | >= {logw['goal']:,} pair rows/s "
                f"| {row['pairs_per_s']:,} pair rows/s = {row['ratio_to_goal']:.2f}x "
                f"({_verdict(row['ratio_to_goal'] >= 1)}) |"
            )
    return [*lines, ""]


def stage_tables(stages: dict[str, Any]) -> list[str]:
    meta = stages["meta"]
    stage_names = ("recall", "gate", "depth", "menu", "log")
    lines = [
        "## 1. Per-message time of each stage",
        "",
        f"`{meta['command']}` ({meta['date']}, {meta['seconds']:,.0f}s; load average "
        f"{meta['load_average_start']} at the start, {meta['load_average_end']} at the end).",
        "",
        f"{stages['args']['messages']} MetaTool queries routed one at a time with "
        "`Pipeline.route` after "
        f"{stages['args']['warmup']} warm-up messages, top_k=10, no threshold, catalog sizes "
        f"interleaved in blocks of {stages['args']['block']} messages. Recall, gate, depth and "
        "menu come from `TurnRecord.timings_us`; log is `SqliteLog.write` per turn plus an "
        "even share of the final `flush`. *Turn* is the sum of the five. Median (mean).",
        "",
        "| method | skills | " + " | ".join(stage_names) + " | turn | candidates / visible |",
        "|---|---:|" + "---:|" * (len(stage_names) + 2),
    ]
    for method, by_size in stages["stages"].items():
        for size, row in by_size.items():
            st = row["stages"]
            cells = " | ".join(
                f"{_us(st[s]['median_us'])} ({_us(st[s]['mean_us'])})" for s in stage_names
            )
            lines.append(
                f"| {method} | {int(size):,} | {cells} | {_us(row['turn_total']['median_us'])} "
                f"({_us(row['turn_total']['mean_us'])}) | {row['candidates_mean']:.1f} / "
                f"{row['visible_mean']:.1f} |"
            )
    lines += [
        "",
        "Set-up (not per message): catalog build, menu cache (tiktoken over every "
        "skill, what `begin_run` does first) and index build or load from "
        "`bench-out/index`.",
        "",
        "| skills | catalog | menu cache | tokens, all skills | indexes |",
        "|---:|---:|---:|---:|---|",
    ]
    for size, info in stages["setup"].items():
        idx = ", ".join(f"{k[6:-2]} {v:,.1f}s" for k, v in info.items() if k.startswith("index_"))
        lines.append(
            f"| {int(size):,} | {info['catalog_s']:.1f}s | {info['menu_cache_s']:.1f}s | "
            f"{info['tokens_all_skills']:,} | {idx} |"
        )
    return [*lines, ""]


def ratio_tables(stages: dict[str, Any]) -> list[str]:
    size = int(stages["args"]["ratio_size"])
    large = max(int(s) for s in stages["args"]["sizes"])
    lines = [
        f"## 2. Gate + menu + log as a share of recall, {size:,} skills (goal <= 0.1)",
        "",
        "Same command as section 1; both sides come from the same turns, so machine load "
        "largely cancels out.",
        "",
        "| method | recall | gate+menu+log | ratio (medians) | ratio (means) | goal |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for method, row in stages["ratios"]["overhead"].items():
        lines.append(
            f"| {method} | {_us(row['recall_median_us'])} | {_us(row['overhead_median_us'])} | "
            f"{_num(row['median'], 3)} | {_num(row['mean'], 3)} | {_verdict(row['met'])} |"
        )
    lines += [
        "",
        f"## 3. Recall at {large:,} skills as a multiple of {size:,} (goal <= 3x)",
        "",
        "Same command as section 1. Dense and hybrid use the usearch HNSW index above 20,000 "
        "skills. Sizes were interleaved, so both figures saw the same load.",
        "",
        f"| method | recall, {size:,} | recall, {large:,} | ratio (medians) | ratio (means) "
        "| goal |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for method, row in stages["ratios"]["scale"].items():
        lines.append(
            f"| {method} | {_us(row['small_median_us'])} | {_us(row['large_median_us'])} | "
            f"{_num(row['median'])}x | {_num(row['mean'])}x | {_verdict(row['met'])} |"
        )
    return [*lines, ""]


def run_table(stages: dict[str, Any]) -> list[str]:
    lines = [
        "## 4. `Pipeline.run` throughput",
        "",
        f"`Pipeline.run` over {stages['args']['run_messages']:,} distinct MetaTool queries "
        "(batches of 256, so dense encodes a batch at once), every turn logged to a fresh "
        "SQLite log in a temporary folder; `begin_run` excluded, final `flush` included. "
        f"Same command as section 1.",
        "",
        "| method | skills | messages | seconds | messages/s | pair rows/s | blocked |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in stages["run"]:
        lines.append(
            f"| {row['method']} | {row['size']:,} | {row['messages']:,} | {row['seconds']:.1f} | "
            f"{row['messages_per_s']:,.0f} | {row['pairs_per_s']:,.0f} | "
            f"{row['blocked_share']:.0%} |"
        )
    return [*lines, ""]


def log_table(logw: dict[str, Any]) -> list[str]:
    lines = [
        "## 5. Decision-log write rate (goal >= 100,000 pair rows/s)",
        "",
        f"`{logw.get('command', 'python benchmarks/log_write.py')}` ({logw.get('date', '')}): "
        "synthetic turns of 10 pairs, `begin_run` + `write` x N + `close`, best of 3; "
        "encoding and row hashing included. The goal is judged on wall time; pair rows per "
        "CPU-second (this process only, SQLite runs in it) is what the rate would be with a "
        "core to itself.",
        "",
        "| backend | turns | pair rows/s | x goal | pair rows per CPU-second | wall s | goal |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in logw["results"]:
        lines.append(
            f"| {row['backend']} | {row['turns']:,} | {row['pairs_per_s']:,} | "
            f"{row['ratio_to_goal']:.2f} | {row['pairs'] / row['cpu_seconds']:,.0f} | "
            f"{row['seconds']:.2f} | "
            f"{_verdict(row['ratio_to_goal'] >= 1)} |"
        )
    return [*lines, ""]


def metatool_table(path: Path) -> list[str]:
    data = _load(path)
    if data is None:
        return [
            "## 6. MetaTool routing",
            "",
            f"No `{_rel(path)}` yet: run `python benchmarks/run_all.py --metatool`.",
            "",
        ]
    date = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    counts = data["counts"]
    metrics = ("hit_at_1", "recall_at_5", "recall_at_10", "mrr", "ndcg_at_10")
    lines = [
        "## 6. MetaTool routing quality (test split)",
        "",
        f"`python benchmarks/metatool_routing.py` ({date}): {counts['tools']} tools, test = "
        f"{counts['n_test-single']:,} sampled single-tool + {counts['n_test-multi']} two-tool "
        "queries, split by a seeded hash of the query text; the code defaults (tuned on dev "
        "only) are what is reported.",
        "",
        "| split | method | n | " + " | ".join(metrics) + " |",
        "|---|---|---:|" + "---:|" * len(metrics),
    ]
    for split, rows in data["results"].items():
        for r in rows:
            cells = " | ".join(f"{r[m]:.3f}" for m in metrics)
            lines.append(f"| {split} | {r['method']} | {r['n_queries']:,} | {cells} |")
    return [*lines, ""]


def gateway_table(path: Path) -> list[str]:
    """The last ``gateway.py`` run, if there is one (the table is rendered by that script)."""
    data = _load(path)
    if data is None:
        return []
    return [
        "## 8. MCP gateway vs a plain FastMCP proxy (goals: call <= 1.25x, list <= 1.5x)",
        "",
        f"`{data['command']}` ({data['date']}); details in the script's docstring.",
        "",
        data["table"],
        "",
    ]


def profile_tables(stages: dict[str, Any]) -> list[str]:
    """Top functions (own CPU time) for the cases whose goal was not met."""
    size = int(stages["args"]["ratio_size"])
    large = max(int(s) for s in stages["args"]["sizes"])
    wanted: list[tuple[str, str, str]] = []
    for method, row in stages["ratios"]["overhead"].items():
        if not row["met"]:
            wanted.append((method, f"turn_{size}", f"whole turn + log, {size:,} skills"))
    for method, row in stages["ratios"]["scale"].items():
        if not row["met"]:
            wanted.append((method, f"recall_{large}", f"recall alone, {large:,} skills"))
    lines = ["## Where the time goes", ""]
    if not wanted:
        return [*lines, "Every goal above is met; no profile is shown.", ""]
    lines += [
        f"cProfile (CPU time, so other processes do not count) over "
        f"{stages['args']['profile']} messages, for each case that misses its goal: the "
        "functions with the largest share of own time.",
        "",
    ]
    for method, key, label in wanted:
        prof = stages["profiles"].get(method, {}).get(key)
        if not prof:
            continue
        areas = [(k, v) for k, v in prof["areas"].items() if v >= 0.01][:8]
        lines += [
            f"**{method}, {label}**: own CPU time by package (built-ins charged to their "
            "callers): " + ", ".join(f"{k} {v:.0%}" for k, v in areas) + ".",
            "",
            "| function | calls | own | incl. callees |",
            "|---|---:|---:|---:|",
        ]
        lines += [
            f"| `{r['function']}` | {r['calls']:,} | {r['tottime_share']:.0%} | "
            f"{r['cumtime_share']:.0%} |"
            for r in prof["functions"][:6]
        ]
        lines.append("")
    return lines


def render(out: Path, notes: str) -> str:
    stages = _load(out / "stages.json")
    logw = _load(out / "log_write.json")
    machine = stages["meta"]["machine"] if stages else f"{os.cpu_count()} CPU"
    lines = [
        "# Benchmarks",
        "",
        f"Generated by `benchmarks/run_all.py` on {_now()}; rerun with `make bench` (add "
        "`--metatool` to `benchmarks/run_all.py` to redo the routing-quality table). Machine: "
        f"{machine}, **shared** with other jobs, so absolute times move from run to run: "
        "every goal is a ratio measured within one run, and absolute figures are context. "
        "Medians judge the goals; means (in brackets) show what the occasional stall costs.",
        "",
    ]
    lines += summary(stages, logw)
    if stages:
        lines += stage_tables(stages) + ratio_tables(stages) + run_table(stages)
    if logw:
        lines += log_table(logw)
    lines += metatool_table(out / "metatool" / "results.json")
    lines += gateway_table(out / "gateway.json")
    if stages:
        lines += profile_tables(stages)
    lines += ["## Diagnosis", "", "<!-- notes -->", notes.strip(), "<!-- /notes -->", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "bench-out")
    parser.add_argument("--md", type=Path, default=REPO / "BENCHMARKS.md")
    parser.add_argument("--metatool", action="store_true", help="rerun metatool_routing.py")
    parser.add_argument("--gateway", action="store_true", help="rerun gateway.py (MCP gateway)")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    parser.add_argument("--log-turns", type=int, default=20_000)
    parser.add_argument("--stages-args", default="", help="extra arguments for stages.py")
    parser.add_argument("--report-only", action="store_true", help="render from existing JSON")
    args = parser.parse_args(argv)
    args.out = args.out.resolve()
    if not args.report_only:
        measure(args)
    old = args.md.read_text(encoding="utf-8") if args.md.is_file() else ""
    found = NOTES.search(old)
    notes = found.group(1) if found else "(no diagnosis written yet)"
    args.md.write_text(render(args.out, notes), encoding="utf-8")
    print(f"wrote {args.md}", file=sys.stderr)


if __name__ == "__main__":
    main()
