"""Approval by a person: the sidecar's ``approve`` rules, the gate's verdict, the engine's
second decision, and what the library answers (the HTTP service: tests/serve/test_approval.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from maitred import Maitred
from maitred.actions import ActionGate, Approval, Rulebook, Session, ToolCall, cel_rule
from maitred.build import PipelineOptions
from maitred.errors import ConfigError, ContractError
from maitred.log import open_log
from maitred.log.verify import verify
from maitred.skills import load_catalog

TOOLS = {
    "tools": [
        {
            "name": "refund",
            "description": "Refund part of an order.",
            "inputSchema": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
                "required": ["order_id", "amount"],
            },
        },
        {
            "name": "close_account",
            "description": "Close the account for good.",
            "inputSchema": {"type": "object", "properties": {}},
        },
    ]
}

SIDECAR = """
tools:
  refund:
    mutates: true
    policies:
      - name: refund_too_large
        expr: args.amount > state.orders[args.order_id].paid
        code: SHOP_REFUND_TOO_LARGE
        reads: [args.amount, args.order_id, state.orders]
        message: The refund is larger than what was paid.
      - name: large_refund_needs_a_yes
        approve: args.amount > 100
        reads: [args.amount]
        message: Refunds over 100 need a person's yes.
  close_account:
    mutates: true
    policies:
      - name: always_ask
        approve: true
"""

STATE = {"acc-1": {"orders": {"o1": {"paid": 500}}}}


def _write(tmp_path: Path, sidecar: str = SIDECAR) -> Path:
    path = tmp_path / "shop.json"
    path.write_text(json.dumps(TOOLS), encoding="utf-8")
    (tmp_path / "shop.maitred.yaml").write_text(sidecar, encoding="utf-8")
    return path


def _gate(tmp_path: Path) -> ActionGate:
    return ActionGate(Rulebook.from_catalog(load_catalog([_write(tmp_path)]), "shop"))


def test_an_approve_entry_is_an_approval_rule(tmp_path: Path) -> None:
    catalog = load_catalog([_write(tmp_path)])
    rule = catalog["refund"].contract.policies[1]
    assert (rule.approval, rule.code, rule.reads) == (True, "APPROVAL_REQUIRED", ("args.amount",))
    assert rule.message == "Refunds over 100 need a person's yes."
    [always] = catalog["close_account"].contract.policies
    # asked about every call, it reads the call's arguments: the log keeps what was approved
    assert always.approval and always.reads == ("args",) and "approve" in always.message


def test_the_gate_asks_only_when_the_condition_holds_and_every_other_rule_passed(
    tmp_path: Path,
) -> None:
    gate = _gate(tmp_path)
    doc = STATE["acc-1"]
    small = gate.check(ToolCall("refund", {"order_id": "o1", "amount": 50}), doc, Session())
    assert small.allow and small.approval_message == ""
    large = gate.check(ToolCall("refund", {"order_id": "o1", "amount": 200}), doc, Session())
    assert (large.verdict, large.code) == ("reject", "APPROVAL_REQUIRED")
    assert large.approval_message == "Refunds over 100 need a person's yes."
    assert "not executed" in large.message_for_model
    assert large.tool_result()["code"] == "APPROVAL_REQUIRED"
    assert large.to_json()["approval_message"] == large.approval_message
    # a call another rule refuses is refused by it: nobody is asked about it
    too_much = gate.check(ToolCall("refund", {"order_id": "o1", "amount": 900}), doc, Session())
    assert too_much.code == "SHOP_REFUND_TOO_LARGE" and too_much.approval_message == ""
    always = gate.check(ToolCall("close_account", {}), {}, Session())
    assert always.code == "APPROVAL_REQUIRED"


def test_a_yes_re_decides_the_call_and_a_no_refuses_it(tmp_path: Path) -> None:
    gate = _gate(tmp_path)
    doc = STATE["acc-1"]
    call = ToolCall("refund", {"order_id": "o1", "amount": 200}, id="c-1")
    asked = gate.check(call, doc, Session())
    yes = Approval(asked.decision_id, "approve", "test")
    allowed = gate.check(call, doc, Session(), approval=yes)
    assert allowed.allow and allowed.approval == yes
    assert allowed.to_json()["approval"] == {
        "of": asked.decision_id,
        "answer": "approve",
        "via": "test",
    }
    # the state changed while the person read the question: the yes does not override a rule
    shrunk = {"orders": {"o1": {"paid": 150}}}
    refused = gate.check(call, shrunk, Session(), approval=yes)
    assert refused.code == "SHOP_REFUND_TOO_LARGE" and refused.approval == yes
    for answer in ("decline", "cancel"):
        no = gate.check(call, doc, Session(), approval=Approval(asked.decision_id, answer))  # type: ignore[arg-type]
        assert (no.verdict, no.code) == ("reject", "APPROVAL_DECLINED")
        assert no.approval is not None and no.approval.answer == answer


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("approve: false", r"`approve` must be true or a CEL condition"),
        ("approve: true\n        code: SHOP_X", r"approval rule takes no `code`"),
        ("approve: args.amount > 1", r"`approve` condition needs `reads`"),
        ("approve: true\n        expr: args.amount > 1", r"exactly one of `expr`"),
        ("approve: args.amount >\n        reads: [args.amount]", r"shop.maitred.yaml:7"),
    ],
)
def test_a_bad_approve_entry_names_the_file_line_and_field(
    tmp_path: Path, entry: str, message: str
) -> None:
    sidecar = f"""
tools:
  refund:
    mutates: true
    policies:
      - name: ask
        {entry}
"""
    with pytest.raises(ContractError, match=message) as caught:
        load_catalog([_write(tmp_path, sidecar)], strict=True)
    assert "shop.maitred.yaml" in str(caught.value)


def test_an_approval_condition_is_type_checked_like_every_predicate(tmp_path: Path) -> None:
    sidecar = """
tools:
  refund:
    mutates: true
    policies:
      - name: ask_when_frozen
        approve: state.billing.frozen == "yes"
        reads: [state.billing.frozen]
"""
    db = tmp_path / "state.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE billing (account_id TEXT, frozen INTEGER)")
    conn.close()
    with pytest.raises(
        ConfigError, match=r"shop\.maitred\.yaml:7.*ask_when_frozen.*\(int, string\)"
    ):
        Maitred.open(
            [_write(tmp_path, sidecar)],
            f"sqlite:///{db}",
            PipelineOptions(method="bm25"),
            tables={"billing": "billing"},
        )


def test_the_approval_codes_belong_to_approval_rules() -> None:
    with pytest.raises(ContractError, match="kept for approval by a person"):
        cel_rule("true", name="sneaky", code="APPROVAL_REQUIRED", reads=["args"], message="")
    with pytest.raises(ContractError, match="approval rule's code is APPROVAL_REQUIRED"):
        cel_rule("true", name="odd", code="SHOP_ODD", reads=["args"], message="", approval=True)


def _engine(tmp_path: Path) -> Maitred:
    (tmp_path / "accounts.json").write_text(json.dumps(STATE), encoding="utf-8")
    options = PipelineOptions(method="bm25", top_k=2, min_score=-1.0)
    log = str(tmp_path / "log.sqlite")
    return Maitred.open([_write(tmp_path)], str(tmp_path / "accounts.json"), options, log=log)


def test_the_engine_logs_the_question_and_the_answer_linked_and_verified(tmp_path: Path) -> None:
    with _engine(tmp_path) as engine:
        session = engine.session("acc-1")
        session.offer(["refund", "close_account"])
        call = {"name": "refund", "arguments": {"order_id": "o1", "amount": 200}}
        asked = engine.check(call, session=session)
        assert asked.code == "APPROVAL_REQUIRED"
        allowed = engine.approve(asked, "approve", session=session, via="phone")
        assert allowed.allow and allowed.call == asked.call
        with pytest.raises(ConfigError, match="not a pending APPROVAL_REQUIRED"):
            engine.approve(allowed, "approve", session=session)
        declined = engine.approve(
            engine.check({"name": "close_account", "arguments": {}}, session=session),
            "decline",
            session=session,
        )
        assert declined.code == "APPROVAL_DECLINED"
    with open_log(str(tmp_path / "log.sqlite"), read_only=True) as log:
        rows = [json.loads(r["decision_json"]) for r in log.iter_action_decisions()]
        report = verify(log)
    by_id = {r["decision_id"]: r for r in rows}
    assert sorted(r["code"] for r in rows) == sorted(
        ["APPROVAL_REQUIRED", "OK", "APPROVAL_REQUIRED", "APPROVAL_DECLINED"]
    )
    assert by_id[allowed.decision_id]["approval"] == {
        "of": asked.decision_id,
        "answer": "approve",
        "via": "phone",
    }
    assert by_id[asked.decision_id]["approval_message"] == "Refunds over 100 need a person's yes."
    asked_no = by_id[declined.approval.of]  # type: ignore[union-attr]
    assert asked_no["code"] == "APPROVAL_REQUIRED" and asked_no["call"]["name"] == "close_account"
    assert report.ok, report.mismatches
