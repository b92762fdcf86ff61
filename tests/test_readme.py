"""The README's Python examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_readme_has_examples() -> None:
    assert len(_blocks()) >= 2


def test_library_example_runs(capsys: object) -> None:
    namespace: dict[str, object] = {}
    exec(compile(_blocks()[0], "README.md", "exec"), namespace)
    turn = namespace["turn"]
    exposed = turn.exposed  # type: ignore[attr-defined]
    blocked = {p.skill for p in turn.record.blocked}  # type: ignore[attr-defined]
    # acc-1 is on the free plan: the domain skills are recalled but the gate hides them
    assert "connect-domain" in blocked and "connect-domain" not in exposed
    assert exposed, "something the free account can do is still offered"
    decision = namespace["decision"]
    assert decision.code == "TOOL_NOT_OFFERED"  # type: ignore[attr-defined]
    assert decision.turn_id == turn.turn_id  # type: ignore[attr-defined]


def test_procedure_example_compiles() -> None:
    namespace: dict[str, object] = {}
    exec(compile(_blocks()[1], "README.md", "exec"), namespace)
    assert "registered_recently" in namespace and callable(namespace["run"])
