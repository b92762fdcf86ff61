"""The refusals' one home (:mod:`maitred.actions.refusals`): one template for the model's words,
one payload, named constructors, and the gate's way to log a refusal its adapter made."""

from __future__ import annotations

import json
from pathlib import Path

from maitred import Maitred
from maitred.actions import ActionGate, Rulebook, ToolCall, cel_rule
from maitred.actions.model import Decision, Hold, Rejection
from maitred.actions.refusals import (
    NOTHING_READ,
    auth_required,
    decided,
    gate_unavailable,
    invalid_arguments,
    rate_limited,
    refusal_text,
    upstream_failed,
)
from maitred.actions.sink import MemorySink
from maitred.contract import Contract
from maitred.errors import LogError
from maitred.log.base import open_log
from maitred.log.verify import verify
from maitred.skills import Skill


def test_the_template_reads_as_one_sentence_each() -> None:
    assert refusal_text("X", "the order is closed") == (
        "Rejected (X): the order is closed. The call was not executed and nothing was changed; "
        "re-plan with the user."
    )
    assert refusal_text("X", "gone", undone=NOTHING_READ, then="", lead="Failed") == (
        "Failed (X): gone. Nothing was read."
    )


def test_a_why_that_ends_a_sentence_gets_no_second_full_stop() -> None:
    """The known bug: a policy message ending in "." gave ".." in the refusal."""
    for why in ("Refunds need a paid plan.", "Refunds need a paid plan. ", "Really?"):
        text = refusal_text("X", why, undone="Nothing was done.", then="ask again.")
        assert ".." not in text and "?." not in text
        assert text.endswith("Nothing was done; ask again.")


def test_a_policy_message_ending_in_a_full_stop_reaches_the_model_without_two() -> None:
    tools = [Skill("refund", "Refund.", kind="tool", contract=Contract(mutates=True))]
    rule = cel_rule(
        "args.amount > 100", name="too_much", code="SHOP_TOO_MUCH", tools=["refund"],
        reads=["args.amount"], message="Refunds over 100 need a manager.",
    )  # fmt: skip
    gate = ActionGate(Rulebook.build("shop", tools, [rule]))
    refused = gate.check(ToolCall("refund", {"amount": 200}), {})
    assert refused.code == "SHOP_TOO_MUCH"
    assert "need a manager. The call was not executed" in refused.message_for_model
    assert ".." not in refused.message_for_model


def test_each_constructor_keeps_the_payload_clients_read() -> None:
    down = gate_unavailable(LogError("disk full"), undone="The call was not executed")
    assert down.to_json() == {
        "error": "gate_unavailable",
        "code": "GATE_UNAVAILABLE",
        "message": "Rejected (GATE_UNAVAILABLE): the gateway could not decide or record this "
        "call (LogError: disk full). The call was not executed; try again later.",
        "fields": [],
        "decision_id": "",
        "executed": False,
    }
    failed = upstream_failed("shop", "refund", TimeoutError("late"), "d-1").to_json()
    assert (failed["code"], failed["decision_id"], failed["upstream"]) == (
        "UPSTREAM_FAILED",
        "d-1",
        "shop",
    )
    assert "executed" not in failed and failed["message"].startswith("Failed (UPSTREAM_FAILED)")
    auth = auth_required(NOTHING_READ).to_json()
    assert (auth["error"], auth["decision_id"]) == ("auth_required", "")
    assert "Nothing was read; connect with the bearer token" in auth["message"]
    limited = rate_limited("RATE_LIMITED", "wait 3 s and try again", 3).to_json()
    assert limited["retry_after_s"] == 3 and limited["error"] == "rate_limited"


def test_a_decision_s_rejection_is_the_decided_one() -> None:
    decision = Decision(ToolCall("x"), "reject", "X", "people", "model", ("a",), retry_after_s=2)
    assert (
        decision.rejection()
        == decided(decision)
        == Rejection("X", "model", ("a",), decision.decision_id, retry_after_s=2)
    )
    assert decided(decision, hint="call find_tools").to_json()["hint"] == "call find_tools"
    assert "hint" not in decision.tool_result() and "upstream" not in decision.tool_result()


def test_the_gate_logs_a_refusal_its_adapter_made_for_any_name() -> None:
    sink = MemorySink()
    tools = [Skill("read", "Read.", kind="tool", contract=Contract(mutates=False))]
    gate = ActionGate(Rulebook.build("shop", tools, []), clock=lambda: 5.0, log=sink)
    hold = invalid_arguments("argument 'q' holds a NUL", ("q",), reason="arguments withheld")
    known = gate.refuse(ToolCall("read"), hold)
    unknown = gate.refuse(ToolCall("find_tools"), hold, mutates=False)
    stranger = gate.refuse(ToolCall("nope"), Hold("TOOL_UNKNOWN", "no such tool"))
    assert [d.code for d in sink.decisions] == ["ARGS_INVALID", "ARGS_INVALID", "TOOL_UNKNOWN"]
    assert (known.mutates, unknown.mutates, stranger.mutates) == (False, False, True)
    assert known.fields == ("q",) and known.now == 5.0 and known.call.id.startswith("call-")
    assert "arguments withheld" in known.message
    assert known.message_for_model.startswith("Rejected (ARGS_INVALID): argument 'q' holds")


def test_the_engine_logs_a_refusal_with_the_session_and_its_turn(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(
        json.dumps([{"name": "read", "description": "Read a record."}]), encoding="utf-8"
    )
    (tmp_path / "accounts.json").write_text('{"acc-1": {}}', encoding="utf-8")
    log = str(tmp_path / "log.sqlite")
    with Maitred.open(
        [str(tmp_path / "tools.json")], str(tmp_path / "accounts.json"), log=log
    ) as engine:
        session = engine.session("acc-1")
        turn = engine.turn("read a record", session=session)
        refused = engine.refuse(
            ToolCall("read", {}), invalid_arguments("argument 'x' is nan"), session=session
        )
    with open_log(log, read_only=True) as opened:
        rows = {r["decision_id"]: r for r in opened.iter_action_decisions()}
        assert verify(opened).ok
    row = rows[refused.decision_id]  # what `maitred log show <id>` reads
    assert (row["code"], row["session_id"]) == ("ARGS_INVALID", session.id)
    assert row["turn_id"] == turn.turn_id and turn.turn_id


def test_a_refusal_s_error_names_its_kind_not_always_policy() -> None:
    """One word per idea (issue 34): a tool that was not offered is no policy's refusal."""
    kind = {
        code: decided(Decision(ToolCall("x"), "reject", code, "people", "model")).error
        for code in ("TOOL_NOT_OFFERED", "ARGS_INVALID", "STATE_STALE", "SHOP_MUST_READ_CART")
    }
    assert kind == {
        "TOOL_NOT_OFFERED": "not_offered",
        "ARGS_INVALID": "invalid_arguments",
        "STATE_STALE": "state_unavailable",
        "SHOP_MUST_READ_CART": "rejected_by_policy",
    }
    assert auth_required().error == "auth_required"  # an adapter's own kind is kept
