"""The gateway adapts; the core decides (issue 34, item 1). Checked over the source with
``ast``: no module under ``gateway/`` imports what decides whether a tool may be seen or
called, or who owns a task -- the decision kernel, the executability gate, the action gate,
the rulebook or the predicate evaluator -- nor reaches for an engine's deciding parts by
attribute (``.rulebook``, ``.action_gate``, ``.executability_gate``, ``.executable(``,
``.read_state(``, ``.check_unlogged(``) or builds an ownership decision's refusal code
itself. The gateway asks each caller's :class:`~maitred.conversation.Conversation`, which is
these parts' one caller among the adapters.
"""

from __future__ import annotations

import ast
from pathlib import Path

import maitred

SRC = Path(maitred.__file__).parent
GATEWAY = SRC / "gateway"
#: modules that decide what may be seen or called, or who owns what
DECIDERS = (
    "maitred.contract.kernel",
    "maitred.contract.evaluate",
    "maitred.gate.executability",
    "maitred.actions.gate",
    "maitred.actions.rules",
)
#: an engine's deciding parts, reached by attribute
DECIDING_ATTRIBUTES = frozenset(
    {"rulebook", "action_gate", "executability_gate", "executable", "read_state", "check_unlogged"}
)


def _violations(root: Path) -> list[str]:
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root.parent).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                if any(name == d or name.startswith(f"{d}.") for d in DECIDERS):
                    found.append(f"{where}:{node.lineno} imports {name}")
            if isinstance(node, ast.Attribute) and node.attr in DECIDING_ATTRIBUTES:
                found.append(f"{where}:{node.lineno} reaches .{node.attr}")
    return found


def test_no_gateway_module_decides_visibility_or_ownership_itself() -> None:
    assert _violations(GATEWAY) == []


def test_the_guard_finds_a_gateway_module_that_decides(tmp_path: Path) -> None:
    gateway = tmp_path / "gateway"
    gateway.mkdir()
    (gateway / "rogue.py").write_text(
        "from maitred.contract.kernel import decide_exit\n"
        "import maitred.actions.rules\n"
        "def shown(engine, name, snapshot):\n"
        "    return engine.executable(name, snapshot) and engine.rulebook\n",
        encoding="utf-8",
    )
    found = _violations(gateway)
    assert sorted(f.split(" ", 1)[1] for f in found) == [
        "imports maitred.actions.rules",
        "imports maitred.contract.kernel",
        "imports maitred.contract.kernel.decide_exit",
        "reaches .executable",
        "reaches .rulebook",
    ]
