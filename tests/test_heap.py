"""The start-up heap frozen out of the cyclic collector (maitred._heap)."""

from __future__ import annotations

import gc

from maitred._heap import YOUNG_THRESHOLD, freeze_start_heap


def test_what_is_alive_at_start_is_frozen_and_later_garbage_is_still_collected() -> None:
    kept = [[i] for i in range(1000)]  # start-up state: alive when frozen
    thresholds = gc.get_threshold()
    try:
        frozen = freeze_start_heap()
        # another thread of the test process may free a frozen object meanwhile (reference
        # counting still frees them): the count can only have fallen, never risen
        assert frozen >= len(kept) and 0 < gc.get_freeze_count() <= frozen
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *thresholds[1:])  # older ones as they were
        cycle: list[object] = []
        cycle.append(cycle)  # made after the freeze: the collector still reaches it
        del cycle
        assert gc.collect() >= 1
    finally:
        gc.unfreeze()  # the rest of the test run is not a server
        gc.set_threshold(*thresholds)
    assert gc.get_freeze_count() == 0
