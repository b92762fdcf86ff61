"""The gateway end to end: a fastmcp Client -> the gateway's proxy -> a real upstream process.

The client talks to the gateway in memory (the proxy object), the gateway talks to the upstream
over stdio as in production. The upstream records every call it receives, which is how these
tests prove that a rejected call never reached it.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt  # the MCP wire types (`mcp.types` re-exports them)
from fastmcp import Client
from tests.mcp.conftest import UPSTREAM, Site

from maitred.gateway import load_config
from maitred.gateway.build import close_gateway, gate_of, open_gateway
from maitred.log.base import open_log

Scenario = Callable[[Client[Any], list[Any]], Awaitable[None]]


def run_gateway(site: Site, scenario: Scenario, account: str | None = None) -> None:
    """Open the gateway for ``site`` and run ``scenario`` with a connected client."""

    async def main() -> None:
        proxy, keeper = await open_gateway(load_config(site.config, account=account))
        seen: list[Any] = []

        async def on_message(message: Any) -> None:
            seen.append(message)

        try:
            async with Client(proxy, message_handler=on_message) as client:
                await scenario(client, seen)
        finally:
            keeper.close()

    anyio.run(main)


def rejection(result: Any) -> dict[str, Any]:
    assert result.is_error
    payload: dict[str, Any] = json.loads(result.content[0].text)
    return payload


def names(tools: list[mt.Tool]) -> list[str]:
    return [t.name for t in tools]


def test_a_hidden_tool_is_not_listed_and_a_call_by_name_never_reaches_the_upstream(
    site: Site,
) -> None:
    async def scenario(client: Client[Any], seen: list[Any]) -> None:
        assert names(await client.list_tools()) == ["get_plan", "upgrade", "crash"]
        result = await client.call_tool("export_report", {"year": 2025}, raise_on_error=False)
        payload = rejection(result)
        # never shown: refused as not offered, its predicate unsaid (the gateway decided it
        # alone on fresh state first, in case it had become visible since: still hidden)
        assert payload["code"] == "TOOL_NOT_OFFERED"
        assert "free" not in payload["message"] and payload["executed"] is False

    run_gateway(site, scenario)
    assert "export_report" not in site.upstream_calls()
    with open_log(str(site.log)) as log:
        decisions = [(r["tool"], r["code"]) for r in log.iter_action_decisions()]
        turns = list(log.iter_turns())
    assert decisions == [("export_report", "TOOL_NOT_OFFERED")]
    assert len(turns) == 1  # the tools/list: a call by name to a hidden tool lists nothing afresh
    listing = turns[0]["pairs"]  # the tools/list is a logged turn: what was hidden, and why
    hidden = [p for p in listing if not p["visible"]]
    assert [p["skill"] for p in hidden] == ["export_report"]
    assert json.loads(hidden[0]["fired_json"])[0]["predicate"] == "free_plan"


def test_only_a_call_that_passes_every_check_reaches_the_upstream(site: Site) -> None:
    async def scenario(client: Client[Any], seen: list[Any]) -> None:
        bad = await client.call_tool("get_plan", {"account": 7}, raise_on_error=False)
        assert rejection(bad)["code"] == "ARGS_INVALID"
        assert rejection(bad)["fields"] == ["account"]
        unknown = await client.call_tool("drop_tables", {}, raise_on_error=False)
        assert rejection(unknown)["code"] == "TOOL_UNKNOWN"
        other = await client.call_tool(
            "upgrade", {"account": "acc-2", "plan": "pro"}, raise_on_error=False
        )
        assert rejection(other)["code"] == "SHOP_OTHER_ACCOUNT"
        result = await client.call_tool("get_plan", {"account": "acc-1"})
        assert not result.is_error
        assert result.content[0].text == "free"  # the upstream's own answer

    run_gateway(site, scenario)
    assert site.upstream_calls() == ["get_plan"]


def test_a_state_change_is_seen_at_call_time_without_a_new_list(site: Site) -> None:
    async def scenario(client: Client[Any], seen: list[Any]) -> None:
        assert "export_report" not in names(await client.list_tools())
        site.set_plan("pro")  # outside the gateway: a sync job, an admin
        result = await client.call_tool("export_report", {"year": 2025})
        assert result.content[0].text == "report 2025"
        site.set_plan("free")
        again = await client.call_tool("export_report", {"year": 2026}, raise_on_error=False)
        assert rejection(again)["code"] == "TOOL_NOT_EXECUTABLE"

    run_gateway(site, scenario)
    assert site.upstream_calls() == ["export_report"]
    with open_log(str(site.log)) as log:  # visible since: listed afresh, then decided
        shown = [[p["skill"] for p in t["pairs"] if p["visible"]] for t in log.iter_turns()]
    assert "export_report" not in shown[0] and "export_report" in shown[1]


def test_a_mutating_call_that_changes_visibility_sends_list_changed(site: Site) -> None:
    async def scenario(client: Client[Any], seen: list[Any]) -> None:
        assert "export_report" not in names(await client.list_tools())
        await client.call_tool("get_plan", {"account": "acc-1"})
        assert not _list_changed(seen)  # a read changes nothing
        await client.call_tool("upgrade", {"account": "acc-1", "plan": "pro"})
        assert len(_list_changed(seen)) == 1
        assert "export_report" in names(await client.list_tools())
        await client.call_tool("upgrade", {"account": "acc-1", "plan": "team"})
        assert len(_list_changed(seen)) == 1  # still visible: nothing to announce

    run_gateway(site, scenario)


def _list_changed(seen: list[Any]) -> list[Any]:
    return [m for m in seen if isinstance(m, mt.ToolListChangedNotification)]


def test_the_account_comes_from_the_launch_not_from_the_model(site: Site) -> None:
    site.accounts.write_text(
        json.dumps({"acc-1": {"account": {"plan": "free"}}, "acc-9": {"account": {"plan": "pro"}}}),
        encoding="utf-8",
    )

    async def scenario(client: Client[Any], seen: list[Any]) -> None:
        assert "export_report" in names(await client.list_tools())

    run_gateway(site, scenario, account="acc-9")


def test_an_upstream_crash_is_an_error_naming_it_and_the_gateway_stays_up(site: Site) -> None:
    async def scenario(client: Client[Any], seen: list[Any]) -> None:
        crashed = await client.call_tool("crash", {}, raise_on_error=False)
        payload = rejection(crashed)
        assert payload["code"] == "UPSTREAM_FAILED" and payload["upstream"] == "shop"
        assert names(await client.list_tools())  # the gateway still answers
        after = await client.call_tool("get_plan", {"account": "acc-1"}, raise_on_error=False)
        assert not after.is_error and after.content[0].text == "free"  # a fresh upstream

    run_gateway(site, scenario)
    assert site.upstream_calls() == ["crash", "get_plan"]


def _upstream_pids() -> list[int]:
    """The recording upstreams this process launched and that still run (not zombies)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and str(UPSTREAM).encode() in cmdline:
            found.append(int(stat.parent.name))
    return found


def test_calls_share_one_kept_session_and_an_upstream_that_exited_between_calls_is_relaunched(
    site: Site,
) -> None:
    async def main() -> None:
        server, engines = await open_gateway(load_config(site.config))
        gate = gate_of(server)
        assert gate.upstreams is not None
        kept = gate.upstreams.proxies["shop"].kept
        try:
            async with Client(server) as client:
                clients = set()
                for _ in range(3):
                    result = await client.call_tool("get_plan", {"account": "acc-1"})
                    assert result.content[0].text == "free"
                    clients.add(id(kept.client))
                assert len(clients) == 1 and kept.client is not None  # one session, kept
                (first,) = _upstream_pids()
                os.kill(first, signal.SIGKILL)  # nobody is told: no call is in flight
                # wait for the event the gateway itself sees -- the kept session read its
                # upstream's end of the pipe close -- not for the pid: a process is a zombie
                # before its pipe's EOF reaches the session, and a call sent in between is
                # rightly UPSTREAM_FAILED (the request may have gone nowhere)
                deadline = time.monotonic() + 60
                while not kept.closed and time.monotonic() < deadline:
                    await anyio.sleep(0.05)
                assert first not in _upstream_pids()
                after = await client.call_tool(
                    "get_plan", {"account": "acc-1"}, raise_on_error=False
                )
                assert not after.is_error and after.content[0].text == "free"  # relaunched
                assert len(_upstream_pids()) == 1 and first not in _upstream_pids()
        finally:
            await close_gateway(server, engines)
        assert kept.client is None  # let go when the gateway closed

    anyio.run(main)
    assert site.upstream_calls() == ["get_plan"] * 4


def test_an_upstream_that_hangs_past_its_timeout_is_named_and_the_gateway_stays_up(
    site: Site,
) -> None:
    text = site.config.read_text(encoding="utf-8")
    text = text.replace("ACCOUNTS:", "GET_PLAN_DELAY_S: '3600', ACCOUNTS:")
    text = text.replace(
        "    contracts: shop.maitred.yaml\n", "    contracts: shop.maitred.yaml\n    timeout_s: 2\n"
    )
    site.config.write_text(text, encoding="utf-8")
    tools = ["get_plan", "upgrade", "crash"]

    async def listed(client: Client[Any]) -> None:
        # on a loaded machine the upstream's launch can outlast its own short timeout; a
        # listing retries it: wait for that event, not for a deadline
        with anyio.fail_after(600):  # a net for a broken gateway, never reached otherwise
            while names(await client.list_tools()) != tools:
                await anyio.sleep(0.1)

    async def scenario(client: Client[Any], seen: list[Any]) -> None:
        await listed(client)
        hung = await client.call_tool("get_plan", {"account": "acc-1"}, raise_on_error=False)
        payload = rejection(hung)
        assert payload["code"] == "UPSTREAM_FAILED" and payload["upstream"] == "shop"
        assert "shop" in payload["message"] and "get_plan" in payload["message"]
        await listed(client)  # the same upstream, listed again after the failure
        done = await client.call_tool("upgrade", {"account": "acc-1", "plan": "pro"})
        assert done.content[0].text == "acc-1 is on pro"  # the same upstream, still serving

    run_gateway(site, scenario)
    assert site.upstream_calls() == ["get_plan", "upgrade"]
