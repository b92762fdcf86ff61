"""maitred's contract beside a skill or tool: cost, mutation, exit predicates, procedure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from maitred.contract.evaluate import evaluate
from maitred.contract.predicate import Predicate
from maitred.contract.procedure import (
    Procedure,
    ProcedureContext,
    ProcedureResult,
    SkillExit,
    ToolRecorder,
)
from maitred.state.snapshot import Snapshot


@dataclass(frozen=True)
class Contract:
    """What maitred knows about a skill beyond its Agent Skills metadata.

    Attributes:
        cost: relative cost of exposing the skill (used by depth rules); 1.0 by default.
        mutates: whether running it changes anything (mutating calls gate fail-closed).
        exit_predicates: the hard exit conditions, shared by gate and procedure.
        procedure: the skill's own procedure, if maitred can run it (for audits).
        source: the sidecar file the contract came from, if any.
    """

    cost: float = 1.0
    mutates: bool = False
    exit_predicates: tuple[Predicate, ...] = ()
    procedure: Procedure | None = field(default=None, compare=False)
    source: str = ""

    @cached_property
    def reads(self) -> frozenset[str]:
        """Every state key the exit predicates declare (computed once: the gate asks per turn)."""
        return frozenset(k for p in self.exit_predicates for k in p.reads)

    @property
    def predicates_by_name(self) -> Mapping[str, Predicate]:
        return {p.name: p for p in self.exit_predicates}

    def would_exit(self, snapshot: Snapshot, now: float) -> bool:
        """True when any exit predicate holds (what the gate decides)."""
        return any(evaluate(p, snapshot, now).holds for p in self.exit_predicates)

    def run(
        self,
        skill: str,
        snapshot: Snapshot,
        now: float,
        args: Mapping[str, Any] | None = None,
        tools: ToolRecorder | None = None,
    ) -> ProcedureResult:
        """Run the procedure; a :class:`SkillExit` becomes a non-completed result."""
        if self.procedure is None:
            from maitred.errors import ProcedureError

            raise ProcedureError(f"skill {skill!r} has no procedure to run")
        recorder = tools or ToolRecorder()
        ctx = ProcedureContext(
            skill, snapshot, self.predicates_by_name, now, dict(args or {}), recorder
        )
        try:
            value = self.procedure(ctx)
        except SkillExit as stop:
            return ProcedureResult(False, stop.outcome, tuple(recorder.calls))
        return ProcedureResult(True, None, tuple(recorder.calls), value)
