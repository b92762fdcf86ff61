"""The gateway's stream events (:mod:`maitred.gateway.events`): what a reconnecting client is
sent again, and what the bounds drop. End to end, the conformance suite's resumption checks
run through the gateway (tests/mcp/test_conformance.py)."""

from __future__ import annotations

import anyio
import mcp_types as mt
import pytest
from mcp.server.streamable_http import EventMessage

from maitred.gateway.events import Events


def _note(n: int) -> mt.JSONRPCNotification:
    return mt.JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"n": n})


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _replay(events: Events, last: str) -> tuple[str | None, list[EventMessage]]:
    sent: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        sent.append(event)

    async def run() -> str | None:
        return await events.replay_events_after(last, send)

    return anyio.run(run), sent


def _store(events: Events, stream: str, message: mt.JSONRPCMessage | None) -> str:
    async def run() -> str:
        return await events.store_event(stream, message)

    return anyio.run(run)


def test_a_reconnecting_client_gets_what_came_after_its_last_event_of_that_stream() -> None:
    events = Events()
    priming = _store(events, "a", None)
    first = _store(events, "a", _note(1))
    _store(events, "b", _note(99))  # another stream's event is never replayed here
    second = _store(events, "a", _note(2))
    stream, sent = _replay(events, priming)
    assert stream == "a"
    assert [(e.event_id, e.message) for e in sent] == [(first, _note(1)), (second, _note(2))]
    assert _replay(events, second) == ("a", [])
    assert _replay(events, "no-such-event") == (None, [])


def test_ids_are_unique_and_unguessable_across_stores() -> None:
    one, other = Events(), Events()
    ids = {_store(one, "a", None) for _ in range(50)}
    assert len(ids) == 50
    assert _store(other, "a", None).split("-")[0] != next(iter(ids)).split("-")[0]


def test_expired_events_are_not_replayed() -> None:
    clock = Clock()
    events = Events(ttl_s=60, clock=clock)
    old = _store(events, "a", _note(1))
    clock.now = 30
    _store(events, "a", _note(2))
    clock.now = 61  # the first has expired, the second has not
    assert _replay(events, old) == (None, [])
    assert len(events) == 1


def test_the_bounds_drop_the_oldest_first() -> None:
    events = Events(most=3, per_stream=2)
    a1 = _store(events, "a", _note(1))
    a2 = _store(events, "a", _note(2))
    _store(events, "a", _note(3))  # a stream keeps its newest two
    assert _replay(events, a1) == (None, [])
    assert [e.message for e in _replay(events, a2)[1]] == [_note(3)]
    _store(events, "b", _note(4))
    _store(events, "c", _note(5))  # four kept is one too many: a's oldest kept one goes
    assert _replay(events, a2) == (None, [])
    assert len(events) == 3


def test_a_store_keeps_at_least_one_event() -> None:
    with pytest.raises(ValueError, match="at least one"):
        Events(most=0)
