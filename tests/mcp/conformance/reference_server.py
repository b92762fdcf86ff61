"""The reference MCP server for the 2026-07-28 requirements of the conformance suite.

``tests/mcp/test_conformance.py`` runs ``@modelcontextprotocol/conformance`` 0.2.0-alpha.12
with ``--requirements 2026-07-28`` against this server directly and through ``maitred mcp``.
The MCP TypeScript SDK the suite ships (1.x) speaks only the handshake era, so the
2026-07-28 reference is written here on FastMCP 4.2.3 (the stack the gateway itself is built
on), to what each scenario of that requirement set asks (``conformance list --server
--requirements 2026-07-28``, and each scenario's description):

* the tools, resources, resource template, prompts and completions of the content scenarios
  (the same ones ``reference_server.mjs`` serves the handshake era);
* multi-round-trip input (SEP-2322): tools and a prompt that answer with an
  ``InputRequiredResult`` (elicitation, sampling, ``roots/list``, several at once, several
  rounds), a ``requestState`` that is signed (HMAC-SHA256 under a key made at start) and
  refused when it does not verify, and input requests only for the capabilities the client
  declared;
* a tool that needs the ``sampling`` capability and refuses a client that did not declare it
  with ``-32021`` (``test_missing_capability``), a tool that logs only when the request asks
  for a log level, and two hooks that change the tool and prompt lists, told to every
  ``subscriptions/listen`` stream that asked for that list (SEP-2575);
* ``Host``/``Origin`` checked against DNS rebinding.

It serves both eras on one streamable-HTTP endpoint, as FastMCP does.

    python reference_server.py      # prints "reference server: http://127.0.0.1:PORT/mcp"
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import socket
import struct
import sys
import zlib
from typing import Any

import mcp_types as mt
import uvicorn
from fastmcp import Context, FastMCP
from fastmcp.prompts import Message
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import Tool
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

_KEY = os.urandom(32)  # signs requestState; a restart makes old states unverifiable
_BUS = InMemorySubscriptionBus()
_LISTEN = ListenHandler(_BUS)


def _png() -> str:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )
    return base64.b64encode(raw).decode()


def _wav() -> str:
    header = b"RIFF" + struct.pack("<I", 36) + b"WAVEfmt "
    header += struct.pack("<IHHIIHH", 16, 1, 1, 8000, 8000, 1, 8) + b"data" + struct.pack("<I", 0)
    return base64.b64encode(header).decode()


PNG, WAV = _png(), _wav()


def sign(payload: dict[str, Any]) -> str:
    """``payload`` as a ``requestState`` only this process can have made."""
    body = base64.urlsafe_b64encode(json.dumps(payload, sort_keys=True).encode()).decode()
    mac = hmac.new(_KEY, body.encode(), hashlib.sha256).hexdigest()
    return f"{body}.{mac}"


def verify(state: str | None) -> dict[str, Any]:
    """The payload of a ``requestState`` this process signed; -32602 when it is not one."""
    body, _, mac = (state or "").rpartition(".")
    good = hmac.new(_KEY, body.encode(), hashlib.sha256).hexdigest()
    if not body or not hmac.compare_digest(mac, good):
        raise MCPError(mt.INVALID_PARAMS, "requestState integrity check failed")
    payload: dict[str, Any] = json.loads(base64.urlsafe_b64decode(body))
    return payload


def ask_text(message: str, field: str, kind: str = "string") -> mt.ElicitRequest:
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return mt.ElicitRequest(
        params=mt.ElicitRequestFormParams(message=message, requested_schema=schema)
    )


def ask_model(prompt: str, tokens: int) -> mt.CreateMessageRequest:
    message = mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text=prompt))
    return mt.CreateMessageRequest(
        params=mt.CreateMessageRequestParams(messages=[message], max_tokens=tokens)
    )


def ask_roots() -> mt.ListRootsRequest:
    return mt.ListRootsRequest(params=None)


def need(requests: dict[str, Any], state: dict[str, Any] | None = None) -> mt.InputRequiredResult:
    return mt.InputRequiredResult(
        input_requests=requests, request_state=sign(state) if state is not None else None
    )


def answered(ctx: Context, *keys: str) -> dict[str, Any] | None:
    """The client's answers to ``keys`` when it sent all of them (else ``None``)."""
    got = ctx.input_responses or {}
    if not all(isinstance(got.get(k), mt.Result) for k in keys):
        return None
    return {k: got[k] for k in keys}


def elicited(result: Any, field: str) -> str:
    content = getattr(result, "content", None) or {}
    return str(content.get(field, ""))


def build() -> FastMCP:
    server = FastMCP("maitred-conformance-reference-2026", dereference_schemas=False)
    text = [
        ("test_simple_text", "This is a simple text response for testing."),
        ("test_streaming_elicitation", "Streaming complete"),
    ]
    for name, said in text:
        server.tool(name=name, description=f"Answers {said!r}")(_says(said))

    @server.tool(description="Answers with a PNG image")
    def test_image_content() -> list[mt.ContentBlock]:
        return [mt.ImageContent(type="image", data=PNG, mime_type="image/png")]

    @server.tool(description="Answers with a WAV clip")
    def test_audio_content() -> list[mt.ContentBlock]:
        return [mt.AudioContent(type="audio", data=WAV, mime_type="audio/wav")]

    embedded = mt.EmbeddedResource(
        type="resource",
        resource=mt.TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        ),
    )

    @server.tool(description="Answers with an embedded text resource")
    def test_embedded_resource() -> list[mt.ContentBlock]:
        return [embedded]

    @server.tool(description="Answers with text, an image and a resource")
    def test_multiple_content_types() -> list[mt.ContentBlock]:
        mixed = mt.TextResourceContents(
            uri="test://mixed-content-resource",
            mime_type="application/json",
            text='{"test":"data","value":123}',
        )
        return [
            mt.TextContent(type="text", text="Multiple content types test:"),
            mt.ImageContent(type="image", data=PNG, mime_type="image/png"),
            mt.EmbeddedResource(type="resource", resource=mixed),
        ]

    @server.tool(description="Reports progress 0, 50, 100 of 100")
    async def test_tool_with_progress(ctx: Context) -> str:
        for done in (0, 50, 100):
            await ctx.report_progress(done, 100)
        return "Tool with progress executed successfully"

    @server.tool(description="Logs one message when the request asks for a log level")
    async def test_logging_tool(ctx: Context) -> str:
        await ctx.info("Diagnostic trace logging activated")
        return "Logging evaluated"

    @server.tool(description="Always fails (isError)")
    def test_error_handling() -> mt.CallToolResult:
        failed = "This tool intentionally returns an error for testing"
        return mt.CallToolResult(content=[mt.TextContent(type="text", text=failed)], is_error=True)

    @server.tool(description="Needs the client's sampling capability")
    def test_missing_capability(ctx: Context) -> str:
        if not ctx.session.check_client_capability(
            mt.ClientCapabilities(sampling=mt.SamplingCapability())
        ):
            raise MCPError(
                mt.MISSING_REQUIRED_CLIENT_CAPABILITY,
                "MissingRequiredClientCapabilityError",
                data={"requiredCapabilities": {"sampling": {}}},
            )
        return "Success"

    @server.tool(description="Changes the tool list (told to listen streams)")
    async def test_trigger_tool_change() -> str:
        await _BUS.publish(ToolsListChanged())
        return "Mutation triggered"

    @server.tool(description="Changes the prompt list (told to listen streams)")
    async def test_trigger_prompt_change() -> str:
        await _BUS.publish(PromptsListChanged())
        return "Mutation triggered"

    _schema_tools(server)
    _mrtr_tools(server)
    _surfaces(server)
    return server


def _schema_tools(server: FastMCP) -> None:
    """Tools whose input schemas are the point: JSON Schema 2020-12 as written, and a
    parameter mirrored into an ``Mcp-Param-Region`` header (SEP-2243)."""

    def json_schema_2020_12_tool(
        name: str = "",
        address: dict[str, Any] | None = None,
        contactMethod: str = "",
        phone: str = "",
        email: str = "",
    ) -> str:
        return f"received {name!r} {address!r} {contactMethod!r} {phone!r} {email!r}"

    one_of_two = [{"required": ["phone"]}, {"required": ["email"]}]
    schema = {  # 2020-12 keywords a gateway must keep as written (SEP-1613, SEP-2106)
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": one_of_two}],
        "if": {
            "properties": {"contactMethod": {"const": "phone"}},
            "required": ["contactMethod"],
        },
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": False,
    }

    def test_custom_header(region: str) -> str:
        return f"region: {region}"

    header = {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["region"],
    }
    for fn, parameters in ((json_schema_2020_12_tool, schema), (test_custom_header, header)):
        tool = Tool.from_function(fn, description=f"{fn.__name__}: its input schema")
        server.add_tool(tool.model_copy(update={"parameters": parameters}))


def _says(said: str) -> Any:
    def tool() -> str:
        return said

    return tool


def _mrtr_tools(server: FastMCP) -> None:
    @server.tool(description="MRTR: asks the user's name")
    def test_input_required_result_elicitation(ctx: Context) -> Any:
        got = answered(ctx, "user_name")
        if got is None:
            return need({"user_name": ask_text("What is your name?", "name")})
        return f"Hello, {elicited(got['user_name'], 'name')}!"

    @server.tool(description="MRTR: asks the client's model")
    def test_input_required_result_sampling(ctx: Context) -> Any:
        got = answered(ctx, "capital_question")
        if got is None:
            return need({"capital_question": ask_model("What is the capital of France?", 100)})
        content = got["capital_question"].content
        return f"The model said: {getattr(content, 'text', content)}"

    @server.tool(description="MRTR: asks the client's roots")
    def test_input_required_result_list_roots(ctx: Context) -> Any:
        got = answered(ctx, "client_roots")
        if got is None:
            return need({"client_roots": ask_roots()})
        roots = [str(r.uri) for r in got["client_roots"].roots]
        return f"Roots: {', '.join(roots)}"

    @server.tool(description="MRTR: asks with a requestState")
    def test_input_required_result_request_state(ctx: Context) -> Any:
        got = answered(ctx, "confirm")
        if got is None or ctx.request_state is None:
            return need({"confirm": ask_text("Please confirm", "ok", "boolean")}, {"step": 1})
        verify(ctx.request_state)
        return "state-ok: requestState validated"

    @server.tool(description="MRTR: asks three things at once")
    def test_input_required_result_multiple_inputs(ctx: Context) -> Any:
        keys = ("user_name", "greeting", "client_roots")
        if answered(ctx, *keys) is None or ctx.request_state is None:
            asks = {
                "user_name": ask_text("What is your name?", "name"),
                "greeting": ask_model("Generate a greeting", 50),
                "client_roots": ask_roots(),
            }
            return need(asks, {"keys": list(keys)})
        verify(ctx.request_state)
        return "All inputs received"

    @server.tool(description="MRTR: asks in two rounds")
    def test_input_required_result_multi_round(ctx: Context) -> Any:
        first = need({"step1": ask_text("Step 1: What is your name?", "name")}, {"round": 1})
        if ctx.request_state is None:
            return first
        state = verify(ctx.request_state)
        if state.get("round") == 1:
            got = answered(ctx, "step1")
            if got is None:
                return first
            name = elicited(got["step1"], "name")
            ask = ask_text("Step 2: What is your favorite color?", "color")
            return need({"step2": ask}, {"round": 2, "name": name})
        got = answered(ctx, "step2")
        if got is None:
            return need({"step2": ask_text("Step 2: What is your favorite color?", "color")}, state)
        return f"Done: {state.get('name')} likes {elicited(got['step2'], 'color')}"

    @server.tool(description="MRTR: a signed requestState; a tampered one is refused")
    def test_input_required_result_tampered_state(ctx: Context) -> Any:
        if ctx.request_state is not None:
            verify(ctx.request_state)
            return "state verified"
        return need({"confirm": ask_text("Please confirm", "ok", "boolean")}, {"kind": "tamper"})

    @server.tool(description="MRTR: asks only for what the client declared")
    def test_input_required_result_capabilities(ctx: Context) -> Any:
        if ctx.input_responses:
            return f"capabilities-ok: received {','.join(sorted(ctx.input_responses))}"
        asks: dict[str, Any] = {}
        declared = ctx.session.check_client_capability
        if declared(mt.ClientCapabilities(elicitation=mt.ElicitationCapability())):
            asks["elicit_input"] = ask_text("Elicitation input", "value")
        if declared(mt.ClientCapabilities(sampling=mt.SamplingCapability())):
            asks["sample_input"] = ask_model("Sample request", 50)
        return need(asks, {"kind": "capabilities"}) if asks else "No supported capabilities"


def _surfaces(server: FastMCP) -> None:
    @server.resource("test://static-text", name="static-text", mime_type="text/plain")
    def static_text() -> str:
        return "This is the content of the static text resource."

    @server.resource("test://static-binary", name="static-binary", mime_type="image/png")
    def static_binary() -> bytes:
        return base64.b64decode(PNG)

    @server.resource(
        "test://template/{id}/data", name="template-data", mime_type="application/json"
    )
    def template_data(id: str) -> str:
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @server.prompt(description="A prompt without arguments")
    def test_simple_prompt() -> str:
        return "This is a simple prompt for testing."

    @server.prompt(description="A prompt with two arguments")
    def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @server.prompt(description="A prompt that embeds a resource")
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[Message]:
        resource = mt.TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
        )
        return [
            Message(mt.EmbeddedResource(type="resource", resource=resource)),
            Message("Please process the embedded resource above."),
        ]

    @server.prompt(description="A prompt with an image")
    def test_prompt_with_image() -> list[Message]:
        image = mt.ImageContent(type="image", data=PNG, mime_type="image/png")
        return [Message(image), Message("Please analyze the image above.")]

    @server.prompt(description="MRTR: a prompt that asks for context first")
    def test_input_required_result_prompt(ctx: Context) -> Any:
        got = answered(ctx, "user_context")
        if got is None:
            ask = ask_text("What context should the prompt use?", "context")
            return need({"user_context": ask})
        return f"Use this context: {elicited(got['user_context'], 'context')}"


SUGGESTIONS = {
    "arg1": ["paris", "park", "party", "test", "testing"],
    "arg2": ["world", "word", "work"],
    "id": ["1", "12", "123"],
}


class Listen(Middleware):
    """``subscriptions/listen``: each stream gets the list changes it asked for; discovery
    says the tool and prompt lists change (the two hooks above change them)."""

    async def on_discover(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        found = await call_next(context)
        result = mt.DiscoverResult.model_validate(found)
        caps = result.capabilities
        update: dict[str, Any] = {}
        if caps.tools is not None:
            update["tools"] = caps.tools.model_copy(update={"list_changed": True})
        if caps.prompts is not None:
            update["prompts"] = caps.prompts.model_copy(update={"list_changed": True})
        return result.model_copy(update={"capabilities": caps.model_copy(update=update)})

    async def on_request(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        if context.method != "subscriptions/listen":
            return await call_next(context)
        ctx = context.fastmcp_context
        request = ctx.request_context if ctx is not None else None
        if request is None:
            raise MCPError(mt.INVALID_REQUEST, "subscriptions/listen needs a request")
        params = mt.SubscriptionsListenRequestParams.model_validate(dict(context.message or {}))
        return await _LISTEN(request._srctx, params)


class Loopback:
    """Refuse a ``Host`` or ``Origin`` that does not name this machine (DNS rebinding)."""

    NAMES = ("localhost", "127.0.0.1", "[::1]")

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def _local(self, host: str) -> bool:
        name = host[: host.index("]") + 1] if host.startswith("[") else host.split(":")[0]
        return name.lower() in self.NAMES

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope)
            host = request.headers.get("host", "")
            origin = request.headers.get("origin")
            bad = not self._local(host) or (
                origin is not None and not self._local(origin.split("://", 1)[-1])
            )
            if bad:
                body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "no"}}
                await JSONResponse(body, status_code=403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def main() -> None:
    server = build()
    server.add_middleware(Listen())

    async def complete(ref: Any, argument: mt.CompletionArgument, context: Any) -> mt.Completion:
        values = [v for v in SUGGESTIONS.get(argument.name, []) if v.startswith(argument.value)]
        return mt.Completion(values=values, total=len(values), has_more=False)

    server.add_completion_handler(complete)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0))
    sock.listen(128)
    print(f"reference server: http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    app = Loopback(server.http_app(path="/mcp"))
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
