"""The gateway's traces: a real client -> the gateway (in process, so the SDK's in-memory
exporter is readable) -> a real upstream process over stdio that records the trace context of
every call it receives (``traced_upstream.py``).

What is asserted: the parent/child links (the client's ``traceparent`` -> the gateway's request
span -> its check and upstream spans -> the upstream's request), the ids on each span against
the decision log, and what never becomes an attribute (argument values).
"""

from __future__ import annotations

import json
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import fastmcp
import pytest
import uvicorn
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from starlette.testclient import TestClient
from tests.mcp.conftest import Process, child_env, sha256
from tests.otlp_collector import collecting

from maitred.console import Access, create_console
from maitred.errors import ConfigError
from maitred.gateway import load_config, parse_config
from maitred.gateway.build import gate_of, open_gateway
from maitred.gateway.surfaces import DECISION_ID_META
from maitred.gateway.traces import without_idle_library_spans
from maitred.log.base import open_log
from maitred.tracing import OFF, Tracing, TracingOptions

TRACED = Path(__file__).with_name("traced_upstream.py")
TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
CLIENT_SPAN = 0x00F067AA0BA902B7
#: what a traced client sends: its trace, its span, sampled
TRACEPARENT = f"00-{TRACE_ID:032x}-{CLIENT_SPAN:016x}-01"
PROXY_TRACE, PROXY_SPAN = 0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331
#: what a tracing HTTP proxy in front of the gateway would put in the header
PROXY_TRACEPARENT = f"00-{PROXY_TRACE:032x}-{PROXY_SPAN:016x}-01"
SECRET = "Lisbon-7421"  # an argument value: it must never reach a span
TOKEN = "tok-acme-trace"

SIDECAR = """\
tools:
  export_report:
    exit_predicates:
      - name: free_plan
        expr: account.plan == "free"
        reads: [account.plan]
"""

Scenario = Callable[[Client[Any]], Awaitable[None]]


def write_site(root: Path, extra: str = "") -> Path:
    """A gateway config in ``root`` over the traced upstream, for acc-1 on the free plan."""
    (root / "accounts.json").write_text(
        json.dumps({"acc-1": {"account": {"plan": "free"}}}), encoding="utf-8"
    )
    (root / "traced.maitred.yaml").write_text(SIDECAR, encoding="utf-8")
    config = root / "gateway.yaml"
    config.write_text(
        "account: acc-1\n"
        "state: accounts.json\n"
        "log: gateway.sqlite\n"
        f"{extra}"
        "upstreams:\n"
        "  - name: traced\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(TRACED))}]\n"
        f"    env: {{CALLS_FILE: {json.dumps(str(root / 'calls.jsonl'))}}}\n"
        "    contracts: traced.maitred.yaml\n",
        encoding="utf-8",
    )
    return config


def received(root: Path) -> list[dict[str, Any]]:
    """What the upstream received: one ``{name, traceparent}`` per call."""
    path = root / "calls.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [json.loads(line) for line in lines]


def in_memory(**options: Any) -> tuple[Tracing, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tracing = Tracing.start(
        TracingOptions(enabled=True, exporter="none", **options), exporter=exporter
    )
    return tracing, exporter


def run_gateway(config: Path, tracing: Tracing, scenario: Scenario) -> None:
    """The gateway for ``config`` in process, and ``scenario`` with a client connected to it."""

    async def main() -> None:
        server, engines = await open_gateway(load_config(config), tracing=tracing)
        try:
            async with Client(server) as client:
                await scenario(client)
        finally:
            engines.close()

    anyio.run(main)


def named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def one(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    [found] = named(spans, name)
    return found


def parent_of(span: ReadableSpan) -> tuple[int, int] | None:
    """(trace id, span id) of ``span``'s parent."""
    return None if span.parent is None else (span.parent.trace_id, span.parent.span_id)


def ids(span: ReadableSpan) -> tuple[int, int]:
    assert span.context is not None
    return span.context.trace_id, span.context.span_id


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def parse_traceparent(value: str) -> tuple[int, int]:
    """(trace id, parent span id) of a W3C ``traceparent``."""
    _, trace_id, span_id, _ = value.split("-")
    return int(trace_id, 16), int(span_id, 16)


@pytest.fixture(params=["native", "propagation_only"])
def fastmcp_spans(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """FastMCP's telemetry mode: its own (no-op) spans, or none, as ``maitred mcp`` serves
    (:func:`maitred.gateway.traces.without_idle_library_spans`); the links are the same."""
    monkeypatch.setattr(fastmcp.settings, "telemetry_mode", request.param)
    return str(request.param)


def test_a_call_continues_the_clients_trace_through_the_check_and_the_upstream(
    tmp_path: Path, fastmcp_spans: str
) -> None:
    config = write_site(tmp_path)
    tracing, exporter = in_memory()
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any]) -> None:
        await client.list_tools()
        exporter.clear()
        got["result"] = await client.call_tool(
            "lookup", {"city": SECRET}, meta={"traceparent": TRACEPARENT}
        )

    run_gateway(config, tracing, scenario)
    spans = exporter.get_finished_spans()
    call, upstream = one(spans, "maitred.call"), one(spans, "maitred.upstream")
    # the client's span is the parent of the gateway's; the upstream call is the call's
    # child, and the check is no span of its own (its decision is on the call's span)
    assert parent_of(call) == (TRACE_ID, CLIENT_SPAN) and call.kind == SpanKind.SERVER
    assert parent_of(upstream) == ids(call)
    assert sorted(s.name for s in spans) == ["maitred.call", "maitred.upstream"]
    assert upstream.kind == SpanKind.CLIENT
    # the upstream got the gateway's upstream span as its parent, in the same trace
    [forwarded] = received(tmp_path)
    assert parse_traceparent(forwarded["traceparent"]) == ids(upstream)

    decision_id = got["result"].meta[DECISION_ID_META]
    with open_log(str(tmp_path / "gateway.sqlite")) as log:
        [row] = list(log.iter_action_decisions())
    assert row["decision_id"] == decision_id
    on_call = attributes(call)
    took = on_call.pop("maitred.check.duration_ms")
    assert isinstance(took, float) and took >= 0
    assert on_call == {
        "gen_ai.tool.name": "lookup",
        "maitred.code": "OK",
        "maitred.decision.id": decision_id,
        "maitred.decision.code": "OK",
        "maitred.decision.verdict": "allow",
        "maitred.turn.id": row["turn_id"],
        "maitred.session.id": row["session_id"],
        "maitred.account": "acc-1",
    }
    assert attributes(upstream)["maitred.upstream"] == "traced"
    assert call.status.status_code == StatusCode.UNSET
    every_value = [str(v) for s in spans for v in (s.attributes or {}).values()]
    assert not any(SECRET in v for v in every_value)  # arguments are never attributes


def test_a_refused_call_carries_its_decision_and_has_no_upstream_span(tmp_path: Path) -> None:
    config = write_site(tmp_path)
    tracing, exporter = in_memory()
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any]) -> None:
        got["result"] = await client.call_tool(
            "export_report", {"year": 2025}, raise_on_error=False
        )

    run_gateway(config, tracing, scenario)
    spans = exporter.get_finished_spans()
    call = one(spans, "maitred.call")
    assert named(spans, "maitred.upstream") == [] and received(tmp_path) == []
    decision_id = got["result"].meta[DECISION_ID_META]
    assert attributes(call)["maitred.code"] == "TOOL_NOT_OFFERED"
    assert attributes(call)["maitred.decision.id"] == decision_id
    assert attributes(call)["maitred.decision.verdict"] == "reject"
    assert attributes(call)["maitred.decision.code"] == "TOOL_NOT_OFFERED"
    assert call.status.status_code == StatusCode.UNSET  # a refusal is the gate working
    # no traceparent came: the call span starts a trace of its own
    assert call.parent is None and call.kind == SpanKind.SERVER


def test_a_listing_is_a_span_with_its_logged_turn(tmp_path: Path) -> None:
    config = write_site(tmp_path)
    tracing, exporter = in_memory()

    async def scenario(client: Client[Any]) -> None:
        names = [t.name for t in await client.list_tools()]
        assert names == ["lookup", "broken", "die"]

    run_gateway(config, tracing, scenario)
    spans = exporter.get_finished_spans()
    listing, turn = one(spans, "maitred.list"), one(spans, "maitred.turn")
    assert parent_of(turn) == ids(listing)
    with open_log(str(tmp_path / "gateway.sqlite")) as log:
        [logged] = list(log.iter_turns())
    assert attributes(turn) == {
        "maitred.tools.listed": 4,
        "maitred.tools.visible": 3,
        "maitred.turn.id": logged["turn_id"],
        "maitred.run.id": logged["run_id"],
    }
    assert attributes(listing)["maitred.session.id"] == logged["conversation_id"]


def test_failures_are_marked_by_type_or_code_never_by_message(tmp_path: Path) -> None:
    config = write_site(tmp_path)
    tracing, exporter = in_memory()

    async def scenario(client: Client[Any]) -> None:
        await client.list_tools()
        exporter.clear()
        broken = await client.call_tool("broken", {}, raise_on_error=False)
        assert broken.is_error
        died = await client.call_tool("die", {}, raise_on_error=False)
        assert json.loads(died.content[0].text)["code"] == "UPSTREAM_FAILED"

    run_gateway(config, tracing, scenario)
    spans = exporter.get_finished_spans()
    tool_error, crash = named(spans, "maitred.upstream")
    calls = named(spans, "maitred.call")
    assert tool_error.status.status_code == StatusCode.ERROR
    assert attributes(tool_error)["error.type"] == "tool_error"
    assert attributes(calls[0])["maitred.code"] == "OK"  # it reached the upstream
    assert crash.status.status_code == StatusCode.ERROR
    assert attributes(crash)["error.type"]  # the exception's type, e.g. McpError
    assert attributes(calls[1])["error.type"] == "UPSTREAM_FAILED"
    assert calls[1].status.status_code == StatusCode.ERROR
    for span in spans:  # no exception event: its message could quote an argument
        assert span.events == ()
        assert "read-only" not in (span.status.description or "")


def test_find_tools_is_a_span_with_the_turn_that_routed_the_need(tmp_path: Path) -> None:
    config = write_site(tmp_path, "disclosure: find_tools\n")
    tracing, exporter = in_memory()
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any]) -> None:
        result = await client.call_tool("find_tools", {"need": "the time in a city"})
        got["answer"] = result.structured_content

    run_gateway(config, tracing, scenario)
    spans = exporter.get_finished_spans()
    call, found = one(spans, "maitred.call"), one(spans, "maitred.find_tools")
    assert parent_of(found) == ids(call)
    assert attributes(call)["maitred.code"] == "FIND_TOOLS"
    assert attributes(found)["maitred.turn.id"] == got["answer"]["turn_id"]
    assert attributes(found)["maitred.tools.found"] == len(got["answer"]["tools"]) > 0
    with open_log(str(tmp_path / "gateway.sqlite")) as log:
        turns = {t["turn_id"]: t["run_id"] for t in log.iter_turns()}
    assert attributes(found)["maitred.run.id"] == turns[got["answer"]["turn_id"]]


def test_find_tools_with_several_needs_is_one_span_with_each_needs_turn(tmp_path: Path) -> None:
    config = write_site(tmp_path, "disclosure: find_tools\n")
    tracing, exporter = in_memory()
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any]) -> None:
        needs = ["the time in a city", "look up a city"]
        result = await client.call_tool("find_tools", {"needs": needs})
        got["answer"] = result.structured_content

    run_gateway(config, tracing, scenario)
    found = attributes(one(exporter.get_finished_spans(), "maitred.find_tools"))
    per_need = got["answer"]["needs"]
    assert list(found["maitred.turn.ids"]) == [n["turn_id"] for n in per_need]
    assert found["maitred.needs"] == 2 and "maitred.turn.id" not in found
    assert found["maitred.tools.found"] == sum(len(n["tools"]) for n in per_need) > 0


def test_off_by_default_and_then_the_clients_meta_reaches_the_upstream_as_sent(
    tmp_path: Path,
) -> None:
    config = write_site(tmp_path)

    async def main() -> None:
        server, engines = await open_gateway(load_config(config))
        try:
            assert gate_of(server).tracing is OFF
            async with Client(server) as client:
                await client.call_tool(
                    "lookup", {"city": "Oslo"}, meta={"traceparent": TRACEPARENT}
                )
        finally:
            engines.close()

    anyio.run(main)
    assert [r["traceparent"] for r in received(tmp_path)] == [TRACEPARENT]


def test_off_makes_no_span_and_leaves_the_current_span_alone() -> None:
    from opentelemetry import trace

    before = trace.get_current_span()
    with (
        OFF.span("maitred.upstream") as span,
        OFF.request("maitred.call", {"traceparent": TRACEPARENT}),
    ):
        assert not span.is_recording()
        assert trace.get_current_span() is before
    assert OFF.span("a") is OFF.span("b")  # one shared no-op, nothing built per call


@asynccontextmanager
async def http_gateway(config: Path, tracing: Tracing) -> AsyncIterator[str]:
    """The gateway for ``config`` served over streamable HTTP in this process (so its spans
    are readable), on a free loopback port; yields its URL."""
    server, engines = await open_gateway(load_config(config), http=True, tracing=tracing)
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY on accepted connections only then (else
    # Nagle holds each response back ~40 ms for the client's delayed ACK)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    web = uvicorn.Server(uvicorn.Config(server.http_app(path="/mcp"), log_level="warning"))
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(partial(web.serve, sockets=[sock]))
            while not web.started:
                await anyio.sleep(0.02)
            try:
                yield f"{base}/mcp"
            finally:
                web.should_exit = True  # a graceful stop: the lifespan ends as in production
    finally:
        engines.close()
        sock.close()


def test_over_http_the_header_is_the_parent_then_the_meta(
    tmp_path: Path, fastmcp_spans: str
) -> None:
    token = f"tokens:\n  - {{token_sha256: {sha256(TOKEN)}, tenant: acme, account: acc-1}}\n"
    config = write_site(tmp_path, token)
    tracing, exporter = in_memory(account=False)
    headers = {"traceparent": PROXY_TRACEPARENT, "tracestate": "proxy=1"}

    async def main() -> None:
        async with http_gateway(config, tracing) as url:
            behind_proxy = StreamableHttpTransport(url, headers=headers, auth=TOKEN)
            async with Client(behind_proxy) as client:
                await client.list_tools()
                await client.call_tool(
                    "lookup", {"city": "Oslo"}, meta={"traceparent": TRACEPARENT}
                )
            async with Client(url, auth=TOKEN) as client:
                await client.call_tool(
                    "lookup", {"city": "Rome"}, meta={"traceparent": TRACEPARENT}
                )

    anyio.run(main)
    spans = exporter.get_finished_spans()
    behind = [s for s in spans if ids(s)[0] == PROXY_TRACE]
    assert sorted(s.name for s in behind) == sorted(
        ["maitred.list", "maitred.turn", "maitred.call", "maitred.upstream"]
    )
    listing = one(behind, "maitred.list")
    by_header, by_meta = named(spans, "maitred.call")
    # the HTTP header wins over _meta: a tracing proxy between them stays in the chain
    assert parent_of(listing) == (PROXY_TRACE, PROXY_SPAN)
    assert parent_of(by_header) == (PROXY_TRACE, PROXY_SPAN)
    assert by_header.parent is not None and by_header.parent.trace_state.get("proxy") == "1"
    assert parent_of(by_meta) == (TRACE_ID, CLIENT_SPAN)  # no header: the MCP _meta
    for span in (listing, by_header, by_meta):
        assert span.kind == SpanKind.SERVER
        assert attributes(span)["maitred.tenant"] == "acme"
        assert "maitred.account" not in attributes(span)  # tracing.account: false
        assert attributes(span)["maitred.session.id"].startswith("acme-")
    upstreams = named(spans, "maitred.upstream")
    assert [parse_traceparent(r["traceparent"]) for r in received(tmp_path)] == [
        ids(u) for u in upstreams
    ]
    # each call's decision is logged with its request span's trace: the header's, then _meta's
    assert sorted(logged_traces(tmp_path).values()) == sorted(
        [f"{PROXY_TRACE:032x}", f"{TRACE_ID:032x}"]
    )


def test_a_malformed_traceparent_starts_a_new_trace(tmp_path: Path) -> None:
    config = write_site(tmp_path)
    tracing, exporter = in_memory()

    async def scenario(client: Client[Any]) -> None:
        await client.call_tool("lookup", {"city": "Oslo"}, meta={"traceparent": "00-zz-yy-01"})

    run_gateway(config, tracing, scenario)
    call = one(exporter.get_finished_spans(), "maitred.call")
    assert call.parent is None and attributes(call)["maitred.code"] == "OK"


# -- the trace id in the decision log ------------------------------------------------------------

JSON = {"Accept": "application/json"}


def console_json(root: Path, path: str) -> Any:
    """What the console over the gateway's log answers at ``path`` (its JSON twin)."""
    with (
        open_log(str(root / "gateway.sqlite"), read_only=True) as log,
        TestClient(create_console(log, Access(open=True))) as console,
    ):
        answer = console.get(path, headers=JSON)
        assert answer.status_code == 200, answer.text
        return answer.json()


def logged_traces(root: Path) -> dict[str, str]:
    with open_log(str(root / "gateway.sqlite"), read_only=True) as log:
        return {r["decision_id"]: r["trace_id"] for r in log.iter_action_decisions()}


def test_tracing_off_a_decision_stores_the_clients_trace_id_from_meta(tmp_path: Path) -> None:
    """No span of the gateway's: the client's ``params._meta.traceparent`` is the decision's
    trace id; a malformed one, or none, stores none."""
    config = write_site(tmp_path)
    got: dict[str, str] = {}

    async def scenario(client: Client[Any]) -> None:
        await client.list_tools()
        for name, meta in (
            ("traced", {"traceparent": TRACEPARENT}),
            ("bad", {"traceparent": "00-zz-yy-01"}),
            ("upper", {"traceparent": TRACEPARENT.upper()}),
            ("not text", {"traceparent": 7}),
            ("none", None),
        ):
            result = await client.call_tool("lookup", {"city": "Oslo"}, meta=meta)
            got[name] = str(result.meta[DECISION_ID_META])
        refused = await client.call_tool(
            "export_report", {}, meta={"traceparent": TRACEPARENT}, raise_on_error=False
        )
        got["refused"] = str(refused.meta[DECISION_ID_META])

    run_gateway(config, OFF, scenario)
    traced = f"{TRACE_ID:032x}"
    assert logged_traces(tmp_path) == {
        did: traced if name in ("traced", "refused") else "" for name, did in got.items()
    }
    shown = console_json(tmp_path, f"/decisions/{got['traced']}")
    assert shown["trace_id"] == traced and shown["chain_ok"]
    assert console_json(tmp_path, f"/decisions/{got['refused']}")["code"] == "TOOL_NOT_OFFERED"
    for name in ("bad", "upper", "not text", "none"):
        assert console_json(tmp_path, f"/decisions/{got[name]}")["trace_id"] is None
    found = console_json(tmp_path, f"/decisions?trace={traced}")["decisions"]
    assert sorted(d["decision_id"] for d in found) == sorted([got["traced"], got["refused"]])
    with (
        open_log(str(tmp_path / "gateway.sqlite"), read_only=True) as log,
        TestClient(create_console(log, Access(open=True))) as console,
    ):
        page = console.get(f"/decisions/{got['traced']}").text  # the HTML page shows it too
    assert f"<code>{traced}</code>" in page and f"/decisions?trace={traced}" in page


def test_tracing_on_a_decision_stores_its_request_spans_trace_id(tmp_path: Path) -> None:
    """The gateway's request span's trace: the client's when it sent one, else the trace the
    span began -- the trace the exported spans and the upstream's request are in."""
    config = write_site(tmp_path)
    tracing, exporter = in_memory()
    got: dict[str, str] = {}

    async def scenario(client: Client[Any]) -> None:
        await client.list_tools()
        continued = await client.call_tool(
            "lookup", {"city": "Oslo"}, meta={"traceparent": TRACEPARENT}
        )
        got["continued"] = str(continued.meta[DECISION_ID_META])
        began = await client.call_tool("lookup", {"city": "Rome"})
        got["began"] = str(began.meta[DECISION_ID_META])

    run_gateway(config, tracing, scenario)
    calls = {
        str(attributes(s)["maitred.decision.id"]): ids(s)[0]
        for s in named(exporter.get_finished_spans(), "maitred.call")
    }
    assert calls[got["continued"]] == TRACE_ID and calls[got["began"]] != TRACE_ID
    assert logged_traces(tmp_path) == {did: f"{calls[did]:032x}" for did in got.values()}
    for did in got.values():
        assert console_json(tmp_path, f"/decisions/{did}")["trace_id"] == f"{calls[did]:032x}"


# -- the config ---------------------------------------------------------------------------------


def _config(tracing: Any) -> dict[str, Any]:
    return {
        "account": "acc-1",
        "state": "accounts.json",
        "upstreams": [{"name": "traced", "command": "traced-server"}],
        "tracing": tracing,
    }


def test_fastmcp_makes_no_spans_of_its_own_only_where_they_could_not_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FASTMCP_TELEMETRY_MODE", raising=False)
    monkeypatch.setattr(fastmcp.settings, "telemetry_mode", "native")
    assert without_idle_library_spans()  # no global provider: FastMCP's spans are no-ops
    assert fastmcp.settings.telemetry_mode == "propagation_only"
    assert not without_idle_library_spans()  # once is enough

    monkeypatch.setattr(fastmcp.settings, "telemetry_mode", "native")
    monkeypatch.setenv("FASTMCP_TELEMETRY_MODE", "native")  # the operator's own choice
    assert not without_idle_library_spans()
    assert fastmcp.settings.telemetry_mode == "native"

    monkeypatch.delenv("FASTMCP_TELEMETRY_MODE")  # a global SDK installed before start
    monkeypatch.setattr(otel_trace, "get_tracer_provider", lambda: TracerProvider())
    assert not without_idle_library_spans()
    assert fastmcp.settings.telemetry_mode == "native"


def test_tracing_is_off_unless_enabled_and_named_after_the_gateway() -> None:
    assert parse_config(_config(None), "gw.yaml").tracing == TracingOptions(
        service_name="maitred-gateway"
    )
    on = parse_config(
        _config({"enabled": True, "exporter": "console", "sample_ratio": 0.25}), "gw.yaml"
    ).tracing
    assert (on.enabled, on.exporter, on.sample_ratio, on.service_name) == (
        True,
        "console",
        0.25,
        "maitred-gateway",
    )


@pytest.mark.parametrize(
    ("tracing", "message"),
    [
        ({"enabled": True, "exporters": "otlp"}, r"'tracing\.exporters' is not a known field"),
        ({"enabled": "yes"}, r"'tracing\.enabled' must be true or false"),
        ({"enabled": True, "exporter": "jaeger"}, r"'tracing\.exporter' must be one of \['otlp'"),
        ({"endpoint": "127.0.0.1:4318"}, r"'tracing\.endpoint' must be an http:// or https://"),
        ({"sample_ratio": 1.5}, r"'tracing\.sample_ratio' must be a number from 0 to 1"),
        ({"sample_ratio": True}, r"'tracing\.sample_ratio' must be a number"),
        ({"headers": {"api-key": 7}}, r"'tracing\.headers\.api-key' must be a string"),
        ({"service_name": ""}, r"'tracing\.service_name' must be a non-empty string"),
        ({"account": "no"}, r"'tracing\.account' must be true or false"),
        ("on", r"'tracing' must be a mapping"),
    ],
)
def test_a_bad_tracing_block_names_the_file_and_the_field(tracing: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=r"^gw\.yaml: field " + message):
        parse_config(_config(tracing), "gw.yaml")


def test_otlp_without_its_exporter_installed_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from maitred.tracing import OTLP_MODULE

    monkeypatch.setitem(sys.modules, OTLP_MODULE, None)  # as if the otlp extra were absent
    with pytest.raises(ConfigError, match=r"gw\.yaml: field 'tracing\.exporter'.*maitred\[otlp\]"):
        parse_config(_config({"enabled": True}), "gw.yaml")
    # off, or another exporter: nothing to install
    assert not parse_config(_config({"enabled": False}), "gw.yaml").tracing.enabled
    assert parse_config(_config({"enabled": True, "exporter": "none"}), "gw.yaml").tracing.enabled


@pytest.mark.slow
def test_maitred_mcp_over_stdio_exports_its_spans_to_the_collector_when_the_client_leaves(
    tmp_path: Path,
) -> None:
    with collecting() as collector:
        tracing = f"tracing: {{enabled: true, endpoint: '{collector.url}'}}\n"
        config = write_site(tmp_path, tracing)
        args = ["-m", "maitred.cli.main", "mcp", "--config", str(config)]
        launch = StdioTransport(sys.executable, args, env=child_env(), keep_alive=False)

        async def main() -> None:
            async with Client(launch) as client:  # its stdout must stay pure MCP: it works
                await client.list_tools()
                await client.call_tool(
                    "lookup", {"city": "Oslo"}, meta={"traceparent": TRACEPARENT}
                )

        anyio.run(main)
        for _ in range(100):  # the gateway exports as it exits, after the client has left
            if any(span.name == "maitred.call" for _, span in collector.spans()):
                break
            time.sleep(0.1)
    sent = {span.name: (resource, span) for resource, span in collector.spans()}
    assert {"maitred.list", "maitred.turn", "maitred.call", "maitred.upstream"} <= set(sent)
    resource, call = sent["maitred.call"]
    assert resource["service.name"] == "maitred-gateway"
    assert call.trace_id == TRACE_ID.to_bytes(16, "big")
    assert call.parent_span_id == CLIENT_SPAN.to_bytes(8, "big")
    _, upstream = sent["maitred.upstream"]
    [forwarded] = received(tmp_path)
    trace_id, parent = parse_traceparent(forwarded["traceparent"])
    assert (trace_id, parent) == (TRACE_ID, int.from_bytes(upstream.span_id, "big"))


@pytest.mark.slow
def test_maitred_mcp_over_http_stopped_by_sigterm_exports_the_spans_it_still_buffers(
    tmp_path: Path,
) -> None:
    """uvicorn re-raises the SIGTERM that stopped it once it has shut down, which ends the
    process before any ``finally``: the buffered spans must be exported before that."""
    with collecting() as collector:
        served = (
            "server: {host: 127.0.0.1, port: 0}\n"
            f"tokens:\n  - {{token_sha256: {sha256(TOKEN)}, tenant: acme, account: acc-1}}\n"
            f"tracing: {{enabled: true, endpoint: '{collector.url}'}}\n"
        )
        config = write_site(tmp_path, served)
        args = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
        # the batch exporter would otherwise wait this long before its first export
        env = {**child_env(), "OTEL_BSP_SCHEDULE_DELAY": "600000"}
        gateway = Process(args, env, r"serving (http://\S+)")
        try:

            async def main() -> None:
                async with Client(gateway.match.group(1), auth=TOKEN) as client:
                    await client.call_tool("lookup", {"city": "Oslo"})

            anyio.run(main)
            assert collector.spans() == []  # still buffered in the gateway
            gateway.popen.terminate()
            status = gateway.popen.wait(timeout=60)
        finally:
            gateway.stop()
    assert status == -signal.SIGTERM  # the signal's status, as uvicorn leaves it
    names = [span.name for _, span in collector.spans()]
    assert {"maitred.call", "maitred.upstream"} <= set(names)
    assert names.count("maitred.call") == 1
