"""verify: recomputed hashes and counts catch edits made behind the log's back."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from maitred._canonical import content_hash
from maitred.errors import VerifyError
from maitred.log import open_log, verify
from maitred.log._sql import SqlLog

from .builders import Opener, make_run, make_snapshot, make_turn


def _write_log(path: Path, n: int = 4) -> None:
    with open_log(path) as log:
        log.begin_run(make_run())
        for i in range(n):
            log.write(make_turn(i, snapshot=make_snapshot(plan="free" if i % 2 else "pro")))


def _tamper(path: Path, *statements: str) -> None:
    """Edit the SQLite file directly: the append-only triggers dropped, then put back."""
    conn = sqlite3.connect(path)
    with conn:
        triggers = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
        saved = triggers.fetchall()
        for name, _ in saved:
            conn.execute(f"DROP TRIGGER {name}")
        for statement in statements:
            conn.execute(statement)
        for _, sql in saved:
            conn.execute(sql)
    conn.close()


def test_a_clean_log_verifies(opener: Opener) -> None:
    with opener() as log:
        log.begin_run(make_run())
        for i in range(5):
            log.write(make_turn(i))
    with opener(read_only=True) as log:
        report = verify(log)
    assert report.ok and report.mismatches == ()
    assert (report.turns, report.pairs, report.snapshots) == (5, 15, 1)
    assert report.summary() == (
        f"OK: 1 runs, 5 turns, 15 pairs, 1 snapshots, 0 action decisions, {report.triggers} "
        "triggers checked; 0 mismatch(es)"
    )
    assert report.triggers >= 16  # every guard of every table, on either backend
    assert [(h.run_id, h.turns) for h in report.heads] == [("run-1", 5)]
    assert report.to_json()["ok"] is True
    report.raise_for_mismatch()


def test_a_tampered_turn_row_is_reported_with_its_id(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    _write_log(path)
    _tamper(path, "UPDATE turns SET message_text = 'edited' WHERE turn_id = 'run-1/m2'")
    report = verify(path)
    assert not report.ok
    assert [(m.kind, m.key) for m in report.mismatches] == [("row_hash", "run-1/m2")]
    with pytest.raises(VerifyError, match=r"1 mismatch.*row_hash run-1/m2"):
        report.raise_for_mismatch()


def test_a_tampered_pair_breaks_its_turn_hash(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    _write_log(path)
    _tamper(
        path,
        "UPDATE pairs SET visible = 1 WHERE turn_id = 'run-1/m1' AND skill = 'upgrade-plan'",
        "DELETE FROM pairs WHERE turn_id = 'run-1/m3' AND skill = 'add-domain'",
    )
    report = verify(path)
    assert sorted((m.kind, m.key) for m in report.mismatches) == [
        ("pair_count", "run-1/m3"),
        ("row_hash", "run-1/m1"),
        ("row_hash", "run-1/m3"),
    ]


def test_a_tampered_snapshot_is_reported_with_its_hash(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    _write_log(path)
    target = make_snapshot(plan="pro")
    data = target.to_json(with_hash=False)
    data["values"]["account.plan"] = "enterprise"
    edited = json.dumps(data).replace("'", "''")
    _tamper(path, f"UPDATE snapshots SET json = '{edited}' WHERE hash = '{target.hash}'")
    report = verify(path)
    assert [(m.kind, m.key) for m in report.mismatches] == [("snapshot_hash", target.hash)]
    assert content_hash(data) in report.mismatches[0].detail


def test_a_missing_snapshot_and_the_mismatch_limit(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    _write_log(path, n=6)
    _tamper(path, "DELETE FROM snapshots", "UPDATE turns SET depth_rule = 'x'")
    report = verify(path, limit=3)
    assert report.mismatch_count == 12  # 6 row hashes + 6 dangling snapshot references
    kinds = sorted(m.kind for m in report.mismatches)  # the first 3 of each kind
    assert kinds == ["missing_snapshot"] * 3 + ["row_hash"] * 3
    assert report.summary().startswith("FAILED: 1 runs, 6 turns, 18 pairs, 0 snapshots, 0 act")
    assert "checked; 12 mismatch(es)" in report.summary()
    assert report.summary().endswith("... and 6 more")
    data = report.to_json()
    json.dumps(data)
    assert (data["ok"], len(data["mismatches"])) == (False, 6)


@pytest.mark.postgres
def test_verify_catches_a_tampered_turn_in_postgres(pg_schema: tuple[str, str]) -> None:
    url, schema = pg_schema
    with open_log(url, schema=schema) as log:
        log.begin_run(make_run())
        for i in range(3):
            log.write(make_turn(i))
        log.flush()
        assert verify(log).ok
        assert isinstance(log, SqlLog)
        log.execute("ALTER TABLE turns DISABLE TRIGGER turns_append_only")
        log.execute("UPDATE turns SET menu_tokens = 1 WHERE turn_id = 'run-1/m1'")
        log.execute("ALTER TABLE turns ENABLE TRIGGER turns_append_only")
    report = verify(f"{url}?schema={schema}")
    assert [(m.kind, m.key) for m in report.mismatches] == [("row_hash", "run-1/m1")]
