"""Arguments are checked against the tool's JSON schema before any policy runs."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from maitred.actions import ActionGate, Session, ToolCall
from maitred.actions.arguments import ArgumentChecker
from maitred.actions.packs import tau2_airline
from maitred.errors import ContractError

SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string"},
        "count": {"type": "integer", "minimum": 1, "maximum": 5},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                "required": ["sku"],
            },
        },
    },
    "required": ["order_id", "count"],
}


def _check(**args: Any) -> tuple[str, tuple[str, ...], str] | None:
    found = ArgumentChecker("t", SCHEMA).check(args)
    return None if found is None else (found.code, found.fields, found.message)


def test_valid_arguments_pass() -> None:
    assert _check(order_id="o1", count=2, mode="fast", items=[{"sku": "a", "qty": 1}]) is None


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"order_id": "o1", "count": 2.5}, "count"),
        ({"order_id": "o1", "count": 2.0}, "count"),  # a float is not an integer here
        ({"order_id": "o1", "count": "2"}, "count"),
        ({"order_id": "o1", "count": True}, "count"),
        ({"order_id": "o1", "count": 9}, "count"),
        ({"order_id": "o1", "count": 0}, "count"),
        ({"order_id": "o1", "count": 1, "mode": "warp"}, "mode"),
        ({"order_id": "o1", "count": 1, "items": [{"sku": 3}]}, "items[0].sku"),
    ],
)
def test_wrong_values_are_args_invalid_and_name_the_field(args: dict[str, Any], field: str) -> None:
    found = _check(**args)
    assert found is not None and found[0] == "ARGS_INVALID" and found[1] == (field,)


def test_unknown_argument_is_refused_unless_the_schema_allows_it() -> None:
    found = _check(order_id="o1", count=1, colour="red")
    assert found is not None and found[:2] == ("ARGS_INVALID", ("colour",))
    assert "unknown argument(s) colour" in found[2] and "order_id" in found[2]
    lax = ArgumentChecker("t", {**SCHEMA, "additionalProperties": True})
    assert lax.check({"order_id": "o1", "count": 1, "colour": "red"}) is None


def test_missing_required_comes_first_with_its_own_code() -> None:
    found = _check(count="x")
    assert found is not None and found[0] == "ARGS_MISSING" and found[1] == ("order_id",)
    nested = _check(order_id="o", count=1, items=[{"qty": 1}])
    assert nested is not None and nested[:2] == ("ARGS_MISSING", ("items[0].sku",))


def test_an_invalid_schema_is_a_contract_error() -> None:
    with pytest.raises(ContractError, match=r"tool 'bad'.*not valid JSON Schema"):
        ArgumentChecker("bad", {"type": "object", "properties": {"a": {"type": "wat"}}})


def test_an_invalid_schema_is_refused_for_every_tool_that_gives_it() -> None:
    bad = {"type": "object", "properties": {"a": {"type": "wat"}}}
    for tool in ("first", "second"):  # a refusal is not kept: each tool is named in its own
        with pytest.raises(ContractError, match=rf"tool '{tool}'"):
            ArgumentChecker(tool, bad)


def test_tools_that_give_one_schema_share_one_compiled_validator() -> None:
    first = ArgumentChecker("a", SCHEMA)
    # the same schema, its keys in another order and in a copy of its own
    reordered = dict(reversed(list(copy.deepcopy(SCHEMA).items())))
    second = ArgumentChecker("b", reordered)
    assert second._validator is first._validator and second.tool == "b"
    other = ArgumentChecker("c", {**SCHEMA, "required": ["order_id"]})
    assert other._validator is not first._validator
    assert other.check({"order_id": "o1"}) is None
    assert first.check({"order_id": "o1"}) is not None  # each keeps its own schema's meaning


def test_a_shared_validator_does_not_see_a_later_change_to_the_schema_given() -> None:
    schema = copy.deepcopy(SCHEMA)
    checker = ArgumentChecker("t", schema)
    schema["properties"]["count"]["maximum"] = 100  # the caller's dict, changed afterwards
    found = checker.check({"order_id": "o1", "count": 50})
    assert found is not None and (found.code, found.fields) == ("ARGS_INVALID", ("count",))
    assert ArgumentChecker("u", schema).check({"order_id": "o1", "count": 50}) is None


def test_a_schema_that_is_not_plain_json_is_compiled_for_its_tool_alone() -> None:
    # an annotation keyed by a number (YAML allows it); JSON text would make the key "1"
    numbered = {**SCHEMA, "x-notes": {1: "the first"}}
    checker = ArgumentChecker("t", numbered)
    assert checker._validator is not ArgumentChecker("u", numbered)._validator
    found = checker.check({"count": 1})
    assert found is not None and (found.code, found.fields) == ("ARGS_MISSING", ("order_id",))


def test_the_airline_gate_rejects_wrong_types_and_extra_arguments(db: Any) -> None:
    gate = tau2_airline.make_gate()
    session = Session()
    session.mark_read("get_reservation_details", "ECO")
    call = ToolCall(
        "update_reservation_baggages",
        {"reservation_id": "ECO", "total_baggages": 1.5, "nonfree_baggages": 0, "payment_id": "x"},
    )
    d = gate.check(call, db, session)
    assert (d.verdict, d.code, d.fields) == ("reject", "ARGS_INVALID", ("total_baggages",))
    assert "executed" in d.tool_result() and "not executed" in d.message_for_model
    extra = ToolCall("cancel_reservation", {"reservation_id": "ECO", "force": True})
    d = gate.check(extra, db, session)
    assert (d.code, d.fields) == ("ARGS_INVALID", ("force",))


def test_calculate_is_a_known_read_only_airline_tool(db: Any) -> None:
    gate: ActionGate = tau2_airline.make_gate()
    d = gate.check(ToolCall("calculate", {"expression": "2 * (3 + 4)"}), db, Session())
    assert d.allow and not d.mutates
