"""Resources, resource templates and prompts, gated by the same contracts as tools: the MCP side.

A tool hidden from a session must not be reachable another way: as a resource the model
reads, or through a prompt. So an upstream's sidecar may give its resources (by URI or URI
template) and prompts (by name) a contract, under the top-level keys ``resources`` and
``prompts`` (:mod:`maitred.contract.tool_sidecar`) -- a contract body like a tool's, with the
keys that mean something for a read rather than a call (exit predicates)::

    resources:
      docs://pricing:                  # one resource, by its URI
        exit_predicates:
          - {name: free_plan, expr: account.plan == "free", reads: [account.plan]}
      reports://{year}:                # a template: governs every URI it matches
        exit_predicates: [...]
    prompts:
      negotiate:
        exit_predicates: [...]

**What decides** is each caller's :class:`~maitred.conversation.Conversation`
(:meth:`~maitred.conversation.Conversation.offer` for a list,
:meth:`~maitred.conversation.Conversation.read` for a read, a get or a subscription), over the
contracts its engines hold (:meth:`Engines.govern
<maitred.conversation.engines.Engines.govern>`: which contract governs what, the one verdict
by the decision kernel on stage 2's state read, the logged decision). This module gathers the
sidecars' entries from the config and hands them to the engines (:func:`open_surfaces`, with
FastMCP's own URI-template matcher, the one that routes a read), and adapts the MCP requests
(:class:`SurfaceGuard`): it parses them, asks the conversation, maps a refusal to its MCP
error and forwards what is allowed. What nothing governs is *ungated*, and the config's
``ungated`` decides: ``pass`` (the default; such resources and prompts are named on stderr at
start, :func:`warn_ungated`) or ``hide``.

``resources/list``, ``resources/templates/list`` and ``prompts/list`` are filtered per session
on state read afresh; every ``resources/read`` and ``prompts/get`` is decided on fresh state,
whatever any listing showed, and written to the decision log as an action decision (its
``call`` is the MCP method with its params: ``resources/read {"uri": ...}``, ``prompts/get
{"name": ..., "arguments": ...}``) and flushed before the upstream is asked. An allowed one is
forwarded and its result carries the decision id in ``_meta["maitred/decision_id"]``. A refused
one never reaches the upstream: the client gets an MCP error (``-32602``, the code of an unknown
resource) whose ``data`` is the one model-facing :class:`~maitred.actions.refusals.Rejection`,
with the decision id; it never names what was refused. One that could not be decided or logged
is ``-32603``, ``GATE_UNAVAILABLE``, and one without a principal ``-32600``,
``AUTH_REQUIRED`` -- the two refusals with nothing logged (:mod:`maitred.actions.refusals`).

**Changes are announced like the tools'.** After an allowed mutating tool call succeeded, and
on each pass of the state watch, every session that has listed resources or prompts is decided
again on one state read per account; one whose lists would differ is sent
``notifications/resources/list_changed`` (resources and templates) or
``notifications/prompts/list_changed``, on the call's stream or its way out
(:mod:`maitred.gateway.channels`).

Listings of resources and prompts are not logged (a tool listing is a logged turn); the log
holds every read and get, with the predicates that decided it and the values they read.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Protocol

import anyio
import mcp_types as mt  # the MCP wire types (`mcp.types` re-exports them)
from fastmcp.prompts import Prompt, PromptResult
from fastmcp.resources import Resource, ResourceResult, ResourceTemplate
from fastmcp.resources.template import match_uri_template
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import ToolResult
from mcp.shared.exceptions import MCPError

from maitred.actions.model import OK, Decision, ToolCall, new_call_id
from maitred.actions.refusals import (
    AUTH_REQUIRED,
    GATE_UNAVAILABLE,
    NOTHING_READ,
    Rejection,
    auth_required,
    gate_unavailable,
)
from maitred.contract.model import Contract
from maitred.contract.surfaces import NOUN, Family, Surface
from maitred.contract.tool_sidecar import SurfaceNames
from maitred.conversation import Conversation
from maitred.errors import ConfigError, MaitredError
from maitred.gateway import traces
from maitred.gateway.channels import Channels, Key, ListKind
from maitred.gateway.config import GatewayConfig
from maitred.gateway.keeper import GatewayEngines
from maitred.gateway.metrics import GatewayMetrics

#: the key of a result's ``_meta`` that carries the decision-log id of its decision
DECISION_ID_META = "maitred/decision_id"

#: the list each family's change is announced on (templates are resources' list; the skills
#: extension has no list_changed of its own, and a skill's files are resources)
_ANNOUNCED: Mapping[Family, ListKind] = {
    "resources": "resources",
    "templates": "resources",
    "prompts": "prompts",
    "skills": "resources",
}


def template_matches(uri: str, template: str) -> bool:
    """Whether ``uri`` is one of ``template``'s URIs, as FastMCP routes a read."""
    return match_uri_template(uri, template) is not None


def open_surfaces(
    config: GatewayConfig,
    engines: GatewayEngines,
    listed: Mapping[str, SurfaceNames],
    *,
    warn: bool = True,
    skills: Sequence[Surface] = (),
) -> None:
    """Have ``engines`` govern every upstream's sidecar entries (as :class:`GatewayEngines`
    read them) and the gateway's own ``skills`` (:mod:`maitred.gateway.skillset`), deciding on
    the engines' state, clock and log with FastMCP's matcher (:meth:`Engines.govern
    <maitred.conversation.engines.Engines.govern>`); naming on stderr what no entry governs
    (unless not ``warn``: the caller names it for an upstream that joins later,
    :func:`warn_ungated`).

    Raises:
        ConfigError: two upstreams' sidecars govern the same URI, template or prompt, or
            an entry's predicates fail the tools' load-time checks against the state
            (a key with no source, a CEL predicate that does not type-check).
    """
    surfaces: list[Surface] = []
    owner: dict[tuple[Family, str], str] = {}
    for up in config.upstreams:
        sidecar = engines.sidecars.get(up.name)
        names = listed.get(up.name, SurfaceNames())
        if sidecar is None:
            continue
        entries: list[tuple[Family, str, Contract]] = [
            ("templates" if key in names.templates else "resources", key, contract)
            for key, contract in sidecar.resources.items()
        ]
        entries += [("prompts", key, contract) for key, contract in sidecar.prompts.items()]
        for family, key, contract in entries:
            if (family, key) in owner:
                raise ConfigError(
                    f"{config.source}: the sidecars of upstreams {owner[family, key]!r} "
                    f"and {up.name!r} both give {NOUN[family]} {key!r} a contract; keep "
                    "one (a client could not tell which applies)"
                )
            owner[family, key] = up.name
            surfaces.append(Surface(family, key, up.name, contract))
    surfaces += skills
    try:  # the tools' load-time checks: keys have a source, CEL type-checks
        engines.govern(surfaces, ungated=config.ungated, matches=template_matches)
    except ConfigError as exc:
        raise ConfigError(f"{config.source}: the upstreams' resources and prompts: {exc}") from None
    if warn:
        warn_ungated(engines, listed, config.source)


def warn_ungated(engines: GatewayEngines, listed: Mapping[str, SurfaceNames], source: str) -> None:
    """Name on stderr, per upstream, what it lists that no contract of ``engines`` governs."""
    fate = (
        "passed through ungated (ungated: pass)"
        if engines.ungated == "pass"
        else "hidden, and reads and gets refused (ungated: hide)"
    )
    for upstream, names in listed.items():
        loose = {
            "resources": engines.ungoverned("resources", names.resources),
            "templates": engines.ungoverned("templates", names.templates),
            "prompts": engines.ungoverned("prompts", names.prompts),
        }
        if not any(loose.values()):
            continue
        said = "; ".join(f"{family} {items}" for family, items in loose.items() if items)
        print(
            f"maitred mcp: upstream {upstream!r} lists what no contract governs, {fate}: "
            f"{said}. Give each an entry under `resources:` / `prompts:` in its sidecar "
            f"({{}}: reviewed, always shown), or set `ungated` in {source}",
            file=sys.stderr,
            flush=True,
        )


class Sessions(Protocol):
    """What :class:`SurfaceGuard` needs of the gateway's middleware: each request's
    conversation, the conversations it can reach outside a request, their ways out, the
    engines they share, and the metrics."""

    channels: Channels
    metrics: GatewayMetrics
    engines: GatewayEngines

    def keeper_of(self, context: MiddlewareContext[Any]) -> Conversation | None:
        """The request's conversation (None: not authenticated)."""
        ...

    def reachable(self) -> list[tuple[Key, Conversation]]:
        """The sessions a notification outside any request can reach."""
        ...


#: what failed when a read or get could not be decided or logged
_UNDECIDED = "the gateway could not decide or record this request"


def _error(code: int, payload: Rejection) -> MCPError:
    """The MCP error a refused read or get is answered with: the rejection as ``data``."""
    return MCPError(code, payload.message, payload.to_json())


class SurfaceGuard(Middleware):
    """Filters ``resources/list``, ``resources/templates/list`` and ``prompts/list`` per
    session and gates ``resources/read`` and ``prompts/get`` (see the module docstring), each
    asked of the request's :class:`~maitred.conversation.Conversation`.

    Added to the gateway's server after its :class:`~maitred.gateway.server.GateMiddleware`,
    so a ``tools/call`` reaches :meth:`on_call_tool` only when the gate let it through.
    """

    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions
        metrics = sessions.metrics
        for method in ("resources/read", "resources/subscribe", "prompts/get"):
            metrics.surface_requests.labels(method, OK)  # present at zero

    async def _listed(
        self,
        family: Family,
        context: MiddlewareContext[Any],
        call_next: CallNext[Any, Any],
        target: Callable[[Any], str],
    ) -> list[Any]:
        keeper = self.sessions.keeper_of(context)
        if keeper is None:
            return []
        items = list(await call_next(context))
        targets = [target(i) for i in items]
        offered = set(await anyio.to_thread.run_sync(lambda: keeper.offer(family, targets)))
        return [i for i, t in zip(items, targets, strict=True) if t in offered]

    async def on_list_resources(
        self,
        context: MiddlewareContext[mt.ListResourcesRequest],
        call_next: CallNext[mt.ListResourcesRequest, Sequence[Resource]],
    ) -> Sequence[Resource]:
        return await self._listed("resources", context, call_next, lambda r: str(r.uri))

    async def on_list_resource_templates(
        self,
        context: MiddlewareContext[mt.ListResourceTemplatesRequest],
        call_next: CallNext[mt.ListResourceTemplatesRequest, Sequence[ResourceTemplate]],
    ) -> Sequence[ResourceTemplate]:
        return await self._listed("templates", context, call_next, lambda t: str(t.uri_template))

    async def on_list_prompts(
        self,
        context: MiddlewareContext[mt.ListPromptsRequest],
        call_next: CallNext[mt.ListPromptsRequest, Sequence[Prompt]],
    ) -> Sequence[Prompt]:
        return await self._listed("prompts", context, call_next, lambda p: str(p.name))

    async def _decided(
        self, context: MiddlewareContext[Any], family: Family, target: str, call: ToolCall
    ) -> tuple[Conversation, Decision]:
        """The request's conversation and its logged decision on a read or get; raises the
        MCP error that refuses it."""
        keeper = self.sessions.keeper_of(context)
        count = self.sessions.metrics.surface_requests
        if keeper is None:
            count.labels(call.name, AUTH_REQUIRED).inc()
            raise _error(mt.INVALID_REQUEST, auth_required(NOTHING_READ))
        era, trace_id = era_of(context), traces.trace_id(context)  # no span of maitred's
        try:
            decision = await anyio.to_thread.run_sync(
                lambda: keeper.read(family, target, call, era=era, trace_id=trace_id)
            )
        except MaitredError as exc:  # not decided, or not durable: it must not be read
            count.labels(call.name, GATE_UNAVAILABLE).inc()
            refusal = gate_unavailable(exc, what=_UNDECIDED, undone=NOTHING_READ)
            raise _error(mt.INTERNAL_ERROR, refusal) from None
        count.labels(call.name, decision.code).inc()  # OK when allowed, as the log says
        if not decision.allow:
            raise _error(mt.INVALID_PARAMS, decision.rejection())
        return keeper, decision

    async def on_request(
        self,
        context: MiddlewareContext[Any],
        call_next: CallNext[Any, Any],
    ) -> Any:
        """A ``resources/subscribe`` is decided like the read it leads to: a resource the
        session may not read cannot be subscribed to (refused and logged, never forwarded),
        so its update notifications never tell the model it exists."""
        if context.method == "resources/subscribe":
            params = context.message if isinstance(context.message, Mapping) else {}
            uri = str(params.get("uri", ""))
            call = ToolCall("resources/subscribe", {"uri": uri}, new_call_id())
            await self._decided(context, "resources", uri, call)
        return await call_next(context)

    async def on_read_resource(
        self,
        context: MiddlewareContext[mt.ReadResourceRequestParams],
        call_next: CallNext[mt.ReadResourceRequestParams, ResourceResult],
    ) -> ResourceResult:
        uri = str(context.message.uri)
        call = ToolCall("resources/read", {"uri": uri}, new_call_id())
        keeper, decision = await self._decided(context, "resources", uri, call)
        served = keeper.served_as(uri)
        if served != uri:  # one of the gateway's own skill files: served as decided
            message = context.message.model_copy(update={"uri": served})
            context = context.copy(message=message)
        result = await call_next(context)
        meta = {**(result.meta or {}), DECISION_ID_META: decision.decision_id}
        return result.model_copy(update={"meta": meta})

    async def on_get_prompt(
        self,
        context: MiddlewareContext[mt.GetPromptRequestParams],
        call_next: CallNext[mt.GetPromptRequestParams, PromptResult],
    ) -> PromptResult:
        name = context.message.name
        params = {"name": name, "arguments": dict(context.message.arguments or {})}
        _, decision = await self._decided(context, "prompts", name, ToolCall("prompts/get", params))
        result = await call_next(context)
        meta = {**(result.meta or {}), DECISION_ID_META: decision.decision_id}
        return result.model_copy(update={"meta": meta})

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        """A call the gate let through (the gate's own forwarding calls :meth:`after_call`
        instead)."""
        return await self.after_call(context, await call_next(context))

    async def after_call(
        self, context: MiddlewareContext[mt.CallToolRequestParams], result: ToolResult
    ) -> ToolResult:
        """After a mutating call that succeeded, announce the resource and prompt lists it
        changed for this session; ``result`` is returned as it is."""
        keeper = self.sessions.keeper_of(context)
        done = isinstance(result, ToolResult) and not result.is_error  # not a task handle
        if not done or keeper is None or not keeper.mutates(context.message.name):
            return result
        if not keeper.listed_surfaces:
            return result
        try:
            changed = await anyio.to_thread.run_sync(keeper.recheck_surfaces)
            ctx = context.fastmcp_context
            for kind in sorted({_ANNOUNCED[f] for f in changed}):
                if ctx is not None:
                    await ctx.send_notification(_NOTIFICATIONS[kind])
        except Exception as exc:  # the call ran: its result must reach the client regardless
            print(
                f"maitred mcp: resources/prompts not re-checked after {context.message.name} "
                f"({type(exc).__name__}: {exc})",
                file=sys.stderr,
            )
        return result

    async def recheck(self) -> int:
        """One pass of the state watch over resources and prompts: how many sessions were
        sent a ``list_changed`` (the engines decide, one state read per account and grant:
        :meth:`Engines.recheck_surfaces
        <maitred.conversation.engines.Engines.recheck_surfaces>`)."""
        group = [(k, c) for k, c in self.sessions.reachable() if c.listed_surfaces]
        if not group:
            return 0
        engines = self.sessions.engines
        changes = await anyio.to_thread.run_sync(
            partial(engines.recheck_surfaces, [c for _, c in group])
        )
        told = 0
        for (key, _), changed in zip(group, changes, strict=True):
            kinds = sorted({_ANNOUNCED[f] for f in changed})
            if kinds and await self.sessions.channels.notify(key, kinds):
                told += 1
        return told


def era_of(context: MiddlewareContext[Any]) -> str:
    """The protocol revision the request's client spoke (``""``: not known)."""
    ctx = context.fastmcp_context
    request = ctx.request_context if ctx is not None else None
    return str(request.protocol_version or "") if request is not None else ""


_NOTIFICATIONS: Mapping[ListKind, mt.ServerNotification | Any] = {
    "resources": mt.ResourceListChangedNotification(),
    "prompts": mt.PromptListChangedNotification(),
}

__all__ = [
    "DECISION_ID_META",
    "SurfaceGuard",
    "open_surfaces",
    "template_matches",
    "warn_ungated",
]
