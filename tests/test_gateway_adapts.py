"""The gateway adapts; the core decides (issue 34, item 1). Checked over the source with
``ast``: no module under ``gateway/`` imports what decides whether a tool, a resource, a
prompt or a skill may be seen, called or read, or who owns a task -- the decision kernel, the
predicate evaluator, anything of ``maitred.gate`` (the executability gate, the surfaces'
contracts) but the URI resolution that serves (``maitred.gate.uris``: a pure function of a
string, which the gateway's skill provider must serve by, so that what is served is what was
decided), the action gate or the rulebook -- nor reaches for the deciding parts by attribute
(an engine's ``.rulebook``, ``.action_gate``, ``.executability_gate``, ``.executable(``,
``.read_state(``, ``.check_unlogged(``; the engines' ``.surface_contracts`` and their
``.governing(``, ``.redecide(``, ``.skill_roots``). The gateway asks each caller's
:class:`~maitred.conversation.Conversation`, which is these parts' one caller among the
adapters. The service (``serve/``) asks a conversation too: it calls no engine's ``turn`` or
``check`` itself.
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
    "maitred.gate",
    "maitred.actions.gate",
    "maitred.actions.rules",
)
#: what of those the gateway may import: it serves by it and decides nothing with it
SERVING = ("maitred.gate.uris",)
#: the deciding parts of an engine and of the surfaces' contracts, reached by attribute
DECIDING_ATTRIBUTES = frozenset(
    {
        "rulebook",
        "action_gate",
        "executability_gate",
        "executable",
        "read_state",
        "check_unlogged",
        "surface_contracts",
        "governing",
        "redecide",
        "skill_roots",
    }
)


def _under(name: str, modules: tuple[str, ...]) -> bool:
    return any(name == m or name.startswith(f"{m}.") for m in modules)


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
                if _under(name, DECIDERS) and not _under(name, SERVING):
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
        "from maitred.gate.surfaces import SurfaceContracts\n"
        "from maitred.gate.uris import canonical_uri\n"
        "def shown(engine, name, snapshot):\n"
        "    return engine.executable(name, snapshot) and engine.rulebook\n"
        "def read(engines, uri, views):\n"
        "    contracts = engines.surface_contracts\n"
        "    return contracts.governing('resources', canonical_uri(uri)), contracts.redecide(\n"
        "        'acc-1', views\n"
        "    ), contracts.skill_roots\n",
        encoding="utf-8",
    )
    found = _violations(gateway)
    assert sorted(f.split(" ", 1)[1] for f in found) == [
        "imports maitred.actions.rules",
        "imports maitred.contract.kernel",
        "imports maitred.contract.kernel.decide_exit",
        "imports maitred.gate.surfaces",
        "imports maitred.gate.surfaces.SurfaceContracts",
        "reaches .executable",
        "reaches .governing",
        "reaches .redecide",
        "reaches .rulebook",
        "reaches .skill_roots",
        "reaches .surface_contracts",
    ]


def _engine_calls(root: Path) -> list[str]:
    """Calls of ``turn(`` or ``check(`` on an engine (a name or attribute ``engine``) under
    ``root``: an adapter deciding through the engine itself rather than a conversation."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            owner = node.func.value
            name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
            if node.func.attr in ("turn", "check") and name == "engine":
                found.append(f"{where}:{node.lineno} calls engine.{node.func.attr}")
    return found


def test_the_service_asks_a_conversation_for_turns_and_checks() -> None:
    assert _engine_calls(SRC / "serve") == []


def test_the_guard_finds_a_service_that_asks_its_engine(tmp_path: Path) -> None:
    serve = tmp_path / "serve"
    serve.mkdir()
    (serve / "rogue.py").write_text(
        "def answer(self, engine, conversation, message, call):\n"
        "    conversation.turn(message)\n"
        "    engine.turn(message)\n"
        "    return self.engine.check(call)\n",
        encoding="utf-8",
    )
    assert [f.split(" ", 1)[1] for f in _engine_calls(serve)] == [
        "calls engine.turn",
        "calls engine.check",
    ]
