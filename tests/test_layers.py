"""The layering DESIGN.md promises, checked over the source with `ast`.

* recall never reads state; gates never call a model or recall;
* the core never imports its adapters (CLI); analytics only reads the log;
* the public ``__all__`` is sorted and every name in it exists.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import maitred

SRC = Path(maitred.__file__).parent


def _imports(package: str) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for path in (SRC / package).rglob("*.py"):
        if "skills" in path.parts[len(SRC.parts) :][1:] and package == "domains":
            continue  # skill procedures are user code, loaded by path
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add((str(path.relative_to(SRC)), node.module))
            elif isinstance(node, ast.Import):
                found.update((str(path.relative_to(SRC)), a.name) for a in node.names)
    return found


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("recall", ("maitred.state", "maitred.gate", "maitred.log")),
        ("gate", ("maitred.recall", "maitred.native", "onnxruntime", "torch", "transformers")),
        ("contract", ("maitred.recall", "maitred.cli", "onnxruntime")),
        ("state", ("maitred.recall", "maitred.gate", "maitred.cli")),
        ("analytics", ("maitred.pipeline", "maitred.gate", "maitred.recall", "maitred.cli")),
        ("log", ("maitred.cli", "maitred.pipeline", "maitred.recall")),
        ("skills", ("maitred.cli", "maitred.state")),
        ("menu", ("maitred.state", "maitred.cli")),
        ("depth", ("maitred.state", "maitred.cli")),
        ("actions", ("maitred.recall", "maitred.native", "maitred.cli", "onnxruntime", "torch")),
        ("audit", ("maitred.recall", "maitred.cli", "onnxruntime")),
        ("replay", ("maitred.cli", "maitred.gate")),
    ],
)
def test_package_does_not_import(package: str, forbidden: tuple[str, ...]) -> None:
    bad = sorted(
        (where, mod)
        for where, mod in _imports(package)
        if any(mod == f or mod.startswith(f + ".") for f in forbidden)
    )
    assert not bad, f"{package} must not import {forbidden}: {bad}"


def test_core_never_imports_cli() -> None:
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("maitred.cli"), f"{rel} imports the CLI"


def test_no_torch_outside_native() -> None:
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "native":
            continue
        text = path.read_text(encoding="utf-8")
        assert "import torch" not in text and "from transformers" not in text, rel


def test_public_api_is_sorted_and_real() -> None:
    assert list(maitred.__all__) == sorted(maitred.__all__)
    missing = [name for name in maitred.__all__ if not hasattr(maitred, name)]
    assert not missing
