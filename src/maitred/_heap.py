"""The start-up heap of a long-lived server, kept out of the cyclic garbage collector's way.

A gateway or service process builds its whole catalog, contracts, compiled predicates, schemas
and library state (hundreds of thousands of objects) before it serves its first request, and
keeps nearly all of it until it stops. CPython's collector nevertheless walks every one of
those objects on each full (oldest-generation) collection, which a steady stream of requests
triggers every few seconds: measured in the gateway over HTTP, about 115 ms of the event loop's
time each, a stall that lands on whichever request allocates at that moment.

:func:`freeze_start_heap` is called once, after start-up and before serving: it collects what
start-up left behind, then moves every object still alive into the collector's permanent
generation (:func:`gc.freeze`), so full collections walk only what was made since. Objects
frozen this way are never collected; whatever of the start-up heap becomes garbage later (a
catalog the watch replaced, say) is freed by reference counting as usual, and only such of it
as sits in a reference cycle stays until the process ends, a bounded, one-time amount.

It also raises the youngest generation's threshold from CPython's 700 to
:data:`YOUNG_THRESHOLD`. A request through the gateway leaves a few hundred container objects
behind for a while (its pydantic models, stream objects, spans waiting for export), so at 700
a young collection ran every two or three requests, each walking objects that were about to
be freed by reference counting anyway; at 10,000 one runs every few dozen requests, most of
what it would have walked is gone by then, and the total work is less. Measured through the
gateway (``benchmarks/gateway_ab.py``, four runs): 0.11-0.25 ms less CPU and 0.13-0.29 ms
less p50 a call, p99 within the noise (+0.72, -1.07 ms).
"""

from __future__ import annotations

import gc

#: the youngest generation's collection threshold while serving (CPython's default is 700)
YOUNG_THRESHOLD = 10_000


def freeze_start_heap() -> int:
    """Collect, then freeze every object alive now (see the module); returns how many were
    frozen."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    return gc.get_freeze_count()
