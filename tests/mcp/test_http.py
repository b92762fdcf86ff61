"""The gateway over streamable HTTP, as a deployment runs it: `maitred mcp --http` in a
subprocess on loopback, in front of `mcp-server-time` (PyPI, over stdio) and a notes server
reached over streamable HTTP, with two tenants' bearer tokens.

Clients: ``fastmcp.Client`` (which speaks the sessionless 2026-07-28 protocol) and the official
``mcp`` SDK's ``ClientSession`` (which negotiates a handshake-era session).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as mt
import pytest
from fastmcp import Client
from tests.mcp.conftest import NOTES, Process, child_env, http_client, sha256

from maitred.log.base import open_log
from maitred.log.verify import verify

pytestmark = pytest.mark.slow  # each test starts two or three servers as subprocesses

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp-time"
ACME, GLOBEX = "tok-acme-7f3a9c", "tok-globex-51d0e2"  # acc-pro and acc-free
NOTES_SIDECAR = """\
tools:
  export_notes:
    exit_predicates:
      - name: free_plan
        expr: account.plan == "free"
        reads: [account.plan]
        message: Exporting notes is part of the paid plan.
  add_note:
    mutates: true
"""


@dataclass
class Deployment:
    url: str
    root: Path
    notes: Process
    notes_port: int
    gateway: Process

    @property
    def calls(self) -> list[str]:
        path = self.root / "calls.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        return [json.loads(line)["name"] for line in lines]

    def start_notes(self, port: int = 0) -> None:
        env = {**child_env(), "CALLS_FILE": str(self.root / "calls.jsonl")}
        self.notes = Process([sys.executable, str(NOTES), str(port)], env, r"PORT=(\d+)")
        self.notes_port = int(self.notes.match.group(1))


def deploy(
    root: Path, *, time: bool = True, extra: str = "", server: str = "{host: 127.0.0.1, port: 0}"
) -> Deployment:
    """Start the notes server and `maitred mcp` over HTTP in front of it (and of
    mcp-server-time when ``time``), with ``extra`` added to the gateway's config and
    ``server`` as its server block."""
    shutil.copy(EXAMPLE / "time.maitred.yaml", root / "time.maitred.yaml")
    shutil.copy(EXAMPLE / "accounts.json", root / "accounts.json")
    (root / "notes.maitred.yaml").write_text(NOTES_SIDECAR, encoding="utf-8")
    site = Deployment("", root, None, 0, None)  # type: ignore[arg-type]
    site.start_notes()
    config = root / "gateway.yaml"
    stdio = "  - {name: time, command: mcp-server-time, contracts: time.maitred.yaml}\n"
    config.write_text(
        extra + "state: accounts.json\n"
        "log: gateway.sqlite\n"
        f"server: {server}\n"
        "tokens:\n"
        f"  - {{token_sha256: {sha256(ACME)}, tenant: acme, account: acc-pro}}\n"
        f"  - {{token_sha256: {sha256(GLOBEX)}, tenant: globex, account: acc-free}}\n"
        "upstreams:\n" + (stdio if time else "") + ""
        f"  - {{name: notes, url: 'http://127.0.0.1:{site.notes_port}/mcp', "
        "contracts: notes.maitred.yaml}\n",
        encoding="utf-8",
    )
    try:
        site.gateway = Process(
            [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)],
            child_env(),
            r"serving (http://\S+)",
        )
    except BaseException:
        site.notes.stop()
        raise
    site.url = site.gateway.match.group(1)
    return site


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    if shutil.which("mcp-server-time", path=child_env()["PATH"]) is None:
        pytest.skip("mcp-server-time is not installed (pip install mcp-server-time)")
    site = deploy(tmp_path)
    try:
        yield site
    finally:
        site.gateway.stop()
        site.notes.stop()


def payload(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    found: dict[str, Any] = json.loads(result.content[0].text)
    return found


def _unauthenticated(url: str) -> list[int]:
    """Statuses of a tools/call sent with no token, an unknown one and one without "Bearer"."""
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "export_notes", "arguments": {"fmt": "pdf"}},
    }
    accept = {"Accept": "application/json, text/event-stream"}
    statuses = []
    for headers in ({}, {"Authorization": "Bearer tok-nobody"}, {"Authorization": ACME}):
        response = httpx2.post(url, json=call, headers={**accept, **headers})
        statuses.append(response.status_code)

    async def main() -> None:
        async with Client(url, auth="tok-nobody") as client:
            await client.list_tools()

    with pytest.raises(Exception):  # noqa: B017 - the client's own error type for a 401
        anyio.run(main)
    return statuses


def test_each_token_sees_its_own_account_across_a_stdio_and_an_http_upstream(
    deployment: Deployment,
) -> None:
    assert _unauthenticated(deployment.url) == [401, 401, 401]
    with open_log(str(deployment.root / "gateway.sqlite")) as log:
        assert list(log.iter_action_decisions()) == [] and list(log.iter_turns()) == []
    assert deployment.calls == []  # nothing was decided, nothing reached an upstream
    got: dict[str, Any] = {}

    async def main() -> None:
        async with (
            Client(deployment.url, auth=ACME) as pro,
            Client(deployment.url, auth=GLOBEX) as free,
        ):
            got["pro"] = sorted(t.name for t in await pro.list_tools())
            got["free"] = sorted(t.name for t in await free.list_tools())
            blocked = await free.call_tool("export_notes", {"fmt": "pdf"}, raise_on_error=False)
            got["blocked"] = payload(blocked)
            hidden = await free.call_tool(
                "convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
                raise_on_error=False,
            )
            got["hidden"] = payload(hidden)["code"]
            now = await free.call_tool("get_current_time", {"timezone": "Europe/London"})
            got["now"] = json.loads(now.content[0].text)["timezone"]
            await pro.call_tool("add_note", {"text": "renew the domain"})
            exported = await pro.call_tool("export_notes", {"fmt": "pdf"})
            got["exported"] = exported.content[0].text

    anyio.run(main)
    assert got["pro"] == [
        "add_note", "convert_time", "export_notes", "get_current_time", "list_notes"
    ]  # fmt: skip
    assert got["free"] == ["add_note", "get_current_time", "list_notes"]
    assert got["blocked"]["code"] == "TOOL_NOT_OFFERED"  # never listed for this account
    assert "paid plan" not in got["blocked"]["message"]  # a hidden tool's predicate unsaid
    assert got["hidden"] == "TOOL_NOT_OFFERED"
    assert got["now"] == "Europe/London"  # through the stdio upstream
    assert got["exported"] == "1 notes as pdf"  # through the HTTP upstream, acme's own call
    assert deployment.calls == ["add_note", "export_notes"]  # globex's never reached it
    with open_log(str(deployment.root / "gateway.sqlite")) as log:
        decisions = list(log.iter_action_decisions())
        turns = list(log.iter_turns())
        accounts = {t["account_id"] for t in turns}
        assert verify(log).ok  # every decision's turn is of its session and tenant
    assert accounts == {"acc-pro", "acc-free"}
    # the tenant is stored with every turn and decision, not only in the session id's prefix
    assert {(t["account_id"], t["tenant"]) for t in turns} == {
        ("acc-pro", "acme"),
        ("acc-free", "globex"),
    }
    assert all(r["tenant"] == r["session_id"].split("-")[0] for r in decisions)
    assert len({r["session_id"] for r in decisions}) == 2  # one session per sessionless token
    by_tenant = {(r["session_id"].split("-")[0], r["tool"], r["code"]) for r in decisions}
    assert by_tenant == {
        ("globex", "export_notes", "TOOL_NOT_OFFERED"),
        ("globex", "convert_time", "TOOL_NOT_OFFERED"),
        ("globex", "get_current_time", "OK"),
        ("acme", "add_note", "OK"),
        ("acme", "export_notes", "OK"),
    }
    # the operator's routes need no token; /metrics counts each call under its outcome
    base = deployment.url.rsplit("/", 1)[0]
    assert httpx2.get(f"{base}/healthz").json() == {"status": "ok"}
    metrics = httpx2.get(f"{base}/metrics").text
    assert 'maitred_gateway_calls_total{code="TOOL_NOT_OFFERED"} 2.0' in metrics
    assert 'maitred_gateway_calls_total{code="OK"} 3.0' in metrics
    assert "maitred_gateway_listings_total 2.0" in metrics


def test_the_official_mcp_sdk_client_gets_a_session_of_its_own_per_mcp_session(
    deployment: Deployment,
) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    got: dict[str, Any] = {}

    async def conversation(text: str) -> None:
        headers = {"Authorization": f"Bearer {GLOBEX}"}
        async with (
            http_client(headers=headers) as http,
            streamable_http_client(deployment.url, http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()  # a handshake-era session, with an MCP session id
            got["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            bad = await session.call_tool("get_current_time", {"timezone": "somewhere warm"})
            got["bad"] = (bad.is_error, json.loads(bad.content[0].text)["code"])
            note = await session.call_tool("add_note", {"text": text})
            got.setdefault("notes", []).append((note.is_error, note.structured_content))

    anyio.run(conversation, "call the registrar")
    anyio.run(conversation, "pay the invoice")
    assert got["tools"] == ["add_note", "get_current_time", "list_notes"]  # acc-free's
    assert got["bad"] == (True, "TIME_UNKNOWN_TIMEZONE")
    assert got["notes"] == [
        (False, {"id": 1, "text": "call the registrar"}),
        (False, {"id": 2, "text": "pay the invoice"}),
    ]
    with open_log(str(deployment.root / "gateway.sqlite")) as log:
        rows = sorted(log.iter_action_decisions(), key=lambda r: r["decided_at"])
    sessions = [r["session_id"] for r in rows]
    assert len(sessions) == 4 and all(s.startswith("globex-") for s in sessions)
    assert sessions[0] == sessions[1] != sessions[2] == sessions[3]  # one per MCP session


def test_a_dead_http_upstream_is_named_the_others_keep_working_and_it_comes_back(
    deployment: Deployment,
) -> None:
    got: dict[str, Any] = {}

    async def main() -> None:
        async with Client(deployment.url, auth=ACME) as client:
            await client.call_tool("list_notes", {})
            deployment.notes.stop()
            dead = await client.call_tool("list_notes", {}, raise_on_error=False)
            got["dead"] = payload(dead)
            now = await client.call_tool("get_current_time", {"timezone": "UTC"})
            got["time"] = now.is_error
            got["listed"] = sorted(t.name for t in await client.list_tools())
            deployment.start_notes(deployment.notes_port)  # the same address, a fresh server
            back = await client.call_tool("add_note", {"text": "back"})
            got["back"] = back.structured_content

    anyio.run(main)
    assert got["dead"]["code"] == "UPSTREAM_FAILED" and got["dead"]["upstream"] == "notes"
    assert got["time"] is False
    assert {"get_current_time", "convert_time"} <= set(got["listed"])  # the gateway answers
    assert got["back"] == {"id": 1, "text": "back"}


def test_find_tools_over_http_discloses_per_token_in_its_answers(tmp_path: Path) -> None:
    site = deploy(tmp_path, time=False, extra="disclosure: find_tools\n")
    got: dict[str, Any] = {}
    seen: list[Any] = []

    async def on_message(message: Any) -> None:
        seen.append(message)

    async def main() -> None:
        async with (
            Client(site.url, auth=ACME, message_handler=on_message) as pro,
            Client(site.url, auth=GLOBEX) as free,
        ):
            got["before"] = [t.name for t in await pro.list_tools()]
            need = {"need": "export my notes as a pdf archive"}
            got["pro"] = (await pro.call_tool("find_tools", need)).structured_content
            got["pro_list"] = sorted(t.name for t in await pro.list_tools())
            got["free"] = (await free.call_tool("find_tools", need)).structured_content
            got["free_list"] = sorted(t.name for t in await free.list_tools())
            call = {"fmt": "pdf"}
            got["free_call"] = payload(
                await free.call_tool("export_notes", call, raise_on_error=False)
            )
            got["pro_call"] = await pro.call_tool("export_notes", call, raise_on_error=False)

    try:
        anyio.run(main)
    finally:
        site.gateway.stop()
        site.notes.stop()
    assert got["before"] == ["find_tools", "call_tool"]  # as listed; the others sorted
    assert got["pro_list"] == got["free_list"] == ["call_tool", "find_tools"]
    assert "export_notes" in [t["name"] for t in got["pro"]["tools"]]
    assert not any(isinstance(m, mt.ToolListChangedNotification) for m in seen)
    assert "export_notes" in [b["name"] for b in got["free"]["blocked"]]
    assert got["free_call"]["code"] == "TOOL_NOT_OFFERED"  # acme's disclosure is not globex's
    assert not got["pro_call"].is_error and site.calls.count("export_notes") == 1


def test_the_state_watch_tells_an_mcp_sdk_session_on_its_standing_stream(
    tmp_path: Path,
) -> None:
    """A handshake-era MCP session over HTTP is told of a state change made outside the
    gateway, on its GET stream, with no request of its own in flight."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    if shutil.which("mcp-server-time", path=child_env()["PATH"]) is None:
        pytest.skip("mcp-server-time is not installed (pip install mcp-server-time)")
    site = deploy(tmp_path, extra="watch: {interval_s: 0.2}\n")
    accounts = tmp_path / "accounts.json"
    got: dict[str, Any] = {}
    seen: list[Any] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            seen.append(message)

    async def main() -> None:
        headers = {"Authorization": f"Bearer {GLOBEX}"}  # acc-free
        async with (
            http_client(headers=headers) as http,
            streamable_http_client(site.url, http_client=http) as streams,
            ClientSession(streams[0], streams[1], message_handler=on_message) as session,
        ):
            await session.initialize()
            got["before"] = sorted(t.name for t in (await session.list_tools()).tools)
            data = json.loads(accounts.read_text(encoding="utf-8"))
            data["acc-free"]["account"]["plan"] = "pro"  # the billing system upgrades it
            fresh = accounts.with_suffix(".new")
            fresh.write_text(json.dumps(data), encoding="utf-8")
            fresh.replace(accounts)
            with anyio.fail_after(60):
                while not seen:
                    await anyio.sleep(0.05)
            got["after"] = sorted(t.name for t in (await session.list_tools()).tools)

    try:
        anyio.run(main)
    finally:
        site.gateway.stop()
        site.notes.stop()
    assert "export_notes" not in got["before"] and "convert_time" not in got["before"]
    assert {"export_notes", "convert_time"} <= set(got["after"])


def test_past_max_sessions_a_dropped_principal_keeps_what_was_disclosed_to_it(
    tmp_path: Path,
) -> None:
    """With room for one gatekeeper, a second token's session evicts the first one's; what
    `find_tools` had disclosed to the first principal is in the log, not in the dropped
    gatekeeper, so its next call is admitted -- as its own, never as another tenant's."""
    site = deploy(
        tmp_path,
        time=False,
        extra="disclosure: find_tools\n",
        server="{host: 127.0.0.1, port: 0, max_sessions: 1}",
    )
    got: dict[str, Any] = {}

    async def main() -> None:
        async with (
            Client(site.url, auth=ACME) as pro,
            Client(site.url, auth=GLOBEX) as free,
        ):
            need = {"need": "export my notes as a pdf archive"}
            await pro.call_tool("find_tools", need)
            got["free"] = [t.name for t in await free.list_tools()]  # evicts acme's session
            got["late"] = await pro.call_tool("export_notes", {"fmt": "pdf"}, raise_on_error=False)
            got["other"] = payload(
                await free.call_tool("export_notes", {"fmt": "pdf"}, raise_on_error=False)
            )

    try:
        anyio.run(main)
    finally:
        site.gateway.stop()
        site.notes.stop()
    assert got["free"] == ["find_tools", "call_tool"]
    assert not got["late"].is_error and site.calls.count("export_notes") == 1
    assert got["other"]["code"] == "TOOL_NOT_OFFERED"
    with open_log(str(tmp_path / "gateway.sqlite")) as log:
        rows = [(r["session_id"].split("-")[0], r["code"]) for r in log.iter_action_decisions()]
    assert sorted(rows) == [("acme", "OK"), ("globex", "TOOL_NOT_OFFERED")]


def test_two_mcp_sessions_of_one_token_disclose_apart_and_sessionless_clients_share_one(
    tmp_path: Path,
) -> None:
    """One maitred session per MCP session, even when clients share a token: what
    `find_tools` disclosed in one handshake-era session is not offered to another; clients
    without a session id (2026-07-28, `fastmcp.Client`) are one principal per token, and what
    was disclosed to it is offered to all of them."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    site = deploy(tmp_path, time=False, extra="disclosure: find_tools\n")
    need = {"need": "export my notes as a pdf archive"}
    got: dict[str, Any] = {}

    async def names(session: ClientSession) -> list[str]:
        return sorted(t.name for t in (await session.list_tools()).tools)

    async def main() -> None:
        headers = {"Authorization": f"Bearer {ACME}"}  # both sessions: acme's one token
        async with (
            http_client(headers=headers) as first_http,
            http_client(headers=headers) as second_http,
            streamable_http_client(site.url, http_client=first_http) as first_streams,
            streamable_http_client(site.url, http_client=second_http) as second_streams,
            ClientSession(first_streams[0], first_streams[1]) as first,
            ClientSession(second_streams[0], second_streams[1]) as second,
        ):
            await first.initialize()
            await second.initialize()
            found = await first.call_tool("find_tools", need)
            got["found"] = [t["name"] for t in found.structured_content["tools"]]
            got["first"], got["second"] = await names(first), await names(second)
            refused = await second.call_tool("export_notes", {"fmt": "pdf"})
            got["second_call"] = json.loads(refused.content[0].text)
            got["first_call"] = (await first.call_tool("export_notes", {"fmt": "pdf"})).is_error
        async with Client(site.url, auth=ACME) as one, Client(site.url, auth=ACME) as other:
            await one.call_tool("find_tools", need)
            got["sessionless"] = await other.call_tool("export_notes", {"fmt": "pdf"})

    try:
        anyio.run(main)
    finally:
        site.gateway.stop()
        site.notes.stop()
    assert "export_notes" in got["found"] and got["first"] == got["second"] == [
        "call_tool",  # sorted
        "find_tools",
    ]
    assert got["first_call"] is False  # disclosed to the first session
    assert (
        got["second_call"]["code"] == "TOOL_NOT_OFFERED"
        and "find_tools" in got["second_call"]["hint"]
    )
    assert not got["sessionless"].is_error  # one principal for the token's sessionless clients
    with open_log(str(tmp_path / "gateway.sqlite")) as log:
        finds = [t for t in log.iter_turns() if t["message_text"] == need["need"]]
    # the first session's, and the sessionless clients' (one session of the token, not the first)
    assert len(finds) == 2 and len({t["conversation_id"] for t in finds}) == 2


def test_the_gateways_socket_gives_every_connection_it_accepts_tcp_nodelay() -> None:
    """asyncio turns TCP_NODELAY on for accepted connections only when the listening socket
    says it is TCP (as uvicorn serves the sockets it is handed); without it each response
    whose headers and body are written apart waits for the client's delayed ACK."""
    import asyncio
    import socket

    from maitred.gateway.serve import listening_socket

    async def main() -> int:
        sock = listening_socket("127.0.0.1", 0)
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Accepting(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                conn = transport.get_extra_info("socket")
                accepted.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

        server = await asyncio.get_running_loop().create_server(Accepting, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            try:
                return await asyncio.wait_for(accepted, 30)
            finally:
                writer.close()

    assert asyncio.run(main()) != 0
