"""maitred's contract beside a skill or tool: one model for both.

A :class:`Contract` says what maitred knows of a skill or a tool beyond its name, description and
argument schema: its cost (depth), whether it mutates (fail-closed gating), its **exit
predicates** over account state (stage 2 hides it while one holds; stage 5 re-checks them when it
is called by name), its **call policies** over ``args.*`` / ``state.*`` / ``session.*`` (stage 5,
checked before the call runs), how a successful call changes what the session has read
(:class:`Records`), and, for skills, the procedure that checks the same exit predicates.

Skills declare it in ``maitred.yaml`` beside ``SKILL.md`` (:mod:`maitred.contract.sidecar`);
tools in one YAML beside the tool file, keyed by tool name (:mod:`maitred.contract.tool_sidecar`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from maitred.contract.policy import PolicyPredicate
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
class Records:
    """How a successful call of a tool changes what its session has read.

    Attributes:
        reads: for a read tool, the argument naming the record it returns
            (``get_reservation_details`` reads ``reservation_id``).
        creates: for a creating tool, ``(read tool, result key)``: the new record, whose id is
            the result's ``result key``, counts as read by ``read tool``.
    """

    reads: str | None = None
    creates: tuple[str, str] | None = None


@dataclass(frozen=True)
class Contract:
    """What maitred knows about a skill beyond its Agent Skills metadata.

    Attributes:
        cost: relative cost of exposing the skill (used by depth rules); 1.0 by default.
        mutates: whether running it changes anything (mutating calls gate fail-closed).
        exit_predicates: the hard exit conditions, shared by gate and procedure.
        procedure: the skill's own procedure, if maitred can run it (for audits).
        source: the sidecar file the contract came from, if any.
        policies: call policies, in evaluation order (tools; checked by the action gate).
        records: what a successful call tells the session (tools).
        scopes: the OAuth scopes a caller must hold for the tool to be shown or called
            (all of them; empty: none). Decided by the kernel for a caller that says which
            scopes it holds (:attr:`CallContext.granted <maitred.context.CallContext.granted>`).
    """

    cost: float = 1.0
    mutates: bool = False
    exit_predicates: tuple[Predicate, ...] = ()
    procedure: Procedure | None = field(default=None, compare=False)
    source: str = ""
    policies: tuple[PolicyPredicate, ...] = ()
    records: Records = field(default_factory=Records)
    scopes: frozenset[str] = frozenset()

    @cached_property
    def reads(self) -> frozenset[str]:
        """Every state key the exit predicates declare (computed once: the gate asks per turn)."""
        return frozenset(k for p in self.exit_predicates for k in p.reads)

    @property
    def predicates_by_name(self) -> Mapping[str, Predicate]:
        return {p.name: p for p in self.exit_predicates}

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
