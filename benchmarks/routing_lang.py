"""Routing accuracy per language: every recall method on ACEBench's Chinese and English halves.

ACEBench (``ACEBench/ACEBench``, MIT) is written twice, in Chinese and in English; the sets
``acebench-zh`` and ``acebench-en`` are built from a fetched copy by ``benchmarks/sets/build.py``
(``benchmarks/sets/acebench.py`` says how), each split into a dev side (``dev.jsonl``, about 3
queries in 10) and a test side (``queries.jsonl``). Choices (an analyzer, an embedder) are made
on dev; test is for reporting.

For each language, side, analyzer and embedder it prints every method's figures, the
languages detected in the catalog, the embedder ``auto`` chose, and how many queries each
method ranked nothing for. Run::

    python benchmarks/routing_lang.py --acebench /path/to/ACEBench \\
        [--sides dev,test] [--analyzers scripts,words,jieba] [--embedders auto,minilm,e5-small] \\
        [--methods bm25-plain,bm25,dense,hybrid,fused,adaptive]

and it writes ``bench-out/routing_lang.json``.

``--english-check SETS_JSON`` (the sets file ``benchmarks/routing_sets.py`` writes) says, for
each of those sets, how many texts (every indexed field of every tool, and every query) the
default analyzer cuts differently from the word rule that built every index before it, and
which embedder ``auto`` chooses there: a set with no such text and ``minilm`` chosen is ranked
exactly as before, term for term and vector for vector, by every method.
``--english-ab SETS_JSON [--only a,b]`` scores every method on those sets under both analyzers
(:func:`english_ab`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from maitred.recall import (
    AdaptiveRecaller,
    BM25Recaller,
    DenseRecaller,
    FusedRecaller,
    HybridRecaller,
    PlainBM25Recaller,
    Recaller,
    evaluate_routing,
    load_queries,
    make_recaller,
)
from maitred.recall.analyzers import make_analyzer
from maitred.recall.bm25 import LEXICAL_BODY_CHARS
from maitred.recall.embedders import AUTO, auto_embedder
from maitred.recall.evaluate import Query, load_sets
from maitred.recall.fields import FIELDS, skill_fields
from maitred.recall.languages import catalog_languages
from maitred.skills.catalog import load_catalog
from maitred.skills.model import Catalog

REPO = Path(__file__).resolve().parents[1]
LEXICAL = ("bm25-plain", "bm25")
METHODS = ("bm25-plain", "bm25", "dense", "hybrid", "fused", "adaptive")


def _sets_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sets_build", REPO / "benchmarks/sets/build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recallers(
    catalog: Catalog, analyzer: str, embedder: str, cache: Path, methods: Sequence[str]
) -> dict[str, Recaller]:
    """Every method under one analyzer and embedder, sharing one lexical and one dense half
    (so each query is embedded once for all methods: the dense half caches query vectors)."""
    bm25 = make_recaller("bm25", catalog, cache_dir=cache, analyzer=analyzer)
    assert isinstance(bm25, BM25Recaller)
    out: dict[str, Recaller] = {}
    if "bm25-plain" in methods:
        out["bm25-plain"] = PlainBM25Recaller.build(catalog, analyzer=analyzer)
    out["bm25"] = bm25
    if set(methods) - set(LEXICAL):
        dense = make_recaller("dense", catalog, cache_dir=cache, embedder=embedder)
        assert isinstance(dense, DenseRecaller)
        out.update(
            dense=dense,
            hybrid=HybridRecaller(bm25, dense),
            fused=FusedRecaller(bm25, dense),
            adaptive=AdaptiveRecaller(bm25, dense),
        )
    return {m: out[m] for m in methods if m in out}


def score(recaller: Recaller, queries: list[Query], method: str) -> dict[str, Any]:
    """One method's figures on ``queries``, with how many it ranked nothing for and the
    settings it was built with."""
    unranked: list[Query] = []
    result = evaluate_routing(
        recaller, queries, method, on_unknown=lambda _: None, on_unranked=unranked.extend
    )
    settings = dict(getattr(recaller, "settings", {}) or {})
    return {**result, "unranked": len(unranked), **settings}


def english_check(sets_file: Path) -> None:
    """Print, per set, the texts the two analyzers cut differently and ``auto``'s embedder."""
    scripts, words = make_analyzer("scripts"), make_analyzer("words")
    for spec in load_sets(sets_file):
        catalog = load_catalog(spec.catalog)
        texts = [
            t[f]
            for s in catalog
            for t in (skill_fields(s, body_chars=LEXICAL_BODY_CHARS),)
            for f in FIELDS
        ]
        texts += [q.text for q in load_queries(spec.queries)]
        texts += [step for q in load_queries(spec.queries) for step in q.steps]
        differ = sum(scripts([t]) != words([t]) for t in texts)
        print(
            f"{spec.name:16} texts {len(texts):6}  cut differently {differ:5}  "
            f"languages {catalog_languages(catalog)}  auto embedder {auto_embedder(catalog)}"
        )


def english_ab(sets_file: Path, only: set[str], cache: Path) -> list[dict[str, Any]]:
    """Every method on each set under the word rule (what main's code indexes with) and under
    the default analyzer, in one process: one dense half (MiniLM, what ``auto`` chooses on
    these sets) serves both, so only the analysis differs. Prints one line per set and method."""
    out: list[dict[str, Any]] = []
    for spec in load_sets(sets_file):
        if only and spec.name not in only:
            continue
        catalog = load_catalog(spec.catalog)
        queries = load_queries(spec.queries)
        dense = make_recaller("dense", catalog, cache_dir=cache, embedder="minilm")
        assert isinstance(dense, DenseRecaller)
        figures: dict[tuple[str, str], float] = {}
        for analyzer in ("words", "scripts"):
            bm25 = BM25Recaller.build(catalog, analyzer=analyzer)
            methods: dict[str, Recaller] = {
                "bm25-plain": PlainBM25Recaller.build(catalog, analyzer=analyzer),
                "bm25": bm25,
                "hybrid": HybridRecaller(bm25, dense),
                "fused": FusedRecaller(bm25, dense),
                "adaptive": AdaptiveRecaller(bm25, dense),
            }
            if analyzer == "words":
                methods["dense"] = dense
            for method, recaller in methods.items():
                result = evaluate_routing(recaller, queries, method, on_unknown=lambda _: None)
                figures[(method, analyzer)] = result["ndcg_at_10"]
        figures[("dense", "scripts")] = figures[("dense", "words")]
        for method in METHODS:
            before, after = figures[(method, "words")], figures[(method, "scripts")]
            row = {"set": spec.name, "method": method, "words": before, "scripts": after}
            out.append(row)
            print(
                f"{spec.name:16} {method:10} nDCG@10 words {before:.4f} scripts {after:.4f} "
                f"({after - before:+.4f})",
                flush=True,
            )
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acebench", type=Path, help="ACEBench checkout or bare git dir")
    parser.add_argument("--out", type=Path, default=REPO / "bench-out" / "sets")
    parser.add_argument("--cache", type=Path, default=REPO / "bench-out" / "cache")
    parser.add_argument("--langs", default="zh,en")
    parser.add_argument("--sides", default="dev,test")
    parser.add_argument("--analyzers", default="scripts")
    parser.add_argument("--embedders", default=AUTO)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--english-check", type=Path, help="a sets file to check (see above)")
    parser.add_argument("--english-ab", type=Path, help="a sets file to A/B (see above)")
    parser.add_argument("--only", default="", help="with --english-ab: these sets only")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    if args.english_check is not None:
        english_check(args.english_check)
        return
    if args.english_ab is not None:
        only = {n for n in args.only.split(",") if n}
        ab = english_ab(args.english_ab, only, args.cache)
        (REPO / "bench-out").mkdir(exist_ok=True)
        (REPO / "bench-out" / "routing_lang_english.json").write_text(json.dumps(ab), "utf-8")
        return
    rows: list[dict[str, Any]] = []
    for lang in args.langs.split(","):
        name = f"acebench-{lang}"
        if args.acebench is not None:
            info = _sets_build().build(name, args.acebench, args.out, max_queries=0)
            print(f"converted {name}: {info['tools']} tools, {info['queries']} test queries")
        catalog = load_catalog(args.out / name / "tools.jsonl")
        languages = catalog_languages(catalog)
        print(f"{name}: languages {languages}, auto embedder {auto_embedder(catalog)}")
        files = {"dev": "dev.jsonl", "test": "queries.jsonl"}
        sides = {
            side: load_queries(args.out / name / files[side]) for side in args.sides.split(",")
        }
        embedders = args.embedders.split(",")
        for analyzer in args.analyzers.split(","):
            for embedder in embedders:
                methods = [
                    m
                    for m in args.methods.split(",")
                    if embedder == embedders[0] or m not in LEXICAL  # lexical: once
                ]
                built = recallers(catalog, analyzer, embedder, args.cache, methods)
                for side, queries in sides.items():
                    for method, recaller in built.items():
                        row = score(recaller, queries, method)
                        row.update(set=name, side=side, embedder_setting=embedder)
                        row["languages"] = languages
                        rows.append(row)
                        print(
                            f"{name:12} {side:4} {analyzer:8} {embedder:9} {method:10} "
                            f"nDCG@10 {row['ndcg_at_10']:.4f} Hit@1 {row['hit_at_1']:.3f} "
                            f"unranked {row['unranked']} ({row['ms_per_query']:.2f} ms/q)",
                            flush=True,
                        )
    (REPO / "bench-out").mkdir(exist_ok=True)
    (REPO / "bench-out" / "routing_lang.json").write_text(json.dumps(rows, indent=1), "utf-8")
    print()
    print(table(rows))


def table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown, one row per set, side, analyzer, embedder and method."""
    head = "| set | side (queries) | method | analyzer | embedder | Hit@1 | R@5 | MRR | nDCG@10 |"
    lines = [head + " ranked nothing |", "|---|---|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['set']} | {r['side']} ({r['n_queries']}) | {r['method']} | "
            f"{r.get('analyzer', '-')} | {r.get('embedder', '-')} | {r['hit_at_1']:.3f} | "
            f"{r['recall_at_5']:.3f} | {r['mrr']:.3f} | {r['ndcg_at_10']:.3f} | {r['unranked']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
