"""`maitred log verify`: 0 on an untouched log, 1 once a row was edited behind its back."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from .conftest import CallMain, Invoke, RoutedLog, copy_log, ok


def _edit(log: Path, table: str, sql: str) -> None:
    """Drop ``table``'s append-only UPDATE trigger (migration 0003), then run ``sql``."""
    conn = sqlite3.connect(log)
    with conn:
        conn.execute(f"DROP TRIGGER {table}_no_update")
        changed = conn.execute(sql).rowcount
    conn.close()
    assert changed == 1


def test_verify_fresh_log_exits_0(invoke: Invoke, routed_log: RoutedLog):
    result = ok(invoke("log", "verify", "--log", str(routed_log.log), "--json"))
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert report["mismatch_count"] == 0
    assert report["turns"] == routed_log.n_good
    assert report["pairs"] == routed_log.funnel["candidate_pairs"]
    text = ok(invoke("log", "verify", "--log", str(routed_log.log)))
    assert text.stdout.startswith("OK:")


def test_the_log_refuses_updates_while_its_triggers_stand(routed_log: RoutedLog, tmp_path: Path):
    log = copy_log(routed_log.log, tmp_path / "copy.sqlite")
    conn = sqlite3.connect(log)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE turns SET message_text = 'x'")
    conn.close()


@pytest.mark.parametrize(
    ("table", "edit"),
    [
        ("turns", "UPDATE turns SET message_text = 'tampered' WHERE turn_id = ({first})"),
        ("turns", "UPDATE turns SET n_exposed = n_exposed + 1 WHERE turn_id = ({first})"),
        (
            "pairs",
            "UPDATE pairs SET visible = 1 - visible "
            "WHERE rowid = (SELECT MIN(rowid) FROM pairs WHERE turn_id = ({first}))",
        ),
    ],
    ids=["turn-text", "turn-count", "pair-visibility"],
)
def test_verify_after_tampering_exits_1_naming_the_turn(
    invoke: Invoke, routed_log: RoutedLog, tmp_path: Path, table: str, edit: str
):
    log = copy_log(routed_log.log, tmp_path / "tampered.sqlite")
    first = "SELECT MIN(turn_id) FROM pairs"  # a turn that has pairs
    turn_id = sqlite3.connect(log).execute(first).fetchone()[0]
    _edit(log, table, edit.format(first=first))
    result = invoke("log", "verify", "--log", str(log), "--json")
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is False
    # the edited row, and the trigger dropped to make the edit possible
    assert sorted(m["kind"] for m in report["mismatches"]) == ["row_hash", "trigger"]
    assert turn_id in json.dumps(report["mismatches"])
    assert f"{table}_no_update" in json.dumps(report["mismatches"])
    text = invoke("log", "verify", "--log", str(log))
    assert text.exit_code == 1
    assert text.stdout.startswith("FAILED:")


def test_verify_missing_log_is_exit_2_and_creates_nothing(call_main: CallMain, tmp_path: Path):
    missing = tmp_path / "no-log.sqlite"
    code, _, err = call_main("log", "verify", "--log", str(missing))
    assert code == 2
    assert err.startswith(f"error: no decision log at {missing}")
    assert "Traceback" not in err
    assert not missing.exists()
