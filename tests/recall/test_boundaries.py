"""Recall is state-blind: nothing in maitred.recall imports the state or gate packages."""

import ast
from pathlib import Path

import maitred.recall

FORBIDDEN = ("maitred.state", "maitred.gate")
RECALL_DIR = Path(maitred.recall.__file__).parent


def _imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_recall_never_imports_state_or_gate() -> None:
    sources = sorted(RECALL_DIR.rglob("*.py"))
    assert len(sources) >= 10
    offenders = [
        f"{path.relative_to(RECALL_DIR)}: {name}"
        for path in sources
        for name in _imports(path)
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)
    ]
    assert offenders == []


def test_no_relative_imports_hide_a_dependency() -> None:
    for path in RECALL_DIR.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert not any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(tree)), path


def test_all_is_sorted_and_exported() -> None:
    def isort_style(name: str) -> tuple[int, str]:  # constants, classes, functions (ruff RUF022)
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert maitred.recall.__all__ == sorted(maitred.recall.__all__, key=isort_style)
    assert all(hasattr(maitred.recall, name) for name in maitred.recall.__all__)
