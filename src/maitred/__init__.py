"""maitred: decide, for every turn of an LLM agent, what it is offered and what it may do.

The pipeline, per message: state-blind **recall** ranks skills and tools; the deterministic
**executability gate** hides those whose own exit predicates hold in the account's current
state; a **depth** rule decides how many to expose; the **menu** renders them and counts their
tokens. When the model calls a tool, the **action gate** checks the call against the tool's
schema and call policies before it runs. Every decision goes to the **decision log**.

Quick start::

    from maitred import Maitred, PipelineOptions, ToolCall

    options = PipelineOptions(method="bm25")
    engine = Maitred.open(["skills/", "tools.json"], "accounts.json", options)
    session = engine.session("acc-1")
    turn = engine.turn("connect my domain", session=session)
    turn.menu.payload()          # the tools to hand the model
    turn.record.blocked          # what the gate removed, with the predicates that fired
    engine.check(ToolCall("connect_domain", {"domain": "a.com"}), session=session)

``import maitred`` is light: each public name is imported from its module on first use (see
ARCHITECTURE.md for where each part lives).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it (imported on first attribute access)
_EXPORTS: dict[str, str] = {
    "ActionGate": "maitred.actions.gate",
    "CallContext": "maitred.context",
    "CallableStateProvider": "maitred.state",
    "Catalog": "maitred.skills.model",
    "Contract": "maitred.contract.model",
    "Decision": "maitred.actions.model",
    "DecisionLog": "maitred.log.base",
    "GatedRegistry": "maitred.actions.wrap",
    "JsonStateProvider": "maitred.state",
    "Maitred": "maitred.engine",
    "MaitredError": "maitred.errors",
    "MemoryStateProvider": "maitred.state",
    "Message": "maitred.records",
    "Pipeline": "maitred.pipeline",
    "PipelineOptions": "maitred.build",
    "ProcedureContext": "maitred.contract.procedure",
    "Rulebook": "maitred.actions.rules",
    "Session": "maitred.actions.session",
    "Skill": "maitred.skills.model",
    "SkillExit": "maitred.contract.procedure",
    "Snapshot": "maitred.state.snapshot",
    "SqlStateProvider": "maitred.state",
    "StateProvider": "maitred.state.snapshot",
    "TableSpec": "maitred.state",
    "ToolCall": "maitred.actions.model",
    "Turn": "maitred.pipeline",
    "TurnRecord": "maitred.records",
    "Violation": "maitred.contract.policy",
    "build_pipeline": "maitred.build",
    "cel_rule": "maitred.contract.policy",
    "exit_predicate": "maitred.contract.predicate",
    "gate_tool": "maitred.actions.wrap",
    "load_catalog": "maitred.skills.catalog",
    "open_log": "maitred.log.base",
    "open_provider": "maitred.state",
    "policy_rule": "maitred.contract.policy",
}

__all__ = [
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'maitred' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from maitred.actions.gate import ActionGate
    from maitred.actions.model import Decision, ToolCall
    from maitred.actions.rules import Rulebook
    from maitred.actions.session import Session
    from maitred.actions.wrap import GatedRegistry, gate_tool
    from maitred.build import PipelineOptions, build_pipeline
    from maitred.contract.model import Contract
    from maitred.contract.policy import Violation, cel_rule, policy_rule
    from maitred.contract.predicate import exit_predicate
    from maitred.contract.procedure import ProcedureContext, SkillExit
    from maitred.engine import Maitred
    from maitred.errors import MaitredError
    from maitred.log.base import DecisionLog, open_log
    from maitred.pipeline import Pipeline, Turn
    from maitred.records import Message, TurnRecord
    from maitred.skills.catalog import load_catalog
    from maitred.skills.model import Catalog, Skill
    from maitred.state import (
        CallableStateProvider,
        JsonStateProvider,
        MemoryStateProvider,
        SqlStateProvider,
        TableSpec,
        open_provider,
    )
    from maitred.state.snapshot import Snapshot, StateProvider
