"""Run a skill's procedure in a sandbox and say how it ended.

The procedure gets a :class:`~maitred.contract.procedure.ToolRecorder` with nothing to perform,
so every ``ctx.tools.call(...)`` is recorded and returns ``None``: no side effect escapes through
the contract's tool handles. (A procedure that reaches the network or disk *directly* bypasses
maitred altogether; that is outside what any audit can sandbox.)

A run ends one of three ways (:class:`SandboxRun`):

* ``completed`` -- the procedure returned;
* ``exited`` -- it raised :class:`~maitred.contract.procedure.SkillExit`, either from
  ``ctx.exit_if(name)`` (``via="exit_if"``: the shared predicate object, by the shared evaluator)
  or raised by its own code (``via="inline"``: a hand-written check, the one place gate and
  procedure can drift apart);
* ``error`` -- it raised anything else; the exception and the line that raised it are kept, and
  the audit carries on.

Every predicate the procedure checked through ``exit_if`` is recorded, in order, so an audit can
tell which declared predicates a procedure never checks.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from maitred.contract.model import Contract
from maitred.contract.procedure import ProcedureContext, SkillExit, ToolRecorder
from maitred.state.snapshot import Snapshot

RunStatus = Literal["completed", "exited", "error"]
ExitVia = Literal["exit_if", "inline"]


@dataclass
class _RecordingContext(ProcedureContext):
    """A procedure context that remembers what ``exit_if`` checked and which exit it raised."""

    checked: list[str] = field(default_factory=list)
    raised: SkillExit | None = None

    def exit_if(self, name: str) -> None:
        self.checked.append(name)
        try:
            super().exit_if(name)
        except SkillExit as stop:
            self.raised = stop
            raise


@dataclass(frozen=True)
class SandboxRun:
    """How one sandboxed procedure run ended.

    Attributes:
        status: ``completed``, ``exited`` or ``error``.
        exit_predicate: the predicate named by the exit (``exited`` only).
        via: ``exit_if`` or ``inline`` (``exited`` only).
        checked: predicates the procedure evaluated through ``ctx.exit_if``, in order.
        calls: the tool calls it made (recorded, never performed).
        error: ``"TypeError: ..."`` for an ``error`` run.
        where: ``file:line`` of the statement that raised (``error`` runs).
    """

    status: RunStatus
    exit_predicate: str | None = None
    via: ExitVia | None = None
    checked: tuple[str, ...] = ()
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    error: str = ""
    where: str = ""

    def describe(self) -> str:
        """``completed`` / ``exited on NAME (inline)`` / ``raised TypeError: ... at f.py:12``."""
        if self.status == "completed":
            return "completed"
        if self.status == "exited":
            how = " (an inline check, not ctx.exit_if)" if self.via == "inline" else ""
            return f"exited on {self.exit_predicate}{how}"
        return f"raised {self.error} at {self.where}"


def run_sandboxed(
    skill: str,
    contract: Contract,
    snapshot: Snapshot,
    now: float,
    args: Mapping[str, Any] | None = None,
) -> SandboxRun:
    """Run ``contract.procedure`` on ``snapshot`` at ``now`` with recording tool handles.

    Raises:
        ValueError: the contract has no procedure (callers report such skills as not
            auditable before getting here).
    """
    if contract.procedure is None:
        raise ValueError(f"skill {skill!r} has no procedure to run in the sandbox")
    recorder = ToolRecorder(perform={})
    ctx = _RecordingContext(
        skill, snapshot, contract.predicates_by_name, now, dict(args or {}), recorder
    )
    try:
        contract.procedure(ctx)
    except SkillExit as stop:
        via: ExitVia = "exit_if" if stop is ctx.raised else "inline"
        return SandboxRun(
            "exited",
            stop.outcome.predicate,
            via,
            tuple(ctx.checked),
            tuple(recorder.calls),
        )
    except Exception as exc:  # a broken procedure is a finding, not a reason to stop auditing
        return SandboxRun(
            "error",
            checked=tuple(ctx.checked),
            calls=tuple(recorder.calls),
            error=f"{type(exc).__name__}: {exc}",
            where=_where(exc),
        )
    return SandboxRun("completed", checked=tuple(ctx.checked), calls=tuple(recorder.calls))


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "?"
    last = frames[-1]
    return f"{last.filename}:{last.lineno}"
