"""Stage 5, the action gate: allow or reject one tool call before it runs.

``ActionGate.check(call, state, session)`` is pure and read-only: it reads the call's
arguments, the authoritative state and the session's record, and returns a
:class:`~maitred.actions.model.Decision`. In order:

1. an unknown tool -> ``TOOL_UNKNOWN``; a tool the caller holds back (``held``, a
   :class:`~maitred.actions.model.Hold`) -> the hold's code; a caller ``granted`` scopes that
   lack one the tool's contract requires -> ``INSUFFICIENT_SCOPE`` (the kernel's scope rule,
   :func:`maitred.contract.kernel.missing_scopes`, the one stage 2 hid it by); a tool outside
   this turn's ``offered`` set ->
   ``TOOL_NOT_OFFERED``; then the decision kernel (:func:`maitred.contract.kernel.decide_exit`,
   the very function stage 2 uses) on one snapshot of the tool's exit-predicate keys, carrying
   the provider's ``account_found`` and its error: a tool it hides is ``TOOL_NOT_EXECUTABLE``
   (an exit predicate holds, or the cause ``account_not_found``) or ``STATE_UNAVAILABLE`` (the
   cause ``state_unavailable``), with the cause on :attr:`Decision.cause` -- hiding a tool is not
   enough: a call that names it is re-decided, and decided as stage 2 would. State that could not
   be read at all rejects a mutating tool with ``STATE_UNAVAILABLE`` even when its exit
   predicates read nothing (its call policies would read it);
2. the arguments checked against the tool's JSON schema (:mod:`.arguments`): a required one
   missing -> ``ARGS_MISSING``; a wrong type, a value outside its enum or bounds, an unknown
   argument -> ``ARGS_INVALID`` (a tool without a schema is checked for nothing here);
3. every policy predicate attached to the tool is evaluated by
   :func:`maitred.contract.evaluate` on one snapshot of the values they declared. A holding
   predicate rejects with its rule's code; a missing or stale read or an error rejects a
   mutating call with ``STATE_MISSING`` / ``STATE_STALE`` / ``PREDICATE_ERROR`` and says that
   the gate failed closed. The first predicate that holds (in declaration order) gives the code;
   every outcome is kept on the decision;
4. approval rules (``PolicyPredicate.approval``) last: when every other rule passed and an
   approval rule holds, the call needs a person's yes -> ``APPROVAL_REQUIRED``, with the
   rules' messages for the person on :attr:`Decision.approval_message`. Nobody is asked about
   a call that would be refused anyway. A call checked again with the person's
   :class:`~maitred.actions.model.Approval` (``check(..., approval=...)``) is decided in full
   once more with its approval rules satisfied when the answer is ``approve``, and is
   ``APPROVAL_DECLINED`` otherwise; the decision carries the answer.

The gate never calls a model, never writes to the state, and takes its clock as an argument, so
a decision can be replayed from the values it read. Given a ``log`` (a
:class:`~maitred.actions.sink.DecisionSink`, e.g. a decision log), it records every decision it
returns -- allowed or rejected, gate-level or policy -- with the session's id.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from maitred.actions.arguments import ArgumentChecker
from maitred.actions.document import MISSING, ActionState, SnapshotState, as_action_state, walk
from maitred.actions.model import (
    APPROVAL_DECLINED,
    APPROVAL_REQUIRED,
    FAIL_CLOSED_CODES,
    INSUFFICIENT_SCOPE,
    OK,
    STATE_UNAVAILABLE,
    TOOL_NOT_EXECUTABLE,
    TOOL_NOT_OFFERED,
    TOOL_UNKNOWN,
    Approval,
    Decision,
    Hold,
    ToolCall,
    new_call_id,
)
from maitred.actions.refusals import refusal_text
from maitred.actions.rules import PolicyPredicate, Rulebook, ToolRules
from maitred.actions.session import Session
from maitred.actions.sink import DecisionSink
from maitred.context import DEFAULT, CallContext
from maitred.contract.evaluate import PredicateOutcome, evaluate
from maitred.contract.kernel import (
    ExitVerdict,
    decide_exit,
    missing_scopes,
    scope_outcome,
)
from maitred.contract.predicate import StateView
from maitred.errors import ContractError
from maitred.state.snapshot import Snapshot

# the snapshot hash is computed when a decision is logged (Decision.to_json), not per check
_DEFERRED_HASH = "deferred"
_STATE = "state."
_SEGMENT = re.compile(r"\.?([^.\[\]]+)|\[([^\[\]]+)\]")


@dataclass(frozen=True)
class _Read:
    """A compiled read path: root, then keys (str) or references to other reads (_Read)."""

    text: str
    root: str
    steps: tuple[str | _Read, ...]


def compile_read(text: str) -> _Read:
    """Parse ``state.reservations[args.reservation_id].cabin`` into a :class:`_Read`."""
    parts: list[str | _Read] = []
    pos = 0
    for match in _SEGMENT.finditer(text):
        if match.start() != pos:
            break
        key, ref = match.groups()
        parts.append(key if key is not None else compile_read(ref))
        pos = match.end()
    if pos != len(text) or not parts or not isinstance(parts[0], str):
        raise ContractError(
            f"read path {text!r} cannot be parsed: write dotted keys, optionally indexed by "
            "another read in brackets, e.g. state.reservations[args.reservation_id]"
        )
    return _Read(text, parts[0], tuple(parts[1:]))


class _Resolver:
    """Resolves compiled reads for one call (args, state, session), memoising references."""

    def __init__(self, call: ToolCall, state: ActionState, session: Session) -> None:
        self.call, self.state, self.session_view = call, state, session.view()

    def path(self, read: _Read) -> tuple[str, ...] | None:
        out: list[str] = []
        for step in read.steps:
            if isinstance(step, str):
                out.append(step)
                continue
            value = self.value(step)[0]
            if value is MISSING or value is None or isinstance(value, (dict, list)):
                return None
            out.append(str(value))
        return tuple(out)

    def value(self, read: _Read) -> tuple[Any, float | None]:
        """The value at ``read`` (or MISSING) and, for state, when it was last known true."""
        path = self.path(read)
        if path is None:
            return MISSING, None
        if read.root == "args":
            return walk(self.call.arguments, path), None
        if read.root == "session":
            return walk(self.session_view, path), None
        return self.state.lookup(path), self.state.as_of(path)


class ActionGate:
    """Decides whether tool calls may run, under one :class:`Rulebook`.

    Args:
        rulebook: the tools and their call policies (a catalog's, or a built policy pack's).
        clock: the gate's "now" in unix seconds; packs with a business clock pass a fixed one.
        log: where every decision is recorded (a decision log or another sink); ``None``: not
            recorded.
    """

    def __init__(
        self,
        rulebook: Rulebook,
        clock: Callable[[], float] = time.time,
        *,
        log: DecisionSink | None = None,
    ) -> None:
        self.rulebook = rulebook
        self.clock = clock
        self.log = log
        self._reads: dict[str, _Read] = {}
        self._arguments: dict[str, ArgumentChecker] = {}
        for tool in rulebook.tools.values():
            for pred in tool.predicates:
                for key in pred.reads:
                    self._reads.setdefault(key, compile_read(key))
            if tool.schema:
                self._arguments[tool.name] = ArgumentChecker(tool.name, tool.schema)
        self._label = f"{rulebook.name}@{rulebook.version}"

    def check(
        self,
        call: ToolCall,
        state: ActionState | Snapshot | Mapping[str, Any],
        session: Session | None = None,
        *,
        offered: Collection[str] | None = None,
        now: float | None = None,
        turn_id: str = "",
        approval: Approval | None = None,
        held: Mapping[str, Hold] | None = None,
        granted: Collection[str] | None = None,
        origin: CallContext = DEFAULT,
    ) -> Decision:
        """Allow or reject ``call`` (see the module docstring for the order of checks).

        ``held`` maps the tools the caller holds back now to why (see
        :class:`~maitred.actions.model.Hold`); ``granted`` is the OAuth scopes the caller holds
        (``None``: not said, and contracts' ``scopes`` are not asked); ``origin`` is the
        request's context, whose subject, upstream and era the decision carries.

        The decision carries ``session.id`` and ``turn_id`` (the logged turn whose menu offered
        the call); with a ``log``, it is recorded before it is returned (a log that fails
        raises, and the call must then not run), and a call without an id gets a fresh one
        (``call-<hex>``), so no logged call has an empty id. ``approval`` is a person's answer
        to an earlier ``APPROVAL_REQUIRED`` decision on this same call; the decision carries it.
        """
        if self.log is not None and not call.id:
            call = replace(call, id=new_call_id())
        hold = held.get(call.name) if held and call.name in self.rulebook.tools else None
        if hold is not None:
            decision = self._held(call, hold, now)
        elif approval is not None and approval.answer != "approve":
            decision = self._declined(call, approval, self.clock() if now is None else now)
        else:  # no answer yet, or a yes: decided in full (again)
            decision = self._decide(call, state, session, offered, now, approval, granted)
        if approval is not None and hold is None:
            decision = replace(decision, approval=approval)
        return self._logged(decision, session, turn_id, origin)

    def refuse(
        self,
        call: ToolCall,
        hold: Hold,
        session: Session | None = None,
        *,
        now: float | None = None,
        turn_id: str = "",
        mutates: bool | None = None,
        origin: CallContext = DEFAULT,
    ) -> Decision:
        """Refuse ``call`` for ``hold``, a reason its adapter found before the gate could be
        asked (arguments the log cannot store, ``find_tools``' needs): decided and logged like
        a held tool's call, whatever the tool (one this rulebook does not know included).

        ``mutates``: whether the call could have changed anything (``None``: the rulebook's
        word, a tool it does not know counted as one that does).
        """
        if self.log is not None and not call.id:
            call = replace(call, id=new_call_id())
        return self._logged(self._held(call, hold, now, mutates), session, turn_id, origin)

    def _logged(
        self,
        decision: Decision,
        session: Session | None,
        turn_id: str,
        origin: CallContext = DEFAULT,
    ) -> Decision:
        """``decision`` with its session's id, tenant and account, its ``turn_id``, and who
        asked, where the call goes and the request's trace (``origin``), written to the log."""
        d = decision
        session_id, tenant, account = d.session_id, d.tenant, d.account
        linked = (session is not None and bool(session.id)) or bool(turn_id)
        if linked:
            session_id, tenant, account = (
                (session.id, session.tenant, session.account) if session else ("", "", "")
            )
        else:
            turn_id = d.turn_id
        asked = bool(origin.subject or origin.upstream or origin.era or origin.trace_id)
        if linked or asked:  # one copy of the decision for both
            decision = replace(
                d,
                session_id=session_id,
                turn_id=turn_id,
                tenant=tenant,
                account=account,
                subject=origin.subject if asked else d.subject,
                upstream=origin.upstream if asked else d.upstream,
                era=origin.era if asked else d.era,
                trace_id=origin.trace_id if asked else d.trace_id,
            )
        if self.log is not None:
            self.log.write_decisions((decision,))
        return decision

    def _decide(
        self,
        call: ToolCall,
        state: ActionState | Snapshot | Mapping[str, Any],
        session: Session | None,
        offered: Collection[str] | None,
        now: float | None,
        approval: Approval | None = None,
        granted: Collection[str] | None = None,
    ) -> Decision:
        at = self.clock() if now is None else now
        tool = self.rulebook.tools.get(call.name)
        if tool is not None and granted is not None:
            lacking = missing_scopes(tool.tool.contract, granted)
            if lacking:
                return self._insufficient_scope(call, tool, lacking, granted, at)
        if tool is None or (offered is not None and call.name not in offered):
            # the same words for both: the model learns nothing of tools it was not shown
            return self._reject(
                call,
                TOOL_UNKNOWN if tool is None else TOOL_NOT_OFFERED,
                "that tool is not available in this conversation; use one of the tools you "
                "were offered",
                (),
                True if tool is None else tool.mutates,
                at,
            )
        src = as_action_state(state)
        down = str(getattr(src, "unavailable", ""))
        verdict = self._exit_verdict(tool, src, at, granted)
        if verdict.hidden:
            return self._not_executable(call, tool, verdict, down, at)
        if down and tool.mutates:
            return self._reject(
                call,
                STATE_UNAVAILABLE,
                f"the account's state could not be read ({down}); the gate fails closed for "
                "changes. Try again later",
                (),
                True,
                at,
            )
        checker = self._arguments.get(call.name)
        problem = checker.check(call.arguments) if checker is not None else None
        if problem is not None:
            return self._reject(
                call, problem.code, problem.message, problem.fields, tool.mutates, at
            )
        return self._policy_decision(call, tool, src, session or Session(), at, approval)

    def _insufficient_scope(
        self,
        call: ToolCall,
        tool: ToolRules,
        lacking: frozenset[str],
        granted: Collection[str],
        at: float,
    ) -> Decision:
        """The refusal of a call whose caller lacks a scope the tool requires: the missing
        scopes are named (what the user must grant), nothing of the tool's other rules."""
        names = ", ".join(sorted(lacking))
        why = (
            f"the access token this conversation uses was not granted the scope(s) {names} "
            "that this call needs; the user can connect again with a token that has them"
        )
        outcome = scope_outcome(tool.tool.contract, lacking, granted)
        return self._reject(call, INSUFFICIENT_SCOPE, why, (), tool.mutates, at, (outcome,))

    def _held(
        self, call: ToolCall, hold: Hold, now: float | None, mutates: bool | None = None
    ) -> Decision:
        """The refusal of a call to a tool the caller holds back (its words for the model,
        its reason for people)."""
        if mutates is None:
            tool = self.rulebook.tools.get(call.name)
            mutates = True if tool is None else tool.mutates
        at = self.clock() if now is None else now
        decision = self._reject(call, hold.code, hold.message_for_model, hold.fields, mutates, at)
        reason = hold.reason or hold.message_for_model
        return replace(
            decision,
            message=f"{call.name} rejected: {hold.code}: {reason}",
            retry_after_s=hold.retry_after_s,
        )

    def _policy_decision(
        self,
        call: ToolCall,
        tool: ToolRules,
        state: ActionState,
        session: Session,
        at: float,
        approval: Approval | None = None,
    ) -> Decision:
        snapshot = self._snapshot(call, tool.predicates, state, session, at)
        outcomes = tuple(evaluate(p.predicate, snapshot, at) for p in tool.predicates)
        # an approval rule that holds asks a person (below); one that could not be decided
        # refuses like any other rule
        first = next(
            (
                i
                for i, o in enumerate(outcomes)
                if o.holds and not (tool.predicates[i].approval and o.status == "ok")
            ),
            None,
        )
        if first is None:
            pairs = zip(tool.predicates, outcomes, strict=True)
            asks = [p for p, o in pairs if p.approval and o.holds]
            if asks and approval is None:
                return self._ask(call, tool, asks, outcomes, at)
            said = "allowed after a person's approval" if asks else "allowed"
            return Decision(
                call, "allow", OK, said, "", (), outcomes, tool.mutates, at, self._label
            )
        pred, outcome = tool.predicates[first], outcomes[first]
        if outcome.status == "ok":
            view = StateView(snapshot.values, pred.reads, pred.name, at)
            why = pred.explanation(view)
            return self._reject(
                call, pred.code, why.message, why.fields, tool.mutates, at, outcomes, pred
            )
        code = FAIL_CLOSED_CODES[outcome.status]
        text = (
            f"the policy check {pred.name} could not be completed ({outcome.detail}); the "
            "gate fails closed for changes, so the call was rejected. Read the record again "
            "or ask for help"
        )
        return self._reject(call, code, text, pred.fields, tool.mutates, at, outcomes, pred)

    def _ask(
        self,
        call: ToolCall,
        tool: ToolRules,
        asks: Sequence[PolicyPredicate],
        outcomes: tuple[PredicateOutcome, ...],
        at: float,
    ) -> Decision:
        """The refusal that asks for a person's yes (every other rule passed)."""
        shown = " ".join(dict.fromkeys(p.message for p in asks if p.message))
        why = f"a person must approve this call before it runs ({shown})"
        decision = self._reject(
            call, APPROVAL_REQUIRED, why, (), tool.mutates, at, outcomes, asks[0]
        )
        return replace(
            decision,
            message_for_model=refusal_text(
                APPROVAL_REQUIRED,
                why,
                then="it can run once the user approves it",
                lead="Not run yet",
            ),
            approval_message=shown,
        )

    def _declined(self, call: ToolCall, approval: Approval, at: float) -> Decision:
        """The refusal of a call the person did not approve (nothing else is evaluated)."""
        tool = self.rulebook.tools.get(call.name)
        said = "declined" if approval.answer == "decline" else "dismissed the question"
        why = f"the user was asked to approve this call and {said}"
        decision = self._reject(
            call, APPROVAL_DECLINED, why, (), True if tool is None else tool.mutates, at
        )
        return replace(
            decision,
            message_for_model=refusal_text(
                APPROVAL_DECLINED, why, then="do not try it again unless the user asks for it"
            ),
        )

    def _snapshot(
        self,
        call: ToolCall,
        predicates: Sequence[PolicyPredicate],
        state: ActionState,
        session: Session,
        at: float,
    ) -> Snapshot:
        """One snapshot holding every value the predicates declared (one batch per call)."""
        resolver = _Resolver(call, state, session)
        values: dict[str, Any] = {}
        key_as_of: dict[str, float] = {}
        missing: set[str] = set()
        optional = frozenset().union(*(p.optional for p in predicates))
        for key in {k for p in predicates for k in p.reads}:
            value, as_of = resolver.value(self._reads[key])
            if value is MISSING:
                if key in optional:
                    values[key] = None
                else:
                    missing.add(key)
                continue
            values[key] = value
            if as_of is not None:
                key_as_of[key] = as_of
        # a value the provider found unfit for its declared type stays an evaluation error
        unfit = state.snapshot.invalid if isinstance(state, SnapshotState) else {}
        invalid = {
            k: unfit[k.removeprefix(_STATE)] for k in values if k.removeprefix(_STATE) in unfit
        }
        return Snapshot(
            session.id,
            values,
            at,
            key_as_of,
            frozenset(missing),
            "action-gate",
            _DEFERRED_HASH,
            invalid=invalid,
        )

    def _exit_verdict(
        self,
        tool: ToolRules,
        state: ActionState,
        at: float,
        granted: Collection[str] | None = None,
    ) -> ExitVerdict:
        """The kernel's verdict on ``tool`` over one snapshot of its exit-predicate keys.

        The provider's own read (:class:`SnapshotState`, from
        :func:`~maitred.gate.executability.fetch_keys`) is decided as it is: it keeps what the
        read knew about itself -- a provider's ``account_found``, and its failure (the
        provider-error marker) -- so the kernel sees the same cause stage 2 saw on the same
        state. Any other state (a document the caller passed) is a record of values only.
        """
        contract = tool.tool.contract
        if not contract.exit_predicates and not missing_scopes(contract, granted):
            return ExitVerdict(True, mutates=contract.mutates)
        if isinstance(state, SnapshotState):  # the provider's own read: exactly what stage 2 sees
            return decide_exit(contract, state.snapshot, at, granted)
        values: dict[str, Any] = {}
        key_as_of: dict[str, float] = {}
        for key in contract.reads:
            path = key.split(".")
            value = state.lookup(path)
            if value is not MISSING:
                values[key] = value
                stamp = state.as_of(path)
                if stamp is not None:
                    key_as_of[key] = stamp
        snap = Snapshot(
            "",
            values,
            at,
            key_as_of,
            frozenset(contract.reads - values.keys()),
            "action-gate",
            _DEFERRED_HASH,
        )
        return decide_exit(contract, snap, at, granted)

    def _not_executable(
        self, call: ToolCall, tool: ToolRules, verdict: ExitVerdict, down: str, at: float
    ) -> Decision:
        """The rejection of a call to a tool the kernel hides (one mapping, see the module)."""
        if verdict.missing_scopes:  # refused before the offer already; kept for one mapping
            names = ", ".join(sorted(verdict.missing_scopes))
            why = f"this call needs scope(s) the access token was not granted: {names}"
            return self._reject(call, INSUFFICIENT_SCOPE, why, (), tool.mutates, at, verdict.fired)
        if verdict.cause == "state_unavailable":
            code = STATE_UNAVAILABLE
            why = (
                f"the account's state could not be read ({down or 'the provider failed'}); "
                "the gate fails closed. Try again later"
            )
        elif verdict.cause == "account_not_found":
            code = TOOL_NOT_EXECUTABLE
            why = (
                "there is no record of this account, so this tool cannot run for it; check the "
                "account with the user"
            )
        else:
            code = TOOL_NOT_EXECUTABLE
            said = {p.name: p.message for p in tool.exit_predicates}
            detail = "; ".join(
                said.get(o.predicate) or o.detail or o.predicate for o in verdict.fired
            )
            why = f"this tool cannot run for this account now ({detail})"
        decision = self._reject(call, code, why, (), tool.mutates, at, verdict.fired)
        return replace(decision, cause=verdict.cause)

    def _reject(
        self,
        call: ToolCall,
        code: str,
        why: str,
        fields: tuple[str, ...],
        mutates: bool,
        at: float,
        outcomes: tuple[PredicateOutcome, ...] = (),
        pred: PolicyPredicate | None = None,
    ) -> Decision:
        who = f" by {pred.name} (version {pred.version[:15]})" if pred else ""
        return Decision(
            call,
            "reject",
            code,
            f"{call.name} rejected{who}: {code}: {why}",
            refusal_text(code, why),
            fields,
            outcomes,
            mutates,
            at,
            self._label,
        )
