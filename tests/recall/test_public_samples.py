"""The committed samples of the public sets (benchmarks/sets/<set>/sample) load cleanly and
rank: they are what ``benchmarks/sets/build.py`` writes, so this checks the converters' output
format against the real loaders."""

from __future__ import annotations

from pathlib import Path

import pytest

from maitred.recall.bm25 import BM25Recaller
from maitred.recall.bm25_plain import PlainBM25Recaller
from maitred.recall.evaluate import evaluate_routing, load_queries
from maitred.skills.catalog import load_catalog_report

SETS = Path(__file__).resolve().parents[2] / "benchmarks" / "sets"
NAMES = ("toolalpaca", "bfcl", "apibench-hf", "api-bank", "acebench-zh", "acebench-en")


@pytest.mark.parametrize("name", NAMES)
def test_sample_loads_without_problems(name: str) -> None:
    catalog, report = load_catalog_report([SETS / name / "sample" / "tools.jsonl"])
    assert catalog is not None and len(catalog) >= 30
    assert not report.errors, report.errors
    bad: list[object] = []
    queries = load_queries(SETS / name / "sample" / "queries.jsonl", on_error=bad.append)
    assert len(queries) == 12 and not bad
    assert all(g in catalog for q in queries for g in q.gold)


@pytest.mark.parametrize("name", NAMES)
def test_lexical_methods_route_the_sample(name: str) -> None:
    catalog, _ = load_catalog_report([SETS / name / "sample" / "tools.jsonl"])
    assert catalog is not None
    queries = load_queries(SETS / name / "sample" / "queries.jsonl")
    for recaller in (BM25Recaller.build(catalog), PlainBM25Recaller.build(catalog)):
        result = evaluate_routing(recaller, queries, recaller.name)
        assert result["n_queries"] == 12
        assert result["recall_at_10"] >= 0.5, (name, recaller.name, result)


def test_no_chinese_request_of_the_sample_is_ranked_nothing_for_its_script() -> None:
    """ACEBench's Chinese requests share no space-separated word with its Chinese tools: the
    word rule ranks nothing for most of them, the default analyzer for none."""
    catalog, _ = load_catalog_report([SETS / "acebench-zh" / "sample" / "tools.jsonl"])
    assert catalog is not None
    queries = load_queries(SETS / "acebench-zh" / "sample" / "queries.jsonl")
    words, scripts = (BM25Recaller.build(catalog, analyzer=a) for a in ("words", "scripts"))
    assert sum(not words.rank(q.text, 10) for q in queries) >= 6
    assert all(scripts.rank(q.text, 10) for q in queries)
