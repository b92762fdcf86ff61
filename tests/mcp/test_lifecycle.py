"""Upstreams start lazily: one that does not answer at start is reported and tried again, the
gateway serves the others meanwhile, and its tools join when it answers -- or it is refused.

Every upstream is a real server process: the recording upstream of ``conftest.py`` over stdio,
``late_server.py`` over stdio (it exits while its ready file is missing, and lists one more
tool when asked), and ``notes_server.py`` over streamable HTTP on a port that nothing listens
on when the gateway starts. The in-memory tests run the gateway's background retries
(``watching``) beside a real ``fastmcp.Client``; the end-to-end test runs ``maitred mcp`` over
HTTP as a deployment does, and reads ``/readyz`` and ``/metrics``.
"""

from __future__ import annotations

import json
import re
import socket
import sqlite3
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as mt
import pytest
from fastmcp import Client
from tests.mcp.conftest import NOTES, UPSTREAM, Process, Site, child_env, http_client, sha256

from maitred.errors import ConfigError
from maitred.gateway import load_config
from maitred.gateway.build import gate_of, open_gateway, watching
from maitred.gateway.server import GateMiddleware
from maitred.log.base import open_log

LATE = Path(__file__).with_name("late_server.py")
WAIT_S = 60.0  # the most a test waits for the gateway to notice (a bound, never an assertion)
RETRY = "upstream_retry: {initial_s: 0.1, max_s: 0.4}\n"
TOKEN = "tok-lazy-acc1-93b1"


def _shop(site: Site, **env: str) -> str:
    """The recording upstream's entry (conftest's shop, with its sidecar)."""
    where = {"CALLS_FILE": str(site.calls), "ACCOUNTS": str(site.accounts), **env}
    return (
        f"  - name: shop\n    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(UPSTREAM))}]\n    env: {json.dumps(where)}\n"
        "    contracts: shop.maitred.yaml\n"
    )


def _shelf(site: Site, name: str = "shelf", *, ready: Path | None, extra: str = "") -> str:
    """``late_server.py``'s entry: not ready while ``ready`` does not exist."""
    env = {"CALLS_FILE": str(site.calls), **({"READY_FILE": str(ready)} if ready else {})}
    return (
        f"  - name: {name}\n    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(LATE))}]\n    env: {json.dumps(env)}\n{extra}"
    )


def _config(site: Site, upstreams: str, top: str = "", state: str = "accounts.json") -> Path:
    path = site.root / "lazy.yaml"
    path.write_text(
        f"account: acc-1\nstate: {state}\nlog: gateway.sqlite\n"
        + RETRY
        + top
        + "upstreams:\n"
        + upstreams,
        encoding="utf-8",
    )
    return path


Scenario = Callable[[Client[Any], GateMiddleware, list[Any]], Awaitable[None]]


def _serve(config: Path, scenario: Scenario) -> None:
    """Serve ``config``'s gateway in memory with its background retries running, and run
    ``scenario`` with a handshake-era client (it has a standing channel), the gateway's
    middleware and the notifications received so far."""

    async def main() -> None:
        server, engines = await open_gateway(load_config(config))
        seen: list[Any] = []

        async def on_message(message: Any) -> None:
            seen.append(message)

        try:
            async with (
                watching(server, 0),
                Client(server, mode="legacy", message_handler=on_message) as client,
            ):
                await scenario(client, gate_of(server), seen)
        finally:
            engines.close()

    anyio.run(main)


async def _until(check: Callable[[], bool]) -> None:
    with anyio.fail_after(WAIT_S):
        while not check():
            await anyio.sleep(0.05)


def _state(gate: GateMiddleware, name: str) -> dict[str, Any]:
    assert gate.upstreams is not None
    _, body = gate.upstreams.readiness()
    found: dict[str, Any] = next(u for u in body["upstreams"] if u["name"] == name)
    return found


def _changed(seen: list[Any]) -> int:
    return sum(isinstance(m, mt.ToolListChangedNotification) for m in seen)


def _code(result: Any) -> str:
    assert result.is_error, result
    return str(json.loads(result.content[0].text)["code"])


def test_a_stdio_upstream_that_fails_at_start_joins_when_it_answers_and_so_does_a_new_tool(
    site: Site, capfd: pytest.CaptureFixture[str]
) -> None:
    ready = site.root / "shelf.ready"
    config = _config(site, _shop(site) + _shelf(site, ready=ready))
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[Any]) -> None:
        got["down"] = _state(gate, "shelf")
        got["before"] = sorted(t.name for t in await client.list_tools())
        got["unknown"] = _code(
            await client.call_tool("read_shelf", {"shelf": "a"}, raise_on_error=False)
        )
        ready.write_text("up", encoding="utf-8")  # its database is up: the next launch serves
        await _until(lambda: _changed(seen) >= 1)
        got["joined"] = _state(gate, "shelf")
        got["after"] = sorted(t.name for t in await client.list_tools())
        got["shelf"] = (await client.call_tool("read_shelf", {"shelf": "a"})).content[0].text
        await client.call_tool("open_annex", {})  # from now on it lists read_annex too
        await client.list_tools()  # the listing in which the gateway sees the new tool
        await _until(lambda: _changed(seen) >= 2)
        got["grown"] = sorted(t.name for t in await client.list_tools())
        got["annex"] = (await client.call_tool("read_annex", {"room": "b"})).content[0].text

    _serve(config, scenario)
    err = capfd.readouterr().err
    assert "upstream 'shelf'" in err and "starts without it" in err
    assert got["down"]["state"] == "down" and "could not start" in got["down"]["last_error"]
    assert got["before"] == ["crash", "get_plan", "upgrade"]  # shop's, for acc-1 (free)
    assert got["unknown"] == "TOOL_UNKNOWN"
    assert got["joined"]["state"] == "serving" and got["joined"]["tools"] == 2
    assert got["joined"]["last_error"] is None
    assert got["after"] == ["crash", "get_plan", "open_annex", "read_shelf", "upgrade"]
    assert got["shelf"] == "shelf a: three books"
    assert "read_annex" in got["grown"] and got["annex"] == "annex b: maps"
    assert site.upstream_calls() == ["read_shelf", "open_annex", "read_annex"]
    with open_log(str(site.log)) as log:
        rows = sorted(log.iter_action_decisions(), key=lambda r: str(r["decided_at"]))
    assert [r["code"] for r in rows] == ["TOOL_UNKNOWN", "OK", "OK", "OK"]
    assert len({r["session_id"] for r in rows}) == 1  # one session, across both joins


def test_an_upstream_whose_command_always_fails_stays_down_and_the_others_serve(
    site: Site, capfd: pytest.CaptureFixture[str]
) -> None:
    broken = (
        f"  - name: broken\n    command: {json.dumps(sys.executable)}\n"
        "    args: [-c, 'import sys; sys.exit(3)']\n"
    )
    config = _config(site, _shop(site) + broken)
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[Any]) -> None:
        assert gate.upstreams is not None
        got["first"] = _state(gate, "broken")
        life = gate.upstreams.lives["broken"]
        await _until(lambda: life.failures >= 4)  # tried again, in the background
        got["later"] = _state(gate, "broken")
        got["ready"] = gate.upstreams.readiness()[0]
        got["tools"] = sorted(t.name for t in await client.list_tools())
        got["plan"] = (await client.call_tool("get_plan", {"account": "acc-1"})).content[0].text
        got["metrics"] = gate.metrics.render().decode()

    _serve(config, scenario)
    err = capfd.readouterr().err
    assert "upstream 'broken': could not start" in err and "starts without it" in err
    assert got["first"]["state"] == got["later"]["state"] == "down"
    assert got["later"]["since"] == got["first"]["since"]  # down since the start, still
    assert "check its command and args" in got["later"]["last_error"]
    assert got["ready"] is False
    assert got["tools"] == ["crash", "get_plan", "upgrade"] and got["plan"] == "free"
    assert 'maitred_gateway_upstream_up{upstream="broken"} 0.0' in got["metrics"]
    assert 'maitred_gateway_upstream_up{upstream="shop"} 1.0' in got["metrics"]


def test_a_required_upstream_that_does_not_answer_stops_the_start(site: Site) -> None:
    config = _config(
        site, _shop(site) + _shelf(site, ready=site.root / "never", extra="    required: true\n")
    )
    with pytest.raises(ConfigError, match=r"upstream 'shelf': could not start"):
        anyio.run(open_gateway, load_config(config))


@pytest.mark.parametrize(
    ("late", "why"),
    [
        pytest.param(
            "sidecar",
            r"shelf\.maitred\.yaml.*burn_shelf.*not defined",
            id="its sidecar names a tool it does not list",
        ),
        pytest.param(
            "twin",
            r"upstreams 'shelf' and 'twin' both list a tool named 'read_shelf'",
            id="it lists a tool name another upstream serves",
        ),
        pytest.param(
            "state",
            r"the upstreams' contracts: .*account\.locked",
            id="its predicate reads a column the state table lacks",
        ),
    ],
)
def test_a_late_upstream_that_does_not_fit_is_refused_and_the_gateway_serves_on(
    site: Site, capfd: pytest.CaptureFixture[str], late: str, why: str
) -> None:
    ready = site.root / "late.ready"
    if late == "sidecar":
        (site.root / "shelf.maitred.yaml").write_text(
            "tools:\n  burn_shelf:\n    mutates: true\n", encoding="utf-8"
        )
        ups = _shelf(site, ready=ready, extra="    contracts: shelf.maitred.yaml\n")
        kept_out = "shelf"
    elif late == "twin":  # the same server twice: the second one, late, lists the first's names
        ups = _shelf(site, ready=None) + _shelf(site, "twin", ready=ready)
        kept_out = "twin"
    else:  # SQL state, typed by its columns: the late sidecar reads one that does not exist
        (site.root / "shelf.maitred.yaml").write_text(
            "tools:\n  read_shelf:\n    exit_predicates:\n"
            "      - {name: locked, expr: account.locked, reads: [account.locked]}\n",
            encoding="utf-8",
        )
        ups = _shelf(site, ready=ready, extra="    contracts: shelf.maitred.yaml\n")
        kept_out = "shelf"
    state = "accounts.json"
    if late == "state":
        with sqlite3.connect(site.root / "state.db") as conn:
            conn.execute("CREATE TABLE accounts (account_id TEXT PRIMARY KEY, plan TEXT)")
            conn.execute("INSERT INTO accounts VALUES ('acc-1', 'free')")
        state = "sqlite:///state.db"
    top = "tables: {account: accounts}\n" if late == "state" else ""
    config = _config(site, _shop(site) + ups, top=top, state=state)
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[Any]) -> None:
        got["before"] = sorted(t.name for t in await client.list_tools())
        ready.write_text("up", encoding="utf-8")
        await _until(lambda: _state(gate, kept_out)["state"] == "refused")
        got["refused"] = _state(gate, kept_out)
        got["ready"] = gate.upstreams.readiness()[0] if gate.upstreams else None
        got["after"] = sorted(t.name for t in await client.list_tools())
        got["call"] = await client.call_tool("read_shelf", {"shelf": "a"}, raise_on_error=False)
        got["plan"] = (await client.call_tool("get_plan", {"account": "acc-1"})).content[0].text

    _serve(config, scenario)
    err = capfd.readouterr().err
    assert f"upstream {kept_out!r} answered, but its tools cannot join" in err

    assert re.search(why, got["refused"]["last_error"]), got["refused"]
    assert got["refused"]["tools"] == 0 and got["ready"] is False
    assert got["after"] == got["before"]  # nothing of it is served
    assert got["plan"] == "free"
    if late == "twin":  # the name is the first shelf's, which serves it
        assert not got["call"].is_error
    else:
        assert _code(got["call"]) == "TOOL_UNKNOWN"
        assert "read_shelf" not in site.upstream_calls()


def test_with_no_upstream_answering_the_gateway_starts_empty_and_fills_in(
    site: Site,
) -> None:
    ready = site.root / "shelf.ready"
    config = _config(site, _shelf(site, ready=ready), top="disclosure: find_tools\n")
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any], gate: GateMiddleware, seen: list[Any]) -> None:
        got["ready"] = gate.upstreams.readiness()[0] if gate.upstreams else None
        got["before"] = [t.name for t in await client.list_tools()]
        need = {"need": "which books are on the shelf"}
        got["nothing"] = (await client.call_tool("find_tools", need)).structured_content
        ready.write_text("up", encoding="utf-8")
        await _until(lambda: _state(gate, "shelf")["state"] == "serving")
        got["found"] = (await client.call_tool("find_tools", need)).structured_content
        got["after"] = sorted(t.name for t in await client.list_tools())
        got["read"] = await client.call_tool("read_shelf", {"shelf": "a"}, raise_on_error=False)

    _serve(config, scenario)
    assert got["ready"] is False and got["before"] == ["find_tools", "call_tool"]
    assert got["nothing"]["tools"] == [] and "hint" in got["nothing"]
    assert "read_shelf" in [t["name"] for t in got["found"]["tools"]]
    assert got["after"] == ["call_tool", "find_tools"]  # disclosed in the answer, not listed
    assert not got["read"].is_error, got["read"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


NOTES_SIDECAR = """\
tools:
  export_notes:
    exit_predicates:
      - name: free_plan
        expr: account.plan == "free"
        reads: [account.plan]
  add_note:
    mutates: true
"""


@pytest.mark.slow
def test_an_http_upstream_that_listens_only_later_joins_a_running_http_gateway(
    site: Site,
) -> None:
    """The gateway starts without the notes server, serves the shop, says so on /readyz; when
    the notes server starts listening, its tools join, a session is told, a call in flight
    across the swap completes, and /readyz turns 200."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    port = _free_port()
    release = site.root / "get_plan.release"  # get_plan answers once this exists
    (site.root / "notes.maitred.yaml").write_text(NOTES_SIDECAR, encoding="utf-8")
    notes = (
        f"  - {{name: notes, url: 'http://127.0.0.1:{port}/mcp', "
        "contracts: notes.maitred.yaml, timeout_s: 20}\n"
    )
    config = site.root / "lazy-http.yaml"
    config.write_text(
        "state: accounts.json\nlog: gateway.sqlite\nserver: {host: 127.0.0.1, port: 0}\n"
        + RETRY
        + f"tokens:\n  - {{token_sha256: {sha256(TOKEN)}, tenant: shop, account: acc-1}}\n"
        + "upstreams:\n"
        # the held call waits for the release, not for the machine: no timeout a loaded
        # machine could reach while the notes server joins
        + _shop(site, GET_PLAN_UNTIL=str(release)).replace(
            "    contracts: shop.maitred.yaml\n",
            "    contracts: shop.maitred.yaml\n    timeout_s: 3600\n",
        )
        + notes,
        encoding="utf-8",
    )
    args = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
    gateway = Process(args, child_env(), r"serving (http://\S+)")
    url = gateway.match.group(1)
    base = url.rsplit("/", 1)[0]
    server: list[Process] = []
    got: dict[str, Any] = {}
    seen: list[Any] = []

    async def on_message(message: Any) -> None:
        seen.append(message)

    def readyz() -> tuple[int, dict[str, Any]]:
        response = httpx2.get(f"{base}/readyz")
        return response.status_code, response.json()

    async def slow_call(into: dict[str, Any]) -> None:
        async with Client(url, auth=TOKEN) as other:  # a sessionless client of the same token
            into["result"] = await other.call_tool("get_plan", {"account": "acc-1"})

    async def main() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            http_client(headers=headers) as http,
            streamable_http_client(url, http_client=http) as streams,
            ClientSession(streams[0], streams[1], message_handler=on_message) as session,
            anyio.create_task_group() as tasks,
        ):
            await session.initialize()  # handshake-era: its GET stream is its way out
            got["ready_before"] = await anyio.to_thread.run_sync(readyz)
            got["before"] = sorted(t.name for t in (await session.list_tools()).tools)
            got["unknown"] = await session.call_tool("add_note", {"text": "early"})
            in_flight: dict[str, Any] = {}
            tasks.start_soon(slow_call, in_flight)
            await _until(lambda: "get_plan" in site.upstream_calls())  # it is upstream now
            started = await anyio.to_thread.run_sync(
                lambda: Process(
                    [sys.executable, str(NOTES), str(port)],
                    {**child_env(), "CALLS_FILE": str(site.calls)},
                    r"PORT=(\d+)",
                )
            )
            server.append(started)
            await _until(lambda: _changed(seen) >= 1)
            got["swapped_in_flight"] = "result" not in in_flight  # the call outlived the swap
            got["after"] = sorted(t.name for t in (await session.list_tools()).tools)
            got["note"] = await session.call_tool("add_note", {"text": "late"})
            release.write_text("go", encoding="utf-8")
            await _until(lambda: "result" in in_flight)
            got["slow"] = in_flight["result"]
            got["ready_after"] = await anyio.to_thread.run_sync(readyz)
            got["metrics"] = (await http.get(f"{base}/metrics")).text

    try:
        anyio.run(main)
    except BaseException:  # what the gateway and the newcomer said, to tell why
        said = [gateway.said(), *(each.said() for each in server)]
        print("gateway and notes server output:", *said, sep="\n", file=sys.stderr)
        raise
    finally:
        gateway.stop()
        for each in server:
            each.stop()
    gateway.said()
    assert any(
        "upstream 'notes'" in line and "starts without it" in line for line in gateway.output
    )
    status, body = got["ready_before"]
    assert status == 503 and body["status"] == "not_ready"
    states = {u["name"]: u for u in body["upstreams"]}
    assert states["shop"]["state"] == "serving" and states["shop"]["tools"] == 4
    assert (
        states["notes"]["state"] == "down" and f"127.0.0.1:{port}" in states["notes"]["last_error"]
    )
    assert got["before"] == ["crash", "get_plan", "upgrade"]
    assert (
        got["unknown"].is_error
        and json.loads(got["unknown"].content[0].text)["code"] == "TOOL_UNKNOWN"
    )
    assert got["after"] == [
        "add_note",
        "crash",
        "get_plan",
        "list_notes",
        "upgrade",
    ]  # no export_notes: free plan
    assert not got["note"].is_error and got["note"].structured_content == {"id": 1, "text": "late"}
    assert got["swapped_in_flight"] is True
    assert not got["slow"].is_error and got["slow"].content[0].text == "free"
    status, body = got["ready_after"]
    assert status == 200 and body["status"] == "ready"
    assert {u["name"]: u["state"] for u in body["upstreams"]} == {
        "shop": "serving",
        "notes": "serving",
    }
    assert 'maitred_gateway_upstream_up{upstream="notes"} 1.0' in got["metrics"]
    assert [c for c in site.upstream_calls() if c == "add_note"] == ["add_note"]  # the late one
    with open_log(str(site.log)) as log:
        rows = [r for r in log.iter_action_decisions() if r["tool"] == "add_note"]
    assert sorted(r["code"] for r in rows) == ["OK", "TOOL_UNKNOWN"]
    assert len({r["session_id"] for r in rows}) == 1  # the same maitred session before and after


def test_the_wait_between_tries_doubles_from_initial_s_up_to_max_s() -> None:
    from maitred.gateway.config import Upstream
    from maitred.gateway.lifecycle import UpstreamLife

    life = UpstreamLife(Upstream("notes", url="http://127.0.0.1:1/mcp"))
    waits = [life.failed(100.0, 0.5, 3.0) for _ in range(6)]
    assert waits == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]
    assert life.wanted and life.next_at == 103.0
    life.answered(2)
    assert (life.failures, life.wanted, life.tools) == (0, False, 2)
    assert life.failed(200.0, 0.5, 3.0) == 0.5  # a new run of failures starts over
    entry = life.to_json()
    assert entry["name"] == "notes" and entry["state"] == "starting" and entry["tools"] == 2
    assert entry["since"].endswith("Z") and entry["last_error"] is None
