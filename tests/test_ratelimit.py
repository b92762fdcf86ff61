"""``maitred.ratelimit``: the ``rate_limits`` block and the limiter, on the in-memory store and
on a Redis address nothing listens on (a real refused connection)."""

from __future__ import annotations

import socket
from typing import Any

import pytest

pytest.importorskip("limits", reason="needs the serve or mcp extra: pip install 'maitred[serve]'")

from maitred.config_reader import ConfigReader
from maitred.errors import ConfigError
from maitred.ratelimit import (
    RATE_LIMIT_UNAVAILABLE,
    RATE_LIMITED,
    Caller,
    Limiter,
    RateLimitOptions,
    read_rate_limits,
    redacted,
)


def _options(**block: Any) -> RateLimitOptions:
    found = read_rate_limits(ConfigReader("test.yaml"), block)
    assert found is not None
    return found


def _codes(limiter: Limiter, calls: list[tuple[Caller, str | None]]) -> list[str]:
    out = []
    for caller, tool in calls:
        refusal = limiter.admit(caller, tool).refusal
        out.append("ok" if refusal is None else f"{refusal.code}:{refusal.scope}")
    return out


def test_the_block_reads_rates_strategy_and_store() -> None:
    assert read_rate_limits(ConfigReader("x"), None) is None
    o = _options(per_token="5/second; 100 per hour", per_tool={"send": "1 per 30 seconds"})
    assert o.per_token is not None and [str(i) for i in o.per_token.items] == [
        "5 per 1 second",
        "100 per 1 hour",
    ]
    assert o.per_tenant is None and o.scopes == ("per_token", "per_tool")
    assert (o.strategy, o.storage, o.shared) == ("moving-window", "memory", False)
    shared = _options(per_tenant="1/second", storage="redis://127.0.0.1:6379/2")
    assert shared.shared and shared.scopes == ("per_tenant",)
    assert _options(storage="memory://").storage == "memory"


def test_a_component_without_a_scope_refuses_it_as_an_unknown_field() -> None:
    with pytest.raises(ConfigError, match=r"field 'rate_limits\.per_token' is not a known field"):
        read_rate_limits(ConfigReader("x"), {"per_token": "1/second"}, scopes=("per_tenant",))


def test_a_password_never_reaches_a_message() -> None:
    assert redacted("redis://:hunter2@db:6379/0") == "redis://:***@db:6379/0"
    assert redacted("rediss://app:hunter2@db:6380") == "rediss://app:***@db:6380"
    assert redacted("redis://db:6379") == "redis://db:6379"
    with pytest.raises(ConfigError) as caught:
        read_rate_limits(ConfigReader("x"), {"storage": "mongodb://u:hunter2@db"})
    assert "hunter2" not in str(caught.value)


def test_the_first_exhausted_scope_refuses_and_the_later_ones_are_not_charged() -> None:
    limiter = Limiter(_options(per_token="2/minute", per_tenant="3/minute"), "t")
    a, b = Caller("a", "shop"), Caller("b", "shop")
    # a's third call is refused by a's own rate, so the tenant has room for b's first; b's
    # second has room in b's own rate, not in the tenant's
    assert _codes(limiter, [(a, None), (a, None), (a, None), (b, None), (b, None)]) == [
        "ok",
        "ok",
        f"{RATE_LIMITED}:per_token",
        "ok",
        f"{RATE_LIMITED}:per_tenant",
    ]


def test_a_tool_budget_is_each_tenants_own_and_per_token_without_a_tenant() -> None:
    limiter = Limiter(_options(per_tool={"send": "1/minute"}), "t")
    x, y = Caller("a", "x"), Caller("b", "y")
    same_tenant = Caller("c", "x")
    assert _codes(limiter, [(x, "send"), (y, "send"), (same_tenant, "send"), (x, "read")]) == [
        "ok",
        "ok",
        f"{RATE_LIMITED}:per_tool",
        "ok",
    ]
    p, q = Caller("launch:acc-1"), Caller("launch:acc-2")  # stdio: no tenant
    assert _codes(limiter, [(p, "send"), (q, "send"), (p, "send")]) == [
        "ok",
        "ok",
        f"{RATE_LIMITED}:per_tool",
    ]


@pytest.mark.parametrize("strategy", ["moving-window", "fixed-window", "sliding-window-counter"])
def test_every_strategy_says_how_long_to_wait(strategy: str) -> None:
    limiter = Limiter(_options(per_token="2 per 30 seconds", strategy=strategy), "t")
    caller = Caller("a")
    assert limiter.admit(caller).refusal is None and limiter.admit(caller).refusal is None
    refusal = limiter.admit(caller).refusal
    assert refusal is not None and refusal.retry_after_s is not None
    assert 1 <= refusal.retry_after_s <= 30
    hold = refusal.hold()
    assert (hold.code, hold.retry_after_s) == (RATE_LIMITED, refusal.retry_after_s)
    payload = refusal.rejection().to_json()
    assert payload["retry_after_s"] == refusal.retry_after_s and payload["executed"] is False


def test_a_store_that_refuses_connections_fails_closed_for_writes_only() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"redis://:hunter2@127.0.0.1:{port}/0"
    limiter = Limiter(_options(per_token="2/minute", storage=url, storage_timeout_s=0.5), "t")
    assert limiter.check_store() != ""
    caller = Caller("a")
    write = limiter.admit(caller, "send", mutates=True)
    assert write.refusal is not None and write.refusal.code == RATE_LIMIT_UNAVAILABLE
    assert write.refusal.retry_after_s is None and write.store_error
    assert "hunter2" not in write.refusal.reason and "hunter2" not in write.refusal.message
    reads = [limiter.admit(caller, "read", mutates=False) for _ in range(3)]
    assert all(r.store_error for r in reads)  # counted by this process alone, same rate
    assert [r.refusal.code if r.refusal else "ok" for r in reads] == ["ok", "ok", RATE_LIMITED]


class _Clock:
    """Wall and monotonic time that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now


@pytest.mark.parametrize("strategy", ["moving-window", "fixed-window", "sliding-window-counter"])
def test_the_memory_store_starts_no_thread_per_call_and_still_sweeps_what_expired(
    strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import limits.storage.memory

    import maitred.ratelimit as ratelimit

    clock = _Clock()
    monkeypatch.setattr(limits.storage.memory, "time", clock)
    monkeypatch.setattr(ratelimit, "time", clock)
    limiter = Limiter(_options(per_token="3/second", strategy=strategy), "mcp")
    store = limiter.store
    assert isinstance(store, limits.storage.memory.MemoryStorage)
    store.timer.join()  # the one timer the library starts as the store is made
    started: list[threading.Thread] = []
    start = threading.Thread.start

    def counted(thread: threading.Thread) -> None:
        started.append(thread)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counted)
    caller = Caller("tok-1")
    calls: list[tuple[Caller, str | None]] = [(caller, None)] * 4
    assert _codes(limiter, calls) == ["ok", "ok", "ok", f"{RATE_LIMITED}:per_token"]
    clock.now += 0.5
    assert _codes(limiter, calls[:1]) == [f"{RATE_LIMITED}:per_token"]  # still in the window
    clock.now += 1.6  # past the window, and past a sweep's interval
    assert _codes(limiter, calls) == ["ok", "ok", "ok", f"{RATE_LIMITED}:per_token"]
    assert started == []  # the library's own store starts a timer thread on a hit
    if strategy == "moving-window":  # the entries of the first window were swept
        [entries] = store.events.values()
        assert len(entries) == 3
