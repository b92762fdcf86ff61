"""Label-free tuning: held-out pseudo-queries, determinism, storage per catalog version, CLI."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from maitred.cli.main import app
from maitred.errors import ConfigError
from maitred.recall import tune as tune_mod
from maitred.recall.bm25 import BM25Recaller
from maitred.recall.dense import DenseRecaller
from maitred.recall.fusion import FusedRecaller
from maitred.recall.registry import make_recaller
from maitred.recall.tune import (
    Tuning,
    hold_out,
    indexed_text,
    load_tuning,
    pseudo_queries,
    save_tuning,
    tune_catalog,
    tuning_path,
)
from maitred.skills.catalog import load_catalog
from maitred.skills.model import Catalog, Skill

from .conftest import HashEmbedder

SAMPLES = Path(__file__).resolve().parents[2] / "benchmarks" / "sets"


def _sample(name: str) -> Catalog:
    return load_catalog([str(SAMPLES / name / "sample" / "tools.jsonl")])


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def test_held_out_text_is_removed_from_every_field_it_occurs_in() -> None:
    sentence = "Two-character country code such as CN or US."
    skill = Skill(
        name="holidays",
        description="Public holidays of a country. " + sentence,
        kind="tool",
        body=f'Parameters: {{"countryCode": "{sentence}"}}\n\n{sentence}',
        parameters={"type": "object", "properties": {"countryCode": {"description": sentence}}},
    )
    assert _norm(sentence) in indexed_text(skill)
    held = hold_out(skill, sentence)
    assert held is not None
    assert _norm(sentence) not in indexed_text(held)
    assert "public holidays" in indexed_text(held)  # the rest of the tool stays indexed


@pytest.mark.parametrize("name", ["toolalpaca", "bfcl", "apibench-hf", "api-bank"])
def test_no_pseudo_query_is_indexed_for_its_own_tool(name: str) -> None:
    catalog = _sample(name)
    queries, held = pseudo_queries(catalog, seed=3)
    assert queries, "the sample should yield pseudo-queries"
    assert held.names == catalog.names
    for query in queries:
        assert _norm(query.text) in indexed_text(catalog[query.skill])  # its own text...
        assert _norm(query.text) not in indexed_text(held[query.skill])  # ...held out


def test_scoring_only_ever_sees_the_held_out_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every index tune_catalog builds lacks each pseudo-query's text in its own tool."""
    catalog = _sample("toolalpaca")
    queries, _ = pseudo_queries(catalog, seed=0)
    seen: list[Catalog] = []
    real_bm25, real_dense = BM25Recaller.build, DenseRecaller.build

    def bm25_build(cat: Catalog, **kw: Any) -> BM25Recaller:
        seen.append(cat)
        return real_bm25(cat, **kw)

    def dense_build(cat: Catalog, *args: Any, **kw: Any) -> DenseRecaller:
        seen.append(cat)
        return real_dense(cat, *args, **kw)

    monkeypatch.setattr(tune_mod.BM25Recaller, "build", bm25_build)
    monkeypatch.setattr(tune_mod.DenseRecaller, "build", dense_build)
    tuning = tune_catalog(catalog, seed=0, embedder=HashEmbedder())
    assert tuning.n_queries == len(queries) > 0
    assert len(seen) > 2
    for cat in seen:
        for query in queries:
            assert _norm(query.text) not in indexed_text(cat[query.skill])


def _stable(t: Tuning) -> dict[str, Any]:
    return {k: v for k, v in t.to_json().items() if k != "created"}


def test_tuning_is_deterministic_under_a_seed() -> None:
    catalog = _sample("api-bank")
    first = tune_catalog(catalog, seed=7, embedder=HashEmbedder())
    again = tune_catalog(catalog, seed=7, embedder=HashEmbedder())
    assert _stable(first) == _stable(again)
    assert pseudo_queries(catalog, seed=7) == pseudo_queries(catalog, seed=7)
    assert pseudo_queries(catalog, seed=7)[0] != pseudo_queries(catalog, seed=8)[0]


def test_the_sample_is_bounded() -> None:
    queries, _ = pseudo_queries(_sample("bfcl"), seed=0, limit=5)
    assert len(queries) <= 5


def _tuning(catalog: Catalog) -> Tuning:
    weights = {"name": 1.0, "description": 2.0, "body": 1.0, "params": 0.5}
    score = {"bm25": 0.5, "fused": 0.5, "fused_mrr": 0.5}
    return Tuning(catalog.version, weights, 0.6, None, 10, score, score, 0)


def test_a_stored_tuning_is_used_for_its_catalog_version(tmp_path: Path, catalog: Catalog) -> None:
    save_tuning(tmp_path, catalog, _tuning(catalog))
    fused = make_recaller("fused", catalog, cache_dir=tmp_path, embedder=HashEmbedder())
    assert isinstance(fused, FusedRecaller)
    assert fused.name == "fused(tuned)"
    assert fused.lexical_weight == 0.6
    assert fused.bm25.weights == _tuning(catalog).field_weights
    bm25 = make_recaller("bm25", catalog, cache_dir=tmp_path)
    assert isinstance(bm25, BM25Recaller)
    assert (bm25.name, bm25.weights) == ("bm25(tuned)", _tuning(catalog).field_weights)
    # explicit weights win over a stored tuning; without a cache there is no tuning
    given = make_recaller("bm25", catalog, cache_dir=tmp_path, weights={"name": 1.0})
    assert given.name == "bm25"
    assert make_recaller("fused", catalog, embedder=HashEmbedder()).name == "fused"


def test_a_tuning_is_never_used_for_another_catalog_version(
    tmp_path: Path, catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    save_tuning(tmp_path, catalog, _tuning(catalog))
    first = catalog.skills[0]
    edited = Catalog(
        (dataclasses.replace(first, description=first.description + " now"), *catalog.skills[1:])
    )
    assert make_recaller("fused", edited, cache_dir=tmp_path, embedder=HashEmbedder()).name == (
        "fused"
    )
    with pytest.raises(ConfigError, match="was made for catalog"):
        save_tuning(tmp_path, edited, _tuning(catalog))
    # a file copied into the other version's folder by hand is refused, with a warning
    target = tuning_path(tmp_path, edited)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(tuning_path(tmp_path, catalog).read_text("utf-8"), "utf-8")
    with caplog.at_level(logging.WARNING):
        assert load_tuning(tmp_path, edited) is None
        assert make_recaller("bm25", edited, cache_dir=tmp_path).name == "bm25"
    assert str(target) in caplog.text


def test_a_broken_tuning_file_is_ignored_naming_it(
    tmp_path: Path, catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    path = tuning_path(tmp_path, catalog)
    path.parent.mkdir(parents=True)
    data = _tuning(catalog).to_json()
    data["lexical_weight"] = 3.0
    path.write_text(json.dumps(data), "utf-8")
    with caplog.at_level(logging.WARNING):
        assert load_tuning(tmp_path, catalog) is None
    assert str(path) in caplog.text and "lexical_weight" in caplog.text


def test_cli_tunes_a_small_tools_file_and_stores_it(tmp_path: Path) -> None:
    tools = tmp_path / "tools.jsonl"
    rows = [
        {
            "name": f"tool_{word}",
            "description": f"Work with {word} records. Lists, creates and deletes {word} items.",
            "parameters": {
                "type": "object",
                "properties": {"id": {"description": f"The identifier of the {word} to fetch."}},
            },
        }
        for word in ("invoice", "customer", "shipment", "ticket", "refund", "coupon")
    ]
    tools.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    cache = tmp_path / "cache"
    result = CliRunner().invoke(
        app, ["tune", "--skills", str(tools), "--cache-dir", str(cache), "--json"]
    )
    assert result.exit_code == 0, (result.stdout, result.exception)
    out = json.loads(result.stdout)
    catalog = load_catalog([str(tools)])
    assert out["catalog_version"] == catalog.version
    assert out["n_queries"] > 0
    assert out["floor"] is None
    stored = load_tuning(cache, catalog)
    assert stored is not None and stored.lexical_weight == out["lexical_weight"]
    assert Path(out["path"]) == tuning_path(cache, catalog)


def test_a_setting_replaces_the_default_only_when_its_gain_is_consistent() -> None:
    base = np.zeros((50, 2))
    lucky = base.copy()
    lucky[0, 0] = 1.0  # +0.02 mean nDCG@10, all from one pseudo-query
    steady = base.copy()
    steady[:, 0] = 0.1  # +0.1 on every pseudo-query
    assert tune_mod._best([(base, "default"), (lucky, "lucky")], seed=0) == (0, "default")
    assert tune_mod._best([(base, "default"), (steady, "steady")], seed=0) == (1, "steady")
    assert tune_mod._best([(steady, "default"), (steady, "same")], seed=0) == (0, "default")


def test_json_and_code_fragments_are_not_pseudo_queries() -> None:
    skill = Skill(
        name="convert",
        description="Convert currency.",
        kind="tool",
        body='{"from": "The currency code to convert from.", "to": "Required."}\n'
        "Converts an amount between two world currencies at today's rate.",
    )
    texts = [text for text, _ in tune_mod.candidates(skill)]
    assert texts == ["Converts an amount between two world currencies at today's rate."]
