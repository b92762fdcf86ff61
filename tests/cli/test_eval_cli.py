"""`maitred eval routing`: the figures' exact keys, and bad query lines skipped and reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import CallMain, Invoke, Sitecare

METRIC_KEYS = {
    "method",
    "n_queries",
    "hit_at_1",
    "recall_at_5",
    "recall_at_10",
    "mrr",
    "ndcg_at_10",
    "complete_at_10",
    "ms_per_query",
}
QUALITY = METRIC_KEYS - {"method", "n_queries", "ms_per_query"}
#: what every result also says: the catalog's languages and the lexical half's analyzer (a
#: method with a dense half adds "embedder")
SETTING_KEYS = {"languages", "analyzer"}


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


def _eval(
    invoke: Invoke, site: Sitecare, path: Path, method: str, *, code: int = 0
) -> tuple[dict[str, Any], str]:
    result = invoke(
        "eval",
        "routing",
        "--skills",
        str(site.skills),
        "--queries",
        str(path),
        "--method",
        method,
        "--cache-dir",
        str(site.cache),
        "--json",
    )
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout), result.stderr


def test_eval_bm25_json_has_exactly_the_metric_keys(
    invoke: Invoke, site: Sitecare, queries: tuple[Path, int, int]
):
    path, n_good, bad_line = queries
    # a bad line is reported and the good ones scored, but the run exits 1 (bad-records policy)
    result, stderr = _eval(invoke, site, path, "bm25", code=1)
    assert set(result) == METRIC_KEYS | SETTING_KEYS
    assert result["method"] == "bm25"
    assert list(result["languages"]) == ["en"] and result["analyzer"] == "scripts"
    assert result["n_queries"] == n_good
    for key in QUALITY:
        assert 0.0 <= result[key] <= 1.0, key
    assert isinstance(result["ms_per_query"], float)
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
        "eval", "routing", "-s", str(site.skills), "-q", str(missing), "-m", "bm25", "--json"
    )
    assert code == 2
    assert err.startswith(f"error: {missing}:0: cannot read the query file")
    assert err.strip().count("\n") == 0


TOOLS = [
    {"name": "get_weather", "description": "Weather forecast for a city"},
    {"name": "convert_currency", "description": "Convert money between currencies"},
    {"name": "send_email", "description": "Send an email to a contact"},
]


def _write(path: Path, rows: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def small(tmp_path: Path) -> tuple[Path, Path]:
    """(tools file, clean query file) of a three-tool catalog."""
    tools = _write(tmp_path / "tools.jsonl", TOOLS)
    queries = _write(
        tmp_path / "a" / "queries.jsonl",
        [
            {"id": "1", "text": "weather forecast for Paris", "gold": ["get_weather"]},
            {"id": "2", "text": "convert 10 euros to dollars", "gold": ["convert_currency"]},
        ],
    )
    return tools, queries


def test_several_sets_and_methods_give_one_row_each(
    call_main: CallMain, small: tuple[Path, Path], tmp_path: Path
) -> None:
    tools, queries = small
    other = _write(
        tmp_path / "b.jsonl", [{"id": "x", "text": "email my boss", "gold": ["send_email"]}]
    )
    code, out, err = call_main(
        "eval", "routing", "-s", str(tools), "-q", str(queries), "-s", str(tools), "-q",
        str(other), "-m", "bm25", "-m", "bm25-plain", "--json",
    )  # fmt: skip
    assert code == 0, err
    rows = json.loads(out)["results"]
    assert [(r["set"], r["method"], r["n_queries"]) for r in rows] == [
        ("a", "bm25", 2),
        ("a", "bm25-plain", 2),
        ("b", "bm25", 1),
        ("b", "bm25-plain", 1),
    ]
    assert all(set(r) == METRIC_KEYS | SETTING_KEYS | {"set"} for r in rows)


def test_a_sets_file_names_its_sets(
    call_main: CallMain, small: tuple[Path, Path], tmp_path: Path
) -> None:
    sets = tmp_path / "sets.json"
    sets.write_text(
        json.dumps(
            {"sets": [{"name": "tiny", "catalog": "tools.jsonl", "queries": "a/queries.jsonl"}]}
        )
    )
    code, out, err = call_main("eval", "routing", "--sets", str(sets), "-m", "bm25", "--json")
    assert code == 0, err
    assert json.loads(out)["hit_at_1"] == 1.0
    sets.write_text(json.dumps({"sets": [{"name": "t", "catalog": "no.jsonl", "queries": "q"}]}))
    code, _, err = call_main("eval", "routing", "--sets", str(sets), "-m", "bm25")
    assert code == 2
    assert f"{sets}: sets[0].catalog" in err and "does not exist" in err


def test_repeated_query_id_is_refused(call_main: CallMain, small: tuple[Path, Path]) -> None:
    """Regression: a repeated id was skipped with a warning and the run exited 0; then it
    exited 1 but still printed figures. Which of the two lines is the query is a guess, so the
    file is refused: exit 2, no figures, the file, the line and the id named."""
    tools, queries = small
    rows = [json.loads(line) for line in queries.read_text().splitlines()]
    _write(queries, [*rows, {**rows[0], "text": "rain in Lyon"}])
    code, out, err = call_main(
        "eval", "routing", "-s", str(tools), "-q", str(queries), "-m", "bm25"
    )
    assert code == 2
    assert f"{queries}:3: query id '1' repeats line 1" in err
    assert out == ""


def test_no_scorable_query_exits_non_zero(
    call_main: CallMain, small: tuple[Path, Path], tmp_path: Path
) -> None:
    """Regression: when every gold skill was unknown, the run printed zeros and exited 0."""
    tools, _ = small
    queries = _write(tmp_path / "q.jsonl", [{"id": "1", "text": "rain", "gold": ["weather"]}])
    code, out, err = call_main(
        "eval", "routing", "-s", str(tools), "-q", str(queries), "-m", "bm25", "--json"
    )
    assert code == 1
    assert "query 1 needs 'weather'" in err
    assert f"{queries}: no query could be scored" in err
    assert out == ""  # no all-zero figures for a set that was not scored at all


def test_an_unscored_set_is_left_out_of_the_figures(
    call_main: CallMain, small: tuple[Path, Path], tmp_path: Path
) -> None:
    tools, good = small
    bad = _write(tmp_path / "q.jsonl", [{"id": "1", "text": "rain", "gold": ["weather"]}])
    code, out, err = call_main(
        "eval", "routing", "-s", str(tools), "-q", str(good), "-s", str(tools), "-q", str(bad),
        "-m", "bm25", "--json",
    )  # fmt: skip
    assert code == 1
    assert f"{bad}: no query could be scored" in err
    rows = json.loads(out)["results"]
    assert [r["n_queries"] > 0 for r in rows] == [True]


def test_query_without_indexable_words_is_noted(
    call_main: CallMain, small: tuple[Path, Path], tmp_path: Path
) -> None:
    tools, _ = small
    queries = _write(
        tmp_path / "q.jsonl",
        [
            {"id": "1", "text": "the and of", "gold": ["send_email"]},
            {"id": "2", "text": "send an email", "gold": ["send_email"]},
        ],
    )
    code, out, err = call_main(
        "eval", "routing", "-s", str(tools), "-q", str(queries), "-m", "bm25", "--json"
    )
    assert code == 0
    assert "bm25 ranked nothing for 1 queries (e.g. 1)" in err
    assert json.loads(out)["hit_at_1"] == 0.5


def test_empty_catalogs_are_clear_errors(
    call_main: CallMain, small: tuple[Path, Path], tmp_path: Path
) -> None:
    _, queries = small
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, _, err = call_main("eval", "routing", "-s", str(empty), "-q", str(queries), "-m", "bm25")
    assert code == 2 and err.startswith("error:") and "empty.jsonl" in err
    blank = _write(tmp_path / "blank.jsonl", [{"name": "a", "description": "the"}])
    code, _, err = call_main("eval", "routing", "-s", str(blank), "-q", str(queries), "-m", "bm25")
    assert code == 2 and "no skill has an indexable word" in err


def test_unpaired_catalogs_and_queries_are_refused(
    call_main: CallMain, small: tuple[Path, Path]
) -> None:
    tools, queries = small
    code, _, err = call_main(
        "eval", "routing", "-s", str(tools), "-s", str(tools), "-s", str(tools),
        "-q", str(queries), "-q", str(queries), "-m", "bm25",
    )  # fmt: skip
    assert code == 2
    assert "2 --queries files need as many --catalog paths" in err


STEP_KEYS = {
    "n_step_queries",
    "step_k",
    "step_complete_at_k",
    "step_exposed",
    "oneshot_complete_at_exposed",
}


@pytest.fixture
def stepped(tmp_path: Path) -> tuple[Path, Path]:
    """(tools file, query file) with one step-wise task and one one-shot query."""
    tools = _write(tmp_path / "tools.jsonl", TOOLS)
    queries = _write(
        tmp_path / "steps" / "queries.jsonl",
        [
            {
                "id": "trip",
                "text": "get ready for my trip",
                "gold": ["get_weather", "send_email"],
                "steps": ["weather forecast for Rome", "send an email to Ana"],
            },
            {"id": "2", "text": "convert 10 euros to dollars", "gold": ["convert_currency"]},
        ],
    )
    return tools, queries


def test_step_queries_are_scored_step_by_step(
    call_main: CallMain, stepped: tuple[Path, Path]
) -> None:
    tools, queries = stepped
    code, out, err = call_main(
        "eval", "routing", "-s", str(tools), "-q", str(queries), "-m", "bm25", "--step-k", "1",
        "--json",
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(out)
    assert set(result) == METRIC_KEYS | STEP_KEYS | SETTING_KEYS
    assert result["n_queries"] == 2 and result["n_step_queries"] == 1 and result["step_k"] == 1
    assert result["step_complete_at_k"] == 1.0  # each step finds its tool as its top 1
    assert result["step_exposed"] == 2.0
    assert result["complete_at_10"] == 0.5  # the trip's text names neither tool
    code, out, _ = call_main(
        "eval", "routing", "-s", str(tools), "-q", str(queries), "-m", "bm25", "--step-k", "1"
    )
    assert code == 0
    assert "step_complete_at_k" in out and "step_exposed" in out


def test_several_methods_show_the_step_figures_per_row(
    call_main: CallMain, stepped: tuple[Path, Path], small: tuple[Path, Path]
) -> None:
    tools, queries = stepped
    _, plain = small
    code, out, err = call_main(
        "eval", "routing", "-s", str(tools), "-q", str(queries), "-s", str(tools), "-q",
        str(plain), "-m", "bm25", "-m", "bm25-plain", "--json",
    )  # fmt: skip
    assert code == 0, err
    rows = json.loads(out)["results"]
    assert [(r["set"], "step_k" in r) for r in rows] == [
        ("steps", True),
        ("steps", True),
        ("a", False),  # a set without steps keeps exactly today's keys
        ("a", False),
    ]
    assert all(set(r) == METRIC_KEYS | SETTING_KEYS | {"set"} for r in rows[2:])


def test_bad_step_lines_are_reported_and_the_rest_scored(
    call_main: CallMain, stepped: tuple[Path, Path]
) -> None:
    tools, queries = stepped
    rows = [json.loads(line) for line in queries.read_text().splitlines()]
    bad = [
        {"id": "e", "text": "trip", "gold": ["get_weather"], "steps": []},
        {"id": "m", "steps": ["weather in Rome"], "gold": ["get_weather"]},
    ]
    _write(queries, [*rows, *bad])
    code, out, err = call_main(
        "eval", "routing", "-s", str(tools), "-q", str(queries), "-m", "bm25", "--json"
    )
    assert code == 1  # the bad-records policy: reported, skipped, the rest scored
    assert f"{queries}:3: field 'steps' must be a non-empty list" in err
    assert f"{queries}:4: missing field(s) text" in err
    assert json.loads(out)["n_queries"] == 2


def test_a_repeated_step_query_id_is_refused(
    call_main: CallMain, stepped: tuple[Path, Path]
) -> None:
    tools, queries = stepped
    rows = [json.loads(line) for line in queries.read_text().splitlines()]
    _write(queries, [*rows, {**rows[0], "steps": ["rain in Lyon"]}])
    code, out, err = call_main(
        "eval", "routing", "-s", str(tools), "-q", str(queries), "-m", "bm25", "--json"
    )
    assert code == 2
    assert f"{queries}:3: query id 'trip' repeats line 1" in err
    assert out == ""


def test_step_k_below_one_is_refused(call_main: CallMain, stepped: tuple[Path, Path]) -> None:
    tools, queries = stepped
    code, out, err = call_main(
        "eval", "routing", "-s", str(tools), "-q", str(queries), "-m", "bm25", "--step-k", "0"
    )
    assert code == 2
    assert "--step-k" in err and out == ""
