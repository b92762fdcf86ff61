"""Step-wise scoring in ``maitred.recall.evaluate``: each step of a query asked for its own top k,
the task complete when every gold skill is in the union; queries without steps unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maitred.errors import InputError
from maitred.recall.base import Candidate
from maitred.recall.bm25 import BM25Recaller
from maitred.recall.evaluate import (
    METRIC_KEYS,
    MRR_DEPTH,
    STEP_KEYS,
    Query,
    evaluate_routing,
    load_queries,
    step_metrics,
)
from maitred.recall.steps import DEPTH as STEPS_DEPTH
from maitred.skills.model import Catalog, Skill


class FixedRecaller:
    """A fixed ranking per text; ``rank`` honours k and records what it was asked."""

    name = "fixed"

    def __init__(self, rankings: dict[str, list[str]]) -> None:
        self.rankings = rankings
        self.asked: list[tuple[str, int]] = []

    def rank(self, text: str, k: int) -> list[Candidate]:
        self.asked.append((text, k))
        names = self.rankings.get(text, [])[:k]
        return [Candidate(n, i, 1.0 / i) for i, n in enumerate(names, start=1)]


def test_the_union_of_steps_completes_what_no_step_does_alone() -> None:
    m = step_metrics([["a", "x"], ["y", "b"]], oneshot=["a", "x", "y", "b"], gold={"a", "b"}, k=2)
    assert m["step_complete_at_k"] == 1.0
    assert m["step_exposed"] == 4.0
    assert m["oneshot_complete_at_exposed"] == 1.0  # b is 4th of 4 shown


def test_only_each_steps_top_k_counts() -> None:
    # b is third in step 2: with k=2 it is never shown
    m = step_metrics([["a", "x", "q"], ["y", "z", "b"]], oneshot=[], gold={"a", "b"}, k=2)
    assert m["step_complete_at_k"] == 0.0
    assert m["step_exposed"] == 4.0
    assert step_metrics([["a"], ["y", "z", "b"]], [], {"a", "b"}, k=3)["step_complete_at_k"] == 1


def test_a_tool_two_steps_show_is_exposed_once() -> None:
    m = step_metrics([["a", "c"], ["c", "b"], ["a", "b"]], oneshot=[], gold={"a", "b"}, k=2)
    assert m["step_exposed"] == 3.0
    assert m["step_complete_at_k"] == 1.0


def test_one_shot_is_cut_at_the_steps_exposure() -> None:
    steps = [["a", "b"], ["a", "c"]]  # three tools shown in all
    assert step_metrics(steps, ["x", "a", "y", "b"], {"a", "b"}, k=2) == {
        "step_complete_at_k": 1.0,
        "step_exposed": 3.0,
        "oneshot_complete_at_exposed": 0.0,  # b is 4th: not among the 3 the one-shot may show
    }
    assert step_metrics(steps, ["x", "a", "b"], {"a", "b"}, k=2)["oneshot_complete_at_exposed"]


def test_steps_add_their_keys_and_leave_the_one_shot_figures_alone() -> None:
    rankings = {
        "q1": ["a", "b"],
        "trip": ["z", "w", "v", "a"],
        "weather": ["a", "z"],
        "email": ["b", "a"],
    }
    plain = [Query("1", "q1", ("a",)), Query("2", "trip", ("a", "b"))]
    stepped = [plain[0], Query("2", "trip", ("a", "b"), ("weather", "email"))]
    known = {"a", "b", "v", "w", "z"}
    before = evaluate_routing(FixedRecaller(rankings), plain, "f", known=known)
    after = evaluate_routing(FixedRecaller(rankings), stepped, "f", known=known, step_k=1)
    assert tuple(before) == METRIC_KEYS  # no steps: exactly today's keys
    assert tuple(after) == METRIC_KEYS + STEP_KEYS
    for key in METRIC_KEYS[1:-1]:  # the text's own figures do not move
        assert after[key] == before[key], key
    assert after["n_step_queries"] == 1 and after["step_k"] == 1
    assert after["step_complete_at_k"] == 1.0  # "a" from the first step, "b" from the second
    assert after["step_exposed"] == 2.0
    assert after["oneshot_complete_at_exposed"] == 0.0  # the text's top 2 are z, w
    assert before["complete_at_10"] == 0.5  # the text alone misses b for query 2


def test_step_figures_average_over_step_queries_only() -> None:
    rankings = {"s1": ["a"], "s2": ["c"], "t": ["a", "b"], "u": ["b"]}
    queries = [
        Query("1", "t", ("a", "b"), ("s1", "s2")),  # b never shown step-wise
        Query("2", "u", ("a",), ("s1",)),
        Query("3", "u", ("b",)),  # one-shot only
    ]
    r = evaluate_routing(FixedRecaller(rankings), queries, "f", known={"a", "b", "c"})
    assert r["n_queries"] == 3 and r["n_step_queries"] == 2
    assert r["step_complete_at_k"] == 0.5
    assert r["step_exposed"] == 1.5


def test_each_step_is_asked_with_step_k_apart_and_deeper_together() -> None:
    recaller = FixedRecaller({"t": ["a"], "s1": ["a"], "s2": ["b"]})
    query = Query("1", "t", ("a",), ("s1", "s2"))
    evaluate_routing(recaller, [query], "f", known={"a", "b"}, step_k=7, steps="apart")
    assert recaller.asked == [("t", MRR_DEPTH), ("s1", 7), ("s2", 7)]
    recaller.asked.clear()  # together: fresh tools are drawn from below each step's top k
    evaluate_routing(recaller, [query], "f", known={"a", "b"}, step_k=7)
    assert recaller.asked == [("t", MRR_DEPTH), ("s1", STEPS_DEPTH), ("s2", STEPS_DEPTH)]
    with pytest.raises(ValueError, match="step_k must be at least 1"):
        evaluate_routing(recaller, [query], "f", known={"a", "b"}, step_k=0)


def test_one_shot_is_ranked_deeper_when_the_steps_show_more_than_its_depth() -> None:
    names = [f"t{i:03d}" for i in range(130)]
    steps = {f"s{j}": names[10 * j : 10 * j + 10] for j in range(12)}  # 120 tools shown
    recaller = FixedRecaller({"task": names, **steps})
    query = Query("1", "task", ("t000", "t110"), tuple(steps))
    r = evaluate_routing(recaller, [query], "f", known=set(names))
    assert r["step_exposed"] == 120.0 and r["step_complete_at_k"] == 1.0
    assert r["oneshot_complete_at_exposed"] == 1.0  # t110 is 111th: past the first ranking
    assert ("task", 120) in recaller.asked


def _catalog() -> Catalog:
    return Catalog(
        (
            Skill("get_weather", "Weather forecast for a city: rain, temperature, wind"),
            Skill("convert_currency", "Convert an amount of money between currencies"),
            Skill("send_email", "Send an email message to a contact"),
            Skill("book_flight", "Book a flight ticket between two airports"),
        )
    )


def test_bm25_step_by_step_on_a_catalog_whose_answer_is_known() -> None:
    recaller = BM25Recaller.build(_catalog())
    trip = Query(
        "trip",
        "plan my trip",  # no word the catalog knows: asked once, nothing is found
        ("get_weather", "book_flight", "send_email"),
        ("book a flight to Rome", "the weather forecast in Rome", "email the plan to Ana"),
    )
    r = evaluate_routing(recaller, [trip], "bm25", step_k=1)
    assert r["complete_at_10"] == 0.0
    assert r["step_complete_at_k"] == 1.0
    assert r["step_exposed"] == 3.0
    assert r["oneshot_complete_at_exposed"] == 0.0
    missing = Query("m", "plan", ("get_weather", "convert_currency"), ("rain in Rome",))
    assert evaluate_routing(recaller, [missing], "bm25", step_k=1)["step_complete_at_k"] == 0.0


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), "utf-8"
    )
    return path


def test_steps_are_read_and_bad_steps_are_reported(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "q.jsonl",
        [
            {"id": "ok", "text": "trip", "gold": ["a"], "steps": ["find a", "then b"]},
            {"id": "empty", "text": "trip", "gold": ["a"], "steps": []},
            {"id": "str", "text": "trip", "gold": ["a"], "steps": "find a"},
            {"id": "blank", "text": "trip", "gold": ["a"], "steps": ["find a", "  "]},
            {"id": "null", "text": "trip", "gold": ["a"], "steps": None},
            {"id": "num", "text": "trip", "gold": ["a"], "steps": [3]},
            {"id": "nogold", "text": "trip", "steps": ["find a"]},
            {"id": "plain", "text": "just a", "gold": ["a"]},
        ],
    )
    errors: list[InputError] = []
    queries = load_queries(path, on_error=errors.append)
    assert [(q.id, q.steps) for q in queries] == [("ok", ("find a", "then b")), ("plain", ())]
    assert [e.line for e in errors] == [2, 3, 4, 5, 6, 7]
    for err in errors[:5]:
        assert str(err).startswith(f"{path}:{err.line}: field 'steps' must be a non-empty list")
    assert "missing field(s) gold" in str(errors[5])


def test_a_repeated_step_query_id_refuses_the_file(tmp_path: Path) -> None:
    row = {"id": "t", "text": "trip", "gold": ["a"], "steps": ["find a"]}
    path = _write(tmp_path / "q.jsonl", [row, {**row, "steps": ["other"]}])
    with pytest.raises(InputError, match="query id 't' repeats line 1"):
        load_queries(path, repeated="refuse")


def test_steps_together_show_each_step_a_tool_the_earlier_steps_did_not() -> None:
    # both steps rank "a" first: apart, the task sees only a; together, step 2 brings b
    rankings = {"t": ["a", "b"], "s1": ["a", "b"], "s2": ["a", "b"]}
    query = Query("1", "t", ("a", "b"), ("s1", "s2"))
    apart = evaluate_routing(FixedRecaller(rankings), [query], "f", known={"a", "b"}, step_k=1,
                             steps="apart")  # fmt: skip
    together = evaluate_routing(FixedRecaller(rankings), [query], "f", known={"a", "b"}, step_k=1)
    assert (apart["step_complete_at_k"], apart["step_exposed"]) == (0.0, 1.0)
    assert (together["step_complete_at_k"], together["step_exposed"]) == (1.0, 2.0)
