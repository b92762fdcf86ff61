"""The dependency rules of ARCHITECTURE.md ("Dependency rules"), checked over the source with
`ast`.

* recall never reads state; gates never call a model or recall;
* the core never imports its adapters (CLI); analytics only reads the log;
* no import cycle between any two modules of ``src/maitred`` (imports inside functions and
  ``importlib.import_module("maitred...")`` count; ``if TYPE_CHECKING:`` imports do not);
* the public ``__all__`` is sorted and every name in it exists.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import maitred

SRC = Path(maitred.__file__).parent


def _imports(package: str) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for path in (SRC / package).rglob("*.py"):
        if "skills" in path.parts[len(SRC.parts) :][1:] and package.endswith("domains"):
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
        ("serve", ("maitred.cli", "maitred.native", "torch", "onnxruntime")),
        ("gateway", ("maitred.cli", "maitred.serve", "maitred.native", "torch", "onnxruntime")),
        (
            "console",
            (
                "maitred.cli",
                "maitred.serve",
                "maitred.gateway",
                "maitred.contract.kernel",
                "maitred.native",
                "torch",
                "onnxruntime",
            ),
        ),
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


def test_the_core_never_imports_the_lab() -> None:
    """ARCHITECTURE.md, "Where each part lives": experiments live in ``maitred.lab``; only the
    lab itself and the CLI may import it."""
    bad = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        if rel.parts[0] in ("lab", "cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            bad += [
                (str(rel), n) for n in names if n == "maitred.lab" or n.startswith("maitred.lab.")
            ]
    assert not bad, f"the core imports the lab: {bad}"


def test_only_the_cli_imports_the_service_and_only_the_service_its_web_stack() -> None:
    """The gateway may name starlette and prometheus_client too: its HTTP transport is FastMCP's
    Starlette app, beside which it serves its own /metrics. It never runs uvicorn itself. The
    console (``maitred console``, mounted by the service and the gateway) is a Starlette app
    of its own; the CLI runs it under uvicorn."""
    web = ("starlette", "uvicorn", "prometheus_client")
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "serve":
            continue
        console = rel.parts[0] == "console"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                top = name.split(".")[0]
                assert not (name.startswith("maitred.serve") and rel.parts[0] != "cli"), rel
                if rel.parts[0] == "gateway" and top in ("starlette", "prometheus_client"):
                    continue  # FastMCP's Starlette app: a body limit, /metrics, /healthz
                if console and top == "starlette":
                    continue  # the console's own app
                assert top not in web or rel.parts[0] == "cli", f"{rel} imports {name}"


def test_only_the_cli_imports_the_gateway_and_only_the_gateway_the_mcp_stack() -> None:
    """The MCP gateway is an adapter: the core never imports it, nor fastmcp or the MCP SDK."""
    mcp_stack = ("fastmcp", "mcp", "mcp_types")
    bad = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                if name.startswith("maitred.gateway") and rel.parts[0] not in ("cli", "gateway"):
                    bad.append((str(rel), name))
                if name.split(".")[0] in mcp_stack and rel.parts[0] != "gateway":
                    bad.append((str(rel), name))
    assert not bad, f"only the CLI may import maitred.gateway, only it the MCP stack: {bad}"


def test_no_torch_outside_native() -> None:
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "native" or rel.parts[:2] == ("lab", "native"):
            continue  # native routing and its training experiments
        text = path.read_text(encoding="utf-8")
        assert "import torch" not in text and "from transformers" not in text, rel


def test_public_api_is_sorted_and_real() -> None:
    assert list(maitred.__all__) == sorted(maitred.__all__)
    missing = [name for name in maitred.__all__ if not hasattr(maitred, name)]
    assert not missing


def _module_graph() -> dict[str, set[str]]:
    """module -> the maitred modules it imports (at any depth of the file, see the docstring)."""
    modules: dict[str, Path] = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = {
            id(n)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)
        }
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", "") == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                targets = [str(node.args[0].value)]
            graph[module].update(t for t in targets if t in modules and t != module)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_no_import_cycle_in_the_package() -> None:
    assert _cycles(_module_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_code_and_tests_cite_the_design_that_is_in_the_repository() -> None:
    """ARCHITECTURE.md is the design; a design file that is not in the repository is not cited."""
    root = SRC.parents[1]
    assert (root / "ARCHITECTURE.md").is_file()
    absent = "DESIGN" + ".md"  # spelled apart so this file does not cite it
    citing = [
        str(path.relative_to(root))
        for folder in (root / "src", root / "tests", root / "docs", root / "benchmarks")
        for path in folder.rglob("*")
        if path.suffix in {".py", ".md"} and absent in path.read_text(encoding="utf-8")
    ]
    assert citing == []
