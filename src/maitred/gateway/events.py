"""The events of the gateway's HTTP streams, kept for a client that reconnects (SEP-1699).

Every SSE stream the gateway serves starts with a priming event and carries an id on each
event, so a client whose stream broke reconnects with ``Last-Event-ID`` and gets the rest
(:class:`~maitred.gateway.channels.StreamingServer`). :class:`Events` is where those events
wait: in this process's memory, for :data:`EVENT_TTL_S` seconds, at most
:data:`MAX_STREAM_EVENTS` a stream and :data:`MAX_EVENTS` in all (the oldest go first). A
stream is resumed on the replica that served it.

It keeps the message objects themselves, as they were sent: storing an event is a dictionary
insert, not a serialization into a key-value store and back (FastMCP's own event store), which
on a handshake-era session was a fifth of what the gateway added to a forwarded call
(benchmarks/results/gateway.md). FastMCP still scopes each store to one transport session, so
one session's event id never replays another's stream.
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage

#: how long a stream's events are kept for a client that reconnects
EVENT_TTL_S = 60
#: the most events kept at once, over every stream
MAX_EVENTS = 50_000
#: the most events kept for one stream (its newest)
MAX_STREAM_EVENTS = 100


class Events(EventStore):
    """Stream events in memory, bounded by age, by stream and in all (see the module
    docstring); ``clock`` is monotonic seconds (a test's own clock)."""

    def __init__(
        self,
        ttl_s: float = EVENT_TTL_S,
        most: int = MAX_EVENTS,
        per_stream: int = MAX_STREAM_EVENTS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if most < 1 or per_stream < 1:
            raise ValueError("an event store keeps at least one event")
        self.ttl_s = ttl_s
        self.most = most
        self.per_stream = per_stream
        self._clock = clock
        #: event id -> (its stream, its message (None: a priming event), when it expires),
        #: oldest first
        self._events: OrderedDict[str, tuple[str, JSONRPCMessage | None, float]] = OrderedDict()
        self._streams: dict[str, deque[str]] = {}
        # unguessable across processes and restarts, ordered within one
        self._prefix = secrets.token_hex(8)
        self._serial = itertools.count(1)

    def __len__(self) -> int:
        return len(self._events)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        now = self._clock()
        event_id = f"{self._prefix}-{next(self._serial)}"
        self._events[event_id] = (stream_id, message, now + self.ttl_s)
        ids = self._streams.setdefault(stream_id, deque())
        ids.append(event_id)
        if len(ids) > self.per_stream:
            self._events.pop(ids.popleft(), None)
        self._trim(now)
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        """Send the events of ``last_event_id``'s stream that came after it (not priming
        events); its stream, or None when that event is not kept (unknown, expired, or
        pushed out)."""
        self._trim(self._clock())
        found = self._events.get(last_event_id)
        if found is None:
            return None
        stream_id = found[0]
        later = list(self._streams.get(stream_id, ()))
        for event_id in later[later.index(last_event_id) + 1 :]:
            entry = self._events.get(event_id)
            if entry is not None and entry[1] is not None:
                await send_callback(EventMessage(entry[1], event_id))
        return stream_id

    def _trim(self, now: float) -> None:
        """Drop the oldest events while there are too many or they have expired."""
        events = self._events
        while events:
            oldest = next(iter(events))
            stream_id, _, expires = events[oldest]
            if len(events) <= self.most and expires > now:
                return
            del events[oldest]
            ids = self._streams.get(stream_id)
            if ids and ids[0] == oldest:
                ids.popleft()
            if ids is not None and not ids:
                del self._streams[stream_id]
