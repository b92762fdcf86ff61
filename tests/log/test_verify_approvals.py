"""``verify`` and approvals: a decision made with a person's answer names the decision that
asked, and that decision must be a pending ``APPROVAL_REQUIRED`` on the same call (both
backends)."""

from __future__ import annotations

from maitred.actions.model import Approval, Decision, ToolCall
from maitred.log.verify import verify

from .builders import Opener

CALL = ToolCall("refund", {"order_id": "o1", "amount": 200}, id="call-1")


def _asked(call: ToolCall = CALL, session: str = "conv-1") -> Decision:
    return Decision(
        call,
        "reject",
        "APPROVAL_REQUIRED",
        now=1.0,
        session_id=session,
        approval_message="Refunds over 100 need a person's yes.",
    )


def _answered(of: str, *, answer: str = "approve", verdict: str = "allow") -> Decision:
    code = "OK" if verdict == "allow" else "APPROVAL_DECLINED"
    approval = Approval(of, answer, "mcp-elicitation")  # type: ignore[arg-type]
    return Decision(CALL, verdict, code, now=2.0, session_id="conv-1", approval=approval)  # type: ignore[arg-type]


def test_a_yes_linked_to_its_question_verifies(opener: Opener) -> None:
    asked = _asked()
    with opener() as log:
        log.write_decisions([asked, _answered(asked.decision_id)])
        log.write_decisions([_answered(asked.decision_id, answer="decline", verdict="reject")])
        log.flush()
        report = verify(log)
    assert report.ok, report.mismatches
    assert report.decisions == 3


def test_an_answer_without_a_matching_question_is_reported(opener: Opener) -> None:
    allowed = Decision(CALL, "allow", now=1.0, session_id="conv-1")
    other_call = _asked(ToolCall("refund", {"order_id": "o1", "amount": 9000}, id="call-1"))
    other_session = _asked(session="conv-2")
    asked = _asked()
    answers = [
        _answered("no-such-decision"),
        _answered(allowed.decision_id),  # answers a decision that asked nothing
        _answered(other_call.decision_id),  # a yes to one call lets another run
        _answered(other_session.decision_id),
        _answered(asked.decision_id, answer="decline"),  # allowed on a no
    ]
    with opener() as log:
        log.write_decisions([allowed, other_call, other_session, asked, *answers])
        log.flush()
        report = verify(log)
    kinds = [m.kind for m in report.mismatches]
    assert kinds == ["approval_link"] * 5
    by_key = {m.key: m.detail for m in report.mismatches}
    assert "not in the log" in by_key[answers[0].decision_id]
    assert "not a pending APPROVAL_REQUIRED" in by_key[answers[1].decision_id]
    assert "another session, tenant or call" in by_key[answers[2].decision_id]
    assert "another session, tenant or call" in by_key[answers[3].decision_id]
    assert "not a yes" in by_key[answers[4].decision_id]
