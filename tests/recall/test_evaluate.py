import json
import math
from pathlib import Path

import pytest

from maitred.errors import ConfigError, InputError
from maitred.recall.base import Candidate
from maitred.recall.evaluate import (
    METRIC_KEYS,
    EvalSet,
    Query,
    describe_unknown,
    evaluate_routing,
    load_queries,
    load_sets,
    pair_sets,
    query_metrics,
)


class FixedRecaller:
    """Returns a fixed ranking per query text."""

    name = "fixed"

    def __init__(self, rankings: dict[str, list[str]]) -> None:
        self.rankings = rankings

    def rank(self, text: str, k: int) -> list[Candidate]:
        names = self.rankings[text][:k]
        return [Candidate(n, i, 1.0 / i) for i, n in enumerate(names, start=1)]


def test_metrics_on_hand_computed_example() -> None:
    m = query_metrics(["x", "a", "y", "z", "q", "b"], {"a", "b"})
    assert m["hit_at_1"] == 0.0
    assert m["recall_at_5"] == 0.5
    assert m["recall_at_10"] == 1.0
    assert m["mrr"] == 0.5
    ideal = 1 + 1 / math.log2(3)
    assert m["ndcg_at_10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(7)) / ideal)
    assert m["complete_at_10"] == 1.0


def test_metrics_when_gold_is_missing_or_first() -> None:
    assert query_metrics(["a"], {"a"}) == {
        "hit_at_1": 1.0,
        "recall_at_5": 1.0,
        "recall_at_10": 1.0,
        "mrr": 1.0,
        "ndcg_at_10": 1.0,
        "complete_at_10": 1.0,
    }
    assert set(query_metrics([], {"a"}).values()) == {0.0}


def test_evaluate_routing_averages_and_has_exactly_the_keys() -> None:
    recaller = FixedRecaller({"q1": ["a", "b"], "q2": ["c", "d", "b"]})
    queries = [Query("1", "q1", ("a",)), Query("2", "q2", ("b",))]
    result = evaluate_routing(recaller, queries, "fixed", known={"a", "b", "c", "d"})
    assert tuple(result) == METRIC_KEYS
    assert result["method"] == "fixed" and result["n_queries"] == 2
    assert result["hit_at_1"] == 0.5
    assert result["mrr"] == pytest.approx((1 + 1 / 3) / 2)


def test_unknown_gold_is_counted_and_left_out() -> None:
    recaller = FixedRecaller({"q1": ["a"], "q2": ["a"]})
    queries = [Query("1", "q1", ("a",)), Query("2", "q2", ("ghost",))]
    reported: list[list[Query]] = []
    result = evaluate_routing(recaller, queries, "f", known={"a"}, on_unknown=reported.append)
    assert result["n_queries"] == 1 and result["hit_at_1"] == 1.0
    assert [q.id for q in reported[0]] == ["2"]


def test_no_scorable_queries_gives_zeros() -> None:
    result = evaluate_routing(FixedRecaller({}), [], "f", known=set())
    assert result["n_queries"] == 0 and result["mrr"] == 0.0


def test_bad_query_lines_are_reported_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "queries.jsonl"
    lines = [
        json.dumps({"id": "a", "text": "first", "gold": ["x"]}),
        "{not json",
        json.dumps({"id": "b", "text": "no gold"}),
        "",
        json.dumps({"id": "c", "text": "   ", "gold": ["x"]}),
        json.dumps({"id": "a", "text": "repeat", "gold": ["x"]}),
        json.dumps([1, 2]),
        json.dumps({"id": 7, "text": "last", "gold": "y"}),
    ]
    path.write_text("\n".join(lines) + "\n")
    errors: list[InputError] = []
    queries = load_queries(path, on_error=errors.append)
    assert [(q.id, q.gold) for q in queries] == [("a", ("x",)), ("7", ("y",))]
    assert [e.line for e in errors] == [2, 3, 5, 6, 7]
    assert str(errors[0]).startswith(f"{path}:2: not valid JSON")
    assert "missing field(s) gold" in str(errors[1])
    assert "repeats an earlier line" in str(errors[3])


def test_bad_lines_are_logged_by_default(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "a", "text": "t", "gold": ["x"]}\nnope\n')
    assert len(load_queries(path)) == 1
    assert f"{path}:2" in caplog.text


def test_unreadable_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the query file"):
        load_queries(tmp_path / "missing.jsonl")


def test_unranked_queries_are_reported_and_scored_as_misses() -> None:
    recaller = FixedRecaller({"q1": ["a"], "q2": []})
    queries = [Query("1", "q1", ("a",)), Query("2", "q2", ("a",))]
    empty: list[list[Query]] = []
    result = evaluate_routing(recaller, queries, "f", known={"a"}, on_unranked=empty.append)
    assert result["n_queries"] == 2 and result["hit_at_1"] == 0.5
    assert [q.id for q in empty[0]] == ["2"]
    assert result["ms_per_query"] >= 0.0


def test_describe_unknown_names_what_is_missing() -> None:
    queries = [Query(str(i), "t", ("a", f"ghost{i}")) for i in range(5)]
    text = describe_unknown(queries, {"a"}, show=2)
    assert text == "query 0 needs 'ghost0'; query 1 needs 'ghost1' and 3 more"


def test_sets_file_paths_are_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    for name in ("d/tools.jsonl", "d/queries.jsonl"):
        (tmp_path / name).write_text("")
    path = tmp_path / "sets.json"
    sets = [{"name": "s", "catalog": ["d/tools.jsonl"], "queries": "d/queries.jsonl"}]
    path.write_text(json.dumps({"sets": sets}))
    assert load_sets(path) == [
        EvalSet("s", (tmp_path / "d/tools.jsonl",), tmp_path / "d/queries.jsonl")
    ]
    path.write_text(json.dumps({"sets": sets + sets}))
    with pytest.raises(ConfigError, match=r"set name\(s\) s appear twice"):
        load_sets(path)
    path.write_text(json.dumps({"sets": [{"name": "s", "catalog": 3, "queries": "q"}]}))
    with pytest.raises(ConfigError, match=r"sets\[0\].catalog must be a path"):
        load_sets(path)
    path.write_text("[]")
    with pytest.raises(ConfigError, match="at least one set"):
        load_sets(path)


def test_pairs_name_sets_after_their_query_files() -> None:
    one = pair_sets(["a.jsonl", "b.jsonl"], [Path("x/queries.jsonl")])
    assert one == [EvalSet("x", (Path("a.jsonl"), Path("b.jsonl")), Path("x/queries.jsonl"))]
    two = pair_sets(["a.jsonl", "b.jsonl"], [Path("p.jsonl"), Path("q.jsonl")])
    assert [s.name for s in two] == ["p", "q"]
    same = pair_sets(["a", "b"], [Path("x/s/queries.jsonl"), Path("y/s/queries.jsonl")])
    assert [s.name for s in same] == ["x/s/queries.jsonl", "y/s/queries.jsonl"]
    with pytest.raises(ConfigError, match="need as many --catalog paths"):
        pair_sets(["a.jsonl"], [Path("p.jsonl"), Path("q.jsonl")])
