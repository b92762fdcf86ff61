"""maitred: decide, for every turn of an LLM agent, what it is offered and what it may do.

The pipeline, per message: state-blind **recall** ranks skills; the deterministic
**executability gate** hides those whose own exit predicates hold in the account's current
state; a **depth** rule decides how many to expose; the **menu** renders them and counts their
tokens; every decision goes to the **decision log**.

Quick start::

    from maitred import Message, PipelineOptions, build_pipeline

    pipeline = build_pipeline(["skills/"], "accounts.json", PipelineOptions(method="bm25"))
    turn = pipeline.route(Message(id="m1", text="connect my domain", account="acc-1"))
    turn.menu.payload()          # the tools to hand the model
    turn.record.blocked          # what the gate removed, with the predicates that fired
"""

from maitred.actions import (
    ActionGate,
    Decision,
    GatedRegistry,
    Policy,
    Session,
    ToolCall,
    gate_tool,
)
from maitred.analytics.funnel import Funnel, funnel
from maitred.build import PipelineOptions, build_pipeline
from maitred.contract import (
    CelPredicate,
    Contract,
    Predicate,
    PredicateOutcome,
    ProcedureContext,
    PythonPredicate,
    SkillExit,
    evaluate,
    exit_predicate,
)
from maitred.decision import Message, PairRecord, RunInfo, TurnRecord
from maitred.depth import DepthRule, ExposeAll, FixedK
from maitred.errors import MaitredError
from maitred.gate import ExecutabilityGate, GateOutcome, GateResult
from maitred.log import DecisionLog, open_log, verify
from maitred.menu import Menu, MenuRenderer, count_tokens
from maitred.pipeline import Pipeline, Turn
from maitred.recall import Candidate, Cutoff, Recaller, make_recaller
from maitred.skills import Catalog, Skill, load_catalog, validate
from maitred.state import (
    CallableStateProvider,
    JsonStateProvider,
    MemoryStateProvider,
    Snapshot,
    SqlStateProvider,
    StateProvider,
    TableSpec,
    open_provider,
)

__version__ = "0.1.0"

__all__ = [
    "ActionGate",
    "CallableStateProvider",
    "Candidate",
    "Catalog",
    "CelPredicate",
    "Contract",
    "Cutoff",
    "Decision",
    "DecisionLog",
    "DepthRule",
    "ExecutabilityGate",
    "ExposeAll",
    "FixedK",
    "Funnel",
    "GateOutcome",
    "GateResult",
    "GatedRegistry",
    "JsonStateProvider",
    "MaitredError",
    "MemoryStateProvider",
    "Menu",
    "MenuRenderer",
    "Message",
    "PairRecord",
    "Pipeline",
    "PipelineOptions",
    "Policy",
    "Predicate",
    "PredicateOutcome",
    "ProcedureContext",
    "PythonPredicate",
    "Recaller",
    "RunInfo",
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
    "build_pipeline",
    "count_tokens",
    "evaluate",
    "exit_predicate",
    "funnel",
    "gate_tool",
    "load_catalog",
    "make_recaller",
    "open_log",
    "open_provider",
    "validate",
    "verify",
]
