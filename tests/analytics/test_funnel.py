"""The funnel's arithmetic on hand-built logs, on SQLite and PostgreSQL, read-only."""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from maitred.analytics import Funnel, funnel, render_skills_table, render_table
from maitred.contract.evaluate import PredicateOutcome
from maitred.errors import ConfigError, LogError
from maitred.log import DecisionLog, open_log
from maitred.records import Message, PairRecord, RunInfo, TurnRecord

Opener = Callable[..., DecisionLog]


def _fired(*names: str) -> tuple[PredicateOutcome, ...]:
    return tuple(PredicateOutcome(n, "c1:v", True, "ok", {"plan": "free"}) for n in names)


def _pair(
    skill: str, rank: int, tokens: int, *, exposed: bool = False, fired: tuple[str, ...] = ()
) -> PairRecord:
    return PairRecord(skill, rank, 1.0 / rank, not fired, exposed, tokens, fired=_fired(*fired))


def _turn(run_id: str, n: int, *pairs: PairRecord) -> TurnRecord:
    menu = sum(p.desc_tokens for p in pairs if p.exposed)
    return TurnRecord(
        f"{run_id}/{n}", run_id, Message(str(n), "text", "acct"), "c1:cat", "bm25", "k",
        tuple(pairs), None, {}, 1000.0 + n, menu_tokens=menu,
    )  # fmt: skip


def build_log(log: DecisionLog) -> None:
    """Run r1 (3 messages, 1000 catalog tokens) and r2 (1 message, 500 catalog tokens)."""
    log.begin_run(RunInfo("r1", 1.0, "c1:cat", 4, 1000))
    log.begin_run(RunInfo("r2", 2.0, "c1:cat", 4, 500))
    log.write(
        _turn("r1", 1, _pair("A", 1, 100, exposed=True), _pair("B", 2, 50, fired=("p1",)),
              _pair("C", 3, 30))
    )  # fmt: skip
    log.write(
        _turn("r1", 2, _pair("A", 1, 100, fired=("p1", "p2")), _pair("D", 2, 40, exposed=True))
    )
    log.write(_turn("r1", 3))
    log.write(_turn("r2", 4, _pair("A", 1, 100, exposed=True)))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    if request.param == "sqlite":
        path = tmp_path / "log.db"
        return lambda **kw: open_log(path, **kw)
    url, schema = request.getfixturevalue("pg_schema")
    return lambda **kw: open_log(url, schema=schema, **kw)


@pytest.fixture
def built(opener: Opener) -> Opener:
    with opener() as log:
        build_log(log)
    return opener


def test_funnel_of_one_run(built: Opener) -> None:
    with built(read_only=True) as log:
        f = funnel(log, "r1")
    assert (f.messages, f.matched_messages) == (3, 2)
    assert (f.candidate_pairs, f.blocked_pairs, f.visible_pairs, f.exposed_pairs) == (5, 2, 3, 2)
    assert f.tokens_all_skills == 3 * 1000
    assert f.tokens_after_recall == 100 + 50 + 30 + 100 + 40
    assert f.tokens_after_gate == 100 + 30 + 40
    assert f.tokens_exposed == f.menu_tokens == 140
    assert f.blocked_pair_share == pytest.approx(2 / 5)
    assert f.token_reduction == pytest.approx(1 - 170 / 3000)
    assert f.recall_token_reduction == pytest.approx(1 - 320 / 3000)
    assert f.gate_token_reduction == pytest.approx(1 - 170 / 320)
    per = {s.skill: (s.candidates, s.blocked, s.block_rate, s.tokens_saved) for s in f.per_skill}
    assert per == {
        "A": (2, 1, 0.5, 100),
        "B": (1, 1, 1.0, 50),
        "C": (1, 0, 0.0, 0),
        "D": (1, 0, 0.0, 0),
    }
    assert f.per_skill[0].skill == "A"
    assert f.top_predicates == (("p1", 2), ("p2", 1))


def test_funnel_of_every_run(built: Opener) -> None:
    with built(read_only=True) as log:
        f = funnel(log)
    assert f.run_id is None
    assert (f.messages, f.candidate_pairs, f.blocked_pairs) == (4, 6, 2)
    assert f.tokens_all_skills == 3 * 1000 + 500
    assert f.tokens_after_gate == 170 + 100


def test_to_json_has_every_documented_field(built: Opener) -> None:
    with built(read_only=True) as log:
        data = funnel(log, "r1").to_json()
    json.dumps(data)
    for key in (
        "messages", "matched_messages", "candidate_pairs", "blocked_pairs", "blocked_pair_share",
        "visible_pairs", "exposed_pairs", "tokens_all_skills", "tokens_after_recall",
        "tokens_after_gate", "token_reduction", "recall_token_reduction", "gate_token_reduction",
        "per_skill", "top_predicates",
    ):  # fmt: skip
        assert key in data, key
    assert data["per_skill"]["B"] == {
        "candidates": 1, "blocked": 1, "block_rate": 1.0, "visible": 0, "exposed": 0,
        "tokens": 50, "tokens_saved": 50, "tokens_exposed": 0,
    }  # fmt: skip
    assert data["top_predicates"] == {"p1": 2, "p2": 1}


def test_unknown_run_names_the_runs_there(built: Opener) -> None:
    with built(read_only=True) as log, pytest.raises(ConfigError, match=r"'nope'.*\['r2', 'r1'\]"):
        funnel(log, "nope")


def test_funnel_from_a_path_reads_without_writing(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    with open_log(path) as log:
        build_log(log)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    assert funnel(path, "r2").messages == 1
    assert funnel(str(path)).messages == 4
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    with pytest.raises(LogError, match="does not exist"):
        funnel(tmp_path / "missing.db")
    assert not (tmp_path / "missing.db").exists()


def test_the_log_analytics_reads_cannot_be_written(built: Opener) -> None:
    with built(read_only=True) as log:
        with pytest.raises(LogError):
            log.query("INSERT INTO runs VALUES ('x', 0, 'c', 0, 0, '{}')")
        with pytest.raises(LogError, match="read-only"):
            log.begin_run(RunInfo("x", 0.0, "c", 0, 0))
    with built(read_only=True) as log:
        assert [r.run_id for r in log.runs()] == ["r1", "r2"]


def test_empty_log_gives_zero_ratios(opener: Opener) -> None:
    opener().close()
    with opener(read_only=True) as log:
        f = funnel(log)
    assert (f.messages, f.token_reduction, f.blocked_pair_share, f.gate_token_reduction) == (
        0,
        0.0,
        0.0,
        0.0,
    )


def test_tables_render(built: Opener) -> None:
    with built(read_only=True) as log:
        f = funnel(log, "r1")
    console = Console(record=True, width=140)
    console.print(render_table(f))
    console.print(render_skills_table(f, limit=2))
    text = console.export_text()
    assert "Funnel, run r1" in text and "3,000" in text and "top 2 of 4" in text


skill_names = st.sampled_from(["a", "b", "c", "d", "e"])
pair_specs = st.lists(
    st.tuples(st.integers(0, 300), st.booleans(), st.booleans(), st.sampled_from(["p", "q"])),
    max_size=5,
)


@settings(max_examples=25, deadline=None)
@given(st.lists(pair_specs, min_size=1, max_size=6))
def test_invariants_hold_on_any_log(turns: list[list[tuple[int, bool, bool, str]]]) -> None:
    catalog_tokens = 5 * 300  # every skill's description costs at most 300
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.db"
        with open_log(path) as log:
            log.begin_run(RunInfo("r", 0.0, "c", 5, catalog_tokens))
            for n, specs in enumerate(turns):
                pairs = [
                    _pair(skill, rank + 1, tokens, exposed=visible and exposed,
                          fired=() if visible else (pred,))
                    for rank, (skill, (tokens, visible, exposed, pred)) in enumerate(
                        zip(["a", "b", "c", "d", "e"], specs, strict=False)
                    )
                ]  # fmt: skip
                log.write(_turn("r", n, *pairs))
        f: Funnel = funnel(path, "r")
    assert 0 <= f.blocked_pairs <= f.candidate_pairs
    assert f.exposed_pairs <= f.visible_pairs == f.candidate_pairs - f.blocked_pairs
    assert f.tokens_exposed <= f.tokens_after_gate <= f.tokens_after_recall <= f.tokens_all_skills
    assert sum(n for _, n in f.top_predicates) == f.blocked_pairs
    assert 0.0 <= f.gate_token_reduction <= 1.0 and 0.0 <= f.token_reduction <= 1.0


def _failed(run_id: str, n: int, error: str, *pairs: PairRecord) -> TurnRecord:
    return TurnRecord(
        f"{run_id}/{n}", run_id, Message(str(n), "text", "acct"), "c1:cat", "bm25", "k",
        tuple(pairs), None, {}, 1000.0 + n, provider_error=error,
    )  # fmt: skip


def _withheld(skill: str, rank: int) -> PairRecord:
    return PairRecord(skill, rank, 0.5, False, False, 10)


def test_fail_closed_turns_are_counted_apart_per_cause(opener: Opener) -> None:
    with opener() as log:
        build_log(log)
        log.begin_run(RunInfo("r3", 3.0, "c1:cat", 4, 1000))
        log.write(
            _failed("r3", 5, "state_unavailable: ProviderError: connection refused",
                    _withheld("A", 1), _withheld("B", 2), _pair("C", 3, 30, exposed=True))
        )  # fmt: skip
        log.write(_failed("r3", 6, "ProviderTimeout: an error logged before causes existed"))
        log.write(_failed("r3", 7, "account_not_found: no record", _withheld("A", 1)))
        log.write(_turn("r3", 8, _pair("B", 1, 50, fired=("p1",))))
    with opener(read_only=True) as log:
        f = funnel(log, "r3")
        everything = funnel(log)
        clean = funnel(log, "r1")
    assert (f.state_unavailable_turns, f.state_unavailable_pairs) == (2, 2)
    assert (f.account_not_found_turns, f.account_not_found_pairs) == (1, 1)
    assert f.fail_closed_turns == 3
    assert f.blocked_pairs == 4 and f.predicate_blocked_pairs == 1
    assert f.top_predicates == (("p1", 1),)
    assert everything.state_unavailable_turns == 2 and everything.account_not_found_pairs == 1
    assert clean.fail_closed_turns == 0
    data = f.to_json()
    assert data["fail_closed"] == {
        "state_unavailable": {"turns": 2, "pairs": 2},
        "account_not_found": {"turns": 1, "pairs": 1},
    }
    console = Console(record=True, width=160)
    console.print(render_table(f))
    text = console.export_text()
    assert "fail-closed: state unavailable" in text and "2 turns" in text
    assert "fail-closed: account not found" in text


def test_a_tenant_counts_its_own_run_only_compared_exactly(opener: Opener) -> None:
    with opener() as log:
        log.begin_run(RunInfo("serve-acme-eu-1", 1.0, "c1:cat", 4, 100, tenant="acme-eu"))
        log.write(_turn("serve-acme-eu-1", 1, _pair("A", 1, 100, exposed=True)))
        log.flush()
        assert funnel(log, "serve-acme-eu-1", tenant="acme-eu").messages == 1
        for other in ("acme", "acme-", "acme-e", ""):
            with pytest.raises(ConfigError, match="as a run of tenant") as err:
                funnel(log, "serve-acme-eu-1", tenant=other)
            assert "latest runs" not in str(err.value)  # names no other tenant's run
        with pytest.raises(ConfigError, match="pass its run_id"):
            funnel(log, tenant="acme-eu")
