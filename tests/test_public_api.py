"""The public surface is deliberate: adding or removing a name from ``maitred.__all__`` must be
done here too (the way httpx guards its ``__all__``), and ``import maitred`` stays light."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

import maitred
import maitred.records

PUBLIC = [
    "ActionGate",
    "CallContext",
    "CallableStateProvider",
    "Catalog",
    "Contract",
    "Decision",
    "DecisionLog",
    "GatedRegistry",
    "JsonStateProvider",
    "Maitred",
    "MaitredError",
    "MemoryStateProvider",
    "Message",
    "Pipeline",
    "PipelineOptions",
    "ProcedureContext",
    "Rulebook",
    "Session",
    "Skill",
    "SkillExit",
    "Snapshot",
    "SqlStateProvider",
    "StateProvider",
    "TableSpec",
    "ToolCall",
    "Turn",
    "TurnRecord",
    "Violation",
    "build_pipeline",
    "cel_rule",
    "exit_predicate",
    "gate_tool",
    "load_catalog",
    "open_log",
    "open_provider",
    "policy_rule",
]


def test_the_public_names_are_exactly_the_snapshot() -> None:
    assert maitred.__all__ == PUBLIC, "update PUBLIC (and the docs) when the surface changes"
    assert sorted(maitred._EXPORTS) == PUBLIC


def test_every_public_name_resolves_to_its_module() -> None:
    for name in PUBLIC:
        value = getattr(maitred, name)
        assert getattr(value, "__name__", name) == name


def test_no_generic_names_at_top_level() -> None:
    generic = {"evaluate", "verify", "validate", "funnel", "run", "check", "load"}
    assert not generic & set(PUBLIC)


def test_import_maitred_imports_no_heavy_dependency() -> None:
    heavy = ["numpy", "scipy", "bm25s", "onnxruntime", "jsonschema", "yaml", "torch", "typer"]
    code = (
        "import json, sys; import maitred; "
        f"print(json.dumps([m for m in {heavy!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_the_old_records_module_is_a_deprecated_alias() -> None:
    """``maitred.decision`` held no ``Decision``: it is ``maitred.records`` now, aliased for
    one release with a warning."""
    code = "import warnings; warnings.simplefilter('error'); import maitred.decision"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode != 0 and "maitred.records" in out.stderr
    with pytest.warns(DeprecationWarning, match="maitred.records"):
        old = importlib.reload(importlib.import_module("maitred.decision"))
    assert old.TurnRecord is maitred.records.TurnRecord
