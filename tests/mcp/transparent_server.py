"""An MCP server that uses the protocol surfaces a gateway must pass through untouched.

Built on the MCP SDK's low-level server (FastMCP would add titles and ``_meta`` of its own,
and serves no resource subscriptions), so everything it lists is exactly what it sends:

* ``profile``: a tool whose input schema uses JSON Schema 2020-12 (``$schema``, ``$defs``,
  ``$ref``, ``additionalProperties``); no title, no ``_meta``.
* ``echo``: answers with the ``arguments`` member exactly as it arrived (``null`` when the
  request carried none), and writes it to ``$CALLS_FILE``.
* ``chatty``: logs three messages with structured ``data`` (debug, info, warning), each only
  when at or above the level the client last set with ``logging/setLevel``; answers with that
  level.
* ``touch``: changes ``note://pad`` and sends ``notifications/resources/updated`` to every
  session subscribed to it (``resources/subscribe``; ``resources/unsubscribe`` stops that).
* ``secret``: a tool for the gateway's contracts to hide.
* the resource ``note://pad`` (no MIME type), the template ``note://pads/{name}``, the prompts
  ``greet`` (no arguments member at all) and ``greet_named`` (``name``), and completions for
  ``greet_named``'s ``name`` and the template's ``name``.

    python transparent_server.py                    # stdio
    python transparent_server.py --http             # streamable HTTP; prints "serving http://..."
    python transparent_server.py --handshake-only   # stdio, refusing 2026-07-28 (server/discover),
                                                    # as servers on the MCP SDK 1.x do
"""

from __future__ import annotations

import json
import os
import socket
import sys
import warnings
from typing import Any

import anyio
import mcp_types as mt
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_loop
from mcp.server.session import ServerSession

LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
PAD = "note://pad"
NAMES = ["alice", "albert", "bob"]

PROFILE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}

TOOLS = [
    mt.Tool(name="profile", description="Store a profile", input_schema=PROFILE_SCHEMA),
    mt.Tool(
        name="echo",
        description="Answer with the arguments as they arrived",
        input_schema={"type": "object", "properties": {"note": {"type": "string"}}},
    ),
    mt.Tool(name="chatty", description="Log while working", input_schema={"type": "object"}),
    mt.Tool(name="touch", description="Change note://pad", input_schema={"type": "object"}),
    mt.Tool(
        name="secret", description="A tool the contracts hide", input_schema={"type": "object"}
    ),
]

state: dict[str, Any] = {"level": "debug", "version": 0, "set_levels": []}
#: the sessions subscribed to each URI (handshake era: one session object per connection)
subscribers: dict[str, list[ServerSession]] = {}


def _record(name: str, arguments: Any) -> None:
    path = os.environ.get("CALLS_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"name": name, "arguments": arguments}) + "\n")


def _text(value: str) -> mt.TextContent:
    return mt.TextContent(type="text", text=value)


async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> mt.ListToolsResult:
    return mt.ListToolsResult(tools=TOOLS)


async def call_tool(
    ctx: ServerRequestContext[Any], params: mt.CallToolRequestParams
) -> mt.CallToolResult:
    name, arguments = params.name, params.arguments
    _record(name, arguments)
    if name == "echo":
        return mt.CallToolResult(content=[_text(json.dumps({"arguments": arguments}))])
    if name == "profile":
        return mt.CallToolResult(content=[_text(f"stored {json.dumps(arguments)}")])
    if name == "chatty":
        for step, level in enumerate(("debug", "info", "warning"), start=1):
            if LEVELS.index(level) >= LEVELS.index(state["level"]):
                data = {"step": step, "level": level, "items": [1, 2, step]}
                await ctx.session.send_log_message(
                    level, data, logger="chatty", related_request_id=ctx.request_id
                )
        return mt.CallToolResult(content=[_text(f"level {state['level']}")])
    if name == "touch":
        state["version"] += 1
        for session in list(subscribers.get(PAD, [])):
            await session.send_resource_updated(PAD)
        return mt.CallToolResult(content=[_text(f"version {state['version']}")])
    return mt.CallToolResult(content=[_text(f"unknown tool {name}")], is_error=True)


async def list_resources(ctx: ServerRequestContext[Any], params: Any) -> mt.ListResourcesResult:
    return mt.ListResourcesResult(resources=[mt.Resource(uri=PAD, name="pad")])


async def list_templates(
    ctx: ServerRequestContext[Any], params: Any
) -> mt.ListResourceTemplatesResult:
    template = mt.ResourceTemplate(uri_template="note://pads/{name}", name="pads")
    return mt.ListResourceTemplatesResult(resource_templates=[template])


async def read_resource(
    ctx: ServerRequestContext[Any], params: mt.ReadResourceRequestParams
) -> mt.ReadResourceResult:
    text = f"pad version {state['version']}" if params.uri == PAD else f"pad {params.uri}"
    contents = [mt.TextResourceContents(uri=params.uri, text=text)]
    return mt.ReadResourceResult(contents=contents)


async def subscribe(
    ctx: ServerRequestContext[Any], params: mt.SubscribeRequestParams
) -> mt.EmptyResult:
    subscribers.setdefault(params.uri, []).append(ctx.session)
    return mt.EmptyResult()


async def unsubscribe(
    ctx: ServerRequestContext[Any], params: mt.UnsubscribeRequestParams
) -> mt.EmptyResult:
    subscribers.pop(params.uri, None)
    return mt.EmptyResult()


async def list_prompts(ctx: ServerRequestContext[Any], params: Any) -> mt.ListPromptsResult:
    named = mt.Prompt(name="greet_named", arguments=[mt.PromptArgument(name="name", required=True)])
    return mt.ListPromptsResult(prompts=[mt.Prompt(name="greet"), named])


async def get_prompt(
    ctx: ServerRequestContext[Any], params: mt.GetPromptRequestParams
) -> mt.GetPromptResult:
    who = (params.arguments or {}).get("name", "there")
    message = mt.PromptMessage(role="user", content=_text(f"Hello {who}"))
    return mt.GetPromptResult(messages=[message])


async def complete(
    ctx: ServerRequestContext[Any], params: mt.CompleteRequestParams
) -> mt.CompleteResult:
    prefix = params.argument.value
    values = [n for n in NAMES if n.startswith(prefix)] if params.argument.name == "name" else []
    return mt.CompleteResult(
        completion=mt.Completion(values=values, total=len(values), has_more=False)
    )


async def set_level(
    ctx: ServerRequestContext[Any], params: mt.SetLevelRequestParams
) -> mt.EmptyResult:
    state["level"] = params.level
    return mt.EmptyResult()


def build() -> Server[Any]:
    with warnings.catch_warnings():  # logging/setLevel is what this server exists to test
        warnings.simplefilter("ignore")
        server: Server[Any] = Server(
            "transparent-upstream",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
            on_subscribe_resource=subscribe,
            on_unsubscribe_resource=unsubscribe,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
            on_completion=complete,
            on_set_logging_level=set_level,
        )
    return server


async def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = build()
    async with stdio_server() as (read, write):
        if "--handshake-only" not in sys.argv:
            await server.run(read, write, server.create_initialization_options())
            return
        async with server.lifespan(server) as state:  # the handshake era only, as SDK 1.x
            await serve_loop(
                server,
                read,
                write,
                lifespan_state=state,
                init_options=server.create_initialization_options(),
            )


def serve_http() -> None:
    import uvicorn

    # IPPROTO_TCP named: asyncio sets TCP_NODELAY on accepted connections only then (else
    # Nagle holds each response back ~40 ms for the client's delayed ACK)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"serving http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    app = build().streamable_http_app()
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    if "--http" in sys.argv:
        serve_http()
    else:
        anyio.run(serve_stdio)
