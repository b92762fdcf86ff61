"""Whether a value that came from a client can be carried as I-JSON (RFC 7493).

Every value a client sends -- a request field, a tool call's arguments -- ends up in the
decision log as canonical JSON and, for arguments, in CEL. Four kinds of value that Python's
and pydantic's JSON readers accept cannot go there: a string holding a lone surrogate
(``"\\ud800"`` is no character and does not encode as UTF-8), a string holding a NUL
(``"\\u0000"``: PostgreSQL text cannot store it, so it would fail the group commit that
carries it, other callers' rows with it; :mod:`maitred.log.storable`), a number that is not finite
(``NaN``, ``Infinity``, ``1e400`` read as ``inf``), and nesting deeper than the log and the
evaluator are meant to walk. Each would fail *inside* the engine, where it reads as a crash or
an outage; an adapter asks :func:`fault` first (a decoded value) or parses with :func:`loads`
(raw bytes: a repeated key is only visible there) and refuses the value as the client's error.

Paths are written as the service names fields: dotted keys, ``[i]`` for list items
(``call.arguments.tags[2]``), a lone surrogate shown as ``\\udxxx``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

#: the deepest nesting of lists and objects a client's value may have (the value is depth 1)
MAX_DEPTH = 32


@dataclass(frozen=True)
class Fault:
    """Why a value is not I-JSON: where (a path, ``""`` for the whole value) and what.

    ``in_value``: the fault is in one string, key or number (a NUL, a lone surrogate, a number
    out of range) -- well-formed JSON whose field holds what cannot be carried -- rather than
    in the text's structure (a key twice, nesting too deep)."""

    where: str
    what: str
    in_value: bool = False


class NotIJson(ValueError):
    """JSON text that is not I-JSON: where (a path, ``""`` for the whole text) and what."""

    def __init__(self, where: str, what: str, *, in_value: bool = False) -> None:
        super().__init__(f"{where or 'the JSON text'}: {what}")
        self.fault = Fault(where, what, in_value)


def loads(raw: bytes | str) -> Any:
    """``raw`` parsed as I-JSON: :func:`fault`'s rules, and no key twice in one object.

    Raises:
        json.JSONDecodeError: not JSON (``NaN`` and ``Infinity`` are, for this reader).
        UnicodeDecodeError: bytes that are not UTF-8.
        NotIJson: JSON outside I-JSON, naming where; nesting too deep for the parser itself
            (``RecursionError``) is this too, at the top.
        ValueError: an integer of more digits than Python converts.
    """
    try:
        tree = json.loads(
            raw, object_pairs_hook=_Pairs, parse_constant=_NotFinite, parse_float=_float
        )
    except RecursionError:
        raise NotIJson("", f"nests arrays and objects deeper than {MAX_DEPTH} levels") from None
    return _checked(tree, "", 1)


def surely_ijson(raw: bytes) -> bool:
    """Whether ``raw`` is I-JSON by a screen of C-speed steps (``False``: not known; ask
    :func:`loads`, which says where and what).

    A request almost never holds what :func:`loads` looks for, and finding that out by walking
    every value in Python is most of what reading it costs. Here: strict UTF-8 (a lone
    surrogate's bytes fail it), no ``\\u`` escape anywhere (the only other way to write a
    NUL or a lone surrogate), fewer brackets than the deepest nesting allowed, and one parse
    whose hooks refuse a repeated key and a number that is not finite.
    """
    if b"\\u" in raw or raw.count(b"[") + raw.count(b"{") > MAX_DEPTH:
        return False
    try:
        json.loads(
            raw.decode("utf-8"),
            object_pairs_hook=_unique,
            parse_constant=_not_finite,
            parse_float=_finite,
        )
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or one of the faults
        return False
    return True


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("a key appears twice")
    return found


def _not_finite(text: str) -> float:
    raise ValueError(f"{text} is not a finite number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as the parser saw it: its pairs in order, duplicates kept (for a check)."""


class _NotFinite:
    """A number JSON cannot carry (``NaN``, ``Infinity``, ``1e400``), as written."""

    def __init__(self, text: str) -> None:
        self.text = text


def _float(text: str) -> float | _NotFinite:
    value = float(text)
    return value if math.isfinite(value) else _NotFinite(text)


def _checked(value: Any, where: str, depth: int) -> Any:
    """``value`` with its objects made dicts, once each I-JSON rule holds at ``where``."""
    if isinstance(value, (_Pairs, list)) and depth > MAX_DEPTH:
        raise NotIJson(where, f"nests arrays and objects deeper than {MAX_DEPTH} levels")
    if isinstance(value, _Pairs):
        out: dict[str, Any] = {}
        for key, item in value:
            inner = join(where, key)
            if what := _text_fault(key):
                raise NotIJson(inner, f"is a key that {what}", in_value=True)
            if key in out:
                raise NotIJson(inner, "appears twice in one object; send each key once")
            out[key] = _checked(item, inner, depth + 1)
        return out
    if isinstance(value, list):
        return [_checked(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value)]
    if isinstance(value, _NotFinite):
        raise NotIJson(
            where,
            f"is {value.text}, not a finite number; send a number in float range",
            in_value=True,
        )
    if isinstance(value, str) and (what := _text_fault(value)):
        raise NotIJson(where, what, in_value=True)
    return value


def fault(value: Any, where: str = "", depth: int = 1) -> Fault | None:
    """The first place where ``value`` (decoded JSON: dicts, lists, scalars) is not I-JSON."""
    if isinstance(value, (dict, list)) and depth > MAX_DEPTH:
        return Fault(where, f"nests arrays and objects deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        for key, item in value.items():
            inner = join(where, str(key))
            if not isinstance(key, str):
                return Fault(inner, "is a key that is not a string")
            if what := _text_fault(key):
                return Fault(inner, f"is a key that {what}")
            found = fault(item, inner, depth + 1)
            if found is not None:
                return found
        return None
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = fault(item, f"{where}[{i}]", depth + 1)
            if found is not None:
                return found
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return Fault(where, f"is {value!r}, not a finite number; send a number in float range")
    if isinstance(value, str) and (what := _text_fault(value)):
        return Fault(where, what)
    return None


def _text_fault(value: str) -> str:
    """Why a client's string cannot be carried (``""``: it can)."""
    if "\x00" in value:
        return "holds a NUL character (U+0000), which the decision log cannot store; remove it"
    if not is_text(value):
        return "holds a lone surrogate (not a character); send text as UTF-8"
    return ""


def join(where: str, key: str) -> str:
    """The path of ``key`` inside ``where``, printable (a lone surrogate as ``\\udxxx``)."""
    shown = key.encode("utf-8", "backslashreplace").decode("utf-8")
    return f"{where}.{shown}" if where else shown


def is_text(value: str) -> bool:
    """Whether ``value`` is characters only (no lone surrogate: it encodes as UTF-8)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
