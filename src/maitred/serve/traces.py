"""The service's spans (``tracing:`` in its config; :mod:`maitred.tracing` says what a span may
hold): one per API request, and one per decision inside it.

::

    POST /v1/turns               the request (SERVER): method, route, status; 5xx marks it failed
      maitred.turn               tenant, account, session, turn and run ids, tools exposed/blocked
    POST /v1/calls/check
      maitred.check              tenant, session, tool, decision id, code, verdict, turn id
    GET /v1/funnel               the request span alone

The request span continues the caller's W3C trace context (``traceparent`` and ``tracestate``
headers). Only the ``/v1`` routes are traced: health probes and metrics scrapes would bury the
requests that decide something. With tracing off the app is not wrapped at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import Span, StatusCode
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from maitred.serve.config import Tenant
from maitred.tracing import Tracing


class Traced:
    """ASGI middleware: the request span of every call to one of ``paths`` (see the module
    docstring)."""

    def __init__(self, app: ASGIApp, tracing: Tracing, paths: frozenset[str]) -> None:
        self.app = app
        self.tracing = tracing
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        method, route = scope["method"], scope["path"]
        attributes = {"http.request.method": method, "http.route": route, "url.path": route}
        status = 500  # until the response starts: an app that raised answers 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        carrier = _trace_headers(scope)
        with self.tracing.request(f"{method} {route}", carrier, attributes=attributes) as span:
            try:
                await self.app(scope, receive, sending)
            finally:
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_attribute("error.type", str(status))
                    span.set_status(StatusCode.ERROR)


def _trace_headers(scope: Scope) -> dict[str, str]:
    """The request's ``traceparent`` and ``tracestate`` headers (ASGI keeps them as bytes)."""
    found: dict[str, str] = {}
    for name, value in scope["headers"]:
        if name in (b"traceparent", b"tracestate"):
            found[name.decode("latin-1")] = value.decode("latin-1")
    return found


def note_turn(
    span: Span, tracing: Tracing, tenant: Tenant, run_id: str, out: Mapping[str, Any]
) -> None:
    """A turn the service routed (``out``: its answer)."""
    if not span.is_recording():
        return
    span.set_attributes(
        {
            "maitred.tenant": tenant.name,
            "maitred.session.id": str(out.get("session_id", "")),
            "maitred.turn.id": str(out.get("turn_id", "")),
            "maitred.run.id": run_id,
            "maitred.tools.exposed": len(out.get("exposed", ())),
            "maitred.tools.blocked": len(out.get("blocked", ())),
        }
    )
    if tracing.account:
        span.set_attribute("maitred.account", str(out.get("account", "")))


def note_check(span: Span, tenant: Tenant, tool: str, out: Mapping[str, Any]) -> None:
    """A call the service checked (``out``: its answer)."""
    if not span.is_recording():
        return
    span.set_attributes(
        {
            "maitred.tenant": tenant.name,
            "maitred.session.id": str(out.get("session_id", "")),
            "maitred.decision.id": str(out.get("decision_id", "")),
            "maitred.decision.code": str(out.get("code", "")),
            "maitred.decision.verdict": str(out.get("verdict", "")),
            "gen_ai.tool.name": tool,
        }
    )
    if out.get("turn_id"):
        span.set_attribute("maitred.turn.id", str(out["turn_id"]))
