"""`maitred eval routing`: the figures' exact keys, and bad query lines skipped and reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import CallMain, Invoke, Sitecare, ok

METRIC_KEYS = {
    "method",
    "n_queries",
    "hit_at_1",
    "recall_at_5",
    "recall_at_10",
    "mrr",
    "ndcg_at_10",
    "complete_at_10",
}


@pytest.fixture(scope="module")
def queries(site: Sitecare, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, int]:
    """(query file, good query count, line of the bad one) from the labelled messages."""
    labelled = [
        {"id": m["id"], "text": m["text"], "gold": [m["gold"]]}
        for m in site.generated()
        if m["gold"]
    ]
    assert len(labelled) >= 20
    lines = [json.dumps(q) for q in labelled]
    lines.insert(5, '{"id": "q-bad", "text": "cancel my plan", "gold": ')  # line 6
    path = tmp_path_factory.mktemp("eval") / "queries.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, len(labelled), 6


def _eval(invoke: Invoke, site: Sitecare, path: Path, method: str) -> tuple[dict[str, Any], str]:
    result = ok(
        invoke(
            "eval",
            "routing",
            "--catalog",
            str(site.skills),
            "--queries",
            str(path),
            "--method",
            method,
            "--cache-dir",
            str(site.cache),
            "--json",
        )
    )
    return json.loads(result.stdout), result.stderr


def test_eval_bm25_json_has_exactly_the_metric_keys(
    invoke: Invoke, site: Sitecare, queries: tuple[Path, int, int]
):
    path, n_good, bad_line = queries
    result, stderr = _eval(invoke, site, path, "bm25")
    assert set(result) == METRIC_KEYS
    assert result["method"] == "bm25"
    assert result["n_queries"] == n_good
    for key in METRIC_KEYS - {"method", "n_queries"}:
        assert 0.0 <= result[key] <= 1.0, key
    # one gold skill per query: top-1 hits are top-5 hits are top-10 hits
    assert result["hit_at_1"] <= result["recall_at_5"] <= result["recall_at_10"]
    assert result["hit_at_1"] <= result["mrr"]
    # far better than picking one of 11 skills at random
    assert result["hit_at_1"] > 0.3
    reported = [line for line in stderr.splitlines() if f"{path}:{bad_line}:" in line]
    assert len(reported) == 1
    assert "skipped" in reported[0]
    assert "not valid JSON" in reported[0]


def test_eval_missing_query_file_is_one_clear_line(
    call_main: CallMain, site: Sitecare, tmp_path: Path
):
    missing = tmp_path / "none.jsonl"
    code, _, err = call_main(
        "eval", "routing", "-c", str(site.skills), "-q", str(missing), "-m", "bm25", "--json"
    )
    assert code == 2
    assert err.startswith(f"error: {missing}:0: cannot read the query file")
    assert err.strip().count("\n") == 0
