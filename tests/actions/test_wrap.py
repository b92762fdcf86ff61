"""Wrappers: a rejected call never reaches the tool and comes back as the tool result."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from maitred.actions import ActionGate, GatedRegistry, Session, gate_tool
from maitred.lab.sim.airline import AirlineSim


def _registry(gate: ActionGate, db: Any, **kw: Any) -> tuple[GatedRegistry, list[str]]:
    sim, ran = AirlineSim(db), []

    def tracked(name: str) -> Any:
        def run(**args: Any) -> Any:
            ran.append(name)
            return sim.tools[name](**args)

        return run

    tools = {name: tracked(name) for name in sim.tools}
    return GatedRegistry(tools, gate, lambda: db, Session(), **kw), ran


def test_registry_blocks_then_allows_after_a_read(gate: ActionGate, db: Any) -> None:
    reg, ran = _registry(gate, db)
    out = reg.call("cancel_reservation", {"reservation_id": "BIZ"})
    assert out.decision.code == "AIRLINE_MUST_READ_RESERVATION" and ran == []
    assert out.content()["executed"] is False
    assert reg.call("get_reservation_details", {"reservation_id": "BIZ"}).ran
    assert reg.call("cancel_reservation", {"reservation_id": "BIZ"}).ran
    assert ran == ["get_reservation_details", "cancel_reservation"]
    assert db["reservations"]["BIZ"]["status"] == "cancelled"
    assert len(reg.decisions) == 3


def test_failed_read_is_not_recorded(gate: ActionGate, db: Any) -> None:
    reg, _ = _registry(gate, db)
    assert reg.call("get_reservation_details", {"reservation_id": "NOPE"}).error
    assert not reg.session.has_read("get_reservation_details", "NOPE")


def test_unknown_or_unoffered_tools_never_run(gate: ActionGate, db: Any) -> None:
    reg, ran = _registry(gate, db, offered={"get_reservation_details"})
    assert reg.call("drop_tables", {}).decision.code == "TOOL_UNKNOWN"
    assert reg.call("get_user_details", {"user_id": "reg"}).decision.code == "TOOL_NOT_OFFERED"
    assert ran == []


def test_openai_loop_helper(gate: ActionGate, db: Any) -> None:
    reg, ran = _registry(gate, db)
    calls = [
        {"id": "c1", "function": {"name": "cancel_reservation",
                                  "arguments": json.dumps({"reservation_id": "ECO"})}},
        SimpleNamespace(id="c2", function=SimpleNamespace(name="get_user_details",
                                                          arguments='{"user_id": "gold"}')),
        {"id": "c3", "function": {"name": "get_user_details", "arguments": "not json"}},
    ]  # fmt: skip
    msgs = reg.openai_tool_messages(calls)
    assert [m["tool_call_id"] for m in msgs] == ["c1", "c2", "c3"]
    assert json.loads(msgs[0]["content"])["code"] == "AIRLINE_MUST_READ_RESERVATION"
    assert json.loads(msgs[1]["content"])["membership"] == "gold"
    refused = json.loads(msgs[2]["content"])  # refused like any call, and recorded
    assert refused["code"] == "ARGS_INVALID" and "not a JSON object" in refused["message"]
    assert refused["executed"] is False and "not json" not in msgs[2]["content"]
    assert refused["decision_id"] == reg.decisions[-1].decision_id != ""
    assert reg.decisions[-1].call.arguments == {}  # withheld
    assert ran == ["get_user_details"]


def test_anthropic_loop_helper(gate: ActionGate, db: Any) -> None:
    reg, _ = _registry(gate, db)
    blocks = [
        {"type": "text", "text": "let me cancel"},
        {"type": "tool_use", "id": "t1", "name": "cancel_reservation",
         "input": {"reservation_id": "ECO"}},
    ]  # fmt: skip
    (result,) = reg.anthropic_tool_results(blocks)
    assert result["tool_use_id"] == "t1" and result["is_error"] is True
    assert "AIRLINE_MUST_READ_RESERVATION" in result["content"]
    odd = [{"type": "tool_use", "id": "t2", "name": "get_user_details", "input": ["gold"]}]
    (refused,) = reg.anthropic_tool_results(odd)  # was a ValueError from dict(["gold"])
    assert refused["is_error"] is True and json.loads(refused["content"])["code"] == "ARGS_INVALID"


def test_gate_tool_wraps_a_plain_function(gate: ActionGate, db: Any) -> None:
    sim, session = AirlineSim(db), Session()
    cancel = gate_tool(sim.cancel_reservation, gate, lambda: db, session)
    read = gate_tool(sim.get_reservation_details, gate, lambda: db, session)
    assert cancel(reservation_id="ECO")["code"] == "AIRLINE_MUST_READ_RESERVATION"
    read(reservation_id="ECO")
    assert cancel(reservation_id="ECO")["code"] == "AIRLINE_CANCEL_NOT_ELIGIBLE"
    assert "status" not in db["reservations"]["ECO"]
