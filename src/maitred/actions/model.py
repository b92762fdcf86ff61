"""The values the action gate exchanges: a tool call in, a decision out.

A :class:`Decision` is data, never an exception: ``allow`` or ``reject`` with a stable reason
``code`` (``"OK"`` when allowed), a message for people (which predicate, which version, what it
read), a message for the model (what was wrong and that nothing ran, so it can re-plan), the
offending argument paths (``fields``) and the outcome of every predicate evaluated, with its
version. :meth:`Decision.to_json` is what the decision log stores (table ``action_decisions``,
its canonical JSON and content hash); it holds everything needed to replay the call: the call,
the session it came from, the values each predicate read, their versions and the gate's clock.

Gate-level codes (rule packs add their own, e.g. ``AIRLINE_CANCEL_NOT_ELIGIBLE``):

* ``TOOL_UNKNOWN`` -- no tool of that name is known to the rulebook;
* ``INSUFFICIENT_SCOPE`` -- the caller said which OAuth scopes it holds
  (:attr:`CallContext.granted <maitred.context.CallContext.granted>`) and lacks one the tool's
  contract requires: decided by the kernel's scope rule
  (:func:`maitred.contract.kernel.missing_scopes`) before the offer and before any state is
  read, so it is what stage 2 hid the tool for. The message names the missing scopes (what the
  user must grant), never the tool's other rules;
* ``TOOL_NOT_OFFERED`` -- the tool was not on this turn's menu;
* ``TOOL_NOT_EXECUTABLE`` -- the decision kernel (:func:`maitred.contract.kernel.decide_exit`)
  hides the tool now: an exit predicate holds, or the provider has no record of the account
  (``cause`` ``account_not_found``); it would have been hidden at stage 2;
* ``ARGS_MISSING`` -- a required argument is absent;
* ``ARGS_INVALID`` -- an argument breaks the tool's JSON schema (type, enum, bounds) or is not
  one of its arguments;
* ``STATE_MISSING`` / ``STATE_STALE`` / ``PREDICATE_ERROR`` -- the gate could not decide and
  failed closed;
* ``STATE_UNAVAILABLE`` -- the state store could not be read (down, past its deadline): the
  kernel hides every tool whose exit predicates read state (``cause`` ``state_unavailable``),
  and a mutating call fails closed without evaluating its call policies either;
* ``APPROVAL_REQUIRED`` -- every rule passed, but an approval rule holds: a person must say yes
  before the call runs (:attr:`Decision.approval_message` is what they are shown). The library
  and the HTTP service refuse with it (the application asks the person itself); the MCP gateway
  asks through MCP elicitation;
* ``APPROVAL_DECLINED`` -- the person said no, or dismissed the question.

**Approval by a person** takes two decisions, both logged: the one that asks
(``APPROVAL_REQUIRED``), then the one that answers, made when the call comes back with the
person's answer (:class:`Approval`, on :attr:`Decision.approval`, naming the first decision in
``of``). A yes re-checks the call in full -- the state may have changed while the person read
the question -- with its approval rules satisfied, so the second decision is ``OK`` or a rule's
refusal; a no is ``APPROVAL_DECLINED``. The second decision is the one that lets the call run.

An adapter may also *hold back* a tool for a reason outside the contracts (the MCP gateway: the
tool's definition is not the one an operator reviewed, ``TOOL_DEFINITION_CHANGED``; a rate limit
reached, ``RATE_LIMITED``, :mod:`maitred.ratelimit`): it passes a :class:`Hold` per such tool
with the call, and the action gate decides and logs the refusal like its own, right after
``TOOL_UNKNOWN``. A hold that passes (a rate limit) says when to try again
(:attr:`Decision.retry_after_s`, in the model's payload too).

So a tool hidden at stage 2 is, at stage 5, ``TOOL_NOT_EXECUTABLE`` -- or ``STATE_UNAVAILABLE``
when the kernel's cause is ``state_unavailable`` -- and :attr:`Decision.cause` carries the
kernel's cause when it had one.

**What the model is told** is one type, :class:`Rejection` (``Decision.tool_result()``): the
code, a message for the model, the argument paths at fault and the decision id, so an operator
can find the log row behind what the model saw. The library, the HTTP service and the MCP
gateway hand the model exactly this. It, :class:`Hold` and every refusal's words live in
:mod:`maitred.actions.refusals` (re-exported here), the one place refusals are built. A
message for the model never names a tool the conversation was not offered: an unknown or
unoffered tool is "not available in this conversation", never a list of the catalog, and a
rejection does not repeat the tool's name.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from maitred._canonical import content_hash
from maitred.actions.refusals import Hold as Hold  # the refusals' home, re-exported here
from maitred.actions.refusals import Rejection as Rejection
from maitred.actions.refusals import decided
from maitred.context import trace_id_fault
from maitred.contract.evaluate import PredicateOutcome
from maitred.contract.policy import APPROVAL_DECLINED as APPROVAL_DECLINED  # the contract's
from maitred.contract.policy import APPROVAL_REQUIRED as APPROVAL_REQUIRED  # codes, re-exported
from maitred.records import Cause

Verdict = Literal["allow", "reject"]
#: a person's answer to an approval: yes, no, or the question dismissed unanswered
ApprovalAnswer = Literal["approve", "decline", "cancel"]

OK = "OK"
TOOL_UNKNOWN = "TOOL_UNKNOWN"
TOOL_NOT_OFFERED = "TOOL_NOT_OFFERED"
INSUFFICIENT_SCOPE = "INSUFFICIENT_SCOPE"
TOOL_NOT_EXECUTABLE = "TOOL_NOT_EXECUTABLE"
ARGS_MISSING = "ARGS_MISSING"
ARGS_INVALID = "ARGS_INVALID"
STATE_MISSING = "STATE_MISSING"
STATE_STALE = "STATE_STALE"
PREDICATE_ERROR = "PREDICATE_ERROR"
STATE_UNAVAILABLE = "STATE_UNAVAILABLE"

#: the code a fail-closed outcome gets, by :attr:`PredicateOutcome.status`
FAIL_CLOSED_CODES: Mapping[str, str] = {
    "missing": STATE_MISSING,
    "stale": STATE_STALE,
    "error": PREDICATE_ERROR,
}


def new_call_id() -> str:
    """A fresh call id for a call whose client gave none (logged calls always have one)."""
    return f"call-{uuid.uuid4().hex[:16]}"


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for.

    Attributes:
        name: the tool's name.
        arguments: its arguments, as decoded JSON.
        id: the model provider's call id (``tool_call_id`` / ``tool_use_id``), if any.
    """

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": dict(self.arguments), "id": self.id}


@dataclass(frozen=True)
class Approval:
    """A person's answer to the decision that asked for it (see the module docstring).

    Attributes:
        of: the decision id of the ``APPROVAL_REQUIRED`` decision answered.
        answer: ``"approve"`` (an explicit yes), ``"decline"`` or ``"cancel"``.
        via: how the person was asked (``"mcp-elicitation"``; ``""``: the application's own way).
    """

    of: str
    answer: ApprovalAnswer
    via: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"of": self.of, "answer": self.answer, "via": self.via}


@dataclass(frozen=True)
class Decision:
    """The action gate's verdict on one call.

    Attributes:
        call: the call decided on.
        verdict: ``"allow"`` or ``"reject"``.
        code: stable reason code (``"OK"`` when allowed); see the module docstring.
        message: for people: the predicate(s), their versions and what they saw.
        message_for_model: returned to the model as the tool result on rejection.
        fields: offending argument paths (``"passengers"``, ``"payment_methods[1].amount"``).
        outcomes: every predicate evaluated, in order (verdict, status, version, values read).
        mutates: whether the tool mutates (mutating calls fail closed).
        now: the gate's clock for this decision (unix seconds; business rules use it).
        policy: the policy pack's name and version, ``"name@version"``.
        decision_id: unique id of this decision (for the decision log); not part of equality.
        session_id: the id of the session the call came from (``""`` when none was given).
        turn_id: the decision-log id of the turn whose menu the call came from (``""`` when
            the call was checked without one); links the call's decision to that turn.
        cause: the decision kernel's cause when it hid the tool because the state could not be
            trusted (``"state_unavailable"``, ``"account_not_found"``); None otherwise.
        tenant: the tenant of that session (``""``: an engine used without tenants).
        approval_message: for ``APPROVAL_REQUIRED``: what the person who must approve is shown
            (the holding approval rules' messages).
        approval: the person's answer this decision was made with (``None``: none).
        retry_after_s: for a refusal that waiting lifts (``RATE_LIMITED``): whole seconds
            until the same call may pass; ``None`` otherwise.
        account: whose state the call was decided on (the session's account; ``""``: a
            decision made without a session).
        subject: the credential's subject of the principal that asked (``""``: none said).
        upstream: where the call goes if allowed (the gateway's upstream; ``""``: none).
        era: the protocol revision the client spoke (``""``: none said).
        trace_id: the W3C trace id of the request the call came in (32 lowercase hex digits;
            ``""``: the request carried no trace context), what leads from the decision to
            its trace (:attr:`maitred.context.CallContext.trace_id`).

    Raises:
        ValueError: ``trace_id`` is not a W3C trace id.
    """

    call: ToolCall
    verdict: Verdict
    code: str = OK
    message: str = ""
    message_for_model: str = ""
    fields: tuple[str, ...] = ()
    outcomes: tuple[PredicateOutcome, ...] = ()
    mutates: bool = True
    now: float = 0.0
    policy: str = ""
    decision_id: str = field(default_factory=lambda: uuid.uuid4().hex, compare=False)
    session_id: str = ""
    turn_id: str = ""
    cause: Cause | None = None
    tenant: str = ""
    approval_message: str = ""
    approval: Approval | None = None
    retry_after_s: int | None = None
    account: str = ""
    subject: str = ""
    upstream: str = ""
    era: str = ""
    trace_id: str = ""

    def __post_init__(self) -> None:
        if self.trace_id and (fault := trace_id_fault(self.trace_id)):
            raise ValueError(f"trace_id {self.trace_id[:80]!r} {fault}")

    @property
    def allow(self) -> bool:
        """True when the call may run."""
        return self.verdict == "allow"

    @property
    def reject(self) -> bool:
        """True when the call must not run."""
        return self.verdict == "reject"

    @property
    def fired(self) -> tuple[PredicateOutcome, ...]:
        """The outcomes that hold (why the call was rejected)."""
        return tuple(o for o in self.outcomes if o.holds)

    @property
    def versions(self) -> dict[str, str]:
        """Predicate name -> version hash, for every predicate evaluated."""
        return {o.predicate: o.version for o in self.outcomes}

    def rejection(self) -> Rejection:
        """The model-facing payload of this decision (see :class:`Rejection`;
        :func:`maitred.actions.refusals.decided`)."""
        return decided(self)

    def tool_result(self) -> dict[str, Any]:
        """What the model receives instead of the tool's output when the call is rejected:
        :meth:`rejection` as JSON (code, message, fields, decision id, ``executed: false``)."""
        return self.rejection().to_json()

    def to_json(self) -> dict[str, Any]:
        """The decision as a JSON object: what the decision log stores (canonically, hashed).

        ``values_hash`` is the content hash of every value the predicates read, so a stored
        decision can be checked against a replay without keeping large state values twice.
        """
        outcomes = [jsonable(o.to_json()) for o in self.outcomes]
        read = {o["predicate"]: o["values"] for o in outcomes}  # each made JSON once
        out = {
            "decision_id": self.decision_id,
            "session_id": self.session_id,
            "call": self.call.to_json(),
            "verdict": self.verdict,
            "code": self.code,
            "message": self.message,
            "message_for_model": self.message_for_model,
            "fields": list(self.fields),
            "mutates": self.mutates,
            "now": self.now,
            "policy": self.policy,
            "versions": self.versions,
            "outcomes": outcomes,
            "values_hash": content_hash(read),
        }
        if self.turn_id:  # only when linked, so unlinked decisions keep their earlier form
            out["turn_id"] = self.turn_id
        if self.cause is not None:  # likewise: only decisions the kernel made for a cause carry it
            out["cause"] = self.cause
        if self.tenant:  # likewise: decisions made without tenants keep their form
            out["tenant"] = self.tenant
        if self.approval_message:  # likewise: only decisions that ask a person
            out["approval_message"] = self.approval_message
        if self.approval is not None:  # likewise: only decisions made with a person's answer
            out["approval"] = self.approval.to_json()
        if self.retry_after_s is not None:  # likewise: only refusals that waiting lifts
            out["retry_after_s"] = self.retry_after_s
        # likewise: each only when known
        for key in ("account", "subject", "upstream", "era", "trace_id"):
            value = getattr(self, key)
            if value:
                out[key] = value
        return out


#: the JSON scalars' exact types, which :func:`jsonable` returns as they are
_SCALARS = frozenset({str, int, float, bool, type(None)})


def jsonable(value: Any) -> Any:
    """``value`` with dataclass instances (a session's ``ReadMark``) turned into dicts, so the
    values a predicate read can be stored and hashed as JSON."""
    kind = type(value)
    if kind in _SCALARS:  # most values: nothing to turn (asked first, being the cheapest)
        return value
    if kind is dict:
        return {k: jsonable(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value
