"""The gate itself: fail-closed on error / missing / stale state, unknown and hidden tools,
missing arguments, CEL rules, and decisions as JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from maitred.actions import (
    ActionGate,
    DocumentState,
    Rulebook,
    Session,
    SnapshotState,
    ToolCall,
    Violation,
    cel_rule,
    policy_rule,
)
from maitred.contract import Contract, exit_predicate
from maitred.contract.predicate import StateView
from maitred.errors import ContractError
from maitred.skills import Skill
from maitred.state import Snapshot

from .builders import check


def _tool(name: str, mutates: bool, required: tuple[str, ...] = ()) -> Skill:
    schema = {"type": "object", "properties": {a: {} for a in required}, "required": list(required)}
    return Skill(name, name, kind="tool", parameters=schema, contract=Contract(mutates=mutates))


def _refund_policy(*extra: Any) -> Rulebook:
    @policy_rule(code="SHOP_REFUND_TOO_LARGE", tools=["refund"],
                 reads=["args.amount", "state.orders[args.order_id]"])  # fmt: skip
    def refund_too_large(view: StateView) -> Violation | None:
        paid = view["state.orders[args.order_id]"]["paid"]
        if view["args.amount"] > paid:
            return Violation(f"amount exceeds the {paid} paid", ("amount",))
        return None

    specs = [_tool("refund", True, ("order_id", "amount")), _tool("lookup", False)]
    return Rulebook.build("shop", specs, [refund_too_large, *extra])


DOC = {"orders": {"o1": {"paid": 40, "status": "open"}}}


def _refund(amount: Any = 10, order: str = "o1") -> ToolCall:
    return ToolCall("refund", {"order_id": order, "amount": amount})


def test_allow_and_reject_carry_code_fields_and_versions() -> None:
    gate = ActionGate(_refund_policy(), clock=lambda: 1000.0)
    ok = gate.check(_refund(), DOC)
    assert ok.allow and ok.code == "OK" and ok.versions["refund_too_large"].startswith("c1:")
    bad = gate.check(_refund(41), DOC)
    assert (bad.code, bad.fields) == ("SHOP_REFUND_TOO_LARGE", ("amount",))
    assert "amount exceeds the 40 paid" in bad.message_for_model
    assert "refund_too_large" in bad.message and bad.decision_id != ok.decision_id
    row = json.loads(json.dumps(bad.to_json()))
    assert row["code"] == "SHOP_REFUND_TOO_LARGE" and row["values_hash"].startswith("c1:")
    assert bad.tool_result()["executed"] is False


def test_predicate_error_fails_closed_and_says_so() -> None:
    gate = ActionGate(_refund_policy())
    d = gate.check(_refund("ten"), DOC)  # "ten" > 40 raises TypeError inside the rule
    assert d.reject and d.code == "PREDICATE_ERROR"
    assert "fails closed" in d.message_for_model and "TypeError" in d.message_for_model


def test_missing_state_fails_closed() -> None:
    gate = ActionGate(_refund_policy())
    d = gate.check(_refund(order="o9"), DOC)
    assert d.code == "STATE_MISSING"
    assert "state.orders[args.order_id]" in d.message and "fails closed" in d.message


def test_stale_state_fails_closed() -> None:
    policy = _refund_policy()
    tool = policy.tools["refund"]
    pred = tool.predicates[0]
    fresh_bound = type(pred.predicate)(**{**pred.predicate.__dict__, "max_age_s": 60.0})
    stale_policy = Rulebook.build(
        "shop", [tool.tool], [type(pred)(fresh_bound, pred.code, pred.tools, explain=pred.explain)]
    )
    gate = ActionGate(stale_policy, clock=lambda: 1000.0)
    old = DocumentState(DOC, key_as_of={"orders": 900.0})
    d = gate.check(_refund(), old)
    assert d.code == "STATE_STALE" and "stale state" in d.message
    assert gate.check(_refund(), DocumentState(DOC, key_as_of={"orders": 950.0})).allow


def test_unknown_tool_and_missing_arguments() -> None:
    gate = ActionGate(_refund_policy())
    d = gate.check(ToolCall("delete_everything", {}), DOC)
    assert d.code == "TOOL_UNKNOWN" and "not available in this conversation" in d.message_for_model
    d = gate.check(ToolCall("refund", {"order_id": "o1"}), DOC)
    assert (d.code, d.fields) == ("ARGS_MISSING", ("amount",))


def test_tool_not_offered_this_turn_is_rejected() -> None:
    gate = ActionGate(_refund_policy())
    d = gate.check(_refund(), DOC, offered={"lookup"})
    assert d.code == "TOOL_NOT_OFFERED"
    assert gate.check(_refund(), DOC, offered={"lookup", "refund"}).allow


def test_hidden_tool_is_rejected_by_re_evaluating_its_exit_predicates() -> None:
    @exit_predicate(reads=["account.plan"], message="refunds need a paid plan")
    def on_free_plan(state: StateView) -> bool:
        return bool(state["account.plan"] == "free")

    gate = ActionGate(_refund_policy().with_exit_predicates("refund", [on_free_plan]))
    doc = {**DOC, "account": {"plan": "free"}}
    d = gate.check(_refund(), doc)
    assert d.code == "TOOL_NOT_EXECUTABLE" and d.fired[0].predicate == "on_free_plan"
    assert gate.check(_refund(), {**DOC, "account": {"plan": "pro"}}).allow
    snap = Snapshot("acc", {"account.plan": "free", "orders": DOC["orders"]}, 0.0)
    assert gate.check(_refund(), SnapshotState(snap)).code == "TOOL_NOT_EXECUTABLE"
    assert gate.check(_refund(), snap).code == "TOOL_NOT_EXECUTABLE"


def test_cel_rule() -> None:
    closed = cel_rule(
        "state.orders[args.order_id].status != 'open'",
        name="order_closed", code="SHOP_ORDER_CLOSED", tools=["refund"],
        reads=["args.order_id", "state.orders"], message="the order is closed",
        fields=["order_id"],
    )  # fmt: skip
    gate = ActionGate(_refund_policy(closed))
    assert gate.check(_refund(), DOC).allow
    d = gate.check(_refund(), {"orders": {"o1": {"paid": 40, "status": "closed"}}})
    assert (d.code, d.fields) == ("SHOP_ORDER_CLOSED", ("order_id",))
    with pytest.raises(ContractError, match="cannot index"):
        cel_rule("true", name="x", code="X", tools=["refund"], reads=["state.o[args.id]"],
                 message="")  # fmt: skip


def test_fail_open_predicates_are_refused_on_mutating_tools() -> None:
    lax = cel_rule("false", name="lax", code="LAX", tools=["refund"], reads=["args.amount"],
                   message="")  # fmt: skip
    open_pred = type(lax.predicate)(**{**lax.predicate.__dict__, "on_missing": "offer"})
    with pytest.raises(ContractError, match="fail closed"):
        _refund_policy(type(lax)(open_pred, "LAX", ("refund",)))


def test_declaration_errors_name_the_fix() -> None:
    with pytest.raises(ContractError, match="UPPER_SNAKE_CASE"):
        cel_rule("true", name="x", code="bad code", tools=["t"], reads=["args.a"], message="")
    with pytest.raises(ContractError, match="choose one of"):
        rule = cel_rule("true", name="x", code="X", tools=["t"], reads=["args.a"], message="")
        Rulebook.build("p", [_tool("u", True)], [rule])


def test_the_gate_does_not_change_state_or_session(gate: ActionGate, db: Any) -> None:
    before = json.dumps(db, sort_keys=True)
    s = Session()
    s.mark_read("get_reservation_details", "BIZ")
    reads_before = dict(s.read)
    check(gate, db, "cancel_reservation", s, reservation_id="BIZ")
    assert json.dumps(db, sort_keys=True) == before and s.read == reads_before
