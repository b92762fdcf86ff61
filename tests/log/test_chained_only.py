"""Migration ``0012_chained_only`` (issue 35 item 1): once the chain has begun, the database
refuses a row that is not in it, on SQLite and on PostgreSQL, and ``verify`` reports one that
got past a guard switched off; what really predates the chain keeps its own status."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from maitred.actions.model import Decision, ToolCall
from maitred.log import DecisionLog, open_log, verify
from maitred.log.lookup import find_decision

from .builders import Opener, make_run, make_turn
from .test_chain import _write_old_log


def _logged(log: DecisionLog) -> None:
    log.begin_run(make_run())
    log.write(make_turn(0))
    log.write(make_turn(1))
    log.write_decisions([Decision(ToolCall("deploy-site", {}), "reject", "TOOL_NOT_OFFERED",
                                  now=1.0, session_id="conv-1", turn_id="run-1/m1")])  # fmt: skip
    log.flush()


def _copy(log: DecisionLog, table: str, **changes: Any) -> tuple[str, list[Any]]:
    """An INSERT of a copy of ``table``'s first row with ``changes`` (``?`` placeholders)."""
    cols = [r[0] for r in _columns(log, table)]
    row = dict(zip(cols, log.query(f"SELECT {', '.join(cols)} FROM {table}")[0], strict=True))
    row.update(changes)
    marks = ", ".join("?" for _ in row)
    return f"INSERT INTO {table} ({', '.join(row)}) VALUES ({marks})", list(row.values())


def _columns(log: DecisionLog, table: str) -> list[Any]:
    if log.dialect == "sqlite":
        return [(r[1],) for r in log.query(f"PRAGMA table_info({table})")]
    return log.query(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = "
        "current_schema() AND table_name = ? ORDER BY ordinal_position",
        (table,),
    )


FORGERIES = {
    "an unhashed run": ("runs", {"run_id": "run-9", "row_hash": None}),
    "a turn with no chain position": (
        "turns", {"turn_id": "run-1/m9", "chain_seq": None, "prev_hash": None}),
    "a turn past its chain's end, unlinked": ("turns", {"turn_id": "run-1/m9", "chain_seq": 3}),
    "an unlinked decision": ("action_decisions", {"decision_id": "forged-1"}),
    "a chain head naming no turn": ("chain_heads", {"chain_seq": 9}),
    "a census row": ("prechain", None),
}  # fmt: skip


@pytest.mark.parametrize("what", list(FORGERIES))
def test_the_database_refuses_an_unchained_row(opener: Opener, what: str) -> None:
    table, changes = FORGERIES[what]
    with opener() as log:
        _logged(log)
        if changes is None:
            sql, values = "INSERT INTO prechain (kind, key) VALUES (?, ?)", ["turn", "run-1/m0"]
        else:
            sql, values = _copy(log, table, **changes)
        with pytest.raises(Exception, match=r"chained rows only|is closed"):
            log.execute(sql, values)
        report = verify(log)
    assert report.ok, report.summary()


def test_a_pre_chain_turn_keeps_its_status_and_its_deletion_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _write_old_log(path, 2)
    with open_log(path) as log:  # migrates: 0012 records the two old turns and their run
        census = sorted(tuple(r) for r in log.query("SELECT kind, key FROM prechain"))
        assert census == [("run", "run-1"), ("turn", "run-1/m0"), ("turn", "run-1/m1")]
        found = find_decision(log, "run-1/m0")
        assert found.kind == "turn" and found.chain["status"] == "pre-chain"  # type: ignore[union-attr]
        assert log.committed_offer("", "conv-1") is None  # never an offer
    report = verify(path)
    assert report.ok and (report.legacy_runs, report.legacy_turns) == (1, 2), report.summary()
    conn = sqlite3.connect(path)
    with conn:
        for table in ("turns", "pairs"):
            conn.execute(f"DROP TRIGGER {table}_no_delete")
        conn.execute("DELETE FROM pairs WHERE turn_id = 'run-1/m1'")
        conn.execute("DELETE FROM turns WHERE turn_id = 'run-1/m1'")
    conn.close()
    kinds = [(m.kind, m.key) for m in verify(path).mismatches]
    assert ("unchained", "run-1/m1") in kinds  # before 0012, deleting it went unseen
