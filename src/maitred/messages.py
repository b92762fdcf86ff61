"""Reading message files: JSONL, one message a line.

Each line is an object with ``text`` and ``account`` (required), and ``id``, ``conversation``,
``ts`` (optional; a missing id becomes ``<file stem>:<line>``). A bad line is reported with its
file and line number and skipped; it never drops the rest of the file.

A value the decision log cannot store (a NUL, a lone surrogate, an id over
:data:`~maitred.log.storable.MAX_ID_BYTES` bytes) makes its line bad, on every backend: one
such line never costs the others (PostgreSQL would refuse the whole batch carrying it).

Ids are unique within a file: a message's id names its turn in the decision log
(``<run id>/<message id>``), so a second line with an id already used is a bad line too,
reported with both line numbers; the first one is kept.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path

from maitred.errors import InputError
from maitred.log.storable import MAX_ID_BYTES, key_fault, text_fault
from maitred.records import Message


def _is_time(value: object) -> bool:
    """A finite number of seconds (json.loads also gives NaN, Infinity and huge ints)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def parse_message(raw: str, path: str, line: int) -> Message:
    """One JSONL line -> a :class:`Message`; raises :class:`InputError` naming file and line."""
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(path, line, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:  # a 5000-digit number, nesting 100000 deep
        raise InputError(path, line, f"JSON that cannot be read ({exc})") from None
    if not isinstance(obj, dict):
        raise InputError(path, line, f"expected a JSON object, got {type(obj).__name__}")
    text, account = obj.get("text"), obj.get("account")
    if not isinstance(text, str) or not text.strip():
        raise InputError(path, line, "field 'text' must be a non-empty string")
    if not isinstance(account, (str, int)) or isinstance(account, bool) or account == "":
        raise InputError(path, line, "field 'account' must be a non-empty string or integer")
    ts = obj.get("ts")
    if ts is not None and not _is_time(ts):
        raise InputError(path, line, "field 'ts' must be unix seconds (a number) when given")
    ident, conv = obj.get("id"), obj.get("conversation")
    fields = {
        "id": str(ident) if ident not in (None, "") else f"{Path(path).stem}:{line}",
        "text": text,
        "account": str(account),
        "conversation": str(conv) if conv is not None else "",
    }
    for field, value in fields.items():  # what the log cannot store fails this line alone
        fault = text_fault(value) if field == "text" else key_fault(value, MAX_ID_BYTES)
        if fault:
            raise InputError(path, line, f"field {field!r} {fault}")
    message = Message(
        id=fields["id"],
        text=fields["text"],
        account=fields["account"],
        conversation=fields["conversation"],
        ts=float(ts) if ts is not None else None,
    )
    return message


def read_messages(
    path: str | Path, on_error: Callable[[InputError], None] | None = None
) -> Iterator[Message]:
    """Yield the messages of a JSONL file; bad lines go to ``on_error`` (or are raised).

    A line whose id an earlier line already used is bad (see the module docstring).
    """
    name = str(path)
    first_line: dict[str, int] = {}
    with open(path, encoding="utf-8-sig", errors="replace") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                message = parse_message(raw, name, number)
                seen = first_line.setdefault(message.id, number)
                if seen != number:
                    raise InputError(
                        name,
                        number,
                        f"id {message.id!r} is already used on line {seen}; each message needs "
                        "its own id (it names the turn in the decision log): give this line "
                        "another id, or drop it",
                    )
            except InputError as err:
                if on_error is None:
                    raise
                on_error(err)
                continue
            yield message
