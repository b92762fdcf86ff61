"""Read the contract sidecar, ``maitred.yaml``, that sits in a skill folder.

::

    cost: 1.0                      # optional, > 0
    mutates: true                  # optional
    family: domains                # optional: groups skills for family-level recall
    procedure: scripts/procedure.py:run        # optional: file:function
    scopes: [repo:write]           # optional: OAuth scopes a caller must hold to see or run it
    exit_predicates:
      - name: on_free_plan
        expr: account.plan == "free"            # CEL ...
        reads: [account.plan]
        on_missing: block                       # block (default) | offer
        on_stale: block
        max_age_s: 300                         # or per key: {account.plan: 300}
        message: Custom domains need a paid plan.
      - python: scripts/procedure.py:domain_in_use   # ... or a decorated Python predicate

Errors name the sidecar file, the line and the entry at fault, and a file's problems are all
reported at once (a :class:`~maitred.errors.SidecarError` lists each with its line).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from maitred._yaml import YamlProblem, parse_yaml
from maitred.contract.model import Contract
from maitred.contract.predicate import CelPredicate, Predicate, PythonPredicate
from maitred.errors import (
    ContractError,
    PredicateCompileError,
    ProcedureError,
    SidecarError,
    UndeclaredStateError,
)

SIDECAR = "maitred.yaml"
_KEYS = {"cost", "mutates", "family", "procedure", "exit_predicates", "scopes"}
#: one OAuth scope token (RFC 6749, section 3.3): printable ASCII but space, '"' and '\\'
SCOPE_PATTERN = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]+$")


def read_scopes(value: Any) -> frozenset[str] | str:
    """A sidecar's ``scopes`` (a list of OAuth scope tokens) as a set, or what is wrong with
    it (a sentence to report with the entry's line)."""
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return f"must be a list of scope names (e.g. [repo:write]), got {value!r}"
    bad = [v for v in value if not SCOPE_PATTERN.fullmatch(v)]
    if bad:
        return (
            f"has {bad[0]!r}, which is not an OAuth scope (printable ASCII without spaces, "
            "'\"' or '\\')"
        )
    return frozenset(value)


_PRED_KEYS = {"name", "expr", "python", "reads", "on_missing", "on_stale", "max_age_s", "message"}


class _Problems:
    """Every problem of one sidecar, each with its line; raised together at the end."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.items: list[tuple[int | None, str]] = []

    def add(self, node: yaml.Node | None, message: str) -> None:
        line = node.start_mark.line + 1 if node is not None else None
        self.items.append((line, message.removeprefix(f"{self.path}: ")))

    def raise_any(self) -> None:
        if self.items:
            raise SidecarError(self.path, sorted(self.items, key=lambda item: item[0] or 0))


def load_sidecar(folder: Path, skill: str) -> tuple[Contract, str | None]:
    """Load ``folder/maitred.yaml`` -> (contract, family). No file -> an empty contract.

    Every entry is checked even after one fails, so a file's problems come out together.

    Raises:
        SidecarError: the file is not valid YAML, or any entry is invalid (each problem with
            its line; a predicate that does not compile or reads undeclared state included).
    """
    path = folder / SIDECAR
    if not path.is_file():
        return Contract(), None
    where = str(path)
    problems = _Problems(where)
    data, root = _read(path, problems)
    problems.raise_any()
    nodes = _value_nodes(root)
    unknown = sorted(str(k) for k in set(data) - _KEYS)
    for key in unknown:
        problems.add(_key_node(root, key), f"unknown key {key!r}; known keys: {sorted(_KEYS)}")
    cost = data.get("cost", 1.0)
    if isinstance(cost, bool) or not isinstance(cost, (int, float)) or cost <= 0:
        problems.add(nodes.get("cost"), f"`cost` must be a positive number, got {cost!r}")
    mutates = data.get("mutates", False)
    if not isinstance(mutates, bool):
        problems.add(nodes.get("mutates"), f"`mutates` must be true or false, got {mutates!r}")
    family = data.get("family")
    if family is not None and not isinstance(family, str):
        problems.add(nodes.get("family"), f"`family` must be a string, got {family!r}")
    modules: dict[str, ModuleType] = {}
    procedure = None
    if data.get("procedure") is not None:
        try:
            procedure = _resolve(folder, str(data["procedure"]), skill, modules, where)
            if not callable(procedure):
                raise ProcedureError(f"procedure {data['procedure']!r} is not callable")
        except ContractError as exc:
            problems.add(nodes.get("procedure"), str(exc))
    scopes = read_scopes(data.get("scopes"))
    if isinstance(scopes, str):
        problems.add(nodes.get("scopes"), f"`scopes` {scopes}")
    predicates = _predicates(folder, data, nodes, skill, modules, problems)
    problems.raise_any()
    contract = Contract(float(cost), mutates, tuple(predicates), procedure, where)
    return replace(contract, scopes=scopes) if isinstance(scopes, frozenset) else contract, family


def _read(
    path: Path, problems: _Problems, keys: set[str] = _KEYS
) -> tuple[dict[Any, Any], yaml.MappingNode | None]:
    """The file's mapping and its node tree; a problem (with its line) when it is not one
    (``keys``: the top-level keys the file may have, named when it is no mapping)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        problems.add(
            None, f"is not UTF-8 text ({exc.reason} at byte {exc.start}): save it as UTF-8"
        )
        return {}, None
    try:
        data, node = parse_yaml(text, str(path))
    except YamlProblem as exc:
        problems.items.append((exc.line, exc.detail))
        return {}, None
    if data is None:
        return {}, None
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        problems.add(node, f"must be a mapping with keys {sorted(keys)}")
        return {}, None
    return data, node


def _value_nodes(node: yaml.Node | None) -> dict[str, yaml.Node]:
    """Key -> value node of a mapping node (positions for errors); empty for anything else."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(k.value): v for k, v in node.value if isinstance(k, yaml.ScalarNode)}


def _key_node(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    return next(
        (k for k, _ in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None
    )


def _predicates(
    folder: Path,
    data: dict[Any, Any],
    nodes: dict[str, yaml.Node],
    skill: str,
    modules: dict[str, ModuleType],
    problems: _Problems,
) -> list[Predicate]:
    """The ``exit_predicates`` entries that load; a problem for each one that does not."""
    entries = data.get("exit_predicates") or []
    listed = nodes.get("exit_predicates")
    if not isinstance(entries, list):
        problems.add(listed, "`exit_predicates` must be a list")
        return []
    entry_nodes = listed.value if isinstance(listed, yaml.SequenceNode) else []
    predicates: list[Predicate] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        node = entry_nodes[i] if i < len(entry_nodes) else listed
        expr = _value_nodes(node).get("expr")
        origin = f"{problems.path}:{expr.start_mark.line + 1}" if expr is not None else ""
        try:
            predicate = _predicate(folder, entry, skill, modules, f"exit_predicates[{i}]", origin)
        except ContractError as exc:
            problems.add(_entry_field(node, str(exc)), str(exc))
            continue
        if predicate.name in seen:
            problems.add(
                node,
                f"exit_predicates[{i}]: predicate name {predicate.name!r} is declared twice "
                f"(also exit_predicates[{seen[predicate.name]}]): rename one",
            )
        seen.setdefault(predicate.name, i)
        predicates.append(predicate)
    return predicates


def _entry_field(node: yaml.Node | None, message: str) -> yaml.Node | None:
    """The entry's field the message is about (``expr`` or ``approve`` for a CEL problem), else
    the entry."""
    fields = _value_nodes(node)
    for key in ("expr", "approve", "reads", "python", "max_age_s", "code", "name"):
        if key in fields and f"`{key}`" in message:
            return fields[key]
    for key in ("expr", "approve"):
        if "CEL expression" in message and key in fields:
            return fields[key]
    return node


def _predicate(
    folder: Path,
    entry: Any,
    skill: str,
    modules: dict[str, ModuleType],
    where: str,
    origin: str = "",
) -> Predicate:
    if not isinstance(entry, dict):
        raise ContractError(f"{where}: must be a mapping with `expr` or `python`")
    unknown = sorted(set(entry) - _PRED_KEYS)
    if unknown:
        raise ContractError(f"{where}: unknown key(s) {unknown}; known keys: {sorted(_PRED_KEYS)}")
    if ("expr" in entry) == ("python" in entry):
        raise ContractError(
            f"{where}: give exactly one of `expr` (CEL) or `python` (file:function)"
        )
    if "python" in entry:
        obj = _resolve(folder, str(entry["python"]), skill, modules, where)
        if not isinstance(obj, PythonPredicate):
            raise ContractError(
                f"{where}: {entry['python']!r} is not an @exit_predicate-decorated function"
            )
        return obj
    name = entry.get("name")
    if not isinstance(name, str):
        raise ContractError(f"{where}: a CEL predicate needs a `name`")
    reads = entry.get("reads")
    if not isinstance(reads, list) or not all(isinstance(k, str) for k in reads):
        raise ContractError(f"{where} ({name}): `reads` must be a list of state keys")
    max_age = entry.get("max_age_s")
    if isinstance(max_age, dict):
        max_age = {str(k): v for k, v in max_age.items()}
    elif max_age is not None and (
        isinstance(max_age, bool) or not isinstance(max_age, (int, float))
    ):
        raise ContractError(
            f"{where} ({name}): `max_age_s` must be a number of seconds or a map of "
            "state key -> seconds"
        )
    try:
        return CelPredicate(
            expression=str(entry["expr"]),
            name=name,
            reads=tuple(reads),
            on_missing=entry.get("on_missing", "block"),
            on_stale=entry.get("on_stale", "block"),
            max_age_s=float(max_age) if isinstance(max_age, (int, float)) else max_age,
            message=str(entry.get("message", "")),
            source=f"{where} ({name})",
            origin=origin,
        )
    except UndeclaredStateError as exc:
        raise UndeclaredStateError(f"{where} ({name})", exc.key, reads) from None
    except PredicateCompileError:
        raise
    except ContractError as exc:
        raise ContractError(f"{where}: {exc}") from None


def _resolve(folder: Path, ref: str, skill: str, modules: dict[str, ModuleType], where: str) -> Any:
    file_part, sep, attr = ref.partition(":")
    if not sep or not attr:
        raise ProcedureError(f"{where}: {ref!r} must look like 'scripts/procedure.py:function'")
    path = (folder / file_part).resolve()
    if not path.is_file():
        raise ProcedureError(f"{where}: file {file_part!r} not found in {folder}")
    module = modules.get(str(path))
    if module is None:
        mod_name = f"maitred_skill_{skill.replace('-', '_')}_{path.stem}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            raise ProcedureError(f"{where}: cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise ProcedureError(
                f"{where}: importing {path} failed: {type(exc).__name__}: {exc}"
            ) from exc
        modules[str(path)] = module
    if not hasattr(module, attr):
        raise ProcedureError(f"{where}: {path.name} has no attribute {attr!r}")
    return getattr(module, attr)
