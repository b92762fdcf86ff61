"""The gateway's spans (``tracing:`` in its config; :mod:`maitred.tracing` says what a span may
hold): one per MCP request, and one per listing turn or upstream call inside it.

::

    maitred.list                 tools/list (SERVER; INTERNAL under a span already open here)
      maitred.turn               the listing turn: turn and run ids, tools listed and visible
    maitred.call                 tools/call: tool, the code it is counted under; the check's
                                 decision (id, code, verdict, turn id, time it took), all
                                 noted once the call path is done (never inside its steps)
      maitred.upstream           the forwarded call (CLIENT): upstream, tool; tool_error
      maitred.find_tools         find_tools mode: the turn(s) that routed the need(s)

Every request span carries the session's tenant, account (unless ``tracing.account: false``)
and maitred session id. Its parent is the client's W3C trace context: the HTTP request's
``traceparent`` header first, then the MCP request's ``params._meta.traceparent`` (the MCP
convention), by :func:`maitred.tracing.parent_of`'s rule.

**To the upstream.** ``maitred.upstream`` is the current span while the call is forwarded, and
FastMCP's proxy writes the current trace context into the upstream request's ``_meta``, so an
upstream that traces continues the trace under the gateway's span, over stdio and HTTP alike.
With tracing off nothing here runs, and the proxy forwards the client's own ``_meta`` as sent.

**FastMCP's own spans** go to the process-global provider, which maitred never sets: without
a global SDK they record nothing (the client's ``_meta`` context still flows through them), and
``maitred mcp`` has FastMCP not build them at all
(:func:`without_idle_library_spans`); an application that embeds
the gateway and sets one gets FastMCP's ``SERVER`` span, and maitred's request span is then
its child (``INTERNAL``), never a second ``SERVER`` span.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import fastmcp
from fastmcp.server.middleware import MiddlewareContext
from fastmcp.tools import ToolResult
from opentelemetry import trace
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind

from maitred.conversation import Conversation
from maitred.tracing import OFF, Tracing, failed, trace_id_of

if TYPE_CHECKING:
    from maitred.gateway.calls import Served

#: what a listing returns to the middleware: the visible names, the turn's id and its run
Listing = tuple[tuple[str, ...], str, str]
#: codes of a call the gateway failed to serve (a refusal by the gate is no failure)
_FAILURES = frozenset({"GATE_UNAVAILABLE", "UPSTREAM_FAILED"})


def without_idle_library_spans() -> bool:
    """Tell FastMCP to make none of its own spans when they could record nothing; True when
    it was told. ``maitred mcp`` calls this once before it serves (``serve_http``,
    ``serve_stdio``): it owns the process, and an application that embeds the gateway
    (``open_gateway``) keeps FastMCP's settings as it set them.

    FastMCP's spans go to the process-global provider, which maitred never sets (see
    :mod:`maitred.gateway.traces`). With none set they are no-op spans, yet FastMCP still
    builds each one and its attributes (the method, the server, the caller's auth and
    session): three per ``tools/call`` through the gateway (3% of the gateway's event-loop
    time in a profile; 0.1-0.3 ms of CPU a call, BENCHMARKS.md). ``propagation_only`` is
    FastMCP's own mode for "another layer owns the MCP spans": trace context is still read
    from each request's ``_meta`` and written into each upstream request's, so maitred's
    spans and the upstream's link exactly as before. Left as it is: a process where a global
    SDK provider was installed before start (the ``opentelemetry-instrument`` launcher), or
    where the operator set ``FASTMCP_TELEMETRY_MODE``."""
    if "FASTMCP_TELEMETRY_MODE" in os.environ or fastmcp.settings.telemetry_mode != "native":
        return False
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return False  # a real provider: FastMCP's SERVER span records, maitred's is its child
    fastmcp.settings.telemetry_mode = "propagation_only"
    return True


def carriers(context: MiddlewareContext[Any]) -> tuple[Mapping[str, Any] | None, ...]:
    """Where a request's trace context may be: its HTTP headers, then its MCP ``_meta``."""
    ctx = context.fastmcp_context
    request = ctx.request_context if ctx is not None else None
    return request_carriers(request)


def request_carriers(request: Any) -> tuple[Mapping[str, Any] | None, ...]:
    """:func:`carriers` of the MCP request context ``request`` (``None``: no request)."""
    if request is None:
        return ()
    http = request.request
    return (http.headers if http is not None else None, request.meta)


def trace_id(context: MiddlewareContext[Any], tracing: Tracing = OFF) -> str:
    """The W3C trace id the request's decisions are logged with (``""``: none;
    :func:`maitred.tracing.trace_id_of`): its request span's, current here, when ``tracing``
    is on; else the client's own trace context -- the HTTP ``traceparent`` header, then the
    MCP ``params._meta.traceparent``. Read here, at the edge, and passed to the conversation
    as data (the core never reads a trace context)."""
    span = trace.get_current_span() if tracing.enabled else INVALID_SPAN
    return trace_id_of(span, *carriers(context))


def client_trace_id(request: Any) -> str:
    """The W3C trace id of the client's own trace context in the MCP request context
    ``request`` (``""``: none), for a request the gateway makes no span of."""
    return trace_id_of(INVALID_SPAN, *request_carriers(request))


def listing(keeper: Conversation) -> Listing:
    """:meth:`Conversation.visible`, with the id of the turn it logged (``""``: none, as in
    ``find_tools`` mode before anything was found) and its run, read under the session's lock
    (a concurrent request of the session cannot slip its own turn in between)."""
    before = keeper.session.turn_id
    visible = keeper.visible()
    turn = keeper.session.turn_id
    if turn == before:
        return visible, "", ""
    return visible, turn, run_of(keeper, keeper.engine)


def run_of(keeper: Conversation, engine: Any) -> str:
    """The run ``engine`` logs ``keeper``'s turns under (already begun by its first turn)."""
    return keeper.engines.run_for(engine, keeper.tenant) or str(engine.pipeline.run_id)


def note_session(span: Span, tracing: Tracing, keeper: Conversation | None) -> None:
    """The session's tenant, account and id on a request's span."""
    if keeper is not None and span.is_recording():
        span.set_attributes(session_attributes(tracing, keeper))


def session_attributes(tracing: Tracing, keeper: Conversation) -> dict[str, str]:
    """The session's id, tenant (when it has one) and account (unless ``tracing.account`` is
    off), as a request span's attributes."""
    found = {"maitred.session.id": keeper.session.id}
    if keeper.tenant:
        found["maitred.tenant"] = keeper.tenant
    if tracing.account:
        found["maitred.account"] = keeper.account
    return found


def note_listing(span: Span, listed: int, found: Listing) -> None:
    """A listing turn: how many tools the upstreams listed, how many are visible, its ids."""
    if not span.is_recording():
        return
    visible, turn, run = found
    span.set_attributes({"maitred.tools.listed": listed, "maitred.tools.visible": len(visible)})
    if turn:
        span.set_attributes({"maitred.turn.id": turn, "maitred.run.id": run})


def note_served(span: Span, tracing: Tracing, tool: str, served: Served, decision_key: str) -> None:
    """A ``tools/call`` served, on its request span, once the call path is done: the
    session, its tool, the code it is counted under, the decision id the result carries; the
    check's decision (id, code, verdict, turn, the time deciding and logging it took) when one
    ran; a call the gateway failed to serve is marked failed with that code."""
    if not span.is_recording():
        return
    noted: dict[str, str | float] = {"gen_ai.tool.name": tool, "maitred.code": served.code}
    if served.keeper is not None:
        noted.update(session_attributes(tracing, served.keeper))
    if served.checked is not None:
        decision, took_s = served.checked
        noted["maitred.decision.id"] = decision.decision_id
        noted["maitred.decision.code"] = decision.code
        noted["maitred.decision.verdict"] = decision.verdict
        noted["maitred.check.duration_ms"] = round(took_s * 1000, 3)
        if decision.turn_id:
            noted["maitred.turn.id"] = decision.turn_id
    decision_id = (served.result.meta or {}).get(decision_key)
    if decision_id:
        noted["maitred.decision.id"] = str(decision_id)
    span.set_attributes(noted)  # one call: each takes the span's lock and checks each value
    if served.code in _FAILURES:
        failed(span, served.code)


def upstream(tracing: Tracing, upstream: str, tool: str) -> AbstractContextManager[Span]:
    """The ``maitred.upstream`` span (``CLIENT``) of a forwarded call, current while it is
    forwarded: the proxy puts its context in the upstream request's ``_meta``."""
    if not tracing.enabled:
        return tracing.span("maitred.upstream")  # the shared no-op: nothing is built
    attributes = {
        "maitred.upstream": upstream,
        "gen_ai.tool.name": tool,
        "mcp.method.name": "tools/call",
    }
    return tracing.span("maitred.upstream", kind=SpanKind.CLIENT, attributes=attributes)


def note_result(span: Span, result: ToolResult) -> None:
    """An upstream's answer: an ``isError`` result marks its span ``tool_error``."""
    if result.is_error:
        failed(span, "tool_error")


def note_found(span: Span, keeper: Conversation, answer: Mapping[str, Any]) -> None:
    """A ``find_tools`` call: its turn's id (one need) or turns' ids (several, per need) and
    how many tools it disclosed and found blocked, each tool counted once."""
    if not span.is_recording() or keeper.engines.finder is None:
        return
    run = run_of(keeper, keeper.engines.finder)  # begun by the turn: a lookup, no write
    several = "needs" in answer
    entries: list[Mapping[str, Any]] = list(answer["needs"]) if several else [answer]
    ids = [str(e.get("turn_id", "")) for e in entries]
    span.set_attributes(
        {
            **({"maitred.turn.ids": ids} if several else {"maitred.turn.id": ids[0]}),
            "maitred.run.id": run,
            "maitred.needs": len(entries),
            "maitred.tools.found": sum(len(e.get("tools", ())) for e in entries),
            "maitred.tools.blocked": sum(len(e.get("blocked", ())) for e in entries),
        }
    )
