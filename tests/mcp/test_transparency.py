"""What the gateway does not decide reaches the other side as a direct connection carries it.

``transparent_server.py`` (the MCP SDK's low-level server, so nothing of its own is added)
runs behind the real gateway, over streamable HTTP (``maitred mcp`` as a subprocess, reached
by the MCP SDK's own client with a bearer token) and over stdio (the gateway in memory,
reached by ``fastmcp.Client``). Each test compares with what the upstream itself says or
shows what reached it:

* listings (tools, resources, templates, prompts) equal the upstream's own, the tool the
  contracts hide left out: no title, no ``_meta``, no MIME type or ``arguments`` the upstream
  never sent, the 2020-12 schema with its ``$defs`` and ``$ref``;
* a call without ``arguments`` reaches the upstream without them;
* ``completion/complete`` is answered by the upstream;
* ``resources/subscribe`` reaches the upstream, and its ``notifications/resources/updated``
  reaches the subscribed client, and not another one; after ``resources/unsubscribe`` none;
* ``logging/setLevel`` reaches the upstream, and its log messages arrive as it sent them;
* the gate still holds: the hidden tool is absent and refused, results carry the decision id.

The HTTP edge's ``Host``/``Origin`` check is here too.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as mt
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from tests.mcp.conftest import Process, child_env, http_client, sha256

from maitred.gateway import load_config
from maitred.gateway.build import close_gateway, open_gateway
from maitred.gateway.surfaces import DECISION_ID_META
from maitred.log.base import open_log

pytestmark = pytest.mark.slow  # the upstream and the gateway run as subprocesses

UPSTREAM = Path(__file__).with_name("transparent_server.py")
ALICE, BOB = "tok-alice-31c7", "tok-bob-8e02"
SIDECAR = """\
tools:
  secret:
    exit_predicates:
      - name: free_plan
        expr: account.plan == "free"
        reads: [account.plan]
"""


def dump(items: Any) -> list[dict[str, Any]]:
    return [i.model_dump(by_alias=True, exclude_none=True, mode="json") for i in items]


@dataclass
class Stack:
    """The transparent upstream over HTTP and ``maitred mcp`` over HTTP in front of it."""

    root: Path
    upstream_url: str
    url: str
    processes: tuple[Process, ...]

    def calls(self) -> list[dict[str, Any]]:
        path = self.root / "calls.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        return [json.loads(line) for line in lines]


def _site(root: Path, sidecar: str = SIDECAR) -> None:
    (root / "accounts.json").write_text(
        json.dumps({"acc-1": {"account": {"plan": "free"}}}), encoding="utf-8"
    )
    (root / "t.maitred.yaml").write_text(sidecar, encoding="utf-8")


def start(
    root: Path,
    server: str = "{host: 127.0.0.1, port: 0}",
    *,
    sidecar: str = SIDECAR,
    alice_scopes: str = "[]",
) -> Stack:
    _site(root, sidecar)
    env = {**child_env(), "CALLS_FILE": str(root / "calls.jsonl")}
    upstream = Process([sys.executable, str(UPSTREAM), "--http"], env, r"serving (http://\S+)")
    config = root / "gateway.yaml"
    config.write_text(
        "state: accounts.json\n"
        "log: gateway.sqlite\n"
        f"server: {server}\n"
        "tokens:\n"
        f"  - {{token_sha256: {sha256(ALICE)}, tenant: alice, account: acc-1, "
        f"scopes: {alice_scopes}}}\n"
        f"  - {{token_sha256: {sha256(BOB)}, tenant: bob, account: acc-1}}\n"
        "upstreams:\n"
        f"  - {{name: t, url: {json.dumps(upstream.match.group(1))}, "
        "contracts: t.maitred.yaml}\n",
        encoding="utf-8",
    )
    try:
        gateway = Process(
            [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)],
            child_env(),
            r"serving (http://\S+)",
        )
    except BaseException:
        upstream.stop()
        raise
    return Stack(root, upstream.match.group(1), gateway.match.group(1), (gateway, upstream))


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    found = start(tmp_path)
    try:
        yield found
    finally:
        for process in found.processes:
            process.stop()


@asynccontextmanager
async def session(
    url: str, token: str | None = None, notes: list[Any] | None = None
) -> AsyncIterator[tuple[ClientSession, mt.InitializeResult]]:
    """A handshake-era MCP SDK session (with an MCP session id) to ``url``."""
    seen = notes if notes is not None else []

    async def on_message(message: Any) -> None:
        seen.append(message)

    async def on_log(params: mt.LoggingMessageNotificationParams) -> None:
        seen.append(params)

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        ClientSession(read, write, message_handler=on_message, logging_callback=on_log) as s,
    ):
        yield s, await s.initialize()


async def listings(s: ClientSession) -> dict[str, list[dict[str, Any]]]:
    return {
        "tools": dump((await s.list_tools()).tools),
        "resources": dump((await s.list_resources()).resources),
        "templates": dump((await s.list_resource_templates()).resource_templates),
        "prompts": dump((await s.list_prompts()).prompts),
    }


def test_listings_through_the_gateway_are_the_upstreams_own(stack: Stack) -> None:
    got: dict[str, Any] = {}

    async def main() -> None:
        async with session(stack.upstream_url) as (direct, _):
            got["direct"] = await listings(direct)
        async with session(stack.url, ALICE) as (gateway, _):
            got["gateway"] = await listings(gateway)

    anyio.run(main)
    direct, gateway = got["direct"], got["gateway"]
    assert gateway["tools"] == [t for t in direct["tools"] if t["name"] != "secret"]
    for kind in ("resources", "templates", "prompts"):
        assert gateway[kind] == direct[kind], kind
    profile = next(t for t in gateway["tools"] if t["name"] == "profile")
    assert profile["inputSchema"]["$defs"]["address"]["type"] == "object"
    assert profile["inputSchema"]["properties"]["address"] == {"$ref": "#/$defs/address"}
    assert not any("title" in t or "_meta" in t for t in gateway["tools"])
    assert gateway["prompts"][0] == {"name": "greet"}  # no arguments member, no _meta
    assert "mimeType" not in gateway["resources"][0]


def test_arguments_reach_the_upstream_as_the_client_sent_them(stack: Stack) -> None:
    got: list[Any] = []

    async def main() -> None:
        async with session(stack.url, ALICE) as (s, _):
            for arguments in (None, {}, {"note": "x"}):
                result = await s.call_tool("echo", arguments)
                got.append((json.loads(result.content[0].text), result.meta))

    anyio.run(main)
    assert [answer for answer, _ in got] == [
        {"arguments": None},
        {"arguments": {}},
        {"arguments": {"note": "x"}},
    ]
    assert [c["arguments"] for c in stack.calls()] == [None, {}, {"note": "x"}]
    # the gateway adds its decision id to the result's _meta, and nothing else
    assert all(set(meta or {}) == {DECISION_ID_META} for _, meta in got)


def test_completions_are_answered_by_the_upstream(stack: Stack) -> None:
    got: dict[str, Any] = {}

    async def main() -> None:
        async with session(stack.url, ALICE) as (s, init):
            got["declared"] = init.capabilities.completions is not None
            prompt = mt.PromptReference(type="ref/prompt", name="greet_named")
            got["prompt"] = (await s.complete(prompt, {"name": "name", "value": "al"})).completion
            template = mt.ResourceTemplateReference(type="ref/resource", uri="note://pads/{name}")
            got["template"] = (
                await s.complete(template, {"name": "name", "value": "b"})
            ).completion

    anyio.run(main)
    assert got["declared"]
    assert got["prompt"].values == ["alice", "albert"] and got["prompt"].total == 2
    assert got["template"].values == ["bob"]


def updates(notes: list[Any]) -> list[str]:
    return [str(n.params.uri) for n in notes if isinstance(n, mt.ResourceUpdatedNotification)]


async def settle(notes: list[Any], count: int) -> None:
    """Wait (at most 10 s) until ``notes`` holds ``count`` resource updates."""
    with anyio.move_on_after(10):
        while len(updates(notes)) < count:
            await anyio.sleep(0.05)


def test_a_subscription_reaches_the_upstream_and_its_updates_only_the_subscriber(
    stack: Stack,
) -> None:
    alice: list[Any] = []
    bob: list[Any] = []
    got: dict[str, Any] = {}

    async def main() -> None:
        async with (
            session(stack.url, ALICE, alice) as (a, init),
            session(stack.url, BOB, bob) as (b, _),
        ):
            assert init.capabilities.resources is not None
            got["declared"] = init.capabilities.resources.subscribe
            await a.subscribe_resource("note://pad")
            await a.call_tool("touch", {})
            await settle(alice, 1)
            await b.call_tool("touch", {})  # a change made by another client is announced too
            await settle(alice, 2)
            got["subscribed"] = updates(alice)
            await a.unsubscribe_resource("note://pad")
            await a.call_tool("touch", {})
            await anyio.sleep(1.0)  # time for an update that must not come
            got["after"] = updates(alice)

    anyio.run(main)
    assert got["declared"] is True
    assert got["subscribed"] == ["note://pad", "note://pad"]
    assert got["after"] == got["subscribed"]  # nothing after unsubscribing
    assert updates(bob) == []  # never subscribed: never told


def test_a_resource_the_session_may_not_read_cannot_be_subscribed_to(tmp_path: Path) -> None:
    """Passed through, but not ungated: ``resources/subscribe`` is decided like the read it
    leads to. Bob's token lacks the pad's scope: his subscription is refused and logged, and
    never reaches the upstream; Alice's is forwarded and her updates arrive."""
    sidecar = SIDECAR + "resources:\n  note://pad:\n    scopes: [pad:read]\n"
    stack = start(tmp_path, sidecar=sidecar, alice_scopes="[pad:read]")
    alice: list[Any] = []
    got: dict[str, Any] = {}

    async def main() -> None:
        async with (
            session(stack.url, ALICE, alice) as (a, _),
            session(stack.url, BOB) as (b, _),
        ):
            with pytest.raises(MCPError) as refused:
                await b.subscribe_resource("note://pad")
            got["bob"] = refused.value.error
            await a.subscribe_resource("note://pad")
            await a.call_tool("touch", {})
            await settle(alice, 1)

    try:
        anyio.run(main)
    finally:
        for process in stack.processes:
            process.stop()
    assert got["bob"].code == mt.INVALID_PARAMS
    assert got["bob"].data["code"] == "RESOURCE_NOT_AVAILABLE"
    assert updates(alice) == ["note://pad"]
    with open_log(str(tmp_path / "gateway.sqlite")) as log:
        rows = [json.loads(r["decision_json"]) for r in log.iter_action_decisions()]
    subscribed = [
        (r["tenant"], r["verdict"]) for r in rows if r["call"]["name"] == "resources/subscribe"
    ]
    assert sorted(subscribed) == [("alice", "allow"), ("bob", "reject")]
    assert got["bob"].data["decision_id"] in {r["decision_id"] for r in rows}


def logs(notes: list[Any]) -> list[tuple[str, str | None, Any]]:
    return [
        (n.level, n.logger, n.data)
        for n in notes
        if isinstance(n, mt.LoggingMessageNotificationParams)
    ]


def test_set_level_reaches_the_upstream_and_log_messages_arrive_as_sent(stack: Stack) -> None:
    notes: list[Any] = []
    got: dict[str, Any] = {}

    async def main() -> None:
        async with session(stack.url, ALICE, notes) as (s, _):
            await s.set_logging_level("warning")
            got["warning"] = (await s.call_tool("chatty", {})).content[0].text
            got["warning_logs"] = logs(notes)
            notes.clear()
            await s.set_logging_level("debug")
            got["debug"] = (await s.call_tool("chatty", {})).content[0].text
            got["debug_logs"] = logs(notes)

    anyio.run(main)
    assert got["warning"] == "level warning"  # the upstream was told the client's level
    assert got["warning_logs"] == [
        ("warning", "chatty", {"step": 3, "level": "warning", "items": [1, 2, 3]})
    ]
    assert got["debug"] == "level debug"
    assert got["debug_logs"] == [
        (level, "chatty", {"step": step, "level": level, "items": [1, 2, step]})
        for step, level in ((1, "debug"), (2, "info"), (3, "warning"))
    ]


def test_the_gate_still_holds_and_results_carry_the_decision_id(stack: Stack) -> None:
    got: dict[str, Any] = {}

    async def main() -> None:
        async with session(stack.url, ALICE) as (s, _):
            got["listed"] = [t.name for t in (await s.list_tools()).tools]
            got["secret"] = await s.call_tool("secret", {})
            got["echo"] = await s.call_tool("echo", {"note": "hi"})

    anyio.run(main)
    assert "secret" not in got["listed"]
    refused = got["secret"]
    assert refused.is_error
    assert json.loads(refused.content[0].text)["code"] == "TOOL_NOT_OFFERED"
    assert refused.meta[DECISION_ID_META] == json.loads(refused.content[0].text)["decision_id"]
    assert got["echo"].meta[DECISION_ID_META]
    assert "secret" not in [c["name"] for c in stack.calls()]


def _initialize(url: str, token: str, **headers: str) -> httpx2.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    return httpx2.post(
        url,
        json=body,
        headers={
            **({"Authorization": f"Bearer {token}"} if token else {}),
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )


def test_a_request_for_another_host_or_from_another_origin_is_refused(stack: Stack) -> None:
    port = stack.url.split(":")[2].split("/")[0]
    rebound = _initialize(stack.url, ALICE, Host=f"evil.example:{port}")
    assert rebound.status_code == 421
    assert "server.allowed_hosts" in rebound.json()["error"]["message"]
    foreign = _initialize(stack.url, ALICE, Origin="http://evil.example")
    assert foreign.status_code == 403
    assert "server.allowed_origins" in foreign.json()["error"]["message"]
    # without a token: refused all the same, before authentication
    assert _initialize(stack.url, "", Host="evil.example").status_code == 421
    local = _initialize(stack.url, ALICE, Host=f"localhost:{port}", Origin="http://localhost:3000")
    assert local.status_code == 200


def test_allowed_hosts_and_origins_replace_the_loopback_defaults(tmp_path: Path) -> None:
    found = start(
        tmp_path,
        "{host: 127.0.0.1, port: 0, allowed_hosts: [mcp.example.com], "
        "allowed_origins: ['https://app.example.com']}",
    )
    try:
        url = found.url
        named = _initialize(url, ALICE, Host="mcp.example.com")
        assert named.status_code == 200
        assert _initialize(url, ALICE).status_code == 421  # 127.0.0.1 is no longer listed
        app = _initialize(url, ALICE, Host="mcp.example.com", Origin="https://app.example.com")
        assert app.status_code == 200
        other = _initialize(url, ALICE, Host="mcp.example.com", Origin="http://localhost:3000")
        assert other.status_code == 403
    finally:
        for process in found.processes:
            process.stop()


# --- over stdio: the one upstream session every client shares ---------------------------


def stdio_config(root: Path, *args: str) -> Path:
    _site(root)
    config = root / "gateway.yaml"
    launch = json.dumps([str(UPSTREAM), *args])
    config.write_text(
        "account: acc-1\n"
        "state: accounts.json\n"
        "log: gateway.sqlite\n"
        "upstreams:\n"
        f"  - name: t\n    command: {json.dumps(sys.executable)}\n    args: {launch}\n"
        f"    env: {{CALLS_FILE: {json.dumps(str(root / 'calls.jsonl'))}}}\n"
        "    contracts: t.maitred.yaml\n",
        encoding="utf-8",
    )
    return config


@pytest.mark.parametrize("era", ["handshake", "2026-07-28"])
def test_over_stdio_listings_and_arguments_are_the_upstreams(tmp_path: Path, era: str) -> None:
    handshake = era == "handshake"
    args = ["--handshake-only"] if handshake else []
    mode = "legacy" if handshake else "auto"
    got: dict[str, Any] = {}

    async def main() -> None:
        direct = StdioTransport(sys.executable, [str(UPSTREAM), *args])
        async with Client(direct, mode=mode) as upstream:
            got["direct"] = dump(await upstream.list_tools())
            got["direct_prompts"] = dump(await upstream.list_prompts())
        server, engines = await open_gateway(load_config(stdio_config(tmp_path, *args)))
        try:
            async with Client(server, mode=mode) as client:
                got["tools"] = dump(await client.list_tools())
                got["prompts"] = dump(await client.list_prompts())
                empty = await client.call_tool_mcp("echo", None)  # type: ignore[arg-type]
                got["echo"] = json.loads(empty.content[0].text)
        finally:
            await close_gateway(server, engines)

    anyio.run(main)
    assert got["tools"] == [t for t in got["direct"] if t["name"] != "secret"]
    assert got["prompts"] == got["direct_prompts"]
    assert got["echo"] == {"arguments": None}


def test_over_a_handshake_era_stdio_session_level_logs_and_subscriptions_pass(
    tmp_path: Path,
) -> None:
    notes: list[Any] = []
    got: dict[str, Any] = {}

    async def on_message(message: Any) -> None:
        notes.append(message)

    async def on_log(message: mt.LoggingMessageNotificationParams) -> None:
        notes.append(message)

    async def main() -> None:
        config = stdio_config(tmp_path, "--handshake-only")
        server, engines = await open_gateway(load_config(config))
        try:
            async with Client(
                server, mode="legacy", message_handler=on_message, log_handler=on_log
            ) as client:
                init = client.initialize_result
                assert init is not None and init.capabilities.resources is not None
                got["subscribe"] = init.capabilities.resources.subscribe
                await client.set_logging_level("info")
                got["level"] = (await client.call_tool("chatty", {})).content[0].text
                got["logs"] = logs(notes)
                await client.session.subscribe_resource("note://pad")
                await client.call_tool("touch", {})
                await settle(notes, 1)
                await client.session.unsubscribe_resource("note://pad")
                await client.call_tool("touch", {})
                await anyio.sleep(0.5)
                got["updates"] = updates(notes)
                prompt = mt.PromptReference(type="ref/prompt", name="greet_named")
                got["complete"] = (
                    await client.complete(prompt, {"name": "name", "value": "b"})
                ).values
        finally:
            await close_gateway(server, engines)

    anyio.run(main)
    assert got["subscribe"] is True
    assert got["level"] == "level info"
    assert got["logs"] == [
        ("info", "chatty", {"step": 2, "level": "info", "items": [1, 2, 2]}),
        ("warning", "chatty", {"step": 3, "level": "warning", "items": [1, 2, 3]}),
    ]
    assert got["updates"] == ["note://pad"]
    assert got["complete"] == ["bob"]
