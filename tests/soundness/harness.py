"""Real parts for the soundness tests: a store that can fail, commits that can fail, a log reader.

* :class:`Store` -- a :class:`~maitred.state.memory.MemoryStateProvider` rebuilt from a
  :class:`~tests.soundness.spec.World` whenever the test changes the world, which raises on
  every fetch while the world is ``down`` (a state store that refused the connection).
* :func:`refusing_commits` -- makes the decision log's next commits fail for real: a SQLite
  trigger on the log's tables aborts every insert (a failed commit discards its rows, exactly
  as a full disk or a lost lock would), dropped again on exit.
* :class:`Ledger` -- what the test was told (every decision returned), checked against the log.
"""

from __future__ import annotations

import contextlib
import sqlite3
import uuid
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maitred.log import verify
from maitred.log.base import DecisionLog
from maitred.state.memory import MemoryStateProvider
from maitred.state.schema import KeySchema, StateType
from maitred.state.snapshot import Snapshot

from .spec import FIELDS, World, tree_of

#: the spec's field types as the store declares them
STORE_TYPES: dict[str, StateType] = {
    key: "string" if kind == "str" else kind for key, kind in FIELDS.items()
}

_GUARDED = ("turns", "action_decisions")


class Store:
    """A state provider over a :class:`World` (see the module docstring)."""

    name = "soundness-memory"

    def __init__(self, world: World) -> None:
        self.world = world
        self.refresh()

    def refresh(self) -> None:
        """Rebuild the provider from the world (call after every change of it)."""
        w = self.world
        data = {a: tree_of(w.accounts.get(a, {}), roots) for a, roots in w.roots.items() if roots}
        stamps = {a: {r: t for r, t in s.items()} for a, s in w.stamps.items() if a in data}
        self._inner = MemoryStateProvider(
            data, key_as_of=stamps, clock=lambda: w.now, types=STORE_TYPES
        )

    def schema(self, keys: Collection[str]) -> KeySchema:
        """The declared types of the fields (a typed store, as the issue asks of every one)."""
        return self._inner.schema(keys)

    def fetch(self, account: str, keys: Collection[str]) -> Snapshot:
        if self.world.down:
            raise ConnectionError("state store at 127.0.0.1:1 refused the connection")
        return self._inner.fetch(account, keys)


@contextlib.contextmanager
def refusing_commits(log_path: Path | str) -> Iterator[None]:
    """Every commit of turns or decisions to the log at ``log_path`` fails inside: a SQLite
    file, or a PostgreSQL URL with ``?schema=`` (:func:`pg_location`)."""
    if isinstance(log_path, str) and log_path.startswith("postgresql://"):
        with _refusing_pg(log_path):
            yield
        return
    conn = sqlite3.connect(log_path, timeout=5)
    try:
        for table in _GUARDED:
            conn.execute(
                f"CREATE TRIGGER soundness_refuse_{table} BEFORE INSERT ON {table} "
                "BEGIN SELECT RAISE(ABORT, 'soundness: the disk refused this commit'); END"
            )
        conn.commit()
        yield
    finally:
        for table in _GUARDED:
            conn.execute(f"DROP TRIGGER IF EXISTS soundness_refuse_{table}")
        conn.commit()
        conn.close()


def pg_location(server: str) -> str:
    """A log location in a fresh schema of the PostgreSQL ``server`` (see :func:`drop_pg`)."""
    return f"{server}?schema=t_{uuid.uuid4().hex[:16]}"


def _pg_parts(location: str) -> tuple[str, str]:
    server, _, schema = location.partition("?schema=")
    return server, schema


def drop_pg(location: str) -> None:
    """Drop the schema of a :func:`pg_location`."""
    import psycopg

    server, schema = _pg_parts(location)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@contextlib.contextmanager
def _refusing_pg(location: str) -> Iterator[None]:
    import psycopg

    server, schema = _pg_parts(location)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            f'CREATE OR REPLACE FUNCTION "{schema}".soundness_refuse() RETURNS trigger '
            "LANGUAGE plpgsql AS $$ BEGIN "
            "RAISE EXCEPTION 'soundness: the disk refused this commit'; END $$"
        )
        for table in _GUARDED:
            conn.execute(
                f'CREATE TRIGGER soundness_refuse_{table} BEFORE INSERT ON "{schema}".{table} '
                f'FOR EACH ROW EXECUTE FUNCTION "{schema}".soundness_refuse()'
            )
        try:
            yield
        finally:
            for table in _GUARDED:
                conn.execute(
                    f'DROP TRIGGER IF EXISTS soundness_refuse_{table} ON "{schema}".{table}'
                )


@dataclass(frozen=True)
class Told:
    """One decision a caller received."""

    decision_id: str
    session_id: str
    turn_id: str
    tool: str
    allow: bool


@dataclass
class Ledger:
    """Every decision returned to the test, and every turn it was answered."""

    told: list[Told] = field(default_factory=list)
    turns: set[str] = field(default_factory=set)

    def problems(self, log: DecisionLog) -> list[str]:
        """Each returned decision missing from the log, or not linked to a logged turn that
        offered its tool (for an allow), plus what ``log verify`` found."""
        out: list[str] = []
        rows = {r["decision_id"]: r for r in log.iter_action_decisions()}
        offered: dict[str, set[str]] = {
            t["turn_id"]: {p["skill"] for p in t["pairs"] if p["exposed"]} for t in log.iter_turns()
        }
        for turn in sorted(self.turns - set(offered)):
            out.append(f"turn {turn} was answered but is not in the log")
        for told in self.told:
            row = rows.get(told.decision_id)
            if row is None:
                out.append(f"decision {told.decision_id} ({told.tool}) is not in the log")
                continue
            if (row["turn_id"] or "") != told.turn_id:
                out.append(f"decision {told.decision_id}: logged turn {row['turn_id']!r}")
            if told.allow and told.tool not in offered.get(told.turn_id, set()):
                out.append(
                    f"allowed {told.tool} (decision {told.decision_id}) names turn "
                    f"{told.turn_id!r}, which is not in the log or did not offer it"
                )
        report = verify(log)
        if not report.ok:
            out.append(f"log verify: {[str(m) for m in report.mismatches]}")
        return out


def names_in(text: str, names: Collection[str]) -> set[str]:
    """The tool names ``text`` mentions (names are whole words, see spec.NAMES)."""
    return {n for n in names if n in text}


def payload_text(decision: Any) -> str:
    """Everything of a rejection the model is shown."""
    return f"{decision.message_for_model}\n{decision.tool_result()}"
