"""The one model-facing rejection: what the model is told never reveals the catalog.

A rejected call gives the model a :class:`~maitred.actions.model.Rejection` (code, message,
fields, decision id). Its message must never name a tool the conversation was not offered: not
an unknown name's "the tools are: ..." list, not the hidden tool the model guessed.
"""

from __future__ import annotations

from typing import Any

from maitred.actions import ActionGate, Decision, Rulebook, ToolCall
from maitred.actions.sink import MemorySink
from maitred.contract import CelPredicate, Contract
from maitred.skills import Skill

HIDDEN = "wire_money_offshore"
SHOWN = "lookup_order"
FROZEN = CelPredicate("account.frozen", "account_frozen", ("account.frozen",))


def _policy() -> Rulebook:
    tools = [
        Skill(SHOWN, "Look an order up.", kind="tool", contract=Contract()),
        Skill(
            HIDDEN,
            "Move money.",
            kind="tool",
            contract=Contract(mutates=True, exit_predicates=(FROZEN,)),
        ),
        Skill("close_account", "Close it.", kind="tool", contract=Contract(mutates=True)),
    ]
    return Rulebook.build("bank", tools, [])


STATE: dict[str, Any] = {"account": {"frozen": True}}


def _model_text(decision: Decision) -> str:
    return f"{decision.message_for_model} {decision.tool_result()}"


def test_tool_unknown_does_not_list_the_catalog() -> None:
    d = ActionGate(_policy()).check(ToolCall("drop_tables", {}), STATE, offered={SHOWN})
    assert d.code == "TOOL_UNKNOWN"
    text = _model_text(d)
    for name in (HIDDEN, "close_account", SHOWN, "drop_tables"):
        assert name not in text
    assert "not available in this conversation" in d.message_for_model


def test_a_tool_not_offered_is_not_named_to_the_model() -> None:
    d = ActionGate(_policy()).check(ToolCall(HIDDEN, {}), STATE, offered={SHOWN})
    assert d.code == "TOOL_NOT_OFFERED"
    assert HIDDEN not in _model_text(d)
    assert HIDDEN in d.message  # people, reading the log, still see which tool it was


def test_a_hidden_tool_named_anyway_is_not_named_back() -> None:
    d = ActionGate(_policy()).check(ToolCall(HIDDEN, {}), STATE)
    assert d.code == "TOOL_NOT_EXECUTABLE"
    assert HIDDEN not in _model_text(d)


def test_every_rejection_carries_its_decision_id() -> None:
    d = ActionGate(_policy()).check(ToolCall("drop_tables", {}), STATE)
    result = d.tool_result()
    assert result["decision_id"] == d.decision_id != ""
    assert result["executed"] is False and result["code"] == "TOOL_UNKNOWN"
    rejection = d.rejection()
    assert (rejection.code, rejection.decision_id) == (d.code, d.decision_id)


def test_a_logged_call_never_has_an_empty_id() -> None:
    sink = MemorySink()
    gate = ActionGate(_policy(), log=sink)
    given = gate.check(ToolCall(SHOWN, {}, id="toolu_9"), STATE)
    made = gate.check(ToolCall(SHOWN, {}), STATE)
    assert [d.to_json()["call"]["id"] for d in sink.decisions] == ["toolu_9", made.call.id]
    assert given.call.id == "toolu_9" and made.call.id.startswith("call-")
