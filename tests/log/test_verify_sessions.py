"""``verify`` and sessions: decision-turn links, and no false alarm while writers commit.

Defect 8 of issue 16: ``log verify`` run during live writes reported tampering that did not
happen, because it read the chain heads, the turns and the row counts at different moments.
It now reads everything in one snapshot transaction (SQLite: one read transaction;
PostgreSQL: REPEATABLE READ).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from maitred.actions.model import Decision, ToolCall
from maitred.log import DecisionLog
from maitred.log.verify import verify
from maitred.records import RunInfo

from .builders import Opener, make_turn

WRITER_TURNS_MAX = 20_000  # the writer stops when told; this only bounds a runaway
VERIFIES = 30  # before the fix, about half of these reported turns "added afterwards"


def _run(run_id: str, tenant: str) -> RunInfo:
    return RunInfo(run_id, 1_700_000_000.0, "c1:cat", 5, 1000, {}, tenant=tenant)


def _decision(n: int, *, tool: str = "deploy-site", **link: str) -> Decision:
    fields = {"session_id": "conv-1", "turn_id": f"run-1/m{n}", "tenant": "acme", **link}
    return Decision(ToolCall(tool, {}), "allow", now=1.0, mutates=False, **fields)


def test_verify_checks_each_decisions_turn(opener: Opener) -> None:
    with opener() as log:
        log.begin_run(_run("run-1", "acme"))
        log.write(make_turn(0))  # exposes deploy-site; offers add-domain visible but unexposed
        log.write_decisions(
            [
                _decision(0),  # fine
                Decision(ToolCall("add-domain", {}), "reject", "TOOL_NOT_OFFERED", now=1.0,
                         session_id="conv-1", turn_id="run-1/m0", tenant="acme"),  # fine: why not
                _decision(9),  # its turn is not in the log
                _decision(0, session_id="conv-2"),  # another session's turn
                _decision(0, tenant="acme-eu"),  # another tenant's turn
                _decision(0, tool="add-domain"),  # allowed, not offered
            ]
        )  # fmt: skip
        log.flush()
        report = verify(log)
    assert [m.kind for m in report.mismatches] == ["turn_link"] * 4
    details = " | ".join(m.detail for m in report.mismatches)
    assert "run-1/m9, which is not in the log" in details
    assert "session 'conv-2'" in details and "tenant 'acme-eu'" in details
    assert "allowed 'add-domain', which its turn run-1/m0 did not offer" in details


def test_the_tenant_is_stored_with_run_turn_and_decision_and_hashed(opener: Opener) -> None:
    with opener() as log:
        log.begin_run(_run("run-1", "acme"))
        log.write(make_turn(0))
        log.write_decisions([_decision(0)])
        log.flush()
        assert log.query("SELECT tenant FROM runs") == [("acme",)]
        assert log.query("SELECT tenant FROM turns") == [("acme",)]
        assert log.query("SELECT tenant FROM action_decisions") == [("acme",)]
        assert [r.tenant for r in log.runs()] == ["acme"]
        offer = log.committed_offer("acme", "conv-1")
        assert offer is not None and offer.offered == frozenset({"deploy-site"})
        assert log.committed_offer("acme-eu", "conv-1") is None  # exact, not a prefix
        assert log.committed_offer("acm", "conv-1") is None
        assert verify(log).ok


def _writer(log: DecisionLog, stop: threading.Event, written: list[int]) -> Callable[[], None]:
    def write() -> None:
        log.begin_run(_run("run-1", "acme"))
        for n in range(WRITER_TURNS_MAX):
            if stop.is_set():
                return
            log.write(make_turn(n))
            log.write_decisions([_decision(n)])
            log.flush()  # one commit per turn: as many moments to fall between as can be
            written.append(n)

    return write


@pytest.mark.slow
def test_verify_while_another_connection_commits_finds_nothing(opener: Opener) -> None:
    writer_log = opener()
    reader = opener(read_only=True)
    stop, written = threading.Event(), list[int]()
    thread = threading.Thread(target=_writer(writer_log, stop, written), daemon=True)
    thread.start()
    reports = []
    try:
        while len(written) < 3 and thread.is_alive():  # the run and its first turns are there
            stop.wait(0.001)
        for _ in range(VERIFIES):  # every one of them while the writer keeps committing
            reports.append(verify(reader))
    finally:
        stop.set()
        thread.join()
        writer_log.close()
    final = verify(reader)
    reader.close()
    bad = [r.summary() for r in reports if not r.ok]
    assert bad == [], bad[0]
    assert final.ok and final.turns == len(written) and final.decisions == len(written)
    assert len({r.turns for r in reports}) > 1  # the log grew between the verifies
