"""The skill contract: exit predicates declared once, evaluated by the gate and the procedure."""

from maitred.contract.evaluate import PredicateOutcome, evaluate
from maitred.contract.model import Contract
from maitred.contract.predicate import CelPredicate, Predicate, PythonPredicate, exit_predicate
from maitred.contract.procedure import ProcedureContext, ProcedureResult, SkillExit, ToolRecorder
from maitred.contract.sidecar import SIDECAR, load_sidecar

__all__ = [
    "SIDECAR",
    "CelPredicate",
    "Contract",
    "Predicate",
    "PredicateOutcome",
    "ProcedureContext",
    "ProcedureResult",
    "PythonPredicate",
    "SkillExit",
    "ToolRecorder",
    "evaluate",
    "exit_predicate",
    "load_sidecar",
]
