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
  as a dismissal: the call does not run.
* the client declared ``elicitation`` on a 2026-07-28 connection, which has no channel for a
  server-initiated request: the same question goes back as the call's result, an
  ``InputRequiredResult`` (SEP-2322, multi-round-trip) holding one elicitation under the key
  :data:`ASK_KEY`. The client asks its user and sends the same call again with the answer in
  ``inputResponses``; the gateway matches it to the open question of that session for the
  same tool and arguments (:class:`Approvals`: in memory, one answer per question, at most
  ``max_open`` open questions), and decides the answer as above. An answer that matches no
  open question (never asked, already answered, another call) is no answer: the call is
  checked afresh and asked again.
* a 2026-07-28 call the person approved whose upstream then asks something itself (its own
  ``InputRequiredResult``, passed to the client as sent) comes back with the upstream's
  ``requestState`` and answers, not the person's: that state was sealed by the gateway for
  this caller, this tool and these arguments (FastMCP's request-state boundary, which has
  refused anything else before this runs), so it is a later round of the approved call. The
  person is not asked again: the call is checked afresh and its approval rules are satisfied
  by the standing yes (a second decision naming the new one, like an answer), for as long as
  such a state lives (:data:`GRANT_S`). Without it, every round would ask the person again and
  the upstream's question would never be answered.
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
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as mt
from fastmcp.server.elicitation import parse_elicit_response_type
from fastmcp.server.middleware import MiddlewareContext
from fastmcp.tools import InputRequiredToolResult, ToolResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from maitred._canonical import content_hash
from maitred.actions.model import APPROVAL_REQUIRED, ApprovalAnswer, Decision

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
#: how long a person's yes covers the later rounds of the approved 2026-07-28 call: as long as
#: the request state the gateway seals lives (FastMCP's default, 10 minutes)
GRANT_S = 600.0
#: the answer's form: one yes/no field (FastMCP's own shape for ``ctx.elicit(..., bool)``)
_FORM = parse_elicit_response_type(bool, response_title="Approve")
_ELICITATION = mt.ClientCapabilities(elicitation=mt.ElicitationCapability())
#: the longest argument summary shown in a question (the rest is cut, and says so)
_SUMMARY_CHARS = 600


#: decides and logs the person's answer to a pending decision (the gatekeeper, under its lock)
AnswerWith = Callable[[Decision, ApprovalAnswer], Awaitable[Decision]]


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


class Approvals:
    """The gateway's questions to people (see the module docstring).

    Args:
        max_open: open 2026-07-28 questions kept; the oldest is forgotten beyond it (its
            answer then matches nothing, and the call is asked again).
    """

    def __init__(self, max_open: int = 1000, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_open = max_open
        self.clock = clock
        self.open: OrderedDict[tuple[int, str], tuple[object, Decision]] = OrderedDict()
        #: 2026-07-28 calls a person approved: (session, when), for their later rounds
        self.granted: OrderedDict[tuple[int, str], tuple[object, float]] = OrderedDict()

    @staticmethod
    def _key(session: object, name: str, arguments: Mapping[str, Any]) -> tuple[int, str]:
        return id(session), content_hash([name, dict(arguments)])

    async def answered(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        session: object,
        answer_with: AnswerWith,
    ) -> Decision | None:
        """The decision on a 2026-07-28 call that comes back with the answer to an open
        question of ``session`` (the gatekeeper); ``None`` when it brings none."""
        responses = context.message.input_responses or {}
        reply = responses.get(ASK_KEY)
        if not isinstance(reply, mt.ElicitResult) or not _modern(context):
            return None
        key = self._key(session, context.message.name, context.message.arguments or {})
        found = self.open.get(key)
        if found is None or found[0] is not session:
            return None
        del self.open[key]  # one answer per question
        decided = await answer_with(found[1], _answer(reply.action, reply.content))
        if decided.allow:  # the upstream may ask in turn: its rounds need no second yes
            self.granted[key] = (session, self.clock())
            while len(self.granted) > self.max_open:
                self.granted.popitem(last=False)
        return decided

    def _continues(self, context: MiddlewareContext[Any], session: object, key: Any) -> bool:
        """Whether this 2026-07-28 call is a later round of a call the person approved: it
        brings back a request state (sealed by the gateway for this caller, tool and
        arguments) and the approval is still young."""
        message = context.message
        if not _modern(context) or getattr(message, "request_state", None) is None:
            return False
        found = self.granted.get(key)
        return found is not None and found[0] is session and self.clock() - found[1] < GRANT_S

    async def ask(
        self,
        context: MiddlewareContext[Any],
        session: object,
        pending: Decision,
        answer_with: AnswerWith,
    ) -> tuple[Decision, str] | ToolResult:
        """Ask the person about ``pending``'s call (a decision of ``session``, the gatekeeper).

        Returns:
            The decision that stands and the ``hint`` to add to a refusal's payload (``""``:
            none; asked on a handshake-era connection, or not askable), or the
            ``InputRequiredResult`` to answer a 2026-07-28 call with (the client asks, then
            calls again).
        """
        key = self._key(session, pending.call.name, pending.call.arguments)
        if self._continues(context, session, key):
            return await answer_with(pending, "approve"), ""
        if not can_ask(context):
            return pending, CANNOT_ASK
        text = question(pending)
        if _modern(context):
            self.open[key] = (session, pending)
            while len(self.open) > self.max_open:
                self.open.popitem(last=False)
            params = mt.ElicitRequestFormParams(message=text, requested_schema=_FORM.schema)
            return InputRequiredToolResult(
                mt.InputRequiredResult(input_requests={ASK_KEY: mt.ElicitRequest(params=params)})
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
