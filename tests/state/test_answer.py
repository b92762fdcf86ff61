"""Odd provider answers and clocks fail closed, on both gates, with the causes of a failed read
(:mod:`maitred.state.answer`); a NULL in a typed column is a missing key (issue 27)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import pytest

from maitred import Maitred, PipelineOptions, ToolCall
from maitred.contract import CelPredicate, Contract
from maitred.skills.model import Catalog, Skill
from maitred.state import SqlStateProvider
from maitred.state.answer import DEFAULT_CLOCK_SKEW_S
from maitred.state.snapshot import Snapshot

NOW = 1_800_000_000.0
TOOL = "transfer_domain"
KEY = "domain.registrar_lock"
# fail-open on a missing key, fresh for a minute: an odd answer must not become an offer
LOCKED = CelPredicate(KEY, "domain_locked", (KEY,), on_missing="offer", on_stale="offer")
FRESH = CelPredicate(KEY, "domain_locked", (KEY,), max_age_s={KEY: 60})


class _Answers:
    """A provider that answers whatever it was given (the odd answers under test)."""

    def __init__(self, answer: Callable[[str], Any]) -> None:
        self.answer = answer

    def fetch(self, account: str, keys: Collection[str]) -> Any:
        return self.answer(account)


def _engine(provider: object, predicate: CelPredicate = LOCKED, **kw: Any) -> Maitred:
    tool = Skill(
        TOOL,
        "Transfer the domain to another registrar.",
        kind="tool",
        contract=Contract(mutates=True, exit_predicates=(predicate,)),
    )
    return Maitred.open(
        Catalog((tool,)), provider, PipelineOptions(method="bm25"), clock=lambda: NOW, **kw
    )  # type: ignore[arg-type]


def _both_gates(engine: Maitred) -> tuple[bool, str | None, str, str | None]:
    """(offered at stage 2, its cause, stage 5's code, stage 5's cause) for one account."""
    session = engine.session("acc-1")
    turn = engine.turn("transfer my domain", session=session)
    session.offer(frozenset({TOOL}), turn.turn_id)  # as if offered before the store went odd
    decision = engine.check(ToolCall(TOOL, {}), session=session)
    return TOOL in turn.exposed, turn.record.cause, decision.code, decision.to_json().get("cause")


ODD: dict[str, Callable[[str], Any]] = {
    "None": lambda account: None,
    "a dict of values": lambda account: {KEY: False},
    "another account's snapshot": lambda account: Snapshot("acc-2", {KEY: False}, NOW),
    "an empty snapshot (an unknown account as an empty dict)": lambda account: Snapshot(
        account, {}, NOW
    ),
    "a NaN time": lambda account: Snapshot(account, {KEY: False}, float("nan"), hash="h"),
    "dates that are not numbers": lambda account: Snapshot(
        account,
        {KEY: False},
        NOW,
        {KEY: "yesterday"},
        hash="h",  # type: ignore[dict-item]
    ),
    "missing as a string": lambda account: Snapshot(
        account,
        {},
        NOW,
        missing=KEY,
        hash="h",  # type: ignore[arg-type]
    ),
}


@pytest.mark.parametrize("answer", sorted(ODD))
def test_an_odd_answer_fails_closed_on_both_gates_as_a_failed_read(answer: str) -> None:
    with _engine(_Answers(ODD[answer])) as engine:
        offered, cause, code, cause5 = _both_gates(engine)
    assert not offered and cause == "state_unavailable"
    assert (code, cause5) == ("STATE_UNAVAILABLE", "state_unavailable")


def test_a_well_formed_answer_is_decided_as_before() -> None:
    with _engine(_Answers(lambda a: Snapshot(a, {KEY: False}, NOW, missing=[]))) as engine:  # type: ignore[arg-type]
        offered, cause, code, _ = _both_gates(engine)
    assert offered and cause is None and code == "OK"


@pytest.mark.parametrize("ahead", [DEFAULT_CLOCK_SKEW_S + 1, 3600.0, 100 * 365 * 86400.0])
def test_state_dated_ahead_of_the_clock_is_never_fresh(ahead: float) -> None:
    def answer(account: str) -> Snapshot:
        return Snapshot(account, {KEY: False}, NOW, {KEY: NOW + ahead})

    with _engine(_Answers(answer), FRESH) as engine:
        session = engine.session("acc-1")
        turn = engine.turn("transfer my domain", session=session)
        assert TOOL not in turn.exposed
        (pair,) = [p for p in turn.record.pairs if p.skill == TOOL]
        assert (
            pair.fired[0].status == "error" and "ahead of the gate's clock" in pair.fired[0].detail
        )
        assert turn.record.snapshot is not None and KEY in turn.record.snapshot.invalid
        session.offer(frozenset({TOOL}), turn.turn_id)
        decision = engine.check(ToolCall(TOOL, {}), session=session)
        assert decision.code == "TOOL_NOT_EXECUTABLE"


def test_within_the_skew_a_key_is_current_and_the_skew_is_configurable() -> None:
    def answer(account: str) -> Snapshot:
        return Snapshot(account, {KEY: False}, NOW, {KEY: NOW + 120})

    with _engine(_Answers(answer), FRESH) as engine:
        assert TOOL in engine.turn("transfer my domain", account="acc-1").exposed
    with _engine(_Answers(answer), FRESH, clock_skew_s=60) as engine:
        assert TOOL not in engine.turn("transfer my domain", account="acc-1").exposed


def _sql_state(tmp_path: Path, paused: int | None) -> SqlStateProvider:
    db = tmp_path / "state.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE billing (account_id TEXT PRIMARY KEY, paused BOOLEAN)")
        conn.execute("INSERT INTO billing VALUES ('acc-1', ?)", (paused,))
    conn.close()
    return SqlStateProvider.from_url(f"sqlite:///{db}", {"billing": "billing"})


@pytest.mark.parametrize("on_missing", ["block", "offer"])
def test_a_null_in_a_typed_column_is_missing_never_false(tmp_path: Path, on_missing: str) -> None:
    paused = CelPredicate(
        "billing.paused == true",
        "paused",
        ("billing.paused",),
        on_missing=on_missing,  # type: ignore[arg-type]
    )
    with _engine(_sql_state(tmp_path, None), paused) as engine:
        offered, _, code, _ = _both_gates(engine)
    assert offered is (on_missing == "offer")
    assert (code == "OK") is (on_missing == "offer")


def test_a_stored_false_is_still_a_value(tmp_path: Path) -> None:
    paused = CelPredicate("billing.paused == true", "paused", ("billing.paused",))
    with _engine(_sql_state(tmp_path, 0), paused) as engine:
        offered, cause, code, _ = _both_gates(engine)
    assert offered and cause is None and code == "OK"
