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
"""

from __future__ import annotations

import gc


def freeze_start_heap() -> int:
    """Collect, then freeze every object alive now (see the module); returns how many were
    frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
