"""Migration ``0012_chained_only``: once the chain has begun, a row that is not in it is refused.

The append-only guards (``0003`` and later) refuse ``UPDATE`` and ``DELETE``; an ``INSERT``
was free. That let three plain inserts -- a ``runs`` row without a row hash, a turn without a
chain position (its layout-1 hash computed like maitred's own) and one exposed pair -- pass for
rows "from before the chain": ``verify`` counted them as such and a session's offer took the
turn. No maitred since ``0008_hash_chain`` writes such a row, so this migration makes the
database refuse them and records which rows really are older.

**What "chained" means, table by table** (the guard is a ``BEFORE INSERT`` trigger on each;
SQLite ``RAISE(ABORT)``, PostgreSQL one PL/pgSQL function per table):

* ``runs``: the row has its ``row_hash``;
* ``turns``: the row has its chain position and predecessor (``chain_seq``, ``prev_hash``) and
  is already in a writer's links chain with the same hash (:mod:`maitred.log.links`; a writer
  inserts a commit's links first, then its rows);
* ``depth_decisions``: its turn is a chained turn in the log;
* ``action_decisions`` (tasks and approvals included: they are decisions): the decision is in
  the links chain with the same hash;
* ``chain_heads``: the head names a turn that is there, at that position, with that hash;
* ``prechain``: nothing, ever (below).

**Pairs have no guard of their own**: a pair is chained through its turn, whose row hash covers
every pair (one added to a committed turn breaks that hash, one with no turn is a leftover:
``verify`` reports both), and a session's offer reads the pairs of chained, linked turns only.
A per-row trigger on ``pairs`` would cost about 3 microseconds a pair row on SQLite -- the
trigger itself, whatever it checks (6.1 -> 9.2-9.6 us a row in an ``executemany``), about a
quarter of the write path's cost per pair (~11 us at the 88k rows/s of BENCHMARKS.md) --
and refuse nothing that matters the turn guard and ``verify`` do not.

**Rows from before the chain** keep their own status. The migration first records every row
that is not chained *when it runs* in ``prechain (kind, key)`` -- ``run`` (no row hash),
``turn`` (no chain position), ``unlinked_turn`` (chained, but committed before ``0011_links``),
``decision`` (in no link: logged before ``0011_links``) and ``depth`` (the depth row of a turn
with no chain position, which its layout-1 hash does not cover) --
and then closes that table to inserts, updates and deletes. On a log created at ``0012`` or
later it is empty: every row must be chained. ``verify`` reads an unchained row that
``prechain`` names as *pre-chain* (hashed, readable, not chained), one it does not name as
tampering (``unchained``), and a ``prechain`` row whose record is gone as a deletion. A log
upgraded from ``0008``-``0011`` keeps as pre-chain whatever unchained rows it held when it
was upgraded; from then on the guards, and ``verify``'s trigger checks, hold.

A determined editor can still drop a guard, insert and put it back exactly; ``verify`` then
finds the row by the same rules, and the sessions' reads (:mod:`maitred.log.offers`) never
take a turn that is not chained and linked as an offer in the meantime.
"""

from __future__ import annotations

from typing import Any, Literal

#: the table of rows that predate the chain, filled once by ``0012_chained_only``
PRECHAIN_TABLE = "prechain"
#: kinds of ``prechain`` rows: (table, key column)
PRECHAIN_KINDS: dict[str, tuple[str, str]] = {
    "run": ("runs", "run_id"),
    "turn": ("turns", "turn_id"),
    "decision": ("action_decisions", "decision_id"),
    "depth": ("depth_decisions", "turn_id"),
    "unlinked_turn": ("turns", "turn_id"),
}

#: each guarded table -> the condition (over ``NEW``) under which its row is chained
CHAINED: dict[str, str] = {
    "runs": "NEW.row_hash IS NOT NULL",
    "turns": (
        "NEW.chain_seq IS NOT NULL AND NEW.prev_hash IS NOT NULL AND EXISTS (SELECT 1 FROM links "
        "l WHERE l.kind = 'turn' AND l.key = NEW.turn_id AND l.row_hash = NEW.row_hash)"
    ),
    "depth_decisions": (
        "EXISTS (SELECT 1 FROM turns t WHERE t.turn_id = NEW.turn_id AND t.chain_seq IS NOT NULL)"
    ),
    "action_decisions": (
        "EXISTS (SELECT 1 FROM links l WHERE l.kind = 'decision' AND l.key = NEW.decision_id "
        "AND l.row_hash = NEW.decision_hash)"
    ),
    "chain_heads": (
        "EXISTS (SELECT 1 FROM turns t WHERE t.run_id = NEW.run_id AND t.chain_seq = "
        "NEW.chain_seq AND t.row_hash = NEW.head_hash)"
    ),
    PRECHAIN_TABLE: "FALSE",
}


def _refusal(table: str) -> str:
    if table == PRECHAIN_TABLE:
        return (
            "maitred decision log table prechain is closed: it records, once, the rows that "
            "predate the hash chain"
        )
    return (
        f"maitred decision log table {table} is append-only and takes chained rows only: this "
        "row is in no hash chain (maitred writes none such since migration 0008)"
    )


def _census() -> tuple[str, ...]:
    """Record the rows that are not chained now: they predate the chain."""
    return (
        f"""CREATE TABLE {PRECHAIN_TABLE} (
            kind TEXT NOT NULL,
            key TEXT NOT NULL,
            PRIMARY KEY (kind, key))""",
        f"INSERT INTO {PRECHAIN_TABLE} (kind, key) "
        "SELECT 'run', run_id FROM runs WHERE row_hash IS NULL",
        f"INSERT INTO {PRECHAIN_TABLE} (kind, key) "
        "SELECT 'turn', turn_id FROM turns WHERE chain_seq IS NULL",
        f"INSERT INTO {PRECHAIN_TABLE} (kind, key) "
        "SELECT 'decision', d.decision_id FROM action_decisions d WHERE NOT EXISTS "
        "(SELECT 1 FROM links l WHERE l.kind = 'decision' AND l.key = d.decision_id)",
        f"INSERT INTO {PRECHAIN_TABLE} (kind, key) "
        "SELECT 'unlinked_turn', t.turn_id FROM turns t WHERE t.chain_seq IS NOT NULL AND NOT "
        "EXISTS (SELECT 1 FROM links l WHERE l.kind = 'turn' AND l.key = t.turn_id)",
        f"INSERT INTO {PRECHAIN_TABLE} (kind, key) "
        "SELECT 'depth', d.turn_id FROM depth_decisions d JOIN turns t ON t.turn_id = d.turn_id "
        "WHERE t.chain_seq IS NULL",
    )


def _sqlite_guard(table: str) -> str:
    return (
        f"CREATE TRIGGER {table}_chained_only BEFORE INSERT ON {table} "
        f"WHEN NOT ({CHAINED[table]}) BEGIN SELECT RAISE(ABORT, '{_refusal(table)}'); END"
    )


def guard_function(table: str) -> str:
    """The PostgreSQL function behind ``table``'s insert guard (its name)."""
    return f"maitred_chained_{table}"


def function_body(table: str) -> str:
    """The body of :func:`guard_function` (``verify`` compares the stored one with it)."""
    return (
        f"BEGIN IF {CHAINED[table]} THEN RETURN NEW; END IF; "
        f"RAISE EXCEPTION '{_refusal(table)}'; END"
    )


def _postgres_guard(table: str) -> tuple[str, ...]:
    name = guard_function(table)
    return (
        f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $${function_body(table)}$$",
        f"CREATE TRIGGER {table}_chained_only BEFORE INSERT ON {table} "
        f"FOR EACH ROW EXECUTE FUNCTION {name}()",
    )


def chained_only(dialect: Literal["sqlite", "postgres"]) -> tuple[str, ...]:
    """The statements of ``0012_chained_only`` for ``dialect`` (see the module docstring)."""
    closed = (
        (  # the census is append-only like every log table, and closed to inserts below
            f"CREATE TRIGGER {PRECHAIN_TABLE}_no_update BEFORE UPDATE ON {PRECHAIN_TABLE} "
            f"BEGIN SELECT RAISE(ABORT, 'maitred decision log table {PRECHAIN_TABLE} is "
            "append-only'); END",
            f"CREATE TRIGGER {PRECHAIN_TABLE}_no_delete BEFORE DELETE ON {PRECHAIN_TABLE} "
            f"BEGIN SELECT RAISE(ABORT, 'maitred decision log table {PRECHAIN_TABLE} is "
            "append-only'); END",
        )
        if dialect == "sqlite"
        else (
            f"CREATE TRIGGER {PRECHAIN_TABLE}_append_only BEFORE UPDATE OR DELETE ON "
            f"{PRECHAIN_TABLE} FOR EACH ROW EXECUTE FUNCTION maitred_append_only()",
            f"CREATE TRIGGER {PRECHAIN_TABLE}_no_truncate BEFORE TRUNCATE ON {PRECHAIN_TABLE} "
            "FOR EACH STATEMENT EXECUTE FUNCTION maitred_append_only()",
        )
    )
    if dialect == "sqlite":
        guards: tuple[str, ...] = tuple(_sqlite_guard(t) for t in CHAINED)
    else:
        guards = tuple(s for t in CHAINED for s in _postgres_guard(t))
    return (*_census(), *closed, *guards)


def prechain(log: Any) -> dict[str, frozenset[str]]:
    """The keys ``prechain`` records, by kind (``run``, ``turn``, ``decision``), of ``log`` (a
    :class:`~maitred.log.base.DecisionLog`; empty when it has no such table)."""
    found: dict[str, set[str]] = {kind: set() for kind in PRECHAIN_KINDS}
    if log.table_exists(PRECHAIN_TABLE):
        for kind, key in log.query(f"SELECT kind, key FROM {PRECHAIN_TABLE}"):
            found.setdefault(str(kind), set()).add(str(key))
    return {kind: frozenset(keys) for kind, keys in found.items()}


def check_prechain(log: Any, census: dict[str, frozenset[str]], add: Any) -> None:
    """What ``verify`` checks besides each row's own status: every ``prechain`` row names a
    record that is still there (a pre-chain row is not chained, so its deletion shows only
    here), and no depth row belongs to a turn that is not chained."""
    for kind, (table, column) in PRECHAIN_KINDS.items():
        keys = census.get(kind, frozenset())
        if not keys:
            continue
        there = {str(r[0]) for r in log.query(f"SELECT {column} FROM {table}")}
        for key in sorted(keys - there):
            add(
                "unchained",
                key,
                f"the {kind} migration 0012 recorded as predating the chain is not in the log: "
                "it was deleted",
            )
    for (turn_id,) in log.query(
        "SELECT d.turn_id FROM depth_decisions d JOIN turns t ON t.turn_id = d.turn_id "
        "WHERE t.chain_seq IS NULL"
    ):
        if str(turn_id) in census.get("depth", frozenset()):
            continue
        add(
            "unchained",
            str(turn_id),
            "has a depth row that migration 0012 did not find: its turn is not chained, so the "
            "row was inserted afterwards",
        )
