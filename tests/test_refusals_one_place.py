"""Every refusal is built in one module (ARCHITECTURE.md, "One model-facing rejection"):
:mod:`maitred.actions.refusals`. Checked over the source with ``ast``:

* no ``Rejection(...)`` call anywhere else (a refusal is asked of the module's constructors);
* no refusal dict literal anywhere else: a dict display whose string keys hold both ``code``
  and ``message`` (with a string code), or whose ``error`` is a refusal's kind -- the few dicts
  of that shape that are no refusal are listed below, each with its reason, so a new one fails;
* no ``"Rejected ("`` text anywhere else (the model's words come from the one template);
* no adapter (``gateway/``, ``serve/``) imports the decision kernel: the verdicts they serve
  are the core's (``gate/``, ``actions/``), adapters only carry them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import maitred
from maitred.actions import refusals

SRC = Path(maitred.__file__).parent
HOME = "actions/refusals.py"
ADAPTERS = ("gateway", "serve")
KERNEL = "maitred.contract.kernel"
#: the ``error`` values of refusals (:attr:`maitred.actions.refusals.Rejection.error`)
KINDS = frozenset(refusals.KINDS.values()) | {refusals.POLICY}
#: (module, the dict's string keys): dicts with a string ``code`` and a ``message`` that are
#: no refusal, and why
NOT_REFUSALS: dict[tuple[str, frozenset[str]], str] = {
    (
        "actions/model.py",
        frozenset(
            {"decision_id", "session_id", "call", "verdict", "code", "message"}
            | {"message_for_model", "fields", "mutates", "now", "policy", "versions"}
            | {"outcomes", "values_hash"}
        ),
    ): "Decision.to_json: the decision log's row, which records a refusal, not what the model "
    "is told",
    (
        "actions/replay.py",
        frozenset({"trajectory", "index", "name", "decision", "code", "message"}),
    ): "a shadow replay's report row, for people",
    (
        "contract/tool_sidecar.py",
        frozenset({"code", "expr", "message", "reads"}),
    ): "an approval rule as sidecar data (its code is the one it will refuse with)",
    ("serve/requests.py", frozenset({"status", "code", "message"})): "the HTTP service's "
    "problem body for a request it did not take (4xx/5xx), no call refusal",
    (
        "serve/service.py",
        frozenset({"decision_id", "session_id", "turn_id", "allow", "verdict", "code"})
        | frozenset({"message_for_model", "message", "fields", "tool_result", "decision"}),
    ): "the service's answer to a check: the decision, whose tool_result is the rejection",
    (
        "serve/openapi.py",
        frozenset({"status", "code", "message", "field", "retry_after_s", "scope"}),
    ): "the OpenAPI schema of the problem body (JSON Schema properties)",
    (
        "serve/openapi.py",
        frozenset({"decision_id", "session_id", "turn_id", "allow", "verdict", "code"})
        | frozenset({"message_for_model", "message", "fields", "tool_result", "decision"}),
    ): "the OpenAPI schema of the check answer (JSON Schema properties)",
}
#: (module, keys) of dicts with an ``error`` key that are no refusal, and why (their ``error``
#: is not a refusal's kind, so they are not found; listed so the reason is written down)
OTHER_ERRORS: dict[tuple[str, frozenset[str]], str] = {
    ("gateway/auth.py", frozenset({"error", "error_description"})): "an OAuth 2.0 error body "
    "(RFC 6750) at the HTTP edge, before any session exists",
}


def _int_code(value: ast.expr) -> bool:
    """Whether a ``code`` is an integer (a JSON-RPC error's: ``-32602``, ``a if x else b``)."""
    if isinstance(value, ast.Constant):
        return isinstance(value.value, int)
    if isinstance(value, ast.UnaryOp):
        return _int_code(value.operand)
    if isinstance(value, ast.IfExp):
        return _int_code(value.body) and _int_code(value.orelse)
    return False


def _keys(node: ast.Dict) -> dict[str, ast.expr]:
    return {
        k.value: v
        for k, v in zip(node.keys, node.values, strict=True)
        if isinstance(k, ast.Constant) and isinstance(k.value, str)
    }


def _texts(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    return []


def faults(rel: str, source: str) -> list[str]:
    """What in one module's ``source`` builds a refusal outside :data:`HOME`."""
    found: list[str] = []
    tree = ast.parse(source)
    adapter = rel.split("/")[0] in ADAPTERS
    for node in ast.walk(tree):
        at = f"{rel}:{getattr(node, 'lineno', 0)}"
        if adapter and isinstance(node, ast.ImportFrom) and node.module:
            named = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            if KERNEL in named:
                found.append(f"{at}: imports {KERNEL}")
        if adapter and isinstance(node, ast.Import) and any(a.name == KERNEL for a in node.names):
            found.append(f"{at}: imports {KERNEL}")
        if rel == HOME:
            continue
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name == "Rejection":
                found.append(f"{at}: builds a Rejection")
        if isinstance(node, ast.Dict):
            keys = _keys(node)
            shape = (rel, frozenset(keys))
            code = keys.get("code")
            stringly = code is not None and not _int_code(code)
            if {"code", "message"} <= keys.keys() and stringly and shape not in NOT_REFUSALS:
                found.append(f"{at}: a refusal dict {sorted(keys)}")
            error = keys.get("error")
            if error is not None and any(t in KINDS for t in _texts(error)):
                found.append(f"{at}: a refusal dict {sorted(keys)} (error: a refusal's kind)")
        if any("Rejected (" in t for t in _texts(node)):
            found.append(f"{at}: the words of a refusal")
    return found


def test_refusals_are_built_in_one_module() -> None:
    bad = [
        fault
        for path in sorted(SRC.rglob("*.py"))
        for fault in faults(str(path.relative_to(SRC)), path.read_text(encoding="utf-8"))
    ]
    assert not bad, f"build refusals with {HOME} (and no adapter asks the kernel):\n" + "\n".join(
        bad
    )


def test_the_allowed_shapes_still_exist() -> None:
    """An allowance whose dict is gone is dropped, so the list says only what is true."""
    shapes = set()
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                shapes.add((rel, frozenset(_keys(node))))
    assert set(NOT_REFUSALS) <= shapes and set(OTHER_ERRORS) <= shapes


def test_the_check_finds_each_kind_of_refusal_built_elsewhere() -> None:
    source = (
        "from maitred.contract.kernel import decide_exit\n"
        "A = Rejection('X', 'no')\n"
        "B = {'code': 'ARGS_INVALID', 'message': 'no', 'fields': []}\n"
        "C = {'error': 'gate_unavailable', 'text': 'no'}\n"
        "D = f'Rejected ({code}): {why}.'\n"
        "E = {'jsonrpc': '2.0', 'error': {'code': -32602, 'message': 'bad params'}}\n"
    )
    found = faults("gateway/example.py", source)
    assert [f.split(":")[1] for f in found] == ["1", "2", "3", "4", "5"], found
    assert faults(HOME, "A = Rejection('X', 'Rejected (X): no.')\n") == []
    assert faults("actions/other.py", "from maitred.contract.kernel import SCOPES\n") == []
