"""Every refusal the model is told, from one place: its payload, its words, its constructors.

A call that does not run -- and a resource read, a prompt get, a task request that is not
answered -- is answered with one type, :class:`Rejection` (code, message for the model, the
argument paths at fault, the decision id). It is built here and nowhere else
(``tests/test_refusals_one_place.py`` reads the source): every other module asks one of these.

* :func:`decided` -- the refusal of a logged decision (:meth:`Decision.rejection
  <maitred.actions.model.Decision.rejection>`): every refusal of the action gate, and every
  refusal an adapter makes for a reason outside the contracts, which it hands the gate as a
  :class:`Hold` so that it is decided and logged like the gate's own (a changed tool
  definition, a rate limit, arguments the log cannot store, ``find_tools``' needs:
  :func:`invalid_arguments`). It carries the decision id, so ``maitred log show <id>`` finds
  the row behind what the model saw.
* :func:`gate_unavailable` -- the gateway could not decide, or could not log what it decided:
  nothing is logged (that is what failed), so it has no decision id -- except where a call was
  allowed and logged and what failed is recording what came after (a task no one owns is never
  handed out), which keeps the allowing decision's id.
* :func:`upstream_failed` -- an allowed call whose upstream failed: the allowing decision's id,
  and ``executed`` unknown.
* :func:`auth_required` -- a request that reached the gateway's gate without a principal (the
  HTTP edge answers 401 first): no session, so nothing to log under.
* :func:`rate_limited` -- a rate limit's refusal where nothing is decided
  (:meth:`maitred.ratelimit.Refusal.rejection`; the gateway hands its limits to the gate as a
  :class:`Hold` instead).

So the refusals the model sees without a logged decision of their own are exactly
``GATE_UNAVAILABLE`` and ``AUTH_REQUIRED`` (and :func:`rate_limited` where a library caller uses
it); ``UPSTREAM_FAILED`` and a task's ``GATE_UNAVAILABLE`` name the decision that allowed the call.

**The words** are one template, :func:`refusal_text`: ``Rejected ({code}): {why}. {what was not
done}; {what to do next}.`` Its callers vary what was not done (``The call was not executed and
nothing was changed``, ``Nothing was read``...), what to do next, and the lead (``Not run yet``
for a call that waits for a person, ``Failed`` for an upstream that failed). A ``why`` that
already ends a sentence (a policy's own message, ``"...paid plans."``) is not given a second
full stop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only its attributes are read: no import cycle with the model
    from maitred.actions.model import Decision

GATE_UNAVAILABLE = "GATE_UNAVAILABLE"
#: a single-use ``requestState`` (an answered question, a round of a mutating call) came back
REQUEST_STATE_REPLAYED = "REQUEST_STATE_REPLAYED"
#: a ``requestState`` sealed for one principal came back from another
REQUEST_STATE_NOT_YOURS = "REQUEST_STATE_NOT_YOURS"
UPSTREAM_FAILED = "UPSTREAM_FAILED"
AUTH_REQUIRED = "AUTH_REQUIRED"
#: what a refused call did not do (the template's default)
CALL_NOT_RUN = "The call was not executed and nothing was changed"
#: what a refused resource read did not do
NOTHING_READ = "Nothing was read"
#: what to do next after most refusals (the template's default)
REPLAN = "re-plan with the user"
_ENDS = (".", "!", "?")


def refusal_text(
    code: str,
    why: str,
    *,
    undone: str = CALL_NOT_RUN,
    then: str = REPLAN,
    lead: str = "Rejected",
) -> str:
    """The model's words for a refusal: ``{lead} ({code}): {why}. {undone}; {then}.``

    Args:
        code: the refusal's stable code.
        why: what was wrong, for the model (never a tool it was not offered).
        undone: what did not happen (a sentence without its full stop).
        then: what to do next (``""``: nothing to add; the text ends after ``undone``).
        lead: the first word (``Not run yet`` for a call that awaits a person, ``Failed`` for
            an upstream that failed).
    """
    said = f"{lead} ({code}): {_sentence(why)} "
    if not then:
        return said + _sentence(undone)
    return f"{said}{undone.rstrip().rstrip('.')}; {_sentence(then)}"


def _sentence(text: str) -> str:
    """``text`` ending in one full stop (its own ``.``, ``!`` or ``?`` kept)."""
    text = text.rstrip()
    return text if text.endswith(_ENDS) else f"{text}."


#: the kind of each refusal code (a :class:`Rejection`'s ``error``): what a client can do about
#: it. A code not named here is a contract's own call-policy rule (``"rejected_by_policy"``).
KINDS: dict[str, str] = {
    # not the caller's to reach: never says whether it exists or why it is hidden
    "TOOL_UNKNOWN": "not_offered",
    "TOOL_NOT_OFFERED": "not_offered",
    "RESOURCE_NOT_AVAILABLE": "not_offered",
    "PROMPT_NOT_AVAILABLE": "not_offered",
    "SKILL_NOT_AVAILABLE": "not_offered",
    "TASK_NOT_FOUND": "not_offered",
    "INSUFFICIENT_SCOPE": "insufficient_scope",
    # offered, but the account's state rules it out now (an exit predicate holds)
    "TOOL_NOT_EXECUTABLE": "not_executable",
    # the state could not be read or trusted: the gate failed closed
    "STATE_MISSING": "state_unavailable",
    "STATE_STALE": "state_unavailable",
    "STATE_UNAVAILABLE": "state_unavailable",
    "PREDICATE_ERROR": "state_unavailable",
    "ARGS_MISSING": "invalid_arguments",
    "ARGS_INVALID": "invalid_arguments",
    "APPROVAL_REQUIRED": "approval_required",
    "APPROVAL_DECLINED": "approval_declined",
    "RATE_LIMITED": "rate_limited",
    "RATE_LIMIT_UNAVAILABLE": "rate_limited",
    "REQUEST_STATE_REPLAYED": "invalid_request_state",
    "REQUEST_STATE_NOT_YOURS": "invalid_request_state",
    "TOOL_DEFINITION_CHANGED": "definition_changed",
    GATE_UNAVAILABLE: "gate_unavailable",
    UPSTREAM_FAILED: "upstream_failed",
    AUTH_REQUIRED: "auth_required",
}
#: the kind of a code a contract defines itself (a call policy's rule)
POLICY = "rejected_by_policy"


def kind_of(code: str) -> str:
    """The kind of refusal ``code`` is (:data:`KINDS`; a contract's own rule code is
    :data:`POLICY`)."""
    return KINDS.get(code, POLICY)


@dataclass(frozen=True)
class Rejection:
    """What the model receives instead of a tool's output when a call does not run.

    The one model-facing payload of the library, the HTTP service and the MCP gateway.

    Attributes:
        code: the stable reason code (``TOOL_NOT_OFFERED``, ``ARGS_INVALID``, a rule's code...).
        message: for the model: what was wrong, that nothing ran, what to do next. Never
            names a tool the conversation was not offered.
        fields: the argument paths at fault (``"payment_methods[1].amount"``).
        decision_id: the decision-log id of the decision (``""`` when none was logged: the
            gate itself could not decide, or no one was authenticated).
        error: the kind of refusal, one word per family of codes (:func:`kind_of`:
            ``"not_offered"``, ``"invalid_arguments"``, ``"rejected_by_policy"`` for a
            contract's own rule...), or the adapter's own where nothing was decided
            (``"gate_unavailable"``, ``"upstream_failed"``, ``"auth_required"``,
            ``"rate_limited"``). ``""`` (the default) takes the code's kind.
        executed: always False for a gate rejection; None when it is not known (an upstream
            that failed mid-call).
        retry_after_s: whole seconds after which the same call may pass (``RATE_LIMITED``);
            ``None`` (and absent from the JSON) otherwise.
        upstream: the upstream that failed (``UPSTREAM_FAILED``; ``""`` and absent otherwise).
        hint: what the gateway adds for the client (call ``find_tools`` first; the client
            cannot ask the user); ``""`` and absent otherwise.
    """

    code: str
    message: str
    fields: tuple[str, ...] = ()
    decision_id: str = ""
    error: str = ""
    executed: bool | None = False
    retry_after_s: int | None = None
    upstream: str = ""
    hint: str = ""

    def __post_init__(self) -> None:
        if not self.error:
            object.__setattr__(self, "error", kind_of(self.code))

    def to_json(self) -> dict[str, Any]:
        """The payload as JSON (the tool result's text, the service's ``tool_result``)."""
        out: dict[str, Any] = {
            "error": self.error,
            "code": self.code,
            "message": self.message,
            "fields": list(self.fields),
            "decision_id": self.decision_id,
        }
        if self.executed is not None:
            out["executed"] = self.executed
        if self.retry_after_s is not None:
            out["retry_after_s"] = self.retry_after_s
        if self.upstream:
            out["upstream"] = self.upstream
        if self.hint:
            out["hint"] = self.hint
        return out


@dataclass(frozen=True)
class Hold:
    """Why an adapter holds a tool back from calls, or refuses one call, for a reason outside
    its contract.

    The action gate refuses a call to a held tool with ``code`` (before the offer and the
    contract are consulted) and logs it like every decision, so the refusal has a decision id
    and a row; the hold is passed with the call, never set on the gate. A refusal of one call
    that the gate cannot even be asked about (arguments the log cannot store, ``find_tools``'
    needs) is logged through :meth:`ActionGate.refuse <maitred.actions.gate.ActionGate.refuse>`.

    Attributes:
        code: the stable reason code (``TOOL_DEFINITION_CHANGED``).
        message_for_model: what the model is told (the ``why`` of :func:`refusal_text`); it
            must not repeat what the operator has not approved (a changed tool's new
            description stays unsaid).
        reason: for people, stored in the decision's ``message``: what the adapter found.
        retry_after_s: whole seconds after which the same call may pass (a rate limit);
            ``None`` when waiting will not help.
        fields: the argument paths at fault (``ARGS_INVALID``).
    """

    code: str
    message_for_model: str
    reason: str = ""
    retry_after_s: int | None = None
    fields: tuple[str, ...] = ()


def decided(decision: Decision, *, hint: str = "") -> Rejection:
    """The refusal of a logged ``decision`` (its words, fields, id and retry-after)."""
    return Rejection(
        decision.code,
        decision.message_for_model,
        decision.fields,
        decision.decision_id,
        retry_after_s=decision.retry_after_s,
        hint=hint,
    )


def gate_unavailable(
    exc: BaseException,
    *,
    undone: str,
    what: str = "the gateway could not decide or record this call",
    decision_id: str = "",
    executed: bool | None = False,
) -> Rejection:
    """The refusal of what could not be decided or recorded (``exc`` says why).

    Args:
        undone: what did not happen (``The call was not executed``, ``Nothing was read``).
        what: what failed, before the error.
        decision_id: the allowing decision's id, when the call was decided and what failed
            is recording what followed (a task); ``""`` otherwise (nothing was logged).
        executed: False unless it is not known (None: an upstream made a task of the call).
    """
    return Rejection(
        GATE_UNAVAILABLE,
        refusal_text(
            GATE_UNAVAILABLE,
            f"{what} ({type(exc).__name__}: {exc})",
            undone=undone,
            then="try again later",
        ),
        decision_id=decision_id,
        error="gate_unavailable",
        executed=executed,
    )


def upstream_failed(upstream: str, tool: str, exc: BaseException, decision_id: str) -> Rejection:
    """An allowed call (``decision_id``) whose ``upstream`` failed on ``tool``: whether it ran
    is not known."""
    return Rejection(
        UPSTREAM_FAILED,
        refusal_text(
            UPSTREAM_FAILED,
            f"the upstream MCP server {upstream!r} failed on {tool} ({type(exc).__name__}: {exc})",
            undone="The call may not have run",
            then="try again later (the other tools still work)",
            lead="Failed",
        ),
        decision_id=decision_id,
        error="upstream_failed",
        executed=None,
        upstream=upstream,
    )


def auth_required(undone: str = "The call was not executed") -> Rejection:
    """The refusal of a request that reached the gate without a principal (``undone``: what
    it did not do)."""
    return Rejection(
        AUTH_REQUIRED,
        refusal_text(
            AUTH_REQUIRED,
            "this gateway serves authenticated sessions only",
            undone=undone,
            then="connect with the bearer token you were given",
        ),
        error="auth_required",
    )


def rate_limited(
    code: str, why: str, retry_after_s: int | None, *, error: str = "rate_limited"
) -> Rejection:
    """A rate limit's refusal where no decision is logged (``why``: the limit's words)."""
    return Rejection(
        code, refusal_text(code, why, then=""), error=error, retry_after_s=retry_after_s
    )


def invalid_arguments(
    why: str, fields: tuple[str, ...] = (), *, reason: str = "", code: str = "ARGS_INVALID"
) -> Hold:
    """The refusal of a call whose arguments the gate cannot take (not I-JSON, or not what
    ``find_tools`` reads), as the :class:`Hold` the gate logs it by.

    Args:
        why: what is wrong, for the model (the argument named).
        fields: the arguments at fault.
        reason: for people, in the log (``""``: ``why``): what was stored and what withheld.
        code: ``ARGS_INVALID`` (``ARGS_MISSING`` for no need at all, ``TOOL_UNKNOWN`` for a
            name that is no text).
    """
    return Hold(code, why, reason, fields=fields)


def state_replayed(what: str, spent: str) -> Hold:
    """The refusal of a call that brought back a single-use ``requestState`` already used
    (the :class:`Hold` the gate logs it by).

    Args:
        what: what the state was, for the model (``"the answer to this approval question"``).
        spent: for people, in the log: the key it was recorded under when first used.
    """
    return Hold(
        REQUEST_STATE_REPLAYED,
        f"{what} was already used once and counts only once (a repeated request)",
        f"requestState already spent ({spent}); the call was not run again",
    )


def state_not_yours() -> Hold:
    """The refusal of a call whose ``requestState`` was sealed for another principal (another
    tenant, account, grant of scopes or subject): it is not this caller's to continue."""
    return Hold(
        REQUEST_STATE_NOT_YOURS,
        "this request continues one made by another caller (another account, subject or "
        "grant of scopes); start the call afresh",
        "requestState sealed for another principal; the call was not run",
    )


__all__ = [
    "AUTH_REQUIRED",
    "CALL_NOT_RUN",
    "GATE_UNAVAILABLE",
    "NOTHING_READ",
    "REPLAN",
    "REQUEST_STATE_NOT_YOURS",
    "REQUEST_STATE_REPLAYED",
    "UPSTREAM_FAILED",
    "Hold",
    "Rejection",
    "auth_required",
    "decided",
    "gate_unavailable",
    "invalid_arguments",
    "rate_limited",
    "refusal_text",
    "state_not_yours",
    "state_replayed",
    "upstream_failed",
]
