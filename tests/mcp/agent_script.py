"""The scripted model of the ``call_tool`` agent tests, the same for every framework.

It imports nothing but the standard library, so the LangGraph agent (``langgraph_agent.py``,
its own venv) plays it too. Given only ``find_tools`` and ``call_tool`` over 1,000 tools, the
model:

1. asks ``find_tools`` for what it needs (:data:`NEED`), and for a tool its token may not use
   (:data:`SCOPED_NEED`);
2. runs the first tool the answer to :data:`NEED` lists, through ``call_tool``, with the
   argument that tool's input schema requires; and names two tools it was never given:
   ``export_report`` (hidden on the free plan) and ``delete_backup`` (a scope the token lacks);
3. answers ``done``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

NEED = "create an invoice for a customer"
SCOPED_NEED = "delete a backup of the workspace"
HIDDEN = ("export_report", {"id": "r1"})
SCOPED = ("delete_backup", {"id": "b1"})


def answer_to(need: str, results: Sequence[Any]) -> dict[str, Any]:
    """The ``find_tools`` answer to ``need`` among the tool results so far (text or object)."""
    for result in results:
        found = result if isinstance(result, dict) else _json(result)
        if isinstance(found, dict) and found.get("need") == need:
            return found
    raise AssertionError(f"no find_tools answer to {need!r} in {results!r}")


def _json(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def calls(step: int, results: Sequence[Any]) -> list[tuple[str, dict[str, Any]]]:
    """The calls the model makes at ``step``, having read ``results`` (every tool result so
    far, as the framework handed it over); none: it answers."""
    if step == 0:
        return [("find_tools", {"need": NEED}), ("find_tools", {"need": SCOPED_NEED})]
    if step == 1:
        first = answer_to(NEED, results)["tools"][0]
        key = first["inputSchema"]["required"][0]
        return [
            ("call_tool", {"name": first["name"], "arguments": {key: "ACME"}}),
            ("call_tool", {"name": HIDDEN[0], "arguments": HIDDEN[1]}),
            ("call_tool", {"name": SCOPED[0], "arguments": SCOPED[1]}),
        ]
    return []
