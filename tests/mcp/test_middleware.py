"""When the gate itself cannot answer, or the upstream cannot start."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import mcp_types as mt
import pytest
from fastmcp.server.middleware import MiddlewareContext
from fastmcp.tools import ToolResult

from maitred.actions.model import Decision, ToolCall
from maitred.errors import ConfigError, LogError
from maitred.gateway import parse_config
from maitred.gateway.build import open_gateway
from maitred.gateway.server import GateMiddleware


class _BrokenLogKeeper:
    """A gatekeeper whose decision log refuses the write."""

    finds = False
    lock = threading.Lock()
    in_process = False

    def lists_first(self, name: str, hold: Any = None) -> bool:
        return False

    def check(self, name: str, arguments: Any, *, hold: Any = None, **_: Any) -> Any:
        raise LogError("database is locked")


class _Engines:
    call_tool = ""  # disclosure: all

    def conversation(self, principal: Any, *, by_principal: bool = False) -> _BrokenLogKeeper:
        return _BrokenLogKeeper()


def test_a_call_the_gate_cannot_log_never_reaches_the_upstream() -> None:
    reached: list[str] = []

    async def upstream(context: MiddlewareContext[mt.CallToolRequestParams]) -> ToolResult:
        reached.append(context.message.name)
        return ToolResult(content="ran")

    async def main() -> ToolResult:
        middleware = GateMiddleware(_Engines(), account="acc-1")  # type: ignore[arg-type]
        call = mt.CallToolRequestParams(name="upgrade", arguments={"plan": "pro"})
        return await middleware.on_call_tool(MiddlewareContext(message=call), upstream)

    result = anyio.run(main)
    assert result.is_error and reached == []
    payload = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert payload["code"] == "GATE_UNAVAILABLE" and "database is locked" in payload["message"]


class _ThreadKeeper(_BrokenLogKeeper):
    """A gatekeeper that notes the thread each check ran on and refuses the call."""

    def __init__(self, in_process: bool, lists_first: bool) -> None:
        self.in_process = in_process
        self._lists_first = lists_first
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []

    def lists_first(self, name: str, hold: Any = None) -> bool:
        return self._lists_first

    def check(self, name: str, arguments: Any, *, hold: Any = None, **_: Any) -> Any:
        self.threads.append(threading.current_thread())
        return Decision(ToolCall(name, {}), "reject", "TOOL_NOT_OFFERED", decision_id="d-1")


@pytest.mark.parametrize(
    ("in_process", "lists_first", "busy", "on_loop"),
    [
        (True, False, False, True),  # memory/SQLite state and log, the tool already listed
        (False, False, False, False),  # PostgreSQL or a callable: may wait on a network
        (True, True, False, False),  # a listing afresh first: a turn over every tool
        (True, False, True, False),  # the session is busy on a worker thread
    ],
)
def test_a_check_is_decided_on_the_event_loop_only_when_it_cannot_wait_on_anything(
    in_process: bool, lists_first: bool, busy: bool, on_loop: bool
) -> None:
    keeper = _ThreadKeeper(in_process, lists_first)

    class GatewayEngines:
        call_tool = ""  # disclosure: all

        def conversation(self, principal: Any, **_: Any) -> _ThreadKeeper:
            return keeper

    async def upstream(context: MiddlewareContext[mt.CallToolRequestParams]) -> ToolResult:
        raise AssertionError("a refused call reached the upstream")

    async def main() -> threading.Thread:
        middleware = GateMiddleware(GatewayEngines(), account="acc-1")  # type: ignore[arg-type]
        call = mt.CallToolRequestParams(name="lookup", arguments={})
        if busy:  # another request of this session holds its lock on a worker thread
            keeper.lock.acquire()
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(middleware.on_call_tool, MiddlewareContext(message=call),
                                 upstream)  # fmt: skip
                await anyio.sleep(0.05)
                keeper.lock.release()
        else:
            await middleware.on_call_tool(MiddlewareContext(message=call), upstream)
        return threading.current_thread()

    loop_thread = anyio.run(main)
    assert len(keeper.threads) == 1
    assert (keeper.threads[0] is loop_thread) == on_loop


def test_a_required_upstream_that_cannot_start_is_named_before_anything_is_served(
    tmp_path: Path,
) -> None:
    """``required: true`` keeps the strict start (lazy starts: tests/mcp/test_lifecycle.py)."""
    config = parse_config(
        {
            "account": "acc-1",
            "state": "accounts.json",
            "upstreams": [
                {"name": "shop", "command": str(tmp_path / "no-such-server"), "required": True}
            ],
        },
        "gw.yaml",
        base=tmp_path,
    )
    with pytest.raises(ConfigError, match=r"upstream 'shop'.*no-such-server"):
        anyio.run(open_gateway, config)


def test_each_transport_asks_for_what_names_the_account_before_anything_starts(
    tmp_path: Path,
) -> None:
    upstream = {"name": "shop", "command": str(tmp_path / "never-started")}
    token = {"token_sha256": "ab" * 32, "tenant": "acme", "account": "acc-1"}
    http_only = parse_config(
        {"state": "accounts.json", "tokens": [token], "upstreams": [upstream]}, "gw.yaml"
    )
    with pytest.raises(ConfigError, match=r"'account' is required over stdio"):
        anyio.run(open_gateway, http_only)
    stdio_only = parse_config(
        {"account": "acc-1", "state": "accounts.json", "upstreams": [upstream]}, "gw.yaml"
    )
    with pytest.raises(ConfigError, match=r"over HTTP needs 'tokens'"):
        anyio.run(lambda: open_gateway(stdio_only, http=True))


class _NoKeeper:
    call_tool = ""  # disclosure: all

    def conversation(self, principal: Any, *, by_principal: bool = False) -> Any:
        raise AssertionError("no session may be opened without an identity")


def test_an_http_gateway_reached_without_a_token_lists_nothing_and_runs_nothing() -> None:
    """The transport's auth answers 401 first; the gate does not rely on it alone."""
    reached: list[str] = []

    async def upstream(context: Any) -> Any:
        reached.append("upstream")
        return ToolResult(content="ran")

    async def main() -> tuple[ToolResult, Any]:
        middleware = GateMiddleware(_NoKeeper(), account=None)  # type: ignore[arg-type]
        call = mt.CallToolRequestParams(name="upgrade", arguments={"plan": "pro"})
        result = await middleware.on_call_tool(MiddlewareContext(message=call), upstream)
        listed = await middleware.on_list_tools(
            MiddlewareContext(message=mt.ListToolsRequest()), upstream
        )
        return result, listed

    result, listed = anyio.run(main)
    assert listed == [] and reached == []
    payload = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert result.is_error and payload["code"] == "AUTH_REQUIRED"


def test_a_required_http_upstream_that_does_not_answer_at_start_is_named(
    tmp_path: Path,
) -> None:
    config = parse_config(
        {
            "account": "acc-1",
            "state": "accounts.json",
            "upstreams": [
                {
                    "name": "notes",
                    "url": "http://127.0.0.1:1/mcp",
                    "timeout_s": 10,
                    "required": True,
                }
            ],
        },
        "gw.yaml",
        base=tmp_path,
    )
    with pytest.raises(
        ConfigError, match=r"upstream 'notes': could not reach http://127\.0\.0\.1:1"
    ):
        anyio.run(open_gateway, config)


def test_a_failed_watch_pass_is_reported_and_the_watch_goes_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    class _Channel:  # a session's standing channel, as the SDK's ServerSession offers it
        def __init__(self) -> None:
            self.sent: list[Any] = []

        async def send_notification(self, notification: Any) -> None:
            self.sent.append(notification)

    class _FlakyEngines:
        """The first pass cannot write its listing turn; the next ones see a change."""

        def __init__(self) -> None:
            self.passes = 0

        def recheck(self, keepers: list[Any]) -> list[Any]:
            self.passes += 1
            if self.passes == 1:
                raise LogError("disk full")
            return list(keepers)

    engines, channel, keeper = _FlakyEngines(), _Channel(), SimpleNamespace(account="acc-1")
    middleware = GateMiddleware(engines, account="acc-1")  # type: ignore[arg-type]
    middleware.keepers[("launch",)] = keeper  # type: ignore[assignment]
    middleware.channels.standing[("launch",)] = channel  # type: ignore[assignment]

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(middleware.watch, 0.01)
            with anyio.fail_after(30):
                while len(channel.sent) < 2:
                    await anyio.sleep(0.01)
            tasks.cancel_scope.cancel()

    anyio.run(main)
    assert engines.passes >= 3  # the failed pass did not end the watch
    assert all(isinstance(n, mt.ToolListChangedNotification) for n in channel.sent)
    assert "state watch pass failed (LogError: disk full)" in capsys.readouterr().err
