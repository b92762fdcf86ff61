"""Reading labelled JSONL files (queries, depth tasks) the same way everywhere.

Each non-blank line is parsed by the caller's ``parse(raw, seen_ids)``, which raises
``ValueError`` saying what is wrong; that line is reported as an
:class:`~maitred.errors.InputError` naming the file and line, and skipped -- a bad line never
drops the rest of the file.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from maitred.errors import InputError

logger = logging.getLogger(__name__)


def parse_object(raw: str, required: tuple[str, ...]) -> dict[str, Any]:
    """One JSONL line as a JSON object holding ``required``; raises ValueError saying what is
    wrong (bad JSON with its column, not an object, the missing fields)."""
    try:
        obj: Any = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    missing = [k for k in required if k not in obj]
    if missing:
        raise ValueError(
            f"missing field(s) {', '.join(missing)}; each line needs {', '.join(required)}"
        )
    return obj


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=_HasId)


def read_labelled(
    path: Path | str,
    parse: Callable[[str, set[str]], T],
    *,
    what: str,
    on_error: Callable[[InputError], None] | None = None,
    line_numbers: list[int] | None = None,
) -> list[T]:
    """Parse every line of ``path``; bad lines go to ``on_error`` (default: a warning).

    Args:
        path: the file.
        parse: one line (and the ids seen so far) -> an item; raises ValueError when bad.
        what: what the file holds, for messages ("query", "task").
        on_error: called with an InputError for each bad line.
        line_numbers: if given, the line number being parsed is appended to it before each
            ``parse`` call (for items whose default id names their line).

    Raises:
        InputError: the file itself cannot be read (line 0).
    """
    report = on_error or (lambda err: logger.warning("%s (line skipped)", err))
    try:
        lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(path), 0, f"cannot read the {what} file: {exc}") from exc
    items: list[T] = []
    seen: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        if line_numbers is not None:
            line_numbers.append(number)
        try:
            item = parse(raw, seen)
        except (ValueError, RecursionError) as exc:
            report(InputError(str(path), number, str(exc) or type(exc).__name__))
            continue
        seen.add(item.id)
        items.append(item)
    return items
