"""Finding decisions in the log (:mod:`maitred.log.lookup`), on SQLite and PostgreSQL: one by
its id with everything the log holds about it, or the newest matching a filter."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest

from maitred.actions.model import Approval, Decision, ToolCall
from maitred.contract.evaluate import PredicateOutcome
from maitred.errors import ConfigError, DecisionNotFoundError
from maitred.log import open_log
from maitred.log.lookup import (
    DecisionFilter,
    LoggedAction,
    LoggedTurn,
    find_decision,
    list_decisions,
    parse_time,
)
from maitred.records import TurnRecord

from .builders import Opener, make_run, make_turn

T0 = 1_700_000_200.0  # make_turn(n) has ts T0 + n


def _turn(n: int, run_id: str, session: str, account: str) -> TurnRecord:
    record = make_turn(n, run_id=run_id)
    message = dataclasses.replace(record.message, conversation=session, account=account)
    return dataclasses.replace(record, message=message, depth_probs=(0.25, 0.75) if n else ())


def _decision(name: str, code: str, at: float, turn_id: str, **more: object) -> Decision:
    verdict = "allow" if code == "OK" else "reject"
    outcome = PredicateOutcome("too_big", "c1:v", code != "OK", "ok", {"args.size": 7})
    return Decision(
        ToolCall(name, {"size": 7}, id="call-1"),
        verdict,  # type: ignore[arg-type]
        code,
        message=f"{name}: {code}",
        outcomes=(outcome,),
        now=at,
        session_id="conv-1",
        turn_id=turn_id,
        tenant="acme",
        **more,  # type: ignore[arg-type]
    )


@dataclasses.dataclass
class Written:
    turns: list[TurnRecord]
    asked: Decision
    answered: Decision
    refused: Decision
    other: TurnRecord


def _write(opener: Opener) -> Written:
    """acme: three turns of conv-1 (acct-1) and three decisions on the last one's menu;
    acme-eu (a tenant whose name starts with acme's): one turn of conv-2 (acct-2)."""
    turns = [_turn(n, "run-1", "conv-1", "acct-1") for n in range(3)]
    other = _turn(9, "run-2", "conv-2", "acct-2")
    last = turns[-1].turn_id
    asked = _decision("deploy", "APPROVAL_REQUIRED", T0 + 3, last, approval_message="sure?")
    answered = _decision(
        "deploy", "OK", T0 + 4, last, approval=Approval(asked.decision_id, "approve")
    )
    refused = _decision("delete", "TOOL_NOT_OFFERED", T0 + 5, "")
    with opener() as log:
        log.begin_run(dataclasses.replace(make_run("run-1"), tenant="acme"))
        log.begin_run(dataclasses.replace(make_run("run-2"), tenant="acme-eu"))
        for record in [*turns, other]:
            log.write(record)
        log.write_decisions([asked, answered, refused])
    return Written(turns, asked, answered, refused, other)


def test_a_turn_is_shown_with_everything_the_log_holds(opener: Opener) -> None:
    written = _write(opener)
    last = written.turns[-1]
    with opener(read_only=True) as log:
        found = find_decision(log, last.turn_id)
    assert isinstance(found, LoggedTurn)
    assert found.record.to_json() == last.to_json()  # pairs, snapshot, depth estimates
    assert (found.tenant, found.hash_ok) == ("acme", True)
    assert found.run is not None and found.run.tenant == "acme"
    assert found.chain["chain_seq"] == 3 and found.chain["row_hash"].startswith("c1:")
    # the calls made on its menu, oldest first; the refused call was linked to no turn
    ids = [a.decision_id for a in found.actions]
    assert ids == [written.asked.decision_id, written.answered.decision_id]
    data = found.to_json()
    assert data["kind"] == "turn" and data["snapshot"]["values"]["account.plan"] == "free"
    assert data["pairs"][1]["fired"][0]["predicate"] == "on_free_plan"


def test_an_action_decision_is_shown_with_its_turn_and_its_answer(opener: Opener) -> None:
    written = _write(opener)
    with opener(read_only=True) as log:
        asked = find_decision(log, written.asked.decision_id)
        answered = find_decision(log, written.answered.decision_id)
        refused = find_decision(log, written.refused.decision_id)
    assert isinstance(asked, LoggedAction) and isinstance(answered, LoggedAction)
    assert asked.decision == written.asked.to_json()  # the decision as stored, whole
    assert asked.hash_ok and asked.answered_by == (written.answered.decision_id,)
    assert asked.turn is not None
    assert (asked.turn.decision_id, asked.turn.account) == (written.turns[-1].turn_id, "acct-1")
    assert answered.decision["approval"]["of"] == written.asked.decision_id
    assert answered.answered_by == ()
    assert isinstance(refused, LoggedAction) and refused.turn is None
    assert refused.to_json()["outcomes"][0]["values"] == {"args.size": 7}


def test_another_tenants_decision_is_not_found_like_an_unknown_id(opener: Opener) -> None:
    written = _write(opener)
    mine = written.asked.decision_id
    with opener(read_only=True) as log:
        assert find_decision(log, mine, tenant="acme").decision_id == mine
        with pytest.raises(DecisionNotFoundError) as theirs:
            find_decision(log, mine, tenant="acme-eu")
        with pytest.raises(DecisionNotFoundError) as unknown:
            find_decision(log, "x" * len(mine), tenant="acme-eu")
        with pytest.raises(DecisionNotFoundError):
            find_decision(log, written.other.turn_id, tenant="acme")  # a turn likewise
        with pytest.raises(DecisionNotFoundError):
            find_decision(log, mine[:8])  # ids are matched whole
    assert str(theirs.value).replace(mine, "ID") == str(unknown.value).replace("x" * 32, "ID")


def _ids(opener: Opener, **where: object) -> list[str]:
    with opener(read_only=True) as log:
        found = list_decisions(log, DecisionFilter(**where))  # type: ignore[arg-type]
    return [s.decision_id for s in found.decisions]


def test_the_listing_is_newest_first_and_each_filter_narrows_it(opener: Opener) -> None:
    w = _write(opener)
    t0, t1, t2 = (t.turn_id for t in w.turns)
    asked, answered, refused = w.asked.decision_id, w.answered.decision_id, w.refused.decision_id
    assert _ids(opener) == [w.other.turn_id, refused, answered, asked, t2, t1, t0]
    assert _ids(opener, tenant="acme") == [refused, answered, asked, t2, t1, t0]  # exactly
    assert _ids(opener, tenant="acme-eu") == [w.other.turn_id]
    assert _ids(opener, session="conv-2") == [w.other.turn_id]
    # an action decision's account is its turn's: the unlinked refusal has none
    assert _ids(opener, account="acct-1") == [answered, asked, t2, t1, t0]
    assert _ids(opener, code="OK") == [answered]  # a code lists action decisions only
    assert _ids(opener, kind="turn", tenant="acme") == [t2, t1, t0]
    assert _ids(opener, since=T0 + 1, until=T0 + 4) == [asked, t2, t1]  # [since, until)
    assert _ids(opener, tenant="nobody") == []


def test_the_listing_says_when_more_match_than_its_limit(opener: Opener) -> None:
    _write(opener)
    with opener(read_only=True) as log:
        cut = list_decisions(log, DecisionFilter(limit=2))
        whole = list_decisions(log, DecisionFilter(limit=7))
    assert len(cut.decisions) == 2 and cut.more
    assert len(whole.decisions) == 7 and not whole.more
    assert cut.to_json()["filter"] == {"limit": 2} and cut.to_json()["more"] is True


def test_a_writable_log_shows_what_was_written_before_the_read(opener: Opener) -> None:
    with opener() as log:
        log.begin_run(make_run("run-1"))
        log.write(make_turn(0))
        assert find_decision(log, "run-1/m0").decision_id == "run-1/m0"  # still buffered


def test_an_edited_decision_no_longer_matches_its_hash(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    written = _write(lambda **kw: open_log(path, **kw))
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DROP TRIGGER action_decisions_no_update")
        conn.execute(
            "UPDATE action_decisions SET decision_json = replace(decision_json, '\"size\":7', "
            "'\"size\":8') WHERE decision_id = ?",
            (written.asked.decision_id,),
        )
    conn.close()
    with open_log(path, read_only=True) as log:
        edited = find_decision(log, written.asked.decision_id)
        untouched = find_decision(log, written.turns[0].turn_id)
    assert isinstance(edited, LoggedAction) and not edited.hash_ok
    assert untouched.hash_ok


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2026-12-04", 1_796_342_400.0),
        ("2026-12-04T22:30", 1_796_423_400.0),
        ("2026-12-04T22:30:00Z", 1_796_423_400.0),
        ("2026-12-04T23:30:00+01:00", 1_796_423_400.0),
        ("1796423400", 1_796_423_400.0),
        ("1796423400.5", 1_796_423_400.5),
        ("90s", 1_796_423_310.0),
        ("15m", 1_796_422_500.0),
        ("2h", 1_796_416_200.0),
        ("7d", 1_795_818_600.0),
        ("1w", 1_795_818_600.0),
    ],
)
def test_times_are_iso_unix_or_a_span_before_now(text: str, seconds: float) -> None:
    assert parse_time(text, now=1_796_423_400.0) == seconds


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01", "-5m", "", "5 parsecs"])
def test_a_time_that_is_none_of_those_names_the_option(text: str) -> None:
    with pytest.raises(ConfigError, match=r"^--since .* is not a time: give ISO 8601"):
        parse_time(text, what="--since")


def test_a_filter_that_cannot_match_is_refused() -> None:
    with pytest.raises(ConfigError, match="time range is empty"):
        DecisionFilter(since=T0 + 1, until=T0)
    with pytest.raises(ConfigError, match="limit must be from 1"):
        DecisionFilter(limit=0)
    with pytest.raises(ConfigError, match="kind 'call' is not one of"):
        DecisionFilter(kind="call")  # type: ignore[arg-type]
