"""The promise, held against the library (:class:`maitred.Maitred` over a real SQLite log) by
random interleavings (see :mod:`tests.soundness.machine` for the rules and the invariants)."""

from __future__ import annotations

from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from .conftest import SOUNDNESS, examples
from .machine import CoreMachine, FullMachine


def test_the_core_promise_holds_under_random_interleavings() -> None:
    """Typed values, existing accounts, a store that answers: turns, calls, failed commits,
    restarts and reloads never allow what the reference model refuses, and the log agrees."""
    run_state_machine_as_test(CoreMachine, settings=settings(SOUNDNESS, max_examples=examples()))


def test_the_whole_promise_holds_under_random_interleavings() -> None:
    """The same machine with every input the promise covers: SQLite-style 0/1 and junk values,
    accounts that do not exist, a store that goes down, calls to tools that do not exist."""
    run_state_machine_as_test(FullMachine, settings=settings(SOUNDNESS, max_examples=examples()))
