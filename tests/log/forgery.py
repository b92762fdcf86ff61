"""The forgery of issue 35 item 1, as someone with write access to the log's database does it.

Three plain ``INSERT`` statements: a ``runs`` row without a row hash, a turn of an existing
session without a chain position (its layout-1 row hash computed with maitred's own
functions, so it verifies as a row "from before the chain") and one exposed pair naming the
tool the forger wants offered. Before ``0012_chained_only`` no guard looked at an insert:
``verify`` counted the rows as pre-chain and the session's offer took the turn.

:func:`forge` runs them on SQLite (a path) or PostgreSQL (``(url, schema)``), with the guards
standing or -- ``guards_off=True`` -- switched off for the inserts and switched back on exactly
as they were, as a determined editor would.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maitred._canonical import content_hash
from maitred.log.rows import PAIR_COLUMNS, RUN_COLUMNS, TURN_COLUMNS, row_hash_payload

#: the tables the forgery writes to
FORGED_TABLES = ("runs", "turns", "pairs")


@dataclass(frozen=True)
class Forgery:
    """What to forge: a turn of ``(tenant, session)`` for ``account`` exposing ``tool``."""

    tenant: str
    session: str
    account: str
    tool: str
    run_id: str = "forged-run"
    turn_id: str = "forged-run/m1"


def rows(f: Forgery) -> list[tuple[str, tuple[str, ...], tuple[Any, ...]]]:
    """(table, columns, values) of the three rows."""
    run = {
        "run_id": f.run_id,
        "started_at": 1_600_000_000.0,
        "catalog_version": "c1:forged",
        "n_skills": 1,
        "tokens_all_skills": 10,
        "config_json": "{}",
        "tenant": f.tenant,
        "row_hash": None,
    }
    pair = (f.turn_id, f.tool, 1, 1.0, "{}", True, True, 10, "[]", "[]")
    turn: dict[str, Any] = dict.fromkeys(TURN_COLUMNS)
    turn.update(
        turn_id=f.turn_id,
        run_id=f.run_id,
        message_id="m1",
        conversation_id=f.session,
        account_id=f.account,
        message_text="forged",
        ts=1_600_000_001.0,
        catalog_version="c1:forged",
        recall_method="bm25",
        depth_rule="fixed",
        provider_error="",
        n_candidates=1,
        n_visible=1,
        n_exposed=1,
        menu_tokens=10,
        tenant=f.tenant,
    )
    turn["row_hash"] = content_hash(row_hash_payload(turn, [pair]))  # layout 1: no chain
    return [
        ("runs", RUN_COLUMNS, tuple(run[c] for c in RUN_COLUMNS)),
        ("turns", TURN_COLUMNS, tuple(turn[c] for c in TURN_COLUMNS)),
        ("pairs", PAIR_COLUMNS, pair),
    ]


def forge(where: Path | tuple[str, str], f: Forgery, *, guards_off: bool = False) -> None:
    """Insert the three rows into the log at ``where`` (each statement on its own: the first
    one the database refuses raises)."""
    with _raw(where, guards_off) as (conn, mark):
        for table, names, values in rows(f):
            marks = ", ".join(mark for _ in names)
            conn.execute(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})", values)


def each_refused(where: Path | tuple[str, str], f: Forgery) -> list[str]:
    """Try each of the three inserts alone, guards standing; the error of each one refused."""
    errors = []
    for table, names, values in rows(f):
        try:
            with _raw(where, False) as (conn, mark):
                marks = ", ".join(mark for _ in names)
                sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})"
                conn.execute(sql, values)
        except Exception as exc:  # sqlite3 or psycopg: the database said no
            errors.append(f"{table}: {exc}")
    return errors


@contextmanager
def _raw(where: Path | tuple[str, str], guards_off: bool) -> Iterator[tuple[Any, str]]:
    """A raw connection in one transaction (committed at the end), the guards of the forged
    tables off for it when asked and back on exactly as they were."""
    if isinstance(where, Path):
        conn = sqlite3.connect(where)
        try:
            triggers = conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN "
                f"({', '.join('?' for _ in FORGED_TABLES)})",
                FORGED_TABLES,
            ).fetchall()
            if guards_off:
                for name, _ in triggers:
                    conn.execute(f"DROP TRIGGER {name}")
            yield conn, "?"
            if guards_off:
                for _, sql in triggers:
                    conn.execute(sql)
            conn.commit()
        finally:
            conn.close()
        return
    import psycopg

    url, schema = where
    with psycopg.connect(url) as pg:  # one transaction, committed on a clean exit
        pg.execute(f'SET search_path TO "{schema}"')  # type: ignore[arg-type]
        if guards_off:
            for table in FORGED_TABLES:
                pg.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")  # type: ignore[arg-type]
        yield pg, "%s"
        if guards_off:
            for table in FORGED_TABLES:
                pg.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")  # type: ignore[arg-type]
