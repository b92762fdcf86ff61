"""Leave-one-set-out routing accuracy: is the default safe on a catalog it was not fitted on?

Every development set is held out in turn. Whatever a method fits (here: ``adaptive``'s lexical
weight and standout power, chosen on a grid) is fitted on the *other* sets only, then scored on
the held-out one. The fit maximises the mean margin to the best single method over the fitting
sets (ties: the better worst margin). Methods with nothing fitted on these sets
(``bm25-plain``, ``bm25``, ``dense``, ``hybrid``, ``fused``, ...) are scored as they ship.

Sets are discovered, not listed: the sets file ``routing_sets.py`` writes (``sitecare``,
``metatool`` and every converted public set), plus every folder under ``--sets-dir`` holding a
``tools.jsonl`` and a ``queries.jsonl`` (so a set converted later by ``benchmarks/sets/build.py``
joins without a change here). Run ``routing_sets.py`` once first to convert the public sets.

Per set it prints nDCG@10 of every method, the LOSO ``adaptive`` (and the pair its fold chose),
the shipped ``adaptive`` (its default pair), and the margins of ``fused`` and of the LOSO
``adaptive`` to the best *single* method (``bm25-plain``, ``bm25``, ``dense``); then the worst
set of each and the lowest margin to ``bm25-plain``.

``--stress`` adds each set with a deliberately weak dense half (the embedding of each tool's
name alone, BM25 unchanged): the failure mode of a catalog whose embedding cannot tell the tools
apart. With it, each fold is fitted on the *other* sets and their weak-dense variants (never the
held-out set or its own variant), so the pair is chosen for catalogs where dense wins and where
it is weak; what the folds choose on the other sets alone is printed too. ``--timing`` measures the
per-query time at 1,000 skills of ``dense``, ``fused`` and ``adaptive``, interleaved in one run,
and prints the ratios to ``dense``.

Run::

    .venv/bin/python benchmarks/routing_loso.py --stress --timing [--only bfcl,api-bank] [--reuse]

It writes ``bench-out/routing_loso.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from maitred.recall import (
    AdaptiveRecaller,
    BM25Recaller,
    DenseRecaller,
    FusedRecaller,
    HybridRecaller,
    MiniLMEmbedder,
    evaluate_routing,
    load_queries,
    make_recaller,
    query_metrics,
)
from maitred.recall.adaptive import LEXICAL_WEIGHT, POWER
from maitred.recall.base import Recaller
from maitred.recall.dense import Embedder, Progress, QueryEncoder
from maitred.recall.embedders import DEFAULT_EMBEDDER, make_embedder
from maitred.recall.evaluate import MRR_DEPTH, QUALITY_KEYS, EvalSet, Query, load_sets
from maitred.skills.catalog import load_catalog
from maitred.skills.model import Catalog

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

SINGLE = ("bm25-plain", "bm25", "dense")
"""The methods that do not fuse: the bar the default is held to."""
METHODS = (*SINGLE, "hybrid", "fused", "fused+intents")
WEIGHTS = tuple(round(0.05 * i, 2) for i in range(2, 15))
POWERS = (1.0, 1.5, 2.0, 3.0)
GRID = tuple((a, p) for p in POWERS for a in WEIGHTS)
"""(lexical weight, standout power) pairs the fit chooses from: 0.10 ... 0.70 x 1 ... 3."""
NAME_ONLY = {"name": 1.0, "description": 0.0, "body": 0.0, "params": 0.0}


class MemoEmbedder:
    """Encodes each distinct text once across every recaller of a run (same vectors).

    Every method built on MiniLM would otherwise embed the same queries again; the index of a
    catalog is still read from (or written to) the cache as ``make_recaller`` does.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self._memo: dict[str, NDArray[np.float32]] = {}

        self._queries: dict[str, NDArray[np.float32]] = {}

    def encode(
        self, texts: Sequence[str], *, progress: Progress | None = None
    ) -> NDArray[np.float32]:
        todo = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if todo:
            for text, vector in zip(todo, self.inner.encode(todo, progress=progress), strict=True):
                self._memo[text] = vector
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])

    def encode_queries(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Queries as the inner model embeds them (its own ``encode_queries`` if it has one)."""
        if not isinstance(self.inner, QueryEncoder):
            return self.encode(texts)
        todo = [t for t in dict.fromkeys(texts) if t not in self._queries]
        if todo:
            for text, vector in zip(todo, self.inner.encode_queries(todo), strict=True):
                self._queries[text] = vector
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._queries[t] for t in texts])


def discover(sets_dir: Path) -> list[EvalSet]:
    """The sets file's sets, then every ``sets_dir/<name>/`` with tools and queries files."""
    found: list[EvalSet] = []
    index = sets_dir / "sets.json"
    if index.exists():
        found.extend(load_sets(index))
    named = {s.name for s in found}
    for folder in sorted(p for p in sets_dir.iterdir() if p.is_dir()) if sets_dir.is_dir() else []:
        tools, queries = folder / "tools.jsonl", folder / "queries.jsonl"
        if folder.name not in named and tools.is_file() and queries.is_file():
            found.append(EvalSet(folder.name, (tools,), queries))
    return found


@dataclass
class SetResult:
    """Everything measured on one set."""

    name: str
    skills: int
    queries: int
    methods: dict[str, dict[str, Any]]
    grid: dict[tuple[float, float], dict[str, float]]
    stress: dict[str, float]


def save_results(results: Sequence[SetResult], path: Path) -> None:
    """Every set's figures, before any fitting (``--reuse`` reports them again)."""
    rows = [{**r.__dict__, "grid": [[a, p, m] for (a, p), m in r.grid.items()]} for r in results]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows) + "\n", "utf-8")


def load_results(path: Path) -> list[SetResult]:
    rows = json.loads(path.read_text("utf-8"))
    for row in rows:
        row["grid"] = {(a, p): m for a, p, m in row["grid"]}
    return [SetResult(**row) for row in rows]


def averaged(per_query: Sequence[dict[str, float]]) -> dict[str, float]:
    n = len(per_query)
    return {k: (sum(m[k] for m in per_query) / n if n else 0.0) for k in QUALITY_KEYS}


def grid_scores(
    recaller: AdaptiveRecaller, queries: Sequence[Query], dense: DenseRecaller
) -> dict[tuple[float, float], dict[str, float]]:
    """``adaptive``'s metrics under every (weight, power) of :data:`GRID`, each query embedded
    once (the same code path as ``rank``: :meth:`~AdaptiveRecaller.evidence`, ``mix``)."""
    vectors = dense.query_vectors([q.text for q in queries])
    per: dict[tuple[float, float], list[dict[str, float]]] = {g: [] for g in GRID}
    for query, vector in zip(queries, vectors, strict=True):
        if vector is None:
            for g in GRID:
                per[g].append(query_metrics([], query.gold))
            continue
        for p in POWERS:
            evidence = recaller.evidence(query.text, vector, MRR_DEPTH, p)
            for a in WEIGHTS:
                ranked = [c.name for c in recaller.mix(evidence, MRR_DEPTH, a)]
                per[(a, p)].append(query_metrics(ranked, query.gold))
    return {g: averaged(rows) for g, rows in per.items()}


def quiet(_: list[Query]) -> None:
    """Queries naming a tool the catalog lacks are left out silently (counted in n_queries)."""


def run_set(
    spec: EvalSet,
    methods: Sequence[str],
    cache: Path,
    stress: bool,
    embedder_name: str = DEFAULT_EMBEDDER,
) -> SetResult:
    catalog = load_catalog(spec.catalog)
    known = set(catalog.names)
    queries = [q for q in load_queries(spec.queries) if all(g in known for g in q.gold)]
    embedder = MemoEmbedder(make_embedder(embedder_name))
    rows: dict[str, dict[str, Any]] = {}
    for method in (*methods, "adaptive"):
        recaller = make_recaller(method, catalog, cache_dir=cache, embedder=embedder)
        rows[method] = evaluate_routing(recaller, queries, method, on_unknown=quiet)
        print(f"  {spec.name:14} {method:14} nDCG@10 {rows[method]['ndcg_at_10']:.4f}", flush=True)
    adaptive = make_recaller("adaptive", catalog, cache_dir=cache, embedder=embedder)
    assert isinstance(adaptive, AdaptiveRecaller)
    grid = grid_scores(adaptive, queries, adaptive.dense)
    weak: dict[str, float] = {}
    if stress:
        weak = stress_set(catalog, queries, adaptive.bm25, embedder)
    return SetResult(spec.name, len(catalog), len(queries), rows, grid, weak)


def stress_set(
    catalog: Catalog, queries: Sequence[Query], bm25: BM25Recaller, embedder: Embedder
) -> dict[str, float]:
    """nDCG@10 with a dense half that sees only each tool's name (BM25 unchanged)."""
    dense = DenseRecaller.build(catalog, embedder, field_mix=NAME_ONLY)
    out: dict[str, float] = {}
    recallers: dict[str, Recaller] = {
        "bm25": bm25,
        "dense": dense,
        "hybrid": HybridRecaller(bm25, dense),
        "fused": FusedRecaller(bm25, dense),
    }
    for name, recaller in recallers.items():
        out[name] = evaluate_routing(recaller, queries, name, on_unknown=quiet)["ndcg_at_10"]
    adaptive = AdaptiveRecaller(bm25, dense)
    for (a, p), metrics in grid_scores(adaptive, queries, dense).items():
        out[f"adaptive@{a},{p}"] = metrics["ndcg_at_10"]
    return out


def shipped(result: SetResult) -> float:
    """nDCG@10 of ``adaptive`` with the code's (a, p): from the grid (the same code path as
    ``make_recaller("adaptive")``, whose own run is kept in ``methods`` as a cross-check)."""
    pair = (LEXICAL_WEIGHT, POWER)
    if pair in result.grid:
        return result.grid[pair]["ndcg_at_10"]
    return float(result.methods["adaptive"]["ndcg_at_10"])


def best_single(result: SetResult) -> float:
    return max(float(result.methods[m]["ndcg_at_10"]) for m in SINGLE if m in result.methods)


Pair = tuple[float, float]


def fit(results: Sequence[SetResult], *, stress: bool = False) -> Pair:
    """The grid pair with the best mean margin to the best single method (then worst margin).

    With ``stress``, each fitting set's weak-dense variant is a fitting set too (its best
    single method is the better of its BM25 and its name-only dense half).
    """

    def key(g: Pair) -> tuple[float, float]:
        margins = [r.grid[g]["ndcg_at_10"] - best_single(r) for r in results]
        if stress:
            margins += [
                r.stress[f"adaptive@{g[0]},{g[1]}"] - max(r.stress["bm25"], r.stress["dense"])
                for r in results
                if r.stress
            ]
        return (round(statistics.fmean(margins), 6), round(min(margins), 6))

    return max(GRID, key=key)


def loso(results: Sequence[SetResult], *, stress: bool = False) -> dict[str, Pair]:
    """Held-out set -> the weight fitted on all the others (and, with ``stress``, their
    weak-dense variants; never the held-out set's own)."""
    return {r.name: fit([o for o in results if o.name != r.name], stress=stress) for r in results}


def timing(skills: int, messages: int, cache: Path, data: Path) -> dict[str, float]:
    """Median ms/query of dense, fused and adaptive at ``skills`` skills, interleaved."""
    import _catalogs as wl

    catalog = wl.make_catalog(skills, data=data)
    texts = list(dict.fromkeys(wl.load_queries(messages * 3, data=data)))
    warm, timed = texts[:messages], texts[messages : 2 * messages]
    make_recaller(
        "dense", catalog, cache_dir=cache, embedder=wl.DistinctTextEmbedder(MiniLMEmbedder())
    )
    methods = ("dense", "fused", "adaptive")
    recallers = {m: make_recaller(m, catalog, cache_dir=cache) for m in methods}
    for recaller in recallers.values():
        for text in warm:
            recaller.rank(text, 10)
    times: dict[str, list[float]] = {m: [] for m in methods}
    for text in timed:
        for method, recaller in recallers.items():
            start = time.perf_counter()
            recaller.rank(text, 10)
            times[method].append(1000.0 * (time.perf_counter() - start))
    return {m: statistics.median(t) for m, t in times.items()}


def timing_embedders(
    names: Sequence[str], skills: int, messages: int, cache: Path, data: Path
) -> dict[str, float]:
    """Median ms/query of ``dense`` and ``adaptive`` with each embedder at ``skills`` skills,
    all interleaved query by query in one run (keys ``"dense[NAME]"``, ``"adaptive[NAME]"``)."""
    import _catalogs as wl

    catalog = wl.make_catalog(skills, data=data)
    texts = list(dict.fromkeys(wl.load_queries(messages * 3, data=data)))
    warm, timed = texts[:messages], texts[messages : 2 * messages]
    recallers: dict[str, Recaller] = {}
    for name in names:
        model = make_embedder(name)
        make_recaller("dense", catalog, cache_dir=cache, embedder=wl.DistinctTextEmbedder(model))
        for method in ("dense", "adaptive"):
            recallers[f"{method}[{name}]"] = make_recaller(
                method, catalog, cache_dir=cache, embedder=model
            )
    for recaller in recallers.values():
        for text in warm:
            recaller.rank(text, 10)
    times: dict[str, list[float]] = {key: [] for key in recallers}
    for text in timed:
        for key, recaller in recallers.items():
            start = time.perf_counter()
            recaller.rank(text, 10)
            times[key].append(1000.0 * (time.perf_counter() - start))
    return {key: statistics.median(t) for key, t in times.items()}


def report(
    results: Sequence[SetResult], folds: dict[str, Pair], methods: Sequence[str]
) -> tuple[str, dict[str, Any]]:
    cols = [*methods, "adaptive (LOSO)", "a, p", "adaptive"]
    lines = [
        "| set (skills, queries) | " + " | ".join(cols) + " | fused − best single | "
        "adaptive (LOSO) − best single |",
        "|---|" + "---:|" * (len(cols) + 2),
    ]
    summary: dict[str, Any] = {"sets": {}}
    for r in results:
        a = folds[r.name]
        held = r.grid[a]["ndcg_at_10"]
        single = best_single(r)
        cells = [f"{r.methods[m]['ndcg_at_10']:.3f}" for m in methods]
        cells += [
            f"{held:.3f}",
            f"{a[0]:.2f}, {a[1]:g}",
            f"{shipped(r):.3f}",
        ]
        fused = r.methods["fused"]["ndcg_at_10"] if "fused" in r.methods else float("nan")
        lines.append(
            f"| {r.name} ({r.skills}, {r.queries}) | "
            + " | ".join(cells)
            + f" | {fused - single:+.3f} | {held - single:+.3f} |"
        )
        summary["sets"][r.name] = {
            "skills": r.skills,
            "queries": r.queries,
            "methods": r.methods,
            "loso_weight_power": a,
            "loso_adaptive": r.grid[a],
            "grid": {f"{k[0]},{k[1]}": v for k, v in r.grid.items()},
            "best_single": single,
            "stress": r.stress,
        }
    return "\n".join(lines), summary


def verdict(results: Sequence[SetResult], folds: dict[str, Pair]) -> list[str]:
    out = []
    scored: dict[str, dict[str, float]] = {
        "fused": {r.name: r.methods["fused"]["ndcg_at_10"] for r in results},
        "adaptive (LOSO)": {r.name: r.grid[folds[r.name]]["ndcg_at_10"] for r in results},
        "adaptive (shipped a, p)": {r.name: shipped(r) for r in results},
    }
    for label, by_set in scored.items():
        margins = {r.name: by_set[r.name] - best_single(r) for r in results}
        plain = {r.name: by_set[r.name] - r.methods["bm25-plain"]["ndcg_at_10"] for r in results}
        worst = min(margins, key=lambda n: margins[n])
        low = min(plain, key=lambda n: plain[n])
        out.append(
            f"{label}: worst set {worst} {margins[worst]:+.3f} to the best single method; "
            f"within 0.01 on every set: {all(m >= -0.01 for m in margins.values())}; "
            f"lowest margin to bm25-plain {low} {plain[low]:+.3f}"
        )
    return out


def stress_table(results: Sequence[SetResult], folds: dict[str, Pair]) -> str:
    lines = [
        "| set, dense half on names only | bm25 | dense | hybrid | fused | adaptive (LOSO a, p) | "
        "fused − best single | adaptive − best single |",
        "|---|" + "---:|" * 7,
    ]
    for r in results:
        s = r.stress
        if not s:
            continue
        single = max(s["bm25"], s["dense"])
        a, p = folds[r.name]
        ad = s[f"adaptive@{a},{p}"]
        lines.append(
            f"| {r.name} | {s['bm25']:.3f} | {s['dense']:.3f} | {s['hybrid']:.3f} | "
            f"{s['fused']:.3f} | {ad:.3f} | {s['fused'] - single:+.3f} | {ad - single:+.3f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets-dir", type=Path, default=REPO / "bench-out" / "sets")
    parser.add_argument("--cache", type=Path, default=REPO / "bench-out" / "cache")
    parser.add_argument("--only", default="", help="comma-separated set names (LOSO over them)")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument(
        "--stress",
        action="store_true",
        help="add each set with a name-only dense half (scored; and an alternative fit on them)",
    )
    parser.add_argument("--timing", action="store_true", help="time dense/fused/adaptive")
    parser.add_argument(
        "--embedder",
        default=DEFAULT_EMBEDDER,
        help="the dense half's model (maitred.recall.embedders); outputs are suffixed by it",
    )
    parser.add_argument(
        "--timing-embedders",
        default="",
        help="comma-separated embedders to time against each other (dense, adaptive), one run",
    )
    parser.add_argument(
        "--reuse", action="store_true", help="report the figures of the last run again"
    )
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument(
        "--metatool",
        type=Path,
        default=REPO / ".." / "shared" / "data" / "metatool",
        help="the MetaTool data the timing catalog is made from",
    )
    parser.add_argument("--messages", type=int, default=300)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    methods = [m for m in args.methods.split(",") if m]
    missing = [m for m in (*SINGLE, "fused") if m not in methods]
    if missing:
        parser.error(f"--methods must include {', '.join(missing)} (the margins need them)")
    only = {n for n in args.only.split(",") if n}
    sets = [s for s in discover(args.sets_dir) if not only or s.name in only]
    if len(sets) < 2:
        parser.error(
            f"leave-one-set-out needs at least two sets; found {len(sets)} under "
            f"{args.sets_dir} (run benchmarks/routing_sets.py first)"
        )
    print(f"{len(sets)} sets: {', '.join(s.name for s in sets)}", flush=True)
    tag = "" if args.embedder == DEFAULT_EMBEDDER else f"-{args.embedder}"
    raw = REPO / "bench-out" / f"routing_loso{tag}_raw.json"
    if args.reuse:
        results = [r for r in load_results(raw) if not only or r.name in only]
    else:
        results = [run_set(s, methods, args.cache, args.stress, args.embedder) for s in sets]
        save_results(results, raw)
    folds = loso(results, stress=args.stress)
    text, summary = report(results, folds, methods)
    summary["fit_includes_weak_dense"] = args.stress
    summary["fitted_on_all"] = fit(results, stress=args.stress)
    summary["shipped"] = (LEXICAL_WEIGHT, POWER)
    summary["verdict"] = verdict(results, folds)
    print()
    print(text)
    print()
    print(f"(a, p) fitted on all sets: {summary['fitted_on_all']}; shipped: {summary['shipped']}")
    for line in summary["verdict"]:
        print(line)
    if args.stress:
        print()
        print(stress_table(results, folds))
        # the alternative: fit on the other sets alone, without their weak-dense variants
        alone = loso(results)
        summary["loso_fitted_without_weak_dense"] = alone
        print()
        print(f"fitted on the other sets alone (all sets: {fit(results)}):")
        for r in results:
            g = alone[r.name]
            margin = r.grid[g]["ndcg_at_10"] - best_single(r)
            weak = r.stress[f"adaptive@{g[0]},{g[1]}"] - max(r.stress["bm25"], r.stress["dense"])
            print(f"  {r.name:14} (a, p) = {g}: {margin:+.3f} real, {weak:+.3f} weak-dense")
    if args.timing:
        ms = timing(args.skills, args.messages, args.cache, args.metatool)
        summary["timing_ms"] = ms
        print()
        print(f"{args.skills} skills, {args.messages} messages, median ms/query, one run:")
        for method, value in ms.items():
            print(f"  {method:9} {value:.2f} ms  ({value / ms['dense']:.2f}x dense)")
    if args.timing_embedders:
        names = [n for n in args.timing_embedders.split(",") if n]
        ms = timing_embedders(names, args.skills, args.messages, args.cache, args.metatool)
        summary["timing_embedders_ms"] = ms
        print()
        print(f"{args.skills} skills, {args.messages} messages, median ms/query, one run:")
        for key, value in ms.items():
            base = ms[key.split("[")[0] + f"[{names[0]}]"]
            print(f"  {key:24} {value:.2f} ms  ({value / base:.2f}x {names[0]})")
    out = REPO / "bench-out" / f"routing_loso{tag}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1, default=str) + "\n", "utf-8")


if __name__ == "__main__":
    main()
