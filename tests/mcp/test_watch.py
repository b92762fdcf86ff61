"""The state watch: a change of the account's state made outside the gateway is announced.

The deterministic half drives one watch pass at a time (``GateMiddleware.recheck``) against a
gateway served in memory to a real ``fastmcp.Client`` (handshake-era, ``mode="legacy"``, so the
session has a standing channel), in front of the recording upstream over stdio. The end-to-end
half runs ``maitred mcp`` as a subprocess over stdio with ``watch.interval_s`` set, as an MCP
client launches it, and waits (bounded) for the notification the watch sends by itself.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from tests.mcp.conftest import SRC, Site, child_env
from tests.mcp.test_gateway import rejection

from maitred.gateway import load_config
from maitred.gateway.build import gate_of, open_gateway
from maitred.gateway.server import GateMiddleware
from maitred.log.base import open_log

#: the conftest sidecar, with a mutating tool that reads state too (hidden on the top plan)
SIDECAR = """\
tools:
  export_report:
    exit_predicates:
      - name: free_plan
        expr: account.plan == "free"
        reads: [account.plan]
  upgrade:
    mutates: true
    exit_predicates:
      - name: top_plan
        expr: account.plan == "enterprise"
        reads: [account.plan]
        message: This account is on the top plan already
"""
WAIT_S = 60.0  # the most a test waits for a notification (a bound, never an assertion)

Scenario = Callable[[Client[Any], GateMiddleware, list[str]], Awaitable[None]]


def run(site: Site, scenario: Scenario, *, mode: str = "legacy") -> None:
    """Serve ``site``'s gateway in memory and run ``scenario`` with a client, the gateway's
    middleware (to drive watch passes) and the notifications received so far."""
    (site.root / "shop.maitred.yaml").write_text(SIDECAR, encoding="utf-8")

    async def main() -> None:
        server, engines = await open_gateway(load_config(site.config))
        gate = gate_of(server)
        seen: list[str] = []

        async def on_message(message: Any) -> None:
            if isinstance(message, mt.ToolListChangedNotification):
                seen.append("tools/list_changed")

        try:
            async with Client(server, message_handler=on_message, mode=mode) as client:  # type: ignore[arg-type]
                await scenario(client, gate, seen)
        finally:
            engines.close()

    anyio.run(main)


async def names(client: Client[Any]) -> list[str]:
    return [t.name for t in await client.list_tools()]


async def delivered(seen: list[str], count: int) -> None:
    """Wait until ``count`` notifications have arrived (the pass has sent them already; this
    only lets the client's reader task catch up)."""
    with anyio.fail_after(WAIT_S):
        while len(seen) < count:
            await anyio.sleep(0.01)


def listing_turns(site: Site) -> int:
    with open_log(str(site.log)) as log:
        return sum(1 for t in log.iter_turns() if t["message_text"] == "tools/list")


def test_a_state_change_is_announced_once_and_an_unchanged_list_sends_nothing(
    site: Site,
) -> None:
    counts: list[int] = []

    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[str]) -> None:
        assert await gate.recheck() == 0  # never listed: nothing to tell
        assert await names(client) == ["get_plan", "upgrade", "crash"]
        assert await gate.recheck() == 0  # nothing changed
        counts.append(listing_turns(site))
        site.set_plan("pro")  # outside the gateway: the billing system
        assert await gate.recheck() == 1
        await delivered(seen, 1)
        counts.append(listing_turns(site))
        assert "export_report" in await names(client)
        result = await client.call_tool("export_report", {"year": 2025})
        assert result.content[0].text == "report 2025"
        counts.append(listing_turns(site))
        site.set_plan("team")  # a change that leaves the list as it is
        assert await gate.recheck() == 0
        counts.append(listing_turns(site))
        site.set_plan("free")
        assert await gate.recheck() == 1
        await delivered(seen, 2)
        assert "export_report" not in await names(client)
        assert seen == ["tools/list_changed"] * 2

    run(site, scenario)
    # the watch logs a listing turn only for a change: +1 for pro, none for team
    assert counts[1] == counts[0] + 1
    assert counts[3] == counts[2]


def test_state_that_cannot_be_read_hides_the_tools_that_read_it_and_comes_back(
    site: Site,
) -> None:
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[str]) -> None:
        site.set_plan("pro")
        assert await names(client) == ["get_plan", "export_report", "upgrade", "crash"]
        site.accounts.rename(site.accounts.with_suffix(".away"))  # the store is down
        assert await gate.recheck() == 1  # the outage is announced (it is no crash)
        await delivered(seen, 1)
        got["down"] = await names(client)
        call = await client.call_tool(
            "upgrade", {"account": "acc-1", "plan": "team"}, raise_on_error=False
        )
        got["call"] = json.loads(call.content[0].text)
        assert await gate.recheck() == 0  # still down: nothing new to say
        site.accounts.with_suffix(".away").rename(site.accounts)
        assert await gate.recheck() == 1
        await delivered(seen, 2)
        got["back"] = await names(client)

    run(site, scenario)
    assert got["down"] == ["get_plan", "crash"]  # the mutating upgrade too: fail closed
    # the listing during the outage no longer showed it: not offered (a session that still
    # held an earlier listing with it would get STATE_UNAVAILABLE from the kernel)
    assert got["call"]["code"] == "TOOL_NOT_OFFERED" and got["call"]["executed"] is False
    assert "upgrade" not in site.upstream_calls()
    assert got["back"] == ["get_plan", "export_report", "upgrade", "crash"]
    with open_log(str(site.log)) as log:
        turns = [t for t in log.iter_turns() if t["message_text"] == "tools/list"]
    causes = [t["provider_error"] for t in turns]
    assert any(c.startswith("state_unavailable") for c in causes)


def test_a_sessionless_connection_is_not_watched_but_its_next_list_is_fresh(site: Site) -> None:
    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[str]) -> None:
        assert client.protocol_version == "2026-07-28"
        assert "export_report" not in await names(client)
        site.set_plan("pro")
        assert await gate.recheck() == 0  # no standing channel to push on
        assert "export_report" in await names(client)  # every listing reads state afresh
        assert seen == []

    run(site, scenario, mode="auto")


def _gateway(config: Path) -> StdioTransport:
    env = {**child_env(), "PYTHONPATH": str(SRC)}
    args = ["-m", "maitred.cli.main", "mcp", "--config", str(config)]
    return StdioTransport(sys.executable, args, env=env, keep_alive=False)


def test_the_watch_announces_a_change_by_itself_over_stdio(site: Site) -> None:
    """`maitred mcp` as a subprocess: nothing but the file changes, and the client is told."""
    (site.root / "shop.maitred.yaml").write_text(SIDECAR, encoding="utf-8")
    text = site.config.read_text(encoding="utf-8")
    site.config.write_text("watch: {interval_s: 0.2}\n" + text, encoding="utf-8")
    got: dict[str, Any] = {}

    async def main() -> None:
        seen: list[str] = []

        async def on_message(message: Any) -> None:
            if isinstance(message, mt.ToolListChangedNotification):
                seen.append("tools/list_changed")

        gateway = _gateway(site.config)
        async with Client(gateway, message_handler=on_message, mode="legacy") as client:
            got["before"] = await names(client)
            site.set_plan("pro")
            await delivered(seen, 1)
            got["after"] = await names(client)
            got["report"] = (await client.call_tool("export_report", {"year": 2025})).content
            site.set_plan("free")
            await delivered(seen, 2)
            got["again"] = await names(client)

    anyio.run(main)
    assert "export_report" not in got["before"]
    assert "export_report" in got["after"]
    assert got["report"][0].text == "report 2025"
    assert "export_report" not in got["again"]
    assert os.path.exists(site.log)


def test_a_2026_client_that_listens_is_told_on_its_listen_stream_over_stdio(site: Site) -> None:
    """The `mcp` SDK's `Client` (2026-07-28) opens `subscriptions/listen`; the watch's event
    for its session arrives there."""
    from mcp.client.client import Client as SdkClient
    from mcp.client.stdio import StdioServerParameters

    text = site.config.read_text(encoding="utf-8")
    site.config.write_text("watch: {interval_s: 0.2}\n" + text, encoding="utf-8")
    transport = _gateway(site.config)
    params = StdioServerParameters(
        command=transport.command, args=transport.args, env=transport.env
    )
    got: dict[str, Any] = {}

    async def main() -> None:
        async with SdkClient(params) as client:
            got["version"] = client.session.protocol_version
            got["before"] = [t.name for t in (await client.list_tools()).tools]
            async with client.listen(tools_list_changed=True) as events:
                site.set_plan("pro")
                with anyio.fail_after(WAIT_S):
                    async for event in events:
                        got["event"] = type(event).__name__
                        break
            got["after"] = [t.name for t in (await client.list_tools()).tools]

    anyio.run(main)
    assert got["version"] == "2026-07-28"
    assert "export_report" not in got["before"]
    assert got["event"] == "ToolsListChanged"
    assert "export_report" in got["after"]


def test_with_find_tools_state_changes_no_list_and_a_disclosed_tool_follows_the_state(
    site: Site,
) -> None:
    """Under ``find_tools`` the list is ``find_tools`` alone, so the watch has nothing to
    announce; a disclosed tool that state hides is refused on fresh state, and runs again
    once the state allows it (it stays disclosed)."""
    text = site.config.read_text(encoding="utf-8")
    site.config.write_text("disclosure: find_tools\n" + text, encoding="utf-8")
    site.set_plan("pro")
    lists: list[list[str]] = []
    codes: list[str] = []

    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[str]) -> None:
        found = await client.call_tool("find_tools", {"need": "export the yearly report"})
        assert "export_report" in [t["name"] for t in found.structured_content["tools"]]
        lists.append(await names(client))
        site.set_plan("free")
        assert await gate.recheck() == 0
        lists.append(await names(client))
        hidden = await client.call_tool("export_report", {"year": 2025}, raise_on_error=False)
        codes.append(rejection(hidden)["code"])
        site.set_plan("pro")
        assert await gate.recheck() == 0
        lists.append(await names(client))
        again = await client.call_tool("export_report", {"year": 2025})
        codes.append(again.content[0].text)

    run(site, scenario)
    assert lists == [["find_tools", "call_tool"]] * 3
    assert codes == ["TOOL_NOT_EXECUTABLE", "report 2025"]


TOOLS = [
    {"name": "get_plan", "description": "Say the plan.", "inputSchema": {"type": "object"}},
    {"name": "export_report", "description": "Export.", "inputSchema": {"type": "object"}},
]


def _engines(root: Path, bound: str = "") -> Any:
    from maitred.gateway import GatewayEngines, parse_config

    (root / "shop.maitred.yaml").write_text(
        "tools:\n  export_report:\n    exit_predicates:\n      - name: free_plan\n"
        '        expr: account.plan == "free"\n        reads: [account.plan]\n' + bound,
        encoding="utf-8",
    )
    (root / "accounts.json").write_text(json.dumps({"acc-1": {"account": {"plan": "free"}}}))
    data = {
        "account": "acc-1",
        "state": "accounts.json",
        "upstreams": [{"name": "shop", "command": "x", "contracts": "shop.maitred.yaml"}],
    }
    return GatewayEngines.open(parse_config(data, "gw.yaml", base=root), {"shop": TOOLS})


def test_a_pass_over_state_whose_content_is_unchanged_decides_nothing(
    tmp_path: Path, monkeypatch: Any
) -> None:
    from maitred.gate.executability import ExecutabilityGate

    decided: list[str] = []
    real = ExecutabilityGate.decide

    def counting(
        self: ExecutabilityGate, skill: str, snapshot: Any, at: float, granted: Any = None
    ) -> Any:
        decided.append(skill)
        return real(self, skill, snapshot, at, granted)

    monkeypatch.setattr(ExecutabilityGate, "decide", counting)
    (tmp_path / "bounded").mkdir()
    engines = _engines(tmp_path)
    bounded = _engines(tmp_path / "bounded", "        max_age_s: 3600\n")
    try:
        keeper, timed = engines.keeper("acc-1"), bounded.keeper("acc-1")
        keeper.visible()
        timed.visible()
        counts = []
        for _ in range(2):
            decided.clear()
            assert engines.recheck([keeper]) == [] and bounded.recheck([timed]) == []
            counts.append(len(decided))
        accounts = tmp_path / "accounts.json"
        accounts.write_text(json.dumps({"acc-1": {"account": {"plan": "pro"}}}))
        assert engines.recheck([keeper]) == [keeper]  # new content: decided, and it changed
    finally:
        engines.close()
        bounded.close()
    # the first pass decides both catalogs; the second only the one with a freshness bound,
    # where time alone could change a verdict
    assert counts == [2 + 2, 2]
