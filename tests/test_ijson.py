"""The I-JSON screen: :func:`surely_ijson` says yes only to text :func:`loads` accepts.

The gateway asks the screen first for every request body and walks the value in Python only
when the screen is not sure, so a yes for a body :func:`loads` would refuse lets a NUL, a lone
surrogate, a repeated key, a non-finite number or deep nesting through to the engine.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maitred._ijson import MAX_DEPTH, NotIJson, loads, surely_ijson

# text with the characters that matter: NUL, lone surrogates, 4-byte characters, quotes
_TEXT = st.text(
    st.one_of(
        st.characters(codec=None),
        st.sampled_from(["\x00", "\ud800", "\udfff", "😀", '"', "\\", "u"]),
    ),
    max_size=8,
)
_NUMBERS = st.one_of(st.integers(), st.floats(allow_nan=True, allow_infinity=True))
_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), _NUMBERS, _TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)),
    max_leaves=40,
)


def _accepted(raw: bytes) -> bool:
    try:
        loads(raw)
    except (NotIJson, ValueError):
        return False
    return True


@settings(max_examples=600, deadline=None)
@given(value=_VALUES)
def test_a_yes_is_never_given_to_text_loads_refuses(value: object) -> None:
    raw = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    if surely_ijson(raw):
        assert _accepted(raw), raw


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": "x\\u0000y"}',  # a NUL, escaped
        b'{"a": "\\ud800"}',  # a lone surrogate, escaped
        '{"a": "\ud800"}'.encode("utf-8", "surrogatepass"),  # and as its raw bytes
        b'{"a": 1, "a": 2}',  # a key twice
        b'{"a": NaN}',
        b'{"a": -Infinity}',
        b'{"a": 1e400}',
        b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),
        b'{"a": ',  # not JSON: left to the protocol's own parse error
    ],
)
def test_every_fault_is_left_to_loads(raw: bytes) -> None:
    assert not surely_ijson(raw)


def test_an_ordinary_request_is_screened_yes() -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "refund", "arguments": {"order": "A-1", "amount": 12.5, "tags": ["x"]}},
    }
    assert surely_ijson(json.dumps(call).encode())
    assert surely_ijson(json.dumps(call, ensure_ascii=False).replace("x", "😀").encode())
