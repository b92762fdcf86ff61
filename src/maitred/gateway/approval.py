"""Approval by a person, in the gateway: ask the user through MCP elicitation.

A call whose contract has an approval rule that holds is decided ``APPROVAL_REQUIRED`` by the
action gate, like in the library and the service (:mod:`maitred.actions.gate`): that decision
is logged and flushed before anyone is asked. The gateway then asks the person in front of the
client, because it can -- MCP elicitation (``elicitation/create``) is a question a server puts
to the user through the client:

* the client declared the ``elicitation`` capability on a handshake-era connection: the
  gateway sends one question naming the tool, a summary of its arguments and the approval
  rules' messages, with a single yes/no field. Only an explicit yes (``accept`` with ``true``)
  approves; ``accept`` with ``false`` or ``decline`` is a no; ``cancel`` (dismissed) is a no
  too. The answer is decided and logged as a second decision naming the first
  (:meth:`Conversation.approve <maitred.conversation.Conversation.approve>`): a yes re-checks
  the call on fresh state with its approval rules satisfied, and that decision is the one
  that lets the call run (its id is the result's ``maitred/decision_id``); a no is
  ``APPROVAL_DECLINED``. A client that fails to answer (an error, a broken stream) is treated
  as a dismissal: the call does not run. The question rides the MCP session's own stream, so
  behind a load balancer a handshake-era session keeps going to the replica that holds it
  (sticky routing, as that era needs for every server-initiated request).
* the client declared ``elicitation`` on a 2026-07-28 connection, which has no channel for a
  server-initiated request: the same question goes back as the call's result, an
  ``InputRequiredResult`` (SEP-2322, multi-round-trip) holding one elicitation under the key
  :data:`ASK_KEY` and a ``requestState`` that carries the question itself -- a
  :class:`Round` naming the pending decision, sealed by the MCP SDK's request-state boundary
  under the keys every replica shares (:func:`~maitred.gateway.channels.sealing`). The client
  asks its user and sends the same call again with the answer in ``inputResponses`` and the
  state; whichever replica it reaches opens the state, rebuilds the pending decision from it
  (:func:`maitred.actions.rounds.asked`) and decides the answer as above. Nothing of the
  question is kept in any process. An answer without the gateway's state (never asked, or
  asked by a gateway before this one) is no answer: the call is checked afresh and asked
  again.
* **A round counts once.** The state is bound by the SDK to the tool, the arguments and the
  token's (client, issuer, subject), and by the :class:`Round` to the principal (tenant,
  account, granted scopes, the credential's subject) and the call again: brought back by
  another principal it is refused ``REQUEST_STATE_NOT_YOURS``. The answer to a question is
  *spent* when it is decided (:meth:`Maitred.spend <maitred.Maitred.spend>`, one row in the
  decision log's ``spent_states``, whose primary key every replica on that log shares), so
  the same yes brought back again -- on this replica or another, within the state's lifetime
  -- is refused ``REQUEST_STATE_REPLAYED`` (a logged decision), never run twice.
* a 2026-07-28 call whose upstream asks something itself (its own ``InputRequiredResult``)
  is passed to the client with the upstream's ``requestState`` wrapped in a :class:`Round`
  of the gateway's (:meth:`Approvals.pass_on`), so the gateway knows the round when it comes
  back and hands the upstream its own state, and the client the answers meant for it. A round
  of a *mutating* tool is single-use like an answer: replayed, it is refused
  ``REQUEST_STATE_REPLAYED`` on every replica and the upstream is not called again. When the
  person approved that call, the round carries the yes (the decision's id) until
  ``server.request_state_ttl_s`` after it was given: the call is checked afresh and its
  approval rules are satisfied by the standing yes (a second decision naming the new one,
  like an answer), so the person is not asked again on any replica; such a round is
  single-use whatever the tool.
* no elicitation capability: nobody can be asked, so the call stays refused with
  ``APPROVAL_REQUIRED`` and the payload's ``hint`` says that this client cannot ask the user.
  No second decision is written: nobody answered.

The question is asked outside the session's lock (the engine work before and after it takes
the lock on its own): a person may take minutes, and the session's other requests -- a
listing, a read -- must not wait for them.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import mcp_types as mt
from fastmcp.server.elicitation import parse_elicit_response_type
from fastmcp.server.middleware import MiddlewareContext
from fastmcp.tools import InputRequiredToolResult, ToolResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from maitred._canonical import content_hash
from maitred.actions.model import APPROVAL_REQUIRED, ApprovalAnswer, Decision, Hold
from maitred.actions.refusals import state_not_yours, state_replayed
from maitred.actions.rounds import asked
from maitred.gateway.upstreams import sdk_request

if TYPE_CHECKING:
    from maitred.conversation import Conversation

T = TypeVar("T")
#: how the gateway records that it asked (``Approval.via``)
VIA = "mcp-elicitation"
#: the key of the gateway's question in a 2026-07-28 ``InputRequiredResult``
ASK_KEY = "maitred/approval"
#: what the refusal's payload says when the client cannot ask its user
CANNOT_ASK = (
    "this client cannot ask the user for approval (it did not declare the MCP elicitation "
    "capability); the call needs a person's yes. Tell the user, who can approve it from a "
    "client that supports elicitation"
)
#: how every ``requestState`` the gateway hands out begins, before its :class:`Round` as JSON
#: (the SDK's boundary seals the whole around it)
SEALED = "maitred/round/1:"
#: the answer's form: one yes/no field (FastMCP's own shape for ``ctx.elicit(..., bool)``)
_FORM = parse_elicit_response_type(bool, response_title="Approve")
_ELICITATION = mt.ClientCapabilities(elicitation=mt.ElicitationCapability())
#: the longest argument summary shown in a question (the rest is cut, and says so)
_SUMMARY_CHARS = 600


#: decides and logs the person's answer to a pending decision (the gatekeeper, under its lock)
AnswerWith = Callable[[Decision, ApprovalAnswer], Awaitable[Decision]]
#: runs engine work of the session on a worker thread, under its lock
Run = Callable[[Callable[[], T]], Awaitable[T]]


@dataclass(frozen=True)
class Round:
    """What the gateway puts in one ``requestState`` it hands a 2026-07-28 client (see the
    module docstring); sealed around it by the SDK, so only a gateway sharing the keys made it.

    Attributes:
        nonce: this round's own id (what a spent round is recorded under).
        principal: :func:`principal_of` the caller it was handed to.
        call: the content hash of the call's ``[name, arguments]``.
        session: the log's session id of the caller (the pending decision's).
        until: unix time after which a yes it carries no longer stands.
        of: the gateway's own question: the id of the pending decision it asks about.
        call_id: the logged id of that decision's call (its answer's call is the same).
        yes: an upstream's round of a call a person approved: the id of the decision that let
            it run (``""``: none).
        upstream: the upstream's own ``requestState``, handed back to it (``None``: none).
    """

    nonce: str
    principal: str
    call: str
    session: str
    until: float
    of: str = ""
    call_id: str = ""
    yes: str = ""
    upstream: str | None = None

    def seal(self) -> str:
        """The plaintext ``requestState`` (the SDK's boundary seals it on the way out)."""
        return SEALED + json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def read(cls, state: str | None) -> Round | None:
        """The round a ``requestState`` the boundary opened holds; ``None`` when it holds none
        of the gateway's (no state, or one sealed before rounds were)."""
        if state is None or not state.startswith(SEALED):
            return None
        try:
            return cls(**json.loads(state[len(SEALED) :]))
        except (ValueError, TypeError):
            return None  # only a gateway sharing the keys seals: not one of this version

    @property
    def key(self) -> str:
        """What using this round is recorded under: an answer counts once per question."""
        return f"approval:{self.of}" if self.of else f"round:{self.nonce}"


def principal_of(keeper: Conversation) -> str:
    """Who a round is handed to: the conversation's principal (tenant, account, granted
    scopes, the credential's subject), as one hash."""
    who = keeper.principal
    scopes = None if who.granted is None else sorted(who.granted)
    return content_hash([who.tenant, who.account, scopes, who.subject])


def _call_hash(name: str, arguments: Mapping[str, Any] | None) -> str:
    return content_hash([name, dict(arguments or {})])


def awaits_person(decision: Decision) -> bool:
    """Whether ``decision`` asks for a person's yes that has not been given yet."""
    return decision.code == APPROVAL_REQUIRED and decision.approval is None


def _modern(context: MiddlewareContext[Any]) -> bool:
    ctx = context.fastmcp_context
    request = ctx.request_context if ctx is not None else None
    return request is not None and request.protocol_version in MODERN_PROTOCOL_VERSIONS


def can_ask(context: MiddlewareContext[Any]) -> bool:
    """Whether this request's client declared that it can put a question to its user."""
    ctx = context.fastmcp_context
    if ctx is None or ctx.request_context is None:
        return False
    try:
        return bool(ctx.session.check_client_capability(_ELICITATION))
    except RuntimeError:  # no session to ask through
        return False


def question(decision: Decision) -> str:
    """The text the person reads: the tool, its arguments, and why approval is needed."""
    args = json.dumps(dict(decision.call.arguments), ensure_ascii=False, sort_keys=True)
    if len(args) > _SUMMARY_CHARS:
        args = f"{args[:_SUMMARY_CHARS]}... ({len(args)} characters in all)"
    return (
        f"The assistant wants to call {decision.call.name} with {args}.\n"
        f"{decision.approval_message}\n"
        "Approve this call? It runs only if you say yes."
    )


def _answer(action: str, content: Mapping[str, Any] | None) -> ApprovalAnswer:
    """An elicitation's outcome as an answer: only ``accept`` with a true value is a yes."""
    if action == "accept":
        return "approve" if (content or {}).get("value") is True else "decline"
    return "decline" if action == "decline" else "cancel"


def _pass_down(state: str | None) -> None:
    """What the upstream is sent of this round when the call is forwarded: its own state
    (``state``; ``None``: none) and the client's answers but the gateway's own.

    The forward reads both from the request's parameters as the SDK holds them (FastMCP's
    proxy: ``Context.request_state`` / ``input_responses``), which the request-state boundary
    made for this request alone; they are replaced there."""
    request = sdk_request()
    params = request.params if request is not None else None
    if not isinstance(params, dict):
        return
    if state is None:
        params.pop("requestState", None)
    else:
        params["requestState"] = state
    responses = params.get("inputResponses")
    if isinstance(responses, dict) and ASK_KEY in responses:
        rest = {k: v for k, v in responses.items() if k != ASK_KEY}
        if rest:
            params["inputResponses"] = rest
        else:
            params.pop("inputResponses", None)


class Approvals:
    """The gateway's questions to people, and the rounds it hands out (see the module
    docstring). Holds nothing of any question: a 2026-07-28 round lives in its sealed state.

    Args:
        ttl_s: how long a person's yes stands for the later rounds of its call
            (``server.request_state_ttl_s``: as long as a sealed state is accepted).
        clock: unix seconds.
    """

    def __init__(self, ttl_s: float = 600.0, clock: Callable[[], float] = time.time) -> None:
        self.ttl_s = ttl_s
        self.clock = clock

    def _brought(self, context: MiddlewareContext[Any]) -> Round | None:
        """The gateway's round this 2026-07-28 call brought back, if any."""
        if not _modern(context):
            return None
        return Round.read(getattr(context.message, "request_state", None))

    async def answered(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        keeper: Conversation,
        call: tuple[str, Mapping[str, Any]],
        answer_with: AnswerWith,
        run: Run[bool],
    ) -> Decision | Hold | None:
        """What a 2026-07-28 call (``call``: its tool's name and arguments, as the call path
        read them) that continues a round is decided by: the decision on the
        answer to the gateway's question, or the :class:`Hold` refusing a round that cannot
        continue (another principal's or call's; spent already). ``None``: the check decides
        (a fresh call, or a round of the upstream's that may go on).

        Whatever it brought, the upstream is sent only its own state and answers
        (:func:`_pass_down`).

        Raises:
            MaitredError: the use of the round could not be recorded (nothing runs).
        """
        message = context.message
        if not _modern(context):
            return None
        state = getattr(message, "request_state", None)
        brought = Round.read(state)
        if brought is not None:
            _pass_down(brought.upstream)
        else:  # a state of an older gateway: the upstream's own; one of a newer: nobody's
            _pass_down(None if state is not None and state.startswith(SEALED) else state)
            return None
        name, arguments = call
        if brought.principal != principal_of(keeper) or brought.call != _call_hash(name, arguments):
            return state_not_yours()
        reply = (message.input_responses or {}).get(ASK_KEY)
        if brought.of and not isinstance(reply, mt.ElicitResult):
            return None  # the question came back unanswered: asked again
        single_use = bool(brought.of or brought.yes) or keeper.mutates(name)
        if single_use and not await run(lambda: self._spend(keeper, brought)):
            what = "the answer to this approval question" if brought.of else "this round"
            return state_replayed(what, brought.key)
        if not brought.of:
            return None
        assert isinstance(reply, mt.ElicitResult)
        pending = asked(
            brought.of,
            name,
            arguments,
            call_id=brought.call_id,
            session_id=brought.session,
            tenant=keeper.tenant,
        )
        return await answer_with(pending, _answer(reply.action, reply.content))

    def _spend(self, keeper: Conversation, brought: Round) -> bool:
        expires = max(brought.until, self.clock() + self.ttl_s)  # the state outlives no TTL
        return keeper.engine.spend(brought.key, session=keeper.session, expires_at=expires)

    def _round(
        self, keeper: Conversation, name: str, arguments: Mapping[str, Any], **given: Any
    ) -> Round:
        """A new round for this caller and call (``given``: what it carries)."""
        fields: dict[str, Any] = {"until": self.clock() + self.ttl_s, **given}
        return Round(
            nonce=uuid.uuid4().hex,
            principal=principal_of(keeper),
            call=_call_hash(name, arguments),
            session=keeper.session.id,
            **fields,
        )

    def pass_on(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        keeper: Conversation,
        decision: Decision,
        result: InputRequiredToolResult,
    ) -> InputRequiredToolResult:
        """The upstream's question on an allowed call, for the client: its ``requestState``
        wrapped in a round of the gateway's, carrying a person's yes when one let the call run
        (the yes brought by this round, or the answer just given)."""
        brought = self._brought(context)
        carried: dict[str, Any] = {}
        if brought is not None and brought.yes and self.clock() < brought.until:
            carried = {"yes": brought.yes, "until": brought.until}
        elif decision.approval is not None and decision.approval.answer == "approve":
            carried = {"yes": decision.decision_id}
        inner = result.input_required
        name, arguments = decision.call.name, decision.call.arguments
        wrapped = self._round(keeper, name, arguments, upstream=inner.request_state, **carried)
        return InputRequiredToolResult(inner.model_copy(update={"request_state": wrapped.seal()}))

    async def ask(
        self,
        context: MiddlewareContext[Any],
        keeper: Conversation,
        pending: Decision,
        answer_with: AnswerWith,
    ) -> tuple[Decision, str] | ToolResult:
        """Ask the person about ``pending``'s call (a decision of ``keeper``'s session).

        Returns:
            The decision that stands and the ``hint`` to add to a refusal's payload (``""``:
            none; asked on a handshake-era connection, or not askable), or the
            ``InputRequiredResult`` to answer a 2026-07-28 call with (the client asks, then
            calls again with the round it carries).
        """
        brought = self._brought(context)
        if brought is not None and brought.yes and self.clock() < brought.until:
            return await answer_with(pending, "approve"), ""  # a later round: the yes stands
        if not can_ask(context):
            return pending, CANNOT_ASK
        text = question(pending)
        if _modern(context):
            call = pending.call
            state = self._round(
                keeper, call.name, call.arguments, of=pending.decision_id, call_id=call.id
            ).seal()
            params = mt.ElicitRequestFormParams(message=text, requested_schema=_FORM.schema)
            return InputRequiredToolResult(
                mt.InputRequiredResult(
                    input_requests={ASK_KEY: mt.ElicitRequest(params=params)},
                    request_state=state,
                )
            )
        ctx = context.fastmcp_context
        assert ctx is not None  # can_ask holds
        try:
            got = await ctx.elicit(text, bool, response_title="Approve")
        except Exception:  # the client failed to answer: nobody said yes
            return await answer_with(pending, "cancel"), ""
        data = getattr(got, "data", None)
        answer = _answer(got.action, {"value": data} if got.action == "accept" else None)
        return await answer_with(pending, answer), ""
