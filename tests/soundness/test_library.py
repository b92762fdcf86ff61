"""The promise, held against the library (:class:`maitred.Maitred` over a real SQLite log) by
random interleavings (see :mod:`tests.soundness.machine` for the rules and the invariants)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from maitred import Maitred
from maitred.errors import UnstorableError
from maitred.log import verify

from . import spec
from .conftest import SOUNDNESS, examples
from .harness import Store
from .machine import OPTIONS, CoreMachine, FullMachine, OddMachine


def test_the_core_promise_holds_under_random_interleavings() -> None:
    """Typed values, existing accounts, a store that answers: turns, calls, failed commits,
    restarts and reloads never allow what the reference model refuses, and the log agrees."""
    run_state_machine_as_test(CoreMachine, settings=settings(SOUNDNESS, max_examples=examples()))


def test_the_whole_promise_holds_under_random_interleavings() -> None:
    """The same machine with every input the promise covers: SQLite-style 0/1 and junk values,
    accounts that do not exist, a store that goes down, calls to tools that do not exist."""
    run_state_machine_as_test(FullMachine, settings=settings(SOUNDNESS, max_examples=examples()))


@pytest.mark.slow
@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_odd_bytes_are_refused_alone_or_stored_exactly(
    request: pytest.FixtureRequest, backend: str
) -> None:
    """Issue 27: NULs, lone surrogates, 4-byte characters, long text and ids in turns and calls
    (text, session, account, message and call ids, tool names, arguments) among the ordinary
    interleavings, on SQLite and on PostgreSQL: an unstorable input is an UnstorableError and
    leaves no row; everything else is stored exactly; every other decision stays on record and
    ``log verify`` passes."""
    server = request.getfixturevalue("pg_server") if backend == "postgres" else None
    seen: Counter[str] = Counter()
    machine = type("OddOn" + backend.title(), (OddMachine,), {"postgres": server, "seen": seen})
    run_state_machine_as_test(machine, settings=settings(SOUNDNESS, max_examples=examples()))
    wanted = {
        "turn refused",
        "turn stored",
        "4-byte characters stored",
        "call refused",
        "call stored",
    }
    assert wanted <= set(seen), f"the odd rules never reached {wanted - set(seen)}: {seen}"


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
@pytest.mark.parametrize("account", ["acc-\udfff", "acc-\x00", "a" * 800])
def test_an_account_id_no_log_can_hold_is_refused_before_any_work(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str, account: str
) -> None:
    """Found by the odd machine: an account id holding a lone surrogate crashed a turn and a
    call check with a bare UnicodeEncodeError (its snapshot could not be hashed) instead of
    refusing it. Now any id no log can store is an UnstorableError naming it, nothing of it is
    logged, and the next caller is answered."""
    log = str(tmp_path / "log.sqlite")
    if backend == "postgres":
        server, schema = request.getfixturevalue("pg_schema")
        log = f"{server}?schema={schema}"
    world = spec.World()
    world.roots["acc-a"] = {"account"}
    world.accounts["acc-a"] = {"account.plan": "pro"}
    tools = spec.write_catalog(tmp_path / "catalog", SHOP)
    with Maitred.open([str(tools)], Store(world), OPTIONS, log=log, cache_dir=tmp_path / "c") as m:
        bad = m.session(account, id="s-bad")
        with pytest.raises(UnstorableError, match="account_id"):
            m.turn(spec.message_for(SHOP), session=bad)
        with pytest.raises(UnstorableError, match="account_id"):
            m.check({"name": "export_ledger", "arguments": {"n": 0}}, session=bad)
        good = m.session("acc-a", id="s-good")
        turn = m.turn(spec.message_for(SHOP), session=good)
        assert m.check({"name": "export_ledger", "arguments": {"n": 0}}, session=good).allow
        assert m.log is not None
        assert [t["turn_id"] for t in m.log.iter_turns()] == [turn.turn_id]
        assert verify(m.log).ok


SHOP = spec.CatalogSpec((spec.ToolSpec("export_ledger", False, ()),))
