"""The hash chain (migration 0008): old logs keep verifying, a run has one writer."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from maitred._canonical import content_hash
from maitred.errors import LogError
from maitred.log import MIGRATIONS, open_log, verify
from maitred.log.migrations import migrate
from maitred.log.rows import (
    CHAIN_COLUMNS,
    PAIR_COLUMNS,
    SNAPSHOT_COLUMNS,
    TURN_COLUMNS,
    encode_snapshot,
    encode_turn,
    row_hash_payload,
)
from maitred.log.sqlite import SqliteLog
from maitred.records import PairRecord

from .builders import make_run, make_snapshot, make_turn

BEFORE_CHAIN = [m.name for m in MIGRATIONS].index("0008_hash_chain")
OLD_TURN_COLUMNS = [c for c in TURN_COLUMNS if c not in (*CHAIN_COLUMNS, "tenant")]


class _OldSqlite(SqliteLog):
    """A log at the schema before the chain, as an older maitred left it."""

    def _migrate(self) -> None:
        migrate(self, migrations=MIGRATIONS[:BEFORE_CHAIN])


def _old_turn_row(n: int) -> tuple[tuple[object, ...], list[tuple[object, ...]]]:
    """A turn as an older maitred wrote it: no chain columns, a layout-1 row hash."""
    enc = encode_turn(make_turn(n))
    turn = dict(zip(TURN_COLUMNS, enc.turn, strict=True))
    turn.update(chain_seq=None, prev_hash=None, recall_batch=None)
    turn["row_hash"] = content_hash(row_hash_payload(turn, enc.pairs))
    return tuple(turn[c] for c in OLD_TURN_COLUMNS), enc.pairs


def _write_old_log(path: Path, n: int) -> None:
    with _OldSqlite(path) as old:
        old.execute(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?)",
            ("run-1", 1_700_000_000.0, "c1:cat", 5, 1000, '{"k":10,"x":[1]}'),
        )
        old.execute(
            f"INSERT INTO snapshots ({', '.join(SNAPSHOT_COLUMNS)}) VALUES (?, ?, ?, ?)",
            encode_snapshot(make_snapshot()),
        )
        for i in range(n):
            turn, pairs = _old_turn_row(i)
            marks = ", ".join("?" for _ in OLD_TURN_COLUMNS)
            old.execute(f"INSERT INTO turns ({', '.join(OLD_TURN_COLUMNS)}) VALUES ({marks})", turn)
            for pair in pairs:
                marks = ", ".join("?" for _ in PAIR_COLUMNS)
                old.execute(f"INSERT INTO pairs VALUES ({marks})", pair)


def test_an_old_log_opens_verifies_and_says_what_predates_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _write_old_log(path, 3)
    with open_log(path) as log:  # migrates to 0008
        log.write(make_turn(3))  # the old run goes on, chained from here
        log.begin_run(make_run("run-2"))
        log.write(make_turn(0, run_id="run-2"))
    report = verify(path)
    assert report.ok, report.summary()
    assert (report.runs, report.turns, report.legacy_runs, report.legacy_turns) == (2, 5, 1, 3)
    assert "1 run(s) without a row hash, 3 turn(s) hashed but not chained" in report.summary()
    heads = {h.run_id: h.turns for h in report.heads}
    assert heads == {"run-1": 1, "run-2": 1}
    json_report = report.to_json()
    assert (json_report["legacy_runs"], json_report["legacy_turns"]) == (1, 3)


def test_an_edited_old_turn_is_still_caught_by_its_own_hash(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _write_old_log(path, 2)
    with open_log(path) as log:
        assert verify(log).ok
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DROP TRIGGER turns_no_update")
        conn.execute("UPDATE turns SET n_exposed = 0 WHERE turn_id = 'run-1/m1'")
    conn.close()
    kinds = [(m.kind, m.key) for m in verify(path).mismatches]
    assert kinds == [("trigger", "turns_no_update"), ("row_hash", "run-1/m1")]


def test_a_second_writer_of_one_run_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    with open_log(path) as first, open_log(path) as second:
        first.begin_run(make_run())
        first.write(make_turn(0))
        first.flush()
        second.write(make_turn(1))  # picks up the committed head: position 2
        first.write(make_turn(2))  # the first writer thinks position 2 is still free
        second.flush()
        with pytest.raises(LogError, match="a run has a single writer"):
            first.flush()
        first.write(make_turn(3))  # the head went back to what the first writer committed
        with pytest.raises(LogError, match="a run has a single writer"):
            first.flush()
    report = verify(path)
    assert report.ok, report.summary()
    assert report.turns == 2


def test_a_turn_that_cannot_be_logged_leaves_the_chain_whole(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    nan = PairRecord("deploy-site", 1, 0.5, True, True, 10, {"bm25": float("nan")})
    bad = make_turn(1, pairs=(nan,))
    with open_log(path) as log:
        log.begin_run(make_run())
        log.write(make_turn(0))
        with pytest.raises(LogError, match="must be finite JSON"):
            log.write(bad)
        log.write(make_turn(2))
    report = verify(path)
    assert report.ok, report.summary()
    assert report.turns == 2
