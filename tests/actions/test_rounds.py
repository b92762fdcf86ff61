"""Rounds a client carries (:mod:`maitred.actions.rounds`): a pending decision rebuilt from what
its sealed question named is answered like the original, in a second engine on the same log
(another replica), and a round is spent once -- in the log, or without one in the process."""

from __future__ import annotations

import json
from pathlib import Path

from tests.actions.test_approval import _engine

from maitred.actions.rounds import SpentStates, asked
from maitred.log import open_log
from maitred.log.verify import verify


def test_a_question_answered_on_another_engine_of_the_log_verifies(tmp_path: Path) -> None:
    with _engine(tmp_path) as here:
        session = here.session("acc-1", id="holder-1")
        session.offer(["refund"])
        question = here.check(
            {"name": "refund", "arguments": {"order_id": "o1", "amount": 200}}, session=session
        )
        assert question.code == "APPROVAL_REQUIRED"
    with _engine(tmp_path) as there:  # another process on the same log
        session = there.session("acc-1", id="holder-1")
        session.offer(["refund"])
        pending = asked(
            question.decision_id,
            "refund",
            {"order_id": "o1", "amount": 200},
            call_id=question.call.id,
            session_id="holder-1",
            tenant="",
        )
        allowed = there.approve(pending, "approve", session=session, via="mcp-elicitation")
        assert allowed.allow and allowed.call == question.call
        assert there.spend(f"approval:{question.decision_id}", session=session, expires_at=9e9)
    with _engine(tmp_path) as third:
        session = third.session("acc-1", id="holder-1")
        assert not third.spend(f"approval:{question.decision_id}", session=session, expires_at=9e9)
    with open_log(str(tmp_path / "log.sqlite"), read_only=True) as log:
        rows = [json.loads(r["decision_json"]) for r in log.iter_action_decisions()]
        report = verify(log)
    assert report.ok, report.mismatches  # the answer names its question: approval_link holds
    assert [r["code"] for r in rows if "approval" in r] == ["OK"]


def test_without_a_log_a_round_is_spent_once_in_the_process() -> None:
    one, other = SpentStates(None), SpentStates(None)  # two engines of one process
    assert one.spend("round:a", tenant="t", session_id="s", expires_at=9e9)
    assert not other.spend("round:a", tenant="t", session_id="s", expires_at=9e9)
    assert other.spend("round:b", tenant="t", session_id="s", expires_at=9e9)
