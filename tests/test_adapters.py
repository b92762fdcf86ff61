"""Adapters never reach into the engine (ARCHITECTURE.md, "Concurrency"): no module under
``serve/`` or ``gateway/`` assigns to an attribute of anything but its own objects.

What varies per request is passed with the call (:class:`maitred.CallContext`); an adapter
that set ``pipeline.renderer`` or ``recaller.only`` for one request would make the engine
unsafe to share between threads, which is exactly what the contract promises it is. The check
reads the source: an attribute store is allowed on ``self.<name>`` (the adapter's own state)
and on the few adapter-owned locals listed below, nowhere else; ``setattr`` is not allowed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import maitred

SRC = Path(maitred.__file__).parent
ADAPTERS = ("serve", "gateway")
#: (module, local name): objects the adapter itself created and owns
OWN_LOCALS = {
    ("gateway/channels.py", "listening"),  # its own listener count
    ("gateway/calls.py", "result"),  # the upstream's tool result it forwards
}
#: (module, target): a library's process-wide setting, set once by ``maitred mcp`` before it
#: serves (never per request, and no part of the engine)
PROCESS_SETTINGS = {
    ("gateway/traces.py", "fastmcp.settings.telemetry_mode"),  # without_idle_library_spans
}


def _stores(tree: ast.AST) -> list[tuple[int, ast.Attribute]]:
    found: list[tuple[int, ast.Attribute]] = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and isinstance(part.ctx, ast.Store):
                    found.append((node.lineno, part))
    return found


def _reach_ins(folder: str) -> list[str]:
    bad: list[str] = []
    for path in sorted((SRC / folder).glob("*.py")):
        rel = f"{folder}/{path.name}"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, attr in _stores(tree):
            base = attr.value
            if isinstance(base, ast.Name) and (base.id == "self" or (rel, base.id) in OWN_LOCALS):
                continue
            if (rel, ast.unparse(attr)) in PROCESS_SETTINGS:
                continue
            bad.append(f"{rel}:{line}: assigns {ast.unparse(attr)}")
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "setattr"
            ):
                bad.append(f"{rel}:{node.lineno}: calls setattr")
    return bad


def test_no_adapter_assigns_to_the_engine_or_its_parts() -> None:
    bad = [b for folder in ADAPTERS for b in _reach_ins(folder)]
    assert not bad, "pass per-request values as a CallContext instead:\n" + "\n".join(bad)


def test_the_check_catches_a_reach_in(tmp_path: Path) -> None:
    tree = ast.parse("def f(engine):\n    engine.pipeline.renderer = None\n    self.x = 1\n")
    assert [ast.unparse(a) for _, a in _stores(tree)] == ["engine.pipeline.renderer", "self.x"]
