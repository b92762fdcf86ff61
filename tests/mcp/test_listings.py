"""Listings depend only on who asks and the state now (issue 26, item 2).

`maitred mcp` over HTTP in a subprocess, in front of the notes server, with two tenants'
tokens; clients of both protocol eras: ``fastmcp.Client`` (2026-07-28, sessionless) and the
``mcp`` SDK's ``ClientSession`` (a handshake-era session). A hypothesis property drives
interleavings of other requests -- ``find_tools`` by either principal, reads and writes,
refused calls, listings by the other principal -- and checks that the next listing of every
(credential, era) is exactly what it was, in the same order, while the account state stays
the same. Then: the cache hints every list carries, and what a restart keeps.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from tests.mcp.conftest import Process, child_env, http_client
from tests.mcp.test_http import ACME, GLOBEX, Deployment, deploy

from maitred.gateway.listings import holder_id, listing_ttl_s
from maitred.log.base import open_log
from maitred.log.verify import verify

pytestmark = pytest.mark.slow  # a gateway and an upstream as subprocesses per test

NEEDS = ["export my notes as a pdf archive", "write down a note", "read my notes back"]
ARGUMENTS: dict[str, dict[str, Any]] = {
    "export_notes": {"fmt": "pdf"},
    "add_note": {"text": "x"},  # a write: it changes no account state a predicate reads
    "list_notes": {},
    "no_such_tool": {},
}
TOOLS = list(ARGUMENTS)
TOKENS = {"acme": ACME, "globex": GLOBEX}

#: one request another client makes: (kind, principal, what)
Step = tuple[str, str, int]
steps = st.lists(
    st.tuples(
        st.sampled_from(["find", "call", "list"]),
        st.sampled_from(sorted(TOKENS)),
        st.integers(min_value=0, max_value=len(TOOLS) - 1),
    ),
    min_size=1,
    max_size=6,
)


@pytest.fixture(params=["all", "find_tools"])
def gateway(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    extra = f"disclosure: {request.param}\nwatch: {{interval_s: 30}}\n"
    site = deploy(tmp_path, time=False, extra=extra)
    try:
        yield site
    finally:
        site.gateway.stop()
        site.notes.stop()


async def _modern(url: str, token: str) -> list[str]:
    async with Client(url, auth=token) as client:
        return [t.name for t in await client.list_tools()]


async def _handshake(url: str, token: str) -> list[str]:
    async with (
        http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        return [t.name for t in (await session.list_tools()).tools]


async def _listings(url: str) -> dict[str, list[str]]:
    """Every (principal, era)'s listing now, each from a fresh connection."""
    got: dict[str, list[str]] = {}
    for who, token in TOKENS.items():
        got[f"{who}/2026-07-28"] = await _modern(url, token)
        got[f"{who}/handshake"] = await _handshake(url, token)
    return got


async def _other(url: str, step: Step) -> None:
    """One other request, over a connection of its own (a 2026-07-28 client)."""
    kind, who, index = step
    async with Client(url, auth=TOKENS[who]) as client:
        if kind == "find":
            need = {"need": NEEDS[index % len(NEEDS)]}
            await client.call_tool("find_tools", need, raise_on_error=False)
        elif kind == "call":
            await client.call_tool(TOOLS[index], ARGUMENTS[TOOLS[index]], raise_on_error=False)
        else:
            await client.list_tools()


@pytest.mark.slow
def test_no_interleaving_of_other_requests_changes_the_next_listing(gateway: Deployment) -> None:
    baseline = anyio.run(_listings, gateway.url)
    assert baseline["acme/2026-07-28"] == baseline["acme/handshake"]
    assert baseline["globex/2026-07-28"] == baseline["globex/handshake"]
    if "find_tools" in baseline["acme/2026-07-28"]:
        assert all(names == ["find_tools", "call_tool"] for names in baseline.values())
    else:  # the free plan hides the export; listed in the catalog's order
        assert baseline["acme/2026-07-28"] == ["add_note", "list_notes", "export_notes"]
        assert baseline["globex/2026-07-28"] == ["add_note", "list_notes"]

    @settings(
        max_examples=12,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(steps)
    def interleaving(sequence: list[Step]) -> None:
        async def main() -> None:
            for step in sequence:
                await _other(gateway.url, step)
                assert await _listings(gateway.url) == baseline, step

        anyio.run(main)

    interleaving()


def test_every_list_carries_private_cache_hints_bounded_by_the_watch(tmp_path: Path) -> None:
    site = deploy(tmp_path, time=False, extra="watch: {interval_s: 7.5}\n")
    got: dict[str, Any] = {}

    async def main() -> None:
        async with Client(site.url, auth=ACME) as client:
            for method, call in (
                ("tools/list", client.list_tools_mcp),
                ("resources/list", client.list_resources_mcp),
                ("prompts/list", client.list_prompts_mcp),
            ):
                result = await call()
                got[method] = (result.ttl_ms, result.cache_scope)

    try:
        anyio.run(main)
    finally:
        site.gateway.stop()
        site.notes.stop()
    assert set(got.values()) == {(7000, "private")}  # the watch's interval, whole seconds
    assert listing_ttl_s(0) == 0  # no watch: nothing would announce a change, so no caching
    assert listing_ttl_s(30, [None, 12_500, 60_000]) == 12  # an upstream's shorter TTL


def test_what_was_disclosed_to_a_principal_survives_a_restart_and_nothing_else_is_offered(
    tmp_path: Path,
) -> None:
    site = deploy(tmp_path, time=False, extra="disclosure: find_tools\n")
    config = tmp_path / "gateway.yaml"
    got: dict[str, Any] = {}

    async def first() -> None:
        async with Client(site.url, auth=ACME) as client:
            found = await client.call_tool("find_tools", {"need": NEEDS[0]})
            got["disclosed"] = sorted(t["name"] for t in found.structured_content["tools"])

    async def second(url: str) -> None:
        async with Client(url, auth=ACME) as acme, Client(url, auth=GLOBEX) as globex:
            got["listed"] = [t.name for t in await acme.list_tools()]
            for name in ("export_notes", "add_note", "list_notes"):
                result = await acme.call_tool(name, ARGUMENTS[name], raise_on_error=False)
                got[name] = json.loads(result.content[0].text)["code"] if result.is_error else "OK"
            other = await globex.call_tool("export_notes", {"fmt": "pdf"}, raise_on_error=False)
            got["globex"] = json.loads(other.content[0].text)["code"]

    restarted: Process | None = None
    try:
        anyio.run(first)
        site.gateway.stop()  # kill -9: nothing of the process is kept but the log
        args = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
        restarted = Process(args, child_env(), r"serving (http://\S+)")
        anyio.run(second, restarted.match.group(1))
    finally:
        if restarted is not None:
            restarted.stop()
        site.notes.stop()
    assert "export_notes" in got["disclosed"]
    assert got["listed"] == ["find_tools", "call_tool"]
    for name in ("export_notes", "add_note", "list_notes"):
        assert got[name] == ("OK" if name in got["disclosed"] else "TOOL_NOT_OFFERED"), name
    assert got["globex"] == "TOOL_NOT_OFFERED"
    holder = holder_id("acme", "acc-pro", frozenset(), finds=True)
    with open_log(str(tmp_path / "gateway.sqlite")) as log:
        decisions = [r for r in log.iter_action_decisions() if r["tenant"] == "acme"]
        finds = [t for t in log.iter_turns() if t["message_text"] == NEEDS[0]]
    assert {r["session_id"] for r in decisions} == {holder} == {t["conversation_id"] for t in finds}
    report = verify(str(tmp_path / "gateway.sqlite"))
    assert report.ok, report.summary()
