"""What every state provider shares: key paths, nested trees, JSON-safe values, timestamps.

State keys are dotted paths, ``root.field`` (``account.plan``) or deeper
(``billing.address.country``). Providers that hold documents (memory, JSON, Python callables)
normalise whatever they are given into one *tree* of plain dicts: a nested mapping and a
mapping with dotted keys become the same tree, so ``{"account": {"plan": "free"}}`` and
``{"account.plan": "free"}`` are interchangeable. A key is then looked up by walking the tree;
a key that names an inner node (``billing.address``) returns that node as a dict.

Every value that leaves a provider is JSON-safe (it goes into the snapshot hash and the
decision log): ``None``, ``bool``, ``int``, finite ``float``, ``str``, and lists / string-keyed
dicts of those. Decimals become ``int`` when they have no fractional digits and ``float``
otherwise (so one SQL column keeps one type); dates and times become ISO-8601 strings; bytes
and anything else are refused with :class:`UnsupportedValue`, which each provider turns into
its own error naming the key.
"""

from __future__ import annotations

import copy
import datetime as dt
import math
import re
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

IDENTIFIER: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""What a SQL identifier (table, column) must look like before it is ever put in a query."""


class UnsupportedValue(ValueError):
    """A value that cannot be represented in a snapshot (the message says why)."""


class _Absent:
    """The type of :data:`ABSENT`."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()
"""Returned by :func:`lookup` for a key the tree does not have (``None`` is a real value)."""


def split_key(key: str) -> tuple[str, str]:
    """``"billing.address.country"`` -> ``("billing", "address.country")``; no dot -> ``""``."""
    root, _, rest = key.partition(".")
    return root, rest


def key_parts(key: str) -> list[str] | None:
    """The segments of a dotted key, or None when a segment is empty (``"a..b"``, ``".a"``)."""
    parts = key.split(".")
    return parts if all(parts) else None


def json_safe(value: Any, where: str) -> Any:
    """Convert ``value`` to plain JSON-safe Python (see the module docstring).

    Args:
        value: what the source returned.
        where: the key or field it belongs to, for the error message.

    Raises:
        UnsupportedValue: bytes, NaN / infinity, non-string dict keys, or an unknown type.
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UnsupportedValue(f"{where}: {value!r} is not a finite number")
        return value
    if isinstance(value, Decimal):
        return _decimal(value, where)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise UnsupportedValue(
            f"{where}: binary values are not allowed in state (they cannot be logged or "
            "compared by predicates); expose the column as text or a number instead"
        )
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise UnsupportedValue(f"{where}: dict key {k!r} is not a string")
            out[k] = json_safe(v, f"{where}.{k}")
        return out
    if isinstance(value, (list, tuple)):
        return [json_safe(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise UnsupportedValue(
        f"{where}: a value of type {type(value).__name__} cannot be stored in a snapshot; "
        "use JSON types (str, int, float, bool, None, list, dict)"
    )


def _decimal(value: Decimal, where: str) -> int | float:
    if not value.is_finite():
        raise UnsupportedValue(f"{where}: {value!r} is not a finite number")
    exponent = value.as_tuple().exponent
    if isinstance(exponent, int) and exponent >= 0:
        return int(value)
    return float(value)


def nest(fields: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Normalise nested and dotted mappings into one tree of plain, JSON-safe dicts.

    Args:
        fields: e.g. ``{"account": {"plan": "free"}, "billing.status": "ok"}``.
        where: what ``fields`` is (an account, a fetcher), for error messages.

    Raises:
        UnsupportedValue: an empty key segment, a path given twice with different values, a
            path that is both a value and a parent of other paths, or an unsupported value.
    """
    tree: dict[str, Any] = {}
    _merge(tree, fields, [], where)
    return tree


def _merge(node: dict[str, Any], fields: Mapping[Any, Any], above: list[str], where: str) -> None:
    for key, value in fields.items():
        if not isinstance(key, str):
            raise UnsupportedValue(f"{where}: key {key!r} under {_path(above)!r} is not a string")
        parts = key_parts(key)
        if parts is None:
            raise UnsupportedValue(f"{where}: key {_path([*above, key])!r} has an empty segment")
        _insert(node, parts, value, above, where)


def _insert(
    node: dict[str, Any], parts: list[str], value: Any, above: list[str], where: str
) -> None:
    *parents, last = parts
    for i, part in enumerate(parents):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            path = _path([*above, *parts[: i + 1]])
            raise UnsupportedValue(f"{where}: {path!r} is a value and also has fields below it")
        node = child
    path_parts = [*above, *parts]
    if isinstance(value, Mapping):
        child = node.setdefault(last, {})
        if not isinstance(child, dict):
            raise UnsupportedValue(
                f"{where}: {_path(path_parts)!r} is a value and also has fields below it"
            )
        _merge(child, value, path_parts, where)
        return
    safe = json_safe(value, f"{where}: {_path(path_parts)}")
    if last in node and node[last] != safe:
        path = _path(path_parts)
        if isinstance(node[last], dict):
            raise UnsupportedValue(f"{where}: {path!r} is a value and also has fields below it")
        raise UnsupportedValue(
            f"{where}: {path!r} is given twice, as {node[last]!r} and {safe!r}; keep one"
        )
    node[last] = safe


def _path(parts: list[str]) -> str:
    return ".".join(parts)


def lookup(tree: Mapping[str, Any], path: str) -> Any:
    """The value at dotted ``path`` in ``tree`` (a copy for dicts and lists), or :data:`ABSENT`."""
    parts = key_parts(path)
    if parts is None:
        return ABSENT
    node: Any = tree
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return ABSENT
        node = node[part]
    return copy.deepcopy(node) if isinstance(node, (dict, list)) else node


def unix_seconds(value: Any, where: str) -> float | None:
    """Read an "updated at" value as unix seconds.

    Accepts numbers (unix seconds), ``datetime`` / ``date`` (naive ones are taken as UTC) and
    strings holding either. ``None`` gives ``None`` (unknown).

    Raises:
        UnsupportedValue: anything else, or a string that is neither a number nor ISO-8601.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise UnsupportedValue(f"{where}: {value!r} is not a timestamp")
    if isinstance(value, (int, float, Decimal)):
        seconds = float(value)
        if not math.isfinite(seconds):
            raise UnsupportedValue(f"{where}: {value!r} is not a finite timestamp")
        return seconds
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return aware.timestamp()
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC).timestamp()
    if isinstance(value, str):
        text = value.strip()
        try:
            return unix_seconds(float(text), where)
        except ValueError:
            pass
        try:
            return unix_seconds(dt.datetime.fromisoformat(text), where)
        except ValueError:
            raise UnsupportedValue(
                f"{where}: {value!r} is neither unix seconds nor an ISO-8601 timestamp"
            ) from None
    raise UnsupportedValue(
        f"{where}: a value of type {type(value).__name__} is not a timestamp; "
        "store unix seconds or an ISO-8601 timestamp"
    )
