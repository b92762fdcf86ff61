"""Units of the pass-through: the Host/Origin rules, their config keys, and how a shared stdio
session's log messages are attributed (a test double stands for the client session here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from mcp.shared.exceptions import MCPError

from maitred.errors import ConfigError
from maitred.gateway.config import parse_config
from maitred.gateway.hosts import default_hosts, rules
from maitred.gateway.passthrough import Levels, Relay, Subscriptions, Target, refuses_client
from maitred.gateway.upstreams import LEGACY, Eras


def test_the_default_hosts_are_loopback_and_the_bound_address() -> None:
    local = rules("127.0.0.1", None, None)
    for host in ("localhost", "localhost:8765", "127.0.0.1:1", "[::1]:8765", "LOCALHOST"):
        assert local.host_allowed(host), host
    for host in ("evil.example", "evil.example:8765", "127.0.0.2.evil.example", ""):
        assert not local.host_allowed(host), host
    assert "10.0.0.7" in default_hosts("10.0.0.7")
    assert default_hosts("0.0.0.0") == default_hosts("::") == ("localhost", "127.0.0.1", "[::1]")


def test_listed_hosts_and_origins_replace_the_defaults() -> None:
    listed = rules("0.0.0.0", ["mcp.example.com", "gw.internal:9000"], ["https://app.example.com"])
    assert listed.host_allowed("mcp.example.com:443") and listed.host_allowed("MCP.example.com")
    assert listed.host_allowed("gw.internal:9000") and not listed.host_allowed("gw.internal:9001")
    assert not listed.host_allowed("localhost:8765")
    assert listed.origin_allowed("https://app.example.com:443")
    assert listed.origin_allowed("https://APP.example.com/")
    assert not listed.origin_allowed("http://app.example.com")  # another scheme, another origin
    assert not listed.origin_allowed("http://localhost:3000")
    assert rules("127.0.0.1", ["*"], ["*"]).host_allowed("anything.example")


def test_default_origins_are_loopback_ones() -> None:
    local = rules("127.0.0.1", None, None)
    assert local.origin_allowed("http://localhost:3000")
    assert local.origin_allowed("http://127.0.0.1") and local.origin_allowed("http://[::1]:5")
    assert not local.origin_allowed("http://evil.example")
    assert not local.origin_allowed("null")


def _config(server: str, tmp_path: Path) -> Any:
    data = {
        "state": "accounts.json",
        "server": server,
        "tokens": [{"token_sha256": "0" * 64, "tenant": "t", "account": "a"}],
        "upstreams": [{"name": "u", "url": "http://127.0.0.1:1/mcp"}],
    }
    return parse_config(data, "gateway.yaml", base=tmp_path)


def test_allowed_hosts_and_origins_are_checked_in_the_config(tmp_path: Path) -> None:
    good = _config({"allowed_hosts": ["mcp.example.com"], "allowed_origins": ["*"]}, tmp_path)
    assert good.server.allowed_hosts == ("mcp.example.com",)
    assert good.server.allowed_origins == ("*",)
    assert _config({}, tmp_path).server.allowed_hosts is None
    with pytest.raises(ConfigError, match=r"'server\.allowed_hosts' must be a list of host names"):
        _config({"allowed_hosts": "mcp.example.com"}, tmp_path)
    with pytest.raises(ConfigError, match=r"'server\.allowed_origins\[0\]' must be an origin"):
        _config({"allowed_origins": ["https://app.example.com/path"]}, tmp_path)


class FakeSession:
    """Stands for a client's ServerSession: records what it was sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any, Any]] = []

    async def send_log_message(
        self, level: str, data: Any, logger: str | None = None, related_request_id: Any = None
    ) -> None:
        self.sent.append((level, data, related_request_id))


def _target(key: str, session: FakeSession, request_id: int) -> Target:
    return Target(key, session, request_id)  # type: ignore[arg-type]


def _log(level: str = "info", data: Any = None) -> mt.LoggingMessageNotificationParams:
    return mt.LoggingMessageNotificationParams(level=level, data=data or {"n": 1})


def test_a_shared_session_s_log_goes_to_its_one_client_or_to_nobody() -> None:
    levels = Levels()
    relay = Relay("u", shared=True, levels=levels, subscriptions=Subscriptions())
    alice, bob = FakeSession(), FakeSession()

    async def main() -> None:
        relay.active = {1: _target("a", alice, 7), 2: _target("a", alice, 8)}
        await relay.on_log(None, _log(data={"x": [1]}))  # one client session in flight
        relay.active[3] = _target("b", bob, 9)
        await relay.on_log(None, _log())  # two: cannot be attributed
        relay.active = {}
        await relay.on_log(None, _log())  # none in flight

    anyio.run(main)
    assert alice.sent == [("info", {"x": [1]}, 8)]  # as sent, with its latest request
    assert bob.sent == [] and relay.unattributed == 2


def test_an_own_session_s_log_goes_to_its_request_filtered_by_the_client_s_level() -> None:
    levels = Levels()
    relay = Relay("u", shared=False, levels=levels, subscriptions=Subscriptions())
    alice = FakeSession()
    levels.set("a", "warning")

    async def main() -> None:
        mine = _target("a", alice, 3)
        await relay.on_log(mine, _log("info"))
        await relay.on_log(mine, _log("error", {"e": 1}))

    anyio.run(main)
    assert alice.sent == [("error", {"e": 1}, 3)]


def test_the_most_verbose_level_is_what_a_shared_session_is_told() -> None:
    levels = Levels(most=2)
    assert levels.most_verbose() is None
    levels.set("a", "warning")
    levels.set("b", "info")
    assert levels.most_verbose() == "info"
    levels.set("c", "error")  # "a" is dropped (at most 2 kept)
    assert levels.of("a") is None and levels.most_verbose() == "info"


def test_a_client_reaches_an_upstream_in_its_own_era_when_spoken_else_in_the_upstreams() -> None:
    both, old, new = Eras(), Eras(), Eras()
    for mode in (LEGACY, "2026-07-28"):
        both.learn(mode)
    old.learn(LEGACY)
    new.learn("2026-07-28")
    assert both.spoken == ["2026-07-28", LEGACY]  # newest first, whatever the order learnt
    assert both.reach("2026-07-28") == "2026-07-28" and both.reach(LEGACY) == LEGACY
    assert old.reach("2026-07-28") == LEGACY  # what a direct client's fallback would get
    assert new.reach(LEGACY) == "2026-07-28" and new.reach(None) == "2026-07-28"
    assert Eras().reach("2026-07-28") == "2026-07-28"  # not known yet: the client's own
    assert Eras().reach(None) == LEGACY


def test_only_a_missing_client_capability_is_the_upstreams_answer_to_pass_on() -> None:
    assert refuses_client(MCPError(mt.MISSING_REQUIRED_CLIENT_CAPABILITY, "needs sampling"))
    assert not refuses_client(MCPError(mt.INVALID_PARAMS, "bad"))
    assert not refuses_client(MCPError(mt.INTERNAL_ERROR, "down"))
    assert not refuses_client(OSError("connection refused"))
