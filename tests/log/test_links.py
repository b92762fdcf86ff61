"""The links chain (issue 27): what a later decision reads back from the log is chained.

A session's latest turn decides what its next check may call. It was chosen by the table's
order (SQLite ``rowid``, PostgreSQL ``turn_seq``), which no hash covered: moving an old turn
that offered ``refund`` to the end flipped the next check from ``TOOL_NOT_OFFERED`` to allowed
while ``verify`` found nothing, and a deleted action decision went unseen. Now the order is
``turns.turn_seq``, given at commit and linked (:mod:`maitred.log.links`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from maitred.actions.model import Decision, ToolCall
from maitred.log import DecisionLog
from maitred.log.verify import verify
from maitred.records import PairRecord, RunInfo, TurnRecord

from .builders import Opener, make_turn

REFUND = (PairRecord("refund", 1, 0.9, True, True, 50),)
DEPLOY = (PairRecord("deploy-site", 1, 0.9, True, True, 50),)


def _turn(n: int, pairs: tuple[PairRecord, ...], conversation: str = "conv-1") -> TurnRecord:
    base = make_turn(n, pairs=pairs)
    return dataclasses.replace(
        base, message=dataclasses.replace(base.message, conversation=conversation)
    )


def _session_log(log: DecisionLog) -> None:
    log.begin_run(RunInfo("run-1", 1_700_000_000.0, "c1:cat", 5, 1000, {}))
    log.write(_turn(0, REFUND))  # the old turn offered refund
    log.write(_turn(1, DEPLOY))  # the latest does not
    log.write_decisions([Decision(ToolCall("refund", {}), "reject", "TOOL_NOT_OFFERED", now=1.0,
                                  session_id="conv-1", turn_id="run-1/m1")])  # fmt: skip
    log.flush()


@contextmanager
def _unguarded(log: DecisionLog, table: str) -> Iterator[Any]:
    """A raw connection to the log's database with ``table``'s guards off, then back on (as
    someone with write access would do it: the triggers are all there again afterwards)."""
    if log.dialect == "sqlite":
        import sqlite3

        conn = sqlite3.connect(log.location)
        triggers = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?", (table,)
        ).fetchall()
        for name, _ in triggers:
            conn.execute(f"DROP TRIGGER {name}")
        yield conn
        for _, sql in triggers:
            conn.execute(sql)
        conn.commit()
        conn.close()
        return
    import psycopg

    schema = log.location.rsplit("schema=", 1)[-1] if "schema=" in log.location else None
    with psycopg.connect(log._dsn, autocommit=True) as conn:  # type: ignore[attr-defined]
        if getattr(log, "schema", None):
            conn.execute(f'SET search_path TO "{log.schema}"')  # type: ignore[attr-defined]
        del schema
        conn.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
        yield conn
        conn.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")


def _move_to_end(log: DecisionLog, turn_id: str, *, keep_seq: bool) -> None:
    """Delete the turn row and insert it again: it lands at the table's end."""
    mark = "?" if log.dialect == "sqlite" else "%s"
    with _unguarded(log, "turns") as conn:
        cur = conn.execute(f"SELECT * FROM turns WHERE turn_id = {mark}", (turn_id,))
        names = [d[0] for d in cur.description]
        row = dict(zip(names, cur.fetchone(), strict=True))
        if not keep_seq:
            del row["turn_seq"]  # it takes the next one
        conn.execute(f"DELETE FROM turns WHERE turn_id = {mark}", (turn_id,))
        cols = ", ".join(row)
        conn.execute(
            f"INSERT INTO turns ({cols}) VALUES ({', '.join(mark for _ in row)})",
            list(row.values()),
        )


def test_moving_an_old_turn_to_the_end_changes_no_session(opener: Opener) -> None:
    with opener() as log:
        _session_log(log)
        assert log.committed_offer("", "conv-1").offered == {"deploy-site"}  # type: ignore[union-attr]
        assert verify(log).ok
        _move_to_end(log, "run-1/m0", keep_seq=True)
        # the order is the linked turn_seq, which the row kept: the next check is unchanged
        offer = log.committed_offer("", "conv-1")
        assert offer is not None and offer.offered == {"deploy-site"}
        report = verify(log)
    if log.dialect == "sqlite":  # and SQLite sees that the row was inserted again
        assert [m.kind for m in report.mismatches] == ["link"]
        assert "deleted and inserted again" in report.mismatches[0].detail


def test_a_turn_moved_with_a_new_order_is_reported(opener: Opener) -> None:
    with opener() as log:
        _session_log(log)
        _move_to_end(log, "run-1/m0", keep_seq=False)
        report = verify(log)
    assert not report.ok
    assert any(m.kind == "link" and m.key == "run-1/m0" for m in report.mismatches)
    assert any("session's turns was changed" in m.detail for m in report.mismatches)


def test_a_deleted_decision_is_reported(opener: Opener) -> None:
    with opener() as log:
        _session_log(log)
        mark = "?" if log.dialect == "sqlite" else "%s"
        with _unguarded(log, "action_decisions") as conn:
            (did,) = conn.execute("SELECT decision_id FROM action_decisions").fetchone()
            conn.execute(f"DELETE FROM action_decisions WHERE decision_id = {mark}", (did,))
        report = verify(log)
    assert [m.kind for m in report.mismatches] == ["link"]
    assert "not in the log: it was deleted" in report.mismatches[0].detail


def test_every_commit_links_its_rows_and_a_cut_stream_is_reported(opener: Opener) -> None:
    with opener() as log:
        _session_log(log)
        links = log.query("SELECT kind, key FROM links ORDER BY seq")
        assert [tuple(r) for r in links] == [
            ("turn", "run-1/m0"),
            ("turn", "run-1/m1"),
            ("decision", log.query("SELECT decision_id FROM action_decisions")[0][0]),
        ]
        with _unguarded(log, "links") as conn:
            conn.execute("DELETE FROM links WHERE seq = 3")
        report = verify(log)
    # the decision whose link is gone is in no link now: unchained
    assert not report.ok and {m.kind for m in report.mismatches} == {"link", "unchained"}


def _forge_decision(
    log: DecisionLog, *, logged_at: float | None = None, turn_id: str = "run-1/m1"
) -> str:
    """Insert a copy of the logged decision under a new id (its hash recomputed, so it
    verifies as a row), as someone with write access would add a decision of their own."""
    from maitred._canonical import canonical_json, text_hash

    mark = "?" if log.dialect == "sqlite" else "%s"
    with _unguarded(log, "action_decisions") as conn:
        cur = conn.execute("SELECT * FROM action_decisions")
        names = [d[0] for d in cur.description]
        row = dict(zip(names, cur.fetchone(), strict=True))
        data = json.loads(row["decision_json"])
        data["decision_id"] = row["decision_id"] = "forged-1"
        data["turn_id"] = row["turn_id"] = turn_id
        row["decision_json"] = canonical_json(data)
        row["decision_hash"] = text_hash(row["decision_json"])
        if logged_at is not None:
            row["logged_at"] = logged_at
        conn.execute(
            f"INSERT INTO action_decisions ({', '.join(row)}) "
            f"VALUES ({', '.join(mark for _ in row)})",
            list(row.values()),
        )
    return "forged-1"


@pytest.mark.parametrize("backdated", [False, True], ids=["now", "backdated"])
def test_a_decision_inserted_without_a_link_is_reported(opener: Opener, backdated: bool) -> None:
    """Every decision since migration 0011 is linked when committed: one in no link was
    inserted behind the writers' backs -- also when its logged_at claims it is older than
    the log (only what migration 0012 found unlinked when it ran is pre-chain)."""
    with opener() as log:
        _session_log(log)
        forged = _forge_decision(log, logged_at=1_000.0 if backdated else None)
        report = verify(log)
    assert [(m.kind, m.key) for m in report.mismatches] == [("unchained", forged)]
    assert "in no link" in report.mismatches[0].detail


def test_a_forged_decision_is_reported_whatever_the_migration_times_say(opener: Opener) -> None:
    """Only the decisions migration 0012 found unlinked when it ran are pre-chain
    (``prechain``); moving the migrations' clock no longer exempts a decision inserted later
    (it used to: a decision logged between a log's creation and 0011 was exempt)."""
    with opener() as log:
        _session_log(log)
        forged = _forge_decision(log, turn_id="", logged_at=1_000.0)
        mark = "?" if log.dialect == "sqlite" else "%s"
        with _unguarded(log, "maitred_migrations") as conn:
            conn.execute(
                f"UPDATE maitred_migrations SET applied_at = applied_at + 3600 WHERE name = {mark}",
                ("0011_links",),
            )
        report = verify(log)
    assert [(m.kind, m.key) for m in report.mismatches] == [("unchained", forged)]
    assert report.legacy_decisions == 0
