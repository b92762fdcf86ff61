"""Read the contract sidecar, ``maitred.yaml``, that sits in a skill folder.

::

    cost: 1.0                      # optional, > 0
    mutates: true                  # optional
    family: domains                # optional: groups skills for family-level recall
    procedure: scripts/procedure.py:run        # optional: file:function
    exit_predicates:
      - name: on_free_plan
        expr: account.plan == "free"            # CEL ...
        reads: [account.plan]
        on_missing: block                       # block (default) | offer
        on_stale: block
        max_age_s: 300                         # or per key: {account.plan: 300}
        message: Custom domains need a paid plan.
      - python: scripts/procedure.py:domain_in_use   # ... or a decorated Python predicate

Errors name the sidecar file and the entry at fault.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from maitred.contract.model import Contract
from maitred.contract.predicate import CelPredicate, Predicate, PythonPredicate
from maitred.errors import (
    ContractError,
    PredicateCompileError,
    ProcedureError,
    UndeclaredStateError,
)

SIDECAR = "maitred.yaml"
_KEYS = {"cost", "mutates", "family", "procedure", "exit_predicates"}
_PRED_KEYS = {"name", "expr", "python", "reads", "on_missing", "on_stale", "max_age_s", "message"}


def load_sidecar(folder: Path, skill: str) -> tuple[Contract, str | None]:
    """Load ``folder/maitred.yaml`` -> (contract, family). No file -> an empty contract."""
    path = folder / SIDECAR
    if not path.is_file():
        return Contract(), None
    where = str(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ContractError(f"{where}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ContractError(f"{where}: must be a mapping with keys {sorted(_KEYS)}")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ContractError(f"{where}: unknown key(s) {unknown}; known keys: {sorted(_KEYS)}")
    cost = data.get("cost", 1.0)
    if isinstance(cost, bool) or not isinstance(cost, (int, float)) or cost <= 0:
        raise ContractError(f"{where}: `cost` must be a positive number, got {cost!r}")
    mutates = data.get("mutates", False)
    if not isinstance(mutates, bool):
        raise ContractError(f"{where}: `mutates` must be true or false, got {mutates!r}")
    family = data.get("family")
    if family is not None and not isinstance(family, str):
        raise ContractError(f"{where}: `family` must be a string, got {family!r}")
    modules: dict[str, ModuleType] = {}
    procedure = None
    if data.get("procedure") is not None:
        procedure = _resolve(folder, str(data["procedure"]), skill, modules, where)
        if not callable(procedure):
            raise ProcedureError(f"{where}: procedure {data['procedure']!r} is not callable")
    entries = data.get("exit_predicates") or []
    if not isinstance(entries, list):
        raise ContractError(f"{where}: `exit_predicates` must be a list")
    predicates: list[Predicate] = []
    for i, entry in enumerate(entries):
        predicates.append(
            _predicate(folder, entry, skill, modules, f"{where}: exit_predicates[{i}]")
        )
    names = [p.name for p in predicates]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ContractError(f"{where}: exit predicate name(s) {dupes} declared twice")
    return (
        Contract(float(cost), mutates, tuple(predicates), procedure, where),
        family,
    )


def _predicate(
    folder: Path, entry: Any, skill: str, modules: dict[str, ModuleType], where: str
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
