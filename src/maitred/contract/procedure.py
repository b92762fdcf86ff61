"""Skill procedures and the context through which they check their own exit predicates.

A procedure is a Python function ``run(ctx) -> Any`` in the skill folder (named in its sidecar).
It reads state through ``ctx.state``, stops on a hard condition with ``ctx.exit_if("name")`` --
which evaluates the *same* predicate object the gate evaluates, by the same evaluator -- and
performs side effects only through ``ctx.tools``, so a sandbox can record instead of act.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from maitred.contract.evaluate import PredicateOutcome, evaluate
from maitred.contract.predicate import Predicate
from maitred.errors import ProcedureError
from maitred.state.snapshot import Snapshot


class SkillExit(Exception):
    """Raised by :meth:`ProcedureContext.exit_if` when an exit predicate holds."""

    def __init__(self, skill: str, outcome: PredicateOutcome) -> None:
        self.skill = skill
        self.outcome = outcome
        super().__init__(f"skill {skill!r} exits: {outcome.predicate} ({outcome.status})")


@dataclass
class ToolRecorder:
    """Side-effect handles for a procedure. ``perform`` maps a tool name to a real callable;
    without one, the call is only recorded (the sandbox)."""

    perform: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def call(self, tool: str, **args: Any) -> Any:
        self.calls.append((tool, dict(args)))
        fn = self.perform.get(tool)
        return fn(**args) if fn is not None else None


@dataclass
class ProcedureContext:
    """What a running procedure sees."""

    skill: str
    snapshot: Snapshot
    predicates: Mapping[str, Predicate]
    now: float
    args: Mapping[str, Any] = field(default_factory=dict)
    tools: ToolRecorder = field(default_factory=ToolRecorder)

    @property
    def state(self) -> Mapping[str, Any]:
        return self.snapshot.values

    def exit_if(self, name: str) -> None:
        """Stop the procedure with :class:`SkillExit` if the named exit predicate holds."""
        try:
            predicate = self.predicates[name]
        except KeyError:
            raise ProcedureError(
                f"skill {self.skill!r}: procedure checks exit predicate {name!r}, which the "
                f"skill does not declare; declared: {sorted(self.predicates)}"
            ) from None
        outcome = evaluate(predicate, self.snapshot, self.now)
        if outcome.holds:
            raise SkillExit(self.skill, outcome)


Procedure = Callable[[ProcedureContext], Any]


@dataclass(frozen=True)
class ProcedureResult:
    """How a procedure run ended: completed, or exited on a predicate."""

    completed: bool
    exit: PredicateOutcome | None
    calls: tuple[tuple[str, dict[str, Any]], ...]
    value: Any = None
