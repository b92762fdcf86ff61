"""``call_tool``'s rule (:func:`maitred.conversation.finding.unwrap`), as properties.

A ``call_tool`` call stands for exactly the call it names (the target's name and arguments,
unchanged); any other call is left alone; a wrapper that names no call is refused naming the
field at fault, with the code a direct call would get. The gateway-level sameness of the two
decisions is ``tests/mcp/test_call_tool_sameness.py``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from maitred.actions.model import Hold
from maitred.conversation.finding import CALL_TOOL, CALL_TOOL_SCHEMA, unwrap

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
ARGUMENTS = st.dictionaries(st.text(max_size=8), JSON, max_size=4)
NAMES = st.text(min_size=1, max_size=20)


@given(name=NAMES, arguments=ARGUMENTS)
def test_a_call_tool_call_is_the_call_it_names(name: str, arguments: dict[str, Any]) -> None:
    if name == CALL_TOOL:
        return
    assert unwrap(CALL_TOOL, {"name": name, "arguments": arguments}, CALL_TOOL) == (
        name,
        arguments,
    )
    assert unwrap(CALL_TOOL, {"name": name}, CALL_TOOL) == (name, {})  # no arguments: none


@given(name=NAMES, arguments=ARGUMENTS, call_tool=st.sampled_from([CALL_TOOL, "run_found", ""]))
def test_any_other_call_is_left_alone(name: str, arguments: dict[str, Any], call_tool: str) -> None:
    if call_tool and name == call_tool:
        return
    assert unwrap(name, arguments, call_tool) is None


@given(wrapper=ARGUMENTS)
def test_a_wrapper_is_the_call_or_a_refusal_naming_its_field(wrapper: dict[str, Any]) -> None:
    found = unwrap(CALL_TOOL, wrapper, CALL_TOOL)
    if isinstance(found, Hold):
        assert found.fields and all(
            f in CALL_TOOL_SCHEMA["properties"] or f in wrapper for f in found.fields
        )
        assert found.code in ("ARGS_MISSING", "ARGS_INVALID", "TOOL_UNKNOWN")
        assert "'name'" in found.message_for_model
        return
    assert found is not None
    name, arguments = found
    assert set(wrapper) <= {"name", "arguments"}
    assert name == wrapper["name"] and name != CALL_TOOL
    assert arguments == (wrapper.get("arguments") or {})


def test_each_fault_has_its_code() -> None:
    def code(wrapper: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
        found = unwrap(CALL_TOOL, wrapper, CALL_TOOL)
        assert isinstance(found, Hold)
        return found.code, tuple(found.fields)

    assert code({}) == ("ARGS_MISSING", ("name",))
    assert code({"name": 3}) == ("TOOL_UNKNOWN", ("name",))
    assert code({"name": "x", "arguments": [1]}) == ("ARGS_INVALID", ("arguments",))
    assert code({"name": "x", "id": 1}) == ("ARGS_INVALID", ("id",))
    assert code({"name": CALL_TOOL}) == ("ARGS_INVALID", ("name",))
