"""The MCP server as a recall signal: ``adaptive+servers`` against ``adaptive``, leave-one-set-out.

Sets are discovered as in ``routing_loso.py`` (the sets file, then every
``bench-out/sets/<name>/{tools,queries}.jsonl``). A set whose catalog has at least two servers
(tools with a ``server`` key: ``mcptoolbench``, ``mcp-bench``, ``mcp-bench-steps``) is scored;
a set without is ranked by ``+servers`` exactly as by its base method (``ServerRecaller`` hands
the call through), which this script checks on ``--check`` queries of each such set instead of
scoring it again.

The rule is :func:`maitred.recall.servers.lift_server` over the base ranking (read to
``servers.POOL``; each query and step ranked once), under a grid of its two numbers: the
dominance share ``tau`` (0 = servers always count) and the bonus ``beta``. Two variants:

- ``gated``: ``tau`` and ``beta`` both fitted (``tau`` > 0);
- ``always``: ``tau`` = 0, ``beta`` fitted (score servers, then tools, on every query).

Each held-out set is scored with the pair that maximises the mean nDCG@10 gain over the base on
the *other* server sets (ties: the better worst gain, then the milder pair). ``mcp-bench`` and
``mcp-bench-steps`` share one catalog and one set of tasks, so holding out one while fitting on
the other is not a held-out catalog: leave-one-*catalog*-out (LOCO) is printed beside it.
Step-wise sets also get the step-wise complete@10 (each step's top 10, union).

Run::

    .venv/bin/python benchmarks/routing_servers.py [--sets-dir bench-out/sets]
        [--base adaptive] [--check 200]

It prints markdown tables and writes ``bench-out/routing_servers.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from maitred.recall import Candidate, evaluate_routing, load_queries, make_recaller, query_metrics
from maitred.recall.evaluate import STEP_K, EvalSet, Query, load_sets, step_metrics
from maitred.recall.servers import (
    BONUS,
    DOMINANCE,
    POOL,
    ServerRecaller,
    lift_server,
    servers_of,
)
from maitred.skills.catalog import load_catalog
from maitred.skills.model import Catalog

REPO = Path(__file__).resolve().parents[1]
TAUS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7)
BETAS = (0.2, 0.5, 1.0, 2.0, 5.0)
GRID = tuple((t, b) for t in TAUS for b in BETAS)
KEYS = ("ndcg_at_10", "complete_at_10", "step_complete_at_k", "step_exposed")
Rule = Callable[[list[Candidate], int], list[Candidate]]


def discover(sets_dir: Path) -> list[EvalSet]:
    """The sets file's sets, then every ``sets_dir/<name>/`` with tools and queries files."""
    found: list[EvalSet] = (
        list(load_sets(sets_dir / "sets.json")) if (sets_dir / "sets.json").exists() else []
    )
    named = {s.name for s in found}
    for folder in sorted(p for p in sets_dir.iterdir() if p.is_dir()):
        tools, queries = folder / "tools.jsonl", folder / "queries.jsonl"
        if folder.name not in named and tools.is_file() and queries.is_file():
            found.append(EvalSet(folder.name, (tools,), queries))
    return found


def rule_of(catalog: Catalog, tau: float, beta: float) -> Rule:
    """:func:`lift_server` with this catalog's servers and the given pair."""
    members = servers_of(catalog)
    server_of = {t: s for s, tools in members.items() for t in tools}
    return lambda ranked, k: lift_server(ranked, members, server_of, k, dominance=tau, bonus=beta)


def score(
    queries: Sequence[Query],
    texts: Mapping[str, list[Candidate]],
    rule: Rule | None,
    depth: int,
) -> dict[str, float]:
    """nDCG@10, complete@10 and (step-wise queries) step-wise complete@10 and tools shown."""
    rows: list[dict[str, float]] = []
    for q in queries:
        ranked = texts[q.text] if rule is None else rule(texts[q.text], depth)
        names = [c.name for c in ranked]
        row = query_metrics(names, q.gold)
        if q.steps:
            steps = [
                [c.name for c in (texts[s][:STEP_K] if rule is None else rule(texts[s], STEP_K))]
                for s in q.steps
            ]
            row.update(step_metrics(steps, names, q.gold, STEP_K))
        rows.append(row)
    return {k: statistics.fmean(r[k] for r in rows) for k in KEYS if k in rows[0]}


def run_set(spec: EvalSet, base: str, cache: Path) -> dict[str, Any] | None:
    catalog = load_catalog(spec.catalog)
    if len(servers_of(catalog)) < 2:
        return None
    known = set(catalog.names)
    queries = [q for q in load_queries(spec.queries) if all(g in known for g in q.gold)]
    recaller = make_recaller(base, catalog, cache_dir=cache)
    wanted = list(dict.fromkeys([q.text for q in queries] + [s for q in queries for s in q.steps]))
    batch = getattr(recaller, "rank_batch", None)
    ranked = batch(wanted, POOL) if batch else [recaller.rank(t, POOL) for t in wanted]
    texts = dict(zip(wanted, ranked, strict=True))
    out: dict[str, Any] = {"set": spec.name, "tools": len(catalog), "queries": len(queries)}
    out["servers"] = len(servers_of(catalog))
    out["base"] = score(queries, texts, None, POOL)
    out["grid"] = {
        f"{t:g},{b:g}": score(queries, texts, rule_of(catalog, t, b), POOL) for t, b in GRID
    }
    shipped = make_recaller(f"{base}+servers", catalog, cache_dir=cache)
    real = evaluate_routing(shipped, queries, f"{base}+servers", on_unknown=lambda _: None)
    out["shipped"] = {
        k: real[k]
        for k in ("ndcg_at_10", "complete_at_10", "step_complete_at_k", "step_exposed")
        if k in real
    }
    print(
        f"  {spec.name}: base {out['base']['ndcg_at_10']:.4f}, +servers {real['ndcg_at_10']:.4f}",
        flush=True,
    )
    return out


def check_unchanged(spec: EvalSet, base: str, cache: Path, n: int) -> str:
    """A set without servers: ``+servers`` must rank its first ``n`` queries as ``base`` does."""
    catalog = load_catalog(spec.catalog)
    plain = make_recaller(base, catalog, cache_dir=cache)
    wrapped = make_recaller(f"{base}+servers", catalog, cache_dir=cache)
    assert isinstance(wrapped, ServerRecaller) and not wrapped.active
    queries = load_queries(spec.queries)[:n]
    same = sum(
        [c.name for c in plain.rank(q.text, 10)] == [c.name for c in wrapped.rank(q.text, 10)]
        for q in queries
    )
    servers = len(servers_of(catalog))
    return f"{spec.name}: {servers} servers; {same} of {len(queries)} rankings identical"


def fit(results: Sequence[dict[str, Any]], variant: str, held: set[str]) -> str:
    """The grid key (``"tau,beta"``) maximising the mean nDCG@10 gain over base on the sets
    not in ``held``; ``variant`` ``always`` fits ``beta`` with ``tau`` = 0, ``gated`` both."""
    others = [r for r in results if r["set"] not in held]
    pairs = [(t, b) for t, b in GRID if (t == 0.0) == (variant == "always")]

    def key(pair: tuple[float, float]) -> tuple[float, float, float, float]:
        name = f"{pair[0]:g},{pair[1]:g}"
        gains = [r["grid"][name]["ndcg_at_10"] - r["base"]["ndcg_at_10"] for r in others]
        return (round(statistics.fmean(gains), 6), round(min(gains), 6), pair[0], -pair[1])

    t, b = max(pairs, key=key)
    return f"{t:g},{b:g}"


def catalog_of(result: dict[str, Any]) -> str:
    return "mcp-bench" if result["set"].startswith("mcp-bench") else result["set"]


def folds(results: Sequence[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """set -> {"gated LOSO": pair, "gated LOCO": pair, "always LOSO": ..., "always LOCO": ...}."""
    out: dict[str, dict[str, str]] = {}
    for r in results:
        same = {x["set"] for x in results if catalog_of(x) == catalog_of(r)}
        out[r["set"]] = {}
        for variant in ("gated", "always"):
            for label, held in (("LOSO", {r["set"]}), ("LOCO", same)):
                if all(x["set"] in held for x in results):
                    continue
                out[r["set"]][f"{variant} {label}"] = fit(results, variant, held)
    return out


def cell(m: dict[str, float]) -> str:
    return f"{m['ndcg_at_10']:.3f} / {m['complete_at_10']:.3f}"


def tables(results: Sequence[dict[str, Any]], base: str) -> list[str]:
    chosen = folds(results)
    labels = ("gated LOSO", "gated LOCO", "always LOSO", "always LOCO")
    lines = [
        f"nDCG@10 / C@10; `{base}+servers` = the shipped pair "
        f"({DOMINANCE:g}, {BONUS:g}), through `make_recaller`; fitted pairs (tau, beta):",
        "",
        f"| set (tools, servers, queries) | {base} | {base}+servers | " + " | ".join(labels) + " |",
        "|---|---:|---:|" + "---:|" * len(labels),
    ]
    for r in results:
        picks = chosen[r["set"]]
        cells = [
            f"{cell(r['grid'][picks[x]])} ({picks[x]})" if x in picks else "n/a" for x in labels
        ]
        lines.append(
            f"| {r['set']} ({r['tools']}, {r['servers']}, {r['queries']}) "
            f"| {cell(r['base'])} | {cell(r['shipped'])} | " + " | ".join(cells) + " |"
        )
    lines += ["", "Step-wise (each step's top 10; shown = the union's mean size):", ""]
    lines += [
        "| set | ranking | step-wise C@10 | shown | one-shot C@10 |",
        "|---|---|---:|---:|---:|",
    ]
    for r in results:
        if "step_complete_at_k" not in r["base"]:
            continue
        rows = [(base, r["base"]), (f"{base}+servers", r["shipped"])]
        rows += [(f"{x} ({p})", r["grid"][p]) for x, p in chosen[r["set"]].items()]
        for name, m in rows:
            lines.append(
                f"| {r['set']} | {name} | {m['step_complete_at_k']:.3f} | "
                f"{m['step_exposed']:.1f} | {m['complete_at_10']:.3f} |"
            )
    lines += ["", "Grid, nDCG@10 / C@10 (tau, beta):", ""]
    lines += ["| tau, beta | " + " | ".join(r["set"] for r in results) + " |"]
    lines += ["|---|" + "---:|" * len(results)]
    for t, b in GRID:
        name = f"{t:g},{b:g}"
        lines.append(f"| {name} | " + " | ".join(cell(r["grid"][name]) for r in results) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets-dir", type=Path, default=REPO / "bench-out/sets")
    parser.add_argument("--cache", type=Path, default=REPO / "bench-out/cache")
    parser.add_argument("--base", default="adaptive")
    parser.add_argument("--check", type=int, default=200, help="queries per server-less set")
    parser.add_argument("--out", type=Path, default=REPO / "bench-out/routing_servers.json")
    args = parser.parse_args(argv)
    results: list[dict[str, Any]] = []
    notes: list[str] = []
    for spec in discover(args.sets_dir):
        found = run_set(spec, args.base, args.cache)
        if found is None:
            notes.append(check_unchanged(spec, args.base, args.cache, args.check))
        else:
            results.append(found)
    print()
    print("\n".join(tables(results, args.base)))
    print()
    print("Sets without servers (ranked by the base method, checked):")
    print("\n".join(f"- {n}" for n in notes))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"results": results, "unchanged": notes}, default=str) + "\n")


if __name__ == "__main__":
    main()
