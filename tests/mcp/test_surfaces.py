"""Resources, resource templates and prompts gated by the same contracts as tools.

The upstream is a real MCP server process (``library_server.py``, over stdio) with three
resources, a resource template and three prompts; its sidecar gates some of them on the
account's plan. The client is a real ``fastmcp.Client``: in memory against the gateway object
(so a test can drive the state watch one pass at a time), over stdio against ``maitred mcp``
as a desktop client launches it, and over streamable HTTP with a bearer token (with the ``mcp``
SDK's ``ClientSession`` too). The upstream writes a line per read and get it serves, which is
how these tests show that a refused one never reached it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp.shared.exceptions import MCPError
from tests.mcp.conftest import SRC, Process, child_env, http_client, sha256

from maitred.errors import ConfigError, SidecarError
from maitred.gateway import load_config
from maitred.gateway.build import gate_of, open_gateway
from maitred.gateway.server import GateMiddleware
from maitred.log.base import open_log
from maitred.log.verify import verify

LIBRARY = Path(__file__).with_name("library_server.py")
SIDECAR = """\
tools:
  upgrade:
    mutates: true
resources:
  docs://handbook: {}
  docs://pricing:
    exit_predicates:
      - name: free_plan
        expr: account.plan == "free"
        reads: [account.plan]
        message: Price lists are for paid plans.
  reports://{year}:
    exit_predicates:
      - name: reports_free_plan
        expr: account.plan == "free"
        reads: [account.plan]
prompts:
  summarize: {}
  negotiate:
    exit_predicates:
      - name: sales_plan
        expr: account.plan != "sales"
        reads: [account.plan]
        message: Negotiating is for the sales plan.
"""
TOKEN = "tok-library-acc1-92c1"
WAIT_S = 60.0  # the most a test waits for a notification (a bound, never an assertion)


@dataclass(frozen=True)
class Library:
    """The files of one gateway in front of the library server."""

    root: Path
    config: Path

    def set_plan(self, plan: str) -> None:
        accounts = self.root / "accounts.json"
        fresh = accounts.with_suffix(".new")
        fresh.write_text(json.dumps({"acc-1": {"account": {"plan": plan}}}), encoding="utf-8")
        fresh.replace(accounts)

    def served(self) -> list[str]:
        """What reached the upstream: tool names, ``read <uri>``, ``prompt <name>``."""
        path = self.root / "calls.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        return [json.loads(line)["name"] for line in lines]

    def decisions(self) -> dict[str, dict[str, Any]]:
        """The logged decisions by id, as their JSON."""
        with open_log(str(self.root / "gateway.sqlite")) as log:
            rows = list(log.iter_action_decisions())
        return {str(r["decision_id"]): json.loads(r["decision_json"]) for r in rows}


def library_at(root: Path, *, extra: str = "", sidecar: str = SIDECAR) -> Library:
    env = {"CALLS_FILE": str(root / "calls.jsonl"), "ACCOUNTS": str(root / "accounts.json")}
    (root / "library.maitred.yaml").write_text(sidecar, encoding="utf-8")
    config = root / "gateway.yaml"
    config.write_text(
        extra + "account: acc-1\n"
        "state: accounts.json\n"
        "log: gateway.sqlite\n"
        "upstreams:\n"
        "  - name: library\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(LIBRARY))}]\n"
        f"    env: {json.dumps(env)}\n"
        "    contracts: library.maitred.yaml\n",
        encoding="utf-8",
    )
    site = Library(root, config)
    site.set_plan("free")
    return site


@pytest.fixture
def library(tmp_path: Path) -> Library:
    return library_at(tmp_path)


Scenario = Callable[[Client[Any], GateMiddleware, list[str]], Awaitable[None]]


def run(site: Library, scenario: Scenario, *, mode: str = "auto") -> None:
    """Serve ``site``'s gateway in memory and run ``scenario`` with a client, the gateway's
    middleware and the list_changed notifications received so far."""

    async def main() -> None:
        server, engines = await open_gateway(load_config(site.config))
        seen: list[str] = []

        async def on_message(message: Any) -> None:
            for kind, name in (
                (mt.ResourceListChangedNotification, "resources"),
                (mt.PromptListChangedNotification, "prompts"),
                (mt.ToolListChangedNotification, "tools"),
            ):
                if isinstance(message, kind):
                    seen.append(name)

        try:
            async with Client(server, message_handler=on_message, mode=mode) as client:  # type: ignore[arg-type]
                await scenario(client, gate_of(server), seen)
        finally:
            engines.close()

    anyio.run(main)


async def uris(client: Client[Any]) -> list[str]:
    return [str(r.uri) for r in await client.list_resources()]


async def templates(client: Client[Any]) -> list[str]:
    return [t.uri_template for t in await client.list_resource_templates()]


async def prompts(client: Client[Any]) -> list[str]:
    return [p.name for p in await client.list_prompts()]


async def refusal(request: Awaitable[Any]) -> dict[str, Any]:
    """The rejection a refused read or get carries as its MCP error's data."""
    with pytest.raises(MCPError) as raised:
        await request
    assert raised.value.error.code == mt.INVALID_PARAMS
    data = raised.value.error.data
    assert isinstance(data, dict)
    assert data["message"] == raised.value.error.message
    return data


async def delivered(seen: list[str], count: int) -> None:
    with anyio.fail_after(WAIT_S):
        while len(seen) < count:
            await anyio.sleep(0.01)


def test_a_read_stores_the_trace_id_of_the_clients_request(library: Library) -> None:
    """A read's decision carries the W3C trace id of the client's ``_meta.traceparent`` (the
    gateway makes no span of a read); a malformed one, or none, stores none."""
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    got: dict[str, str] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[str]) -> None:
        for name, meta in (
            ("traced", {"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"}),
            ("bad", {"traceparent": f"00-{trace_id.upper()}-00f067aa0ba902b7-01"}),
            ("none", None),
        ):
            read = await client.read_resource_mcp("docs://handbook", meta=meta)
            got[name] = str((read.meta or {})["maitred/decision_id"])

    run(library, scenario)
    logged = library.decisions()
    assert {name: logged[did].get("trace_id") for name, did in got.items()} == {
        "traced": trace_id,
        "bad": None,
        "none": None,
    }
    with open_log(str(library.root / "gateway.sqlite")) as log:
        assert verify(log).ok
        stored = {r["decision_id"]: r["trace_id"] for r in log.iter_action_decisions()}
    assert stored[got["traced"]] == trace_id and stored[got["none"]] == ""


def test_a_hidden_resource_is_not_listed_and_its_read_is_refused_logged_and_never_forwarded(
    library: Library,
) -> None:
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[str]) -> None:
        got["free"] = await uris(client)
        got["refused"] = await refusal(client.read_resource_mcp("docs://pricing"))
        read = await client.read_resource_mcp("docs://handbook")
        got["handbook"] = (read.contents[0].text, (read.meta or {})["maitred/decision_id"])
        sample = gate.metrics.registry.get_sample_value
        name = "maitred_gateway_surface_requests_total"
        got["counted"] = [
            sample(name, {"method": "resources/read", "code": code})
            for code in ("RESOURCE_NOT_AVAILABLE", "OK")
        ]

    run(library, scenario)
    # docs://roadmap has no contract: passed through (ungated: pass, the default)
    assert got["free"] == ["docs://handbook", "docs://roadmap"]
    refused = got["refused"]
    assert refused["code"] == "RESOURCE_NOT_AVAILABLE" and refused["executed"] is False
    assert "pricing" not in refused["message"] and "paid plan" not in refused["message"]
    assert library.served() == ["read docs://handbook"]  # the refused read never reached it
    assert got["counted"] == [1.0, 1.0]
    text, allowed_id = got["handbook"]
    assert text == "Be kind."
    logged = library.decisions()
    assert set(logged) == {refused["decision_id"], allowed_id}
    row = logged[refused["decision_id"]]
    assert row["call"]["name"] == "resources/read"
    assert row["call"]["arguments"] == {"uri": "docs://pricing"}
    assert (row["verdict"], row["code"]) == ("reject", "RESOURCE_NOT_AVAILABLE")
    assert [o["predicate"] for o in row["outcomes"]] == ["free_plan"]  # why, for people
    assert logged[allowed_id]["verdict"] == "allow"
    with open_log(str(library.root / "gateway.sqlite")) as log:
        assert verify(log).ok


def test_a_hidden_template_hides_every_uri_under_it_until_the_state_allows_it(
    library: Library,
) -> None:
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[str]) -> None:
        got["free"] = await templates(client)
        got["refused"] = await refusal(client.read_resource_mcp("reports://2024"))
        library.set_plan("pro")  # outside the gateway: every read decides on fresh state
        got["pro"] = await templates(client)
        got["read"] = (await client.read_resource_mcp("reports://2024")).contents[0].text

    run(library, scenario)
    assert got["free"] == [] and got["pro"] == ["reports://{year}"]
    assert got["refused"]["code"] == "RESOURCE_NOT_AVAILABLE"
    assert "2024" not in got["refused"]["message"]
    assert got["read"] == "report 2024"
    assert library.served() == ["read reports://2024"]  # only the allowed one


def test_a_hidden_prompt_is_not_listed_and_getting_it_is_refused(library: Library) -> None:
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[str]) -> None:
        got["listed"] = await prompts(client)
        got["refused"] = await refusal(client.get_prompt_mcp("negotiate", {"customer": "acme"}))
        result = await client.get_prompt_mcp("summarize", {"text": "hello"})
        got["summary"] = result.messages[0].content.text  # type: ignore[union-attr]
        got["id"] = (result.meta or {})["maitred/decision_id"]

    run(library, scenario)
    assert got["listed"] == ["summarize", "brainstorm"]
    assert got["refused"]["code"] == "PROMPT_NOT_AVAILABLE"
    assert "negotiate" not in got["refused"]["message"]
    assert got["summary"] == "Summarise this: hello"
    assert library.served() == ["prompt summarize"]
    row = library.decisions()[got["refused"]["decision_id"]]
    assert row["call"] == {
        "name": "prompts/get",
        "arguments": {"name": "negotiate", "arguments": {"customer": "acme"}},
        "id": row["call"]["id"],
    }
    assert library.decisions()[got["id"]]["verdict"] == "allow"


def test_what_the_session_was_shown_and_then_lost_gets_the_reason(library: Library) -> None:
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[str]) -> None:
        library.set_plan("pro")
        got["pro"] = await uris(client)
        library.set_plan("free")  # not listed again since
        got["lost"] = await refusal(client.read_resource_mcp("docs://pricing"))
        accounts = library.root / "accounts.json"
        accounts.rename(accounts.with_suffix(".away"))  # the state store is down
        got["down"] = await refusal(client.read_resource_mcp("docs://pricing"))
        got["unshown"] = await refusal(client.get_prompt_mcp("negotiate", {"customer": "a"}))
        got["ungated"] = (await client.read_resource_mcp("docs://roadmap")).contents[0].text
        accounts.with_suffix(".away").rename(accounts)

    run(library, scenario)
    assert "docs://pricing" in got["pro"]
    assert got["lost"]["code"] == "RESOURCE_NOT_AVAILABLE"
    assert "Price lists are for paid plans." in got["lost"]["message"]
    assert got["down"]["code"] == "STATE_UNAVAILABLE"  # shown, so the client may retry
    assert got["unshown"]["code"] == "PROMPT_NOT_AVAILABLE"  # never shown: nothing said
    assert "sales" not in got["unshown"]["message"]
    assert got["ungated"] == "Q3: gating."  # reads no state: unaffected by the outage
    assert library.served() == ["read docs://roadmap"]


def test_a_write_that_changes_what_is_visible_sends_resources_and_prompts_list_changed(
    library: Library,
) -> None:
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[str]) -> None:
        await uris(client)
        await prompts(client)
        await client.call_tool("upgrade", {"plan": "pro"})  # resources change, prompts do not
        await delivered(seen, 1)
        got["after_pro"] = list(seen)
        got["pro"] = await uris(client)
        await client.call_tool("upgrade", {"plan": "sales"})  # now the prompt too
        await delivered(seen, 2)
        got["after_sales"] = list(seen)
        got["sales"] = await prompts(client)
        await client.call_tool("upgrade", {"plan": "sales"})  # no change: nothing sent
        await anyio.sleep(0.2)
        got["after_same"] = list(seen)

    run(library, scenario)
    assert got["after_pro"] == ["resources"]  # the tools' list did not change
    assert got["pro"] == ["docs://handbook", "docs://pricing", "docs://roadmap"]
    assert got["after_sales"] == ["resources", "prompts"]
    assert "negotiate" in got["sales"]
    assert got["after_same"] == got["after_sales"]


def test_the_state_watch_announces_changes_to_resources_and_prompts(library: Library) -> None:
    counts: list[int] = []

    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[str]) -> None:
        guard = gate.surface_guard
        assert guard is not None
        counts.append(await guard.recheck())  # never listed: nothing to tell
        await uris(client)
        await templates(client)
        await prompts(client)
        counts.append(await guard.recheck())  # nothing changed
        library.set_plan("sales")  # outside the gateway
        counts.append(await guard.recheck())  # one session, told of both lists
        await delivered(seen, 2)
        counts.append(await guard.recheck())  # told once
        library.set_plan("enterprise")  # resources stay, the prompt goes
        counts.append(await guard.recheck())
        await delivered(seen, 3)
        assert "negotiate" not in await prompts(client)
        assert sorted(seen[:2]) == ["prompts", "resources"] and seen[2:] == ["prompts"]

    run(library, scenario, mode="legacy")  # a handshake-era session: it has a standing channel
    assert counts == [0, 0, 1, 0, 1]


def test_ungated_hide_hides_what_no_contract_names(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    site = library_at(tmp_path, extra="ungated: hide\n")
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[str]) -> None:
        got["resources"] = await uris(client)
        got["prompts"] = await prompts(client)
        got["roadmap"] = await refusal(client.read_resource_mcp("docs://roadmap"))
        got["brainstorm"] = await refusal(client.get_prompt_mcp("brainstorm", {"topic": "x"}))
        got["nowhere"] = await refusal(client.read_resource_mcp("docs://nowhere"))

    run(site, scenario)
    warned = capfd.readouterr().err
    assert got["resources"] == ["docs://handbook"]  # `{}`: reviewed, always shown
    assert got["prompts"] == ["summarize"]
    assert {got[k]["code"] for k in ("roadmap", "nowhere")} == {"RESOURCE_NOT_AVAILABLE"}
    assert got["brainstorm"]["code"] == "PROMPT_NOT_AVAILABLE"
    assert site.served() == []
    assert "upstream 'library'" in warned and "ungated: hide" in warned
    assert "resources ['docs://roadmap']" in warned and "prompts ['brainstorm']" in warned


def test_ungated_pass_serves_what_no_contract_names_and_says_so_at_start(
    library: Library, capfd: pytest.CaptureFixture[str]
) -> None:
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[str]) -> None:
        got["prompt"] = await client.get_prompt_mcp("brainstorm", {"topic": "gates"})
        got["missing"] = None
        with pytest.raises(MCPError) as raised:  # forwarded: the upstream's own answer
            await client.read_resource_mcp("docs://nowhere")
        got["missing"] = raised.value.error.data

    run(library, scenario)
    warned = capfd.readouterr().err
    assert got["prompt"].messages[0].content.text == "Ideas about gates"
    assert got["missing"] == {"uri": "docs://nowhere"}  # not a gateway refusal
    assert "passed through ungated (ungated: pass)" in warned
    assert "resources ['docs://roadmap']" in warned and "prompts ['brainstorm']" in warned
    assert "docs://pricing" not in warned  # gated ones are not named


def test_over_stdio_a_desktop_client_sees_the_same_gates(library: Library) -> None:
    got: dict[str, Any] = {}
    env = {**child_env(), "PYTHONPATH": str(SRC)}
    args = ["-m", "maitred.cli.main", "mcp", "--config", str(library.config)]

    async def main() -> None:
        transport = StdioTransport(sys.executable, args, env=env, keep_alive=False)
        async with Client(transport, mode="legacy") as client:
            got["resources"] = await uris(client)
            got["templates"] = await templates(client)
            got["prompts"] = await prompts(client)
            got["read"] = await refusal(client.read_resource_mcp("reports://1999"))
            got["get"] = await refusal(client.get_prompt_mcp("negotiate", {"customer": "x"}))

    anyio.run(main)
    assert got["resources"] == ["docs://handbook", "docs://roadmap"]
    assert got["templates"] == []
    assert got["prompts"] == ["summarize", "brainstorm"]
    assert got["read"]["code"] == "RESOURCE_NOT_AVAILABLE"
    assert got["get"]["code"] == "PROMPT_NOT_AVAILABLE"
    assert set(library.decisions()) == {got["read"]["decision_id"], got["get"]["decision_id"]}
    assert library.served() == []


@pytest.mark.slow
def test_over_http_each_client_gets_the_same_gates_and_refusals(tmp_path: Path) -> None:
    site = library_at(tmp_path)
    env = {"CALLS_FILE": str(tmp_path / "calls.jsonl"), "ACCOUNTS": str(tmp_path / "accounts.json")}
    config = tmp_path / "gateway-http.yaml"
    config.write_text(
        "state: accounts.json\n"
        "log: gateway.sqlite\n"
        "server: {host: 127.0.0.1, port: 0}\n"
        f"tokens: [{{token_sha256: {sha256(TOKEN)}, tenant: books, account: acc-1}}]\n"
        "upstreams:\n"
        "  - name: library\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(LIBRARY))}]\n"
        f"    env: {json.dumps(env)}\n"
        "    contracts: library.maitred.yaml\n",
        encoding="utf-8",
    )
    gateway = Process(
        [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)],
        child_env(),
        r"serving (http://\S+)",
    )
    url = gateway.match.group(1)
    got: dict[str, Any] = {}

    async def with_fastmcp() -> None:  # 2026-07-28, sessionless
        async with Client(url, auth=TOKEN) as client:
            got["fastmcp"] = (await uris(client), await templates(client), await prompts(client))
            got["fastmcp_read"] = await refusal(client.read_resource_mcp("docs://pricing"))
            got["fastmcp_get"] = await refusal(
                client.get_prompt_mcp("negotiate", {"customer": "x"})
            )

    async def with_sdk() -> None:  # a handshake-era session, as the mcp SDK negotiates
        from mcp.client.session import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            http_client(headers=headers) as http,
            streamable_http_client(url, http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            listed = await session.list_resources()
            got["sdk"] = [str(r.uri) for r in listed.resources]
            with pytest.raises(MCPError) as raised:
                await session.read_resource("reports://2020")
            got["sdk_read"] = raised.value.error.data
            read = await session.read_resource("docs://handbook")
            got["sdk_ok"] = (read.meta or {}).get("maitred/decision_id")

    try:
        anyio.run(with_fastmcp)
        anyio.run(with_sdk)
    finally:
        gateway.stop()
    assert got["fastmcp"] == (
        ["docs://handbook", "docs://roadmap"],
        [],
        ["summarize", "brainstorm"],
    )
    assert got["fastmcp_read"]["code"] == "RESOURCE_NOT_AVAILABLE"
    assert got["fastmcp_get"]["code"] == "PROMPT_NOT_AVAILABLE"
    assert got["sdk"] == ["docs://handbook", "docs://roadmap"]
    assert got["sdk_read"]["code"] == "RESOURCE_NOT_AVAILABLE"
    assert site.served() == ["read docs://handbook"]
    logged = site.decisions()
    for refused in (got["fastmcp_read"], got["fastmcp_get"], got["sdk_read"]):
        row = logged[refused["decision_id"]]
        assert row["verdict"] == "reject" and row["tenant"] == "books"
    assert logged[got["sdk_ok"]]["verdict"] == "allow"


def _open(site: Library) -> None:
    async def main() -> None:
        _server, engines = await open_gateway(load_config(site.config))
        engines.close()

    anyio.run(main)


def test_a_sidecar_key_the_upstream_does_not_list_names_the_file_line_and_key(
    tmp_path: Path,
) -> None:
    sidecar = SIDECAR.replace("  docs://pricing:\n", "  docs://pricng:\n").replace(
        "  negotiate:\n", "  negotiat:\n"
    )
    site = library_at(tmp_path, sidecar=sidecar)
    with pytest.raises(SidecarError) as raised:
        _open(site)
    text = str(raised.value)
    assert "library.maitred.yaml" in text
    assert "library.maitred.yaml:6: resources: 'docs://pricng' is not listed" in text
    assert "docs://pricing" in text and "reports://{year}" in text  # what it does list
    assert "prompts: 'negotiat' is not listed" in text


def test_a_tool_only_key_on_a_resource_names_the_entry(tmp_path: Path) -> None:
    sidecar = SIDECAR.replace("  docs://handbook: {}\n", "  docs://handbook: {mutates: true}\n")
    with pytest.raises(SidecarError) as raised:
        _open(library_at(tmp_path, sidecar=sidecar))
    text = str(raised.value)
    assert "library.maitred.yaml" in text and "resources.docs://handbook" in text
    assert "unknown key(s) ['mutates']; known keys: ['exit_predicates', 'scopes']" in text


def test_a_bad_ungated_value_names_the_file_and_field(tmp_path: Path) -> None:
    site = library_at(tmp_path, extra="ungated: maybe\n")
    with pytest.raises(ConfigError) as raised:
        load_config(site.config)
    assert str(raised.value).startswith(f"{site.config}: field 'ungated' must be one of")


def test_an_http_upstream_without_resources_or_prompts_starts_and_serves_tools(
    tmp_path: Path,
) -> None:
    """Servers without the capabilities list none: nothing to gate, nothing to warn about."""
    notes = Path(__file__).with_name("notes_server.py")
    env = {**child_env(), "CALLS_FILE": str(tmp_path / "calls.jsonl")}
    upstream = Process([sys.executable, str(notes), "0"], env, r"PORT=(\d+)")
    (tmp_path / "accounts.json").write_text('{"acc-1": {"account": {"plan": "free"}}}')
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "account: acc-1\nstate: accounts.json\nungated: hide\nupstreams:\n"
        f"  - {{name: notes, url: 'http://127.0.0.1:{upstream.match.group(1)}/mcp'}}\n",
        encoding="utf-8",
    )
    got: dict[str, Any] = {}

    async def main() -> None:
        server, engines = await open_gateway(load_config(config))
        try:
            async with Client(server) as client:
                got["tools"] = len(await client.list_tools())
                got["resources"] = await uris(client)
                got["prompts"] = await prompts(client)
        finally:
            engines.close()

    try:
        anyio.run(main)
    finally:
        upstream.stop()
    assert got == {"tools": 3, "resources": [], "prompts": []}


def test_two_upstreams_giving_one_resource_a_contract_is_an_error_naming_both(
    tmp_path: Path,
) -> None:
    from maitred.contract.tool_sidecar import SurfaceNames
    from maitred.gateway.keeper import GatewayEngines
    from maitred.gateway.surfaces import open_surfaces

    (tmp_path / "accounts.json").write_text('{"acc-1": {"account": {"plan": "free"}}}')
    for name in ("a", "b"):
        (tmp_path / f"{name}.maitred.yaml").write_text("resources: {docs://x: {}}\n")
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "account: acc-1\nstate: accounts.json\nupstreams:\n"
        "  - {name: a, command: a-server, contracts: a.maitred.yaml}\n"
        "  - {name: b, command: b-server, contracts: b.maitred.yaml}\n",
        encoding="utf-8",
    )
    loaded = load_config(config)
    tools = {n: [{"name": f"{n}_tool", "description": "A tool."}] for n in ("a", "b")}
    listed = {n: SurfaceNames(resources=("docs://x",)) for n in ("a", "b")}
    engines = GatewayEngines.open(loaded, tools, listed)
    try:
        with pytest.raises(ConfigError) as raised:
            open_surfaces(loaded, engines, listed)
    finally:
        engines.close()
    assert str(raised.value).startswith(f"{config}: the sidecars of upstreams 'a' and 'b'")
    assert "resource 'docs://x'" in str(raised.value)


def test_the_watch_tells_a_2026_client_on_its_listen_stream_over_stdio(library: Library) -> None:
    """The `mcp` SDK's `Client` (2026-07-28) has no standing channel; it opens
    `subscriptions/listen` for resources and prompts, and `maitred mcp` with the state watch on
    sends both changes there when the account moves to another plan."""
    from mcp.client.client import Client as SdkClient
    from mcp.client.stdio import StdioServerParameters

    text = library.config.read_text(encoding="utf-8")
    library.config.write_text("watch: {interval_s: 0.2}\n" + text, encoding="utf-8")
    env = {**child_env(), "PYTHONPATH": str(SRC)}
    args = ["-m", "maitred.cli.main", "mcp", "--config", str(library.config)]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    got: dict[str, Any] = {"events": set()}

    async def main() -> None:
        async with SdkClient(params) as client:
            got["version"] = client.session.protocol_version
            got["before"] = [str(r.uri) for r in (await client.list_resources()).resources]
            await client.list_prompts()
            async with client.listen(
                resources_list_changed=True, prompts_list_changed=True
            ) as events:
                library.set_plan("sales")
                with anyio.fail_after(WAIT_S):
                    async for event in events:
                        got["events"].add(type(event).__name__)
                        if len(got["events"]) == 2:
                            break
            got["after"] = [str(r.uri) for r in (await client.list_resources()).resources]
            got["prompts"] = [p.name for p in (await client.list_prompts()).prompts]

    anyio.run(main)
    assert got["version"] == "2026-07-28"
    assert "docs://pricing" not in got["before"] and "docs://pricing" in got["after"]
    assert got["events"] == {"ResourcesListChanged", "PromptsListChanged"}
    assert "negotiate" in got["prompts"]


def test_a_resource_predicate_that_does_not_type_check_stops_the_start(tmp_path: Path) -> None:
    site = library_at(
        tmp_path, sidecar=SIDECAR.replace('account.plan == "free"', "account.plan > 3", 1)
    )
    accounts = tmp_path / "accounts.json"
    data = json.loads(accounts.read_text(encoding="utf-8"))
    accounts.write_text(json.dumps({"$types": {"account.plan": "string"}, **data}))
    with pytest.raises(ConfigError) as raised:
        _open(site)
    text = str(raised.value)
    assert text.startswith(f"{site.config}: the upstreams' resources and prompts:")
    assert "free_plan" in text and "library.maitred.yaml" in text


def test_a_resource_or_prompt_that_needs_a_scope_is_hidden_from_a_token_without_it(
    tmp_path: Path,
) -> None:
    """``scopes`` on a resource or prompt entry is the kernel's scope rule, as on a tool: the
    token without it neither sees nor reads it, the token with it does (one permission
    source for tools, resources and prompts)."""
    scoped = SIDECAR.replace(
        "  docs://handbook: {}", "  docs://handbook:\n    scopes: [docs:read]"
    ).replace("  summarize: {}", "  summarize:\n    scopes: [docs:read]")
    site = library_at(tmp_path, sidecar=scoped)
    env = {"CALLS_FILE": str(tmp_path / "calls.jsonl"), "ACCOUNTS": str(tmp_path / "accounts.json")}
    reader, other = "tok-library-reader-71c0", "tok-library-other-0d3e"
    config = tmp_path / "gateway-http.yaml"
    config.write_text(
        "state: accounts.json\n"
        "log: gateway.sqlite\n"
        "server: {host: 127.0.0.1, port: 0}\n"
        "tokens:\n"
        f"  - {{token_sha256: {sha256(reader)}, tenant: books, account: acc-1, "
        "scopes: [docs:read]}\n"
        f"  - {{token_sha256: {sha256(other)}, tenant: books, account: acc-1}}\n"
        "upstreams:\n"
        "  - name: library\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(LIBRARY))}]\n"
        f"    env: {json.dumps(env)}\n"
        "    contracts: library.maitred.yaml\n",
        encoding="utf-8",
    )
    gateway = Process(
        [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)],
        child_env(),
        r"serving (http://\S+)",
    )
    url = gateway.match.group(1)
    got: dict[str, Any] = {}

    async def main() -> None:
        async with Client(url, auth=other) as client:
            got["other"] = (await uris(client), await prompts(client))
            got["other_read"] = await refusal(client.read_resource_mcp("docs://handbook"))
            got["other_get"] = await refusal(client.get_prompt_mcp("summarize", {"text": "x"}))
        async with Client(url, auth=reader) as client:
            got["reader"] = (await uris(client), await prompts(client))
            await client.read_resource_mcp("docs://handbook")

    try:
        anyio.run(main)
    finally:
        gateway.stop()
    assert got["other"] == (["docs://roadmap"], ["brainstorm"])
    assert got["reader"] == (["docs://handbook", "docs://roadmap"], ["summarize", "brainstorm"])
    assert got["other_read"]["code"] == "RESOURCE_NOT_AVAILABLE"
    assert got["other_get"]["code"] == "PROMPT_NOT_AVAILABLE"
    assert site.served() == ["read docs://handbook"]
