"""The decision log's schema, as an ordered list of named migrations.

The schema is never edited in place: every change is a new :class:`Migration` appended to
:data:`MIGRATIONS` with the next number (``0004_...``). Each one runs in its own transaction
together with the row that records it in ``maitred_migrations(name, applied_at)``, so a log is
always at a well-defined point of the list. Opening a log read-write applies whatever is
pending; opening it read-only refuses a log that needs migrating (it would have to write).
A log that records a migration this code does not know was written by a newer maitred and is
refused with :class:`~maitred.errors.SchemaError` rather than guessed at.

Every migration gives its statements for both dialects (``sqlite`` and ``postgres``); the two
schemas have the same tables, columns and meaning. JSON columns are ``TEXT`` in both so the
stored bytes -- which the row hash covers -- are exactly the canonical JSON that was written.

The tables are append-only: the code has no update or delete path, and ``0003`` adds triggers
that refuse ``UPDATE`` and ``DELETE`` (and ``TRUNCATE`` on PostgreSQL) at the database; a later
migration that creates a table adds the same triggers for it (``0004_replays``,
``0005_action_decisions``). A determined editor can drop the triggers;
:func:`~maitred.log.verify.verify` still catches the edit through the row hashes, and reports
the missing trigger itself.

``0008_hash_chain`` makes the turns of each run a hash chain (see :mod:`maitred.log.rows`):
it adds ``runs.row_hash``, the turn columns ``chain_seq`` / ``prev_hash`` / ``recall_batch``,
a unique index on ``(run_id, chain_seq)`` (so a run has one writer: a second one appending to
it collides there), and ``chain_heads``, one row per committed batch and run naming the
chain's head at that commit, which is how ``verify`` notices turns removed from a run's end.
On SQLite it also refuses ``INSERT OR REPLACE`` (which deletes the old row first, and with
``recursive_triggers`` off fires no DELETE trigger): a ``BEFORE INSERT`` trigger aborts when the
key is already there (for ``snapshots``, content-addressed, it skips the insert instead). On
PostgreSQL, ``INSERT ... ON CONFLICT DO UPDATE`` fires the ``BEFORE UPDATE`` guard already.

``0009_tenants_sessions`` makes the tenant an identity stored with each row: ``runs.tenant``,
``turns.tenant`` (the tenant of the turn's run, in its row hash when not empty) and
``action_decisions.tenant`` (a copy of the decision JSON's ``tenant``), all ``''`` for rows
from before it. Its index ``turns_session (tenant, conversation_id, ts, turn_id)`` answers
"the latest committed turn of this session" in one covering probe: that turn's exposed pairs
are what the session was offered (:meth:`~maitred.log._sql.SqlLog.committed_offer`).

``0011_links`` adds the links chain (:mod:`maitred.log.links`): ``links`` (one row per turn
and action decision, in commit order, per writer) and ``link_heads``, both guarded; on SQLite
it adds ``turns.turn_seq`` (NULL for older rows), the session order that ``rowid`` was.

``0012_chained_only`` records the rows that predate the chain (``prechain``) and makes every
guarded table refuse an ``INSERT`` of a row that is not chained (:mod:`maitred.log.chained_only`).
``0013_spent_states`` adds ``spent_states``: one row per single-use ``requestState`` a client
brought back (:meth:`~maitred.log.base.DecisionLog.spend`), keyed by what was spent, so a second
use is found on every process sharing the log; guarded like the others (on SQLite an insert of
a key already there is skipped, never replaces the first use).
``0014_decision_accounts`` gives every action decision its account as a column (from its JSON,
checked by ``verify`` like the other copied columns) and indexes the lists by account and by
time. ``0015_console_indexes`` indexes the console's filters (tenant, session, tool, code),
each ordered by its table's clock. ``0016_decision_traces`` gives every action decision the W3C
trace id of the request it decided (``trace_id``, a copy of its JSON's, ``''`` for none and for
rows from before it) and indexes it, so the decision of a trace is one probe.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from maitred.errors import LogError, SchemaError
from maitred.log.chained_only import chained_only

Dialect = Literal["sqlite", "postgres"]

MIGRATIONS_TABLE = "maitred_migrations"

#: Tables that refuse UPDATE/DELETE from ``0003_append_only_guards`` on.
APPEND_ONLY_TABLES: tuple[str, ...] = ("runs", "turns", "pairs", "snapshots")
#: Tables added later, each guarded by the migration that creates it (never edit 0003).
GUARDED_LATER: tuple[str, ...] = (
    "replays",
    "action_decisions",
    "depth_decisions",
    "chain_heads",
    "spent_states",
)
#: Each logged table's key: an INSERT that would replace a row with this key is refused (0008).
TABLE_KEYS: dict[str, tuple[str, ...]] = {
    "runs": ("run_id",),
    "turns": ("turn_id",),
    "snapshots": ("hash",),
    "replays": ("replay_id", "turn_id"),
    "action_decisions": ("decision_id",),
    "depth_decisions": ("turn_id",),
    "chain_heads": ("run_id", "chain_seq"),
}


@dataclass(frozen=True)
class Migration:
    """One named, ordered schema change.

    Attributes:
        name: ``NNNN_what`` -- the number orders the list, the name is recorded in the log.
        sqlite: the statements for SQLite.
        postgres: the statements for PostgreSQL.
    """

    name: str
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]

    def statements(self, dialect: Dialect) -> tuple[str, ...]:
        """The statements for ``dialect``."""
        return self.sqlite if dialect == "sqlite" else self.postgres


def _initial(real: str, integer: str, boolean: str) -> tuple[str, ...]:
    return (
        f"""CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            started_at {real} NOT NULL,
            catalog_version TEXT NOT NULL,
            n_skills {integer} NOT NULL,
            tokens_all_skills {integer} NOT NULL,
            config_json TEXT NOT NULL)""",
        f"""CREATE TABLE turns (
            turn_id TEXT PRIMARY KEY,
            run_id TEXT NOT NULL,
            message_id TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            account_id TEXT NOT NULL,
            message_text TEXT NOT NULL,
            message_ts {real},
            ts {real} NOT NULL,
            catalog_version TEXT NOT NULL,
            recall_method TEXT NOT NULL,
            depth_rule TEXT NOT NULL,
            snapshot_hash TEXT,
            provider_error TEXT NOT NULL,
            n_candidates {integer} NOT NULL,
            n_visible {integer} NOT NULL,
            n_exposed {integer} NOT NULL,
            menu_tokens {integer} NOT NULL,
            t_recall_us {integer},
            t_gate_us {integer},
            t_depth_us {integer},
            t_menu_us {integer},
            row_hash TEXT NOT NULL)""",
        f"""CREATE TABLE pairs (
            turn_id TEXT NOT NULL,
            skill TEXT NOT NULL,
            rank {integer} NOT NULL,
            score {real} NOT NULL,
            components_json TEXT NOT NULL,
            visible {boolean} NOT NULL,
            exposed {boolean} NOT NULL,
            desc_tokens {integer} NOT NULL,
            fired_json TEXT NOT NULL,
            soft_json TEXT NOT NULL)""",
        "CREATE INDEX pairs_turn ON pairs (turn_id)",
        f"""CREATE TABLE snapshots (
            hash TEXT PRIMARY KEY,
            account_id TEXT NOT NULL,
            as_of {real} NOT NULL,
            json TEXT NOT NULL)""",
    )


# The funnel filters turns by run and pages through a run in (ts, turn_id) order; pairs are
# reached through pairs_turn (0001).
_FUNNEL_INDEXES = ("CREATE INDEX turns_run ON turns (run_id, ts, turn_id)",)


def _sqlite_guards() -> tuple[str, ...]:
    out: list[str] = []
    for table in APPEND_ONLY_TABLES:
        for op in ("UPDATE", "DELETE"):
            out.append(
                f"CREATE TRIGGER {table}_no_{op.lower()} BEFORE {op} ON {table} BEGIN "
                f"SELECT RAISE(ABORT, 'maitred decision log table {table} is append-only'); END"
            )
    return tuple(out)


def _postgres_guards() -> tuple[str, ...]:
    out = [
        """CREATE FUNCTION maitred_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'maitred decision log table % is append-only', TG_TABLE_NAME;
        END $$"""
    ]
    for table in APPEND_ONLY_TABLES:
        out.append(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION maitred_append_only()"
        )
        out.append(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION maitred_append_only()"
        )
    return tuple(out)


def _replays(real: str, boolean: str) -> tuple[str, ...]:
    """Counterfactual replays (`maitred replay`): what a model picked with and without the gate,
    tied to the logged turn it replayed."""
    return (
        f"""CREATE TABLE replays (
            replay_id TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            cohort TEXT NOT NULL,
            model TEXT NOT NULL,
            pick_gated TEXT,
            pick_all TEXT,
            picked_blocked {boolean} NOT NULL,
            error TEXT NOT NULL,
            ts {real} NOT NULL,
            PRIMARY KEY (replay_id, turn_id))""",
        "CREATE INDEX replays_turn ON replays (turn_id)",
    )


def _action_decisions(real: str, boolean: str) -> tuple[str, ...]:
    """Action-gate decisions (stage 5): one row per ``ActionGate.check``, keyed by decision id,
    with the canonical decision JSON and its hash (see :mod:`maitred.log.action_rows`)."""
    return (
        f"""CREATE TABLE action_decisions (
            decision_id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            tool TEXT NOT NULL,
            verdict TEXT NOT NULL,
            code TEXT NOT NULL,
            fields_json TEXT NOT NULL,
            policy TEXT NOT NULL,
            versions_json TEXT NOT NULL,
            mutates {boolean} NOT NULL,
            decided_at {real} NOT NULL,
            logged_at {real} NOT NULL,
            decision_json TEXT NOT NULL,
            decision_hash TEXT NOT NULL)""",
        "CREATE INDEX action_decisions_session ON action_decisions (session_id, logged_at)",
    )


def _guard_sqlite(table: str) -> tuple[str, ...]:
    return tuple(
        f"CREATE TRIGGER {table}_no_{op.lower()} BEFORE {op} ON {table} BEGIN "
        f"SELECT RAISE(ABORT, 'maitred decision log table {table} is append-only'); END"
        for op in ("UPDATE", "DELETE")
    )


def _guard_postgres(table: str) -> tuple[str, ...]:
    return (
        f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
        "FOR EACH ROW EXECUTE FUNCTION maitred_append_only()",
        f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
        "FOR EACH STATEMENT EXECUTE FUNCTION maitred_append_only()",
    )


def _depth_decisions(integer: str) -> tuple[str, ...]:
    """The depth rule's per-prefix estimates for turns whose rule has them (CAM-DF)."""
    return (
        f"""CREATE TABLE depth_decisions (
            turn_id TEXT PRIMARY KEY,
            depth_rule TEXT NOT NULL,
            k {integer} NOT NULL,
            probs_json TEXT NOT NULL,
            row_hash TEXT NOT NULL)""",
    )


#: an action decision names the turn whose menu its call came from (``""``: none known)
_TURN_LINK = (
    "ALTER TABLE action_decisions ADD COLUMN turn_id TEXT NOT NULL DEFAULT ''",
    "CREATE INDEX action_decisions_turn ON action_decisions (turn_id)",
)


def _no_replace_sqlite(table: str, keys: tuple[str, ...]) -> str:
    """A trigger that refuses an insert whose key (or, for turns, chain position) exists."""
    match = " AND ".join(f"{k} = NEW.{k}" for k in keys)
    exists = f"EXISTS (SELECT 1 FROM {table} WHERE {match})"
    if table == "turns":  # the unique chain index is a second key REPLACE would act on
        exists += " OR EXISTS (SELECT 1 FROM turns WHERE run_id = NEW.run_id AND chain_seq = "
        exists += "NEW.chain_seq)"
    action = (
        "RAISE(IGNORE)"  # content-addressed: the stored row already holds this content
        if table == "snapshots"
        else f"RAISE(ABORT, 'maitred decision log table {table} is append-only: "
        "a row with this key is already there')"
    )
    return (
        f"CREATE TRIGGER {table}_no_replace BEFORE INSERT ON {table} WHEN {exists} "
        f"BEGIN SELECT {action}; END"
    )


def _hash_chain(dialect: Dialect) -> tuple[str, ...]:
    """``0008_hash_chain`` (see the module docstring)."""
    integer = "INTEGER" if dialect == "sqlite" else "BIGINT"
    common = (
        "ALTER TABLE runs ADD COLUMN row_hash TEXT",
        f"ALTER TABLE turns ADD COLUMN chain_seq {integer}",
        "ALTER TABLE turns ADD COLUMN prev_hash TEXT",
        f"ALTER TABLE turns ADD COLUMN recall_batch {integer}",
        "CREATE UNIQUE INDEX turns_chain ON turns (run_id, chain_seq)",
        f"""CREATE TABLE chain_heads (
            run_id TEXT NOT NULL,
            chain_seq {integer} NOT NULL,
            head_hash TEXT NOT NULL,
            PRIMARY KEY (run_id, chain_seq))""",
    )
    if dialect == "postgres":
        return (*common, *_guard_postgres("chain_heads"))
    replace_guards = tuple(_no_replace_sqlite(t, k) for t, k in TABLE_KEYS.items())
    return (*common, *_guard_sqlite("chain_heads"), *replace_guards)


#: ``0009_tenants_sessions`` (see the module docstring)
_TENANTS_SESSIONS = (
    "ALTER TABLE runs ADD COLUMN tenant TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE turns ADD COLUMN tenant TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE action_decisions ADD COLUMN tenant TEXT NOT NULL DEFAULT ''",
    "CREATE INDEX turns_session ON turns (tenant, conversation_id, ts, turn_id)",
)

#: ``0010_turn_order``: a session's turns in the order they were written, whatever their clocks
#: said (turns of one session in the same clock tick, a business clock that stands still, two
#: replicas whose clocks disagree). SQLite's ``rowid`` is that order already (the log only
#: appends); PostgreSQL gets ``turns.turn_seq`` from a sequence. Each has an index answering
#: "the session's last turn" in one probe.
_TURN_ORDER_SQLITE = ("CREATE INDEX turns_session_order ON turns (tenant, conversation_id)",)
_TURN_ORDER_POSTGRES = (
    "ALTER TABLE turns ADD COLUMN turn_seq BIGSERIAL",
    "CREATE INDEX turns_session_order ON turns (tenant, conversation_id, turn_seq)",
)


def _links(dialect: Dialect) -> tuple[str, ...]:
    """``0011_links``: the links chain over everything a later decision reads back
    (:mod:`maitred.log.links`), and on SQLite the explicit ``turns.turn_seq`` PostgreSQL has
    had since ``0010`` (a session's order, which a deleted and re-inserted row keeps)."""
    integer = "INTEGER" if dialect == "sqlite" else "BIGINT"
    common = (
        f"""CREATE TABLE links (
            stream TEXT NOT NULL,
            seq {integer} NOT NULL,
            kind TEXT NOT NULL,
            key TEXT NOT NULL,
            row_hash TEXT NOT NULL,
            turn_seq {integer},
            link_hash TEXT NOT NULL,
            PRIMARY KEY (stream, seq))""",
        "CREATE INDEX links_key ON links (kind, key)",
        f"""CREATE TABLE link_heads (
            stream TEXT NOT NULL,
            seq {integer} NOT NULL,
            link_hash TEXT NOT NULL,
            PRIMARY KEY (stream, seq))""",
    )
    if dialect == "postgres":
        return (*common, *_guard_postgres("links"), *_guard_postgres("link_heads"))
    return (
        *common,
        "ALTER TABLE turns ADD COLUMN turn_seq INTEGER",
        "CREATE INDEX turns_session_seq ON turns (tenant, conversation_id, turn_seq)",
        *_guard_sqlite("links"),
        *_guard_sqlite("link_heads"),
        _no_replace_sqlite("links", ("stream", "seq")),
        _no_replace_sqlite("link_heads", ("stream", "seq")),
    )


#: ``0014_decision_accounts``: every action decision names its account (the session's, from the
#: decision JSON; a surface read, a task access and a refusal before any turn included), so a
#: filter by account finds them without a linked turn; and the lists by account and by time
#: are indexed (``maitred log list``, the console).
_DECISION_ACCOUNTS = (
    "ALTER TABLE action_decisions ADD COLUMN account_id TEXT NOT NULL DEFAULT ''",
    "CREATE INDEX action_decisions_account ON action_decisions (account_id, decided_at)",
    "CREATE INDEX action_decisions_time ON action_decisions (decided_at)",
    "CREATE INDEX turns_account ON turns (account_id, ts)",
    "CREATE INDEX turns_time ON turns (ts)",
)


#: ``0015_console_indexes``: the console's decisions page (:mod:`maitred.log.browse`) filters by
#: tenant, session, tool and code, newest first; each filter is answered on an index ordered
#: by the table's clock, so a page is a short range read whatever the log's size (a session's
#: action decisions are few: ``action_decisions_session`` serves them).
_CONSOLE_INDEXES = (
    "CREATE INDEX turns_tenant_time ON turns (tenant, ts)",
    "CREATE INDEX turns_conversation_time ON turns (conversation_id, ts)",
    "CREATE INDEX action_decisions_tenant_time ON action_decisions (tenant, decided_at)",
    "CREATE INDEX action_decisions_tool_time ON action_decisions (tool, decided_at)",
    "CREATE INDEX action_decisions_code_time ON action_decisions (code, decided_at)",
)


#: ``0016_decision_traces``: every action decision names the W3C trace id of the request it
#: decided (from the decision JSON, checked by ``verify`` like the other copied columns; ``''``:
#: none), indexed so an operator holding a trace finds its decisions in one probe (the console's
#: ``trace`` filter, ``maitred log list --trace``).
_DECISION_TRACES = (
    "ALTER TABLE action_decisions ADD COLUMN trace_id TEXT NOT NULL DEFAULT ''",
    "CREATE INDEX action_decisions_trace ON action_decisions (trace_id, decided_at)",
)


def _spent_states(dialect: Dialect) -> tuple[str, ...]:
    """``0013_spent_states`` (see the module docstring)."""
    real = "REAL" if dialect == "sqlite" else "DOUBLE PRECISION"
    table = f"""CREATE TABLE spent_states (
            state_key TEXT PRIMARY KEY,
            tenant TEXT NOT NULL,
            session_id TEXT NOT NULL,
            claim TEXT NOT NULL,
            spent_at {real} NOT NULL,
            expires_at {real} NOT NULL)"""
    if dialect == "postgres":
        return (table, *_guard_postgres("spent_states"))
    first_use_stands = (
        "CREATE TRIGGER spent_states_no_replace BEFORE INSERT ON spent_states WHEN EXISTS "
        "(SELECT 1 FROM spent_states WHERE state_key = NEW.state_key) "
        "BEGIN SELECT RAISE(IGNORE); END"
    )
    return (table, *_guard_sqlite("spent_states"), first_use_stands)


#: Every migration, in the order it is applied. Append only; never edit a released one.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "0001_initial",
        sqlite=_initial("REAL", "INTEGER", "INTEGER"),
        postgres=_initial("DOUBLE PRECISION", "BIGINT", "BOOLEAN"),
    ),
    Migration("0002_funnel_indexes", sqlite=_FUNNEL_INDEXES, postgres=_FUNNEL_INDEXES),
    Migration("0003_append_only_guards", sqlite=_sqlite_guards(), postgres=_postgres_guards()),
    Migration(
        "0004_replays",
        sqlite=(*_replays("REAL", "INTEGER"), *_guard_sqlite("replays")),
        postgres=(*_replays("DOUBLE PRECISION", "BOOLEAN"), *_guard_postgres("replays")),
    ),
    Migration(
        "0005_action_decisions",
        sqlite=(*_action_decisions("REAL", "INTEGER"), *_guard_sqlite("action_decisions")),
        postgres=(
            *_action_decisions("DOUBLE PRECISION", "BOOLEAN"),
            *_guard_postgres("action_decisions"),
        ),
    ),
    Migration(
        "0006_depth_decisions",
        sqlite=(*_depth_decisions("INTEGER"), *_guard_sqlite("depth_decisions")),
        postgres=(*_depth_decisions("BIGINT"), *_guard_postgres("depth_decisions")),
    ),
    Migration("0007_action_turn_link", sqlite=_TURN_LINK, postgres=_TURN_LINK),
    Migration("0008_hash_chain", sqlite=_hash_chain("sqlite"), postgres=_hash_chain("postgres")),
    Migration("0009_tenants_sessions", sqlite=_TENANTS_SESSIONS, postgres=_TENANTS_SESSIONS),
    Migration("0010_turn_order", sqlite=_TURN_ORDER_SQLITE, postgres=_TURN_ORDER_POSTGRES),
    Migration("0011_links", sqlite=_links("sqlite"), postgres=_links("postgres")),
    Migration(
        "0012_chained_only", sqlite=chained_only("sqlite"), postgres=chained_only("postgres")
    ),
    Migration(
        "0013_spent_states", sqlite=_spent_states("sqlite"), postgres=_spent_states("postgres")
    ),
    Migration("0014_decision_accounts", sqlite=_DECISION_ACCOUNTS, postgres=_DECISION_ACCOUNTS),
    Migration("0015_console_indexes", sqlite=_CONSOLE_INDEXES, postgres=_CONSOLE_INDEXES),
    Migration("0016_decision_traces", sqlite=_DECISION_TRACES, postgres=_DECISION_TRACES),
)


class MigrationTarget(Protocol):
    """What a backend offers the migrator: statements, queries and a transaction."""

    dialect: Dialect
    location: str

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        """Run one statement (``?`` placeholders)."""
        ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a query and return all rows (``?`` placeholders)."""
        ...

    def table_exists(self, name: str) -> bool:
        """Whether the log's schema has a table of that name."""
        ...

    def tables(self) -> list[str]:
        """The names of every table in the log's database or schema."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """A write transaction that also serialises concurrent migrators."""
        ...


def applied(target: MigrationTarget) -> list[str]:
    """The names of the migrations recorded in the log, in the order they were applied."""
    if not target.table_exists(MIGRATIONS_TABLE):
        return []
    rows = target.query(f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY applied_at, name")
    return [str(r[0]) for r in rows]


def pending(names: Sequence[str], migrations: Sequence[Migration] = MIGRATIONS) -> list[Migration]:
    """The migrations of ``migrations`` not in ``names``, in order.

    Raises:
        SchemaError: ``names`` holds a migration this code does not know.
    """
    known = {m.name for m in migrations}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SchemaError(
            f"the decision log records migration(s) {unknown} that this maitred does not know "
            f"(it knows {[m.name for m in migrations]}): it was written by a newer maitred; "
            "upgrade maitred to read or write it"
        )
    done = set(names)
    return [m for m in migrations if m.name not in done]


def migrate(
    target: MigrationTarget,
    *,
    read_only: bool = False,
    migrations: Sequence[Migration] = MIGRATIONS,
) -> list[str]:
    """Bring the log to the newest schema; return the names of the migrations applied.

    Args:
        target: the open backend.
        read_only: check only; a log that needs migrating raises instead of being changed.
        migrations: the list to apply (tests pass a prefix to build a log at an older schema).

    Raises:
        SchemaError: the log is newer than this code, needs migrating while read-only, a
            migration failed (its transaction is rolled back), or (writable) the location
            holds other tables and no log.
        LogError: read-only and the location holds no decision log at all.
    """
    done = applied(target)
    todo = pending(done, migrations)
    if not todo:
        return []
    if not done and not read_only:
        refuse_foreign(target)
    if read_only:
        if not target.table_exists(MIGRATIONS_TABLE):
            raise LogError(
                f"{target.location} is not a maitred decision log (no {MIGRATIONS_TABLE} "
                "table); check the path or URL, or write a run to it first"
            )
        raise SchemaError(
            f"the decision log at {target.location} needs migrations "
            f"{[m.name for m in todo]} and was opened read-only; open it once read-write "
            "with this maitred to upgrade it: `maitred log migrate --log PATH`"
        )
    for migration in todo:
        _apply(target, migration)
    return [m.name for m in todo]


def refuse_foreign(target: MigrationTarget) -> None:
    """Refuse to create a log where other tables already live.

    A log is created only in an empty database (SQLite file) or schema (PostgreSQL), never
    beside someone else's tables: pointing ``--log`` at, say, the accounts database by mistake
    must not add maitred's tables to it.

    Raises:
        SchemaError: the location holds tables and no ``maitred_migrations`` table.
    """
    found = target.tables()
    if not found or MIGRATIONS_TABLE in found:  # empty, or a log another process just created
        return
    shown = ", ".join(found[:10]) + (f" and {len(found) - 10} more" if len(found) > 10 else "")
    where = "schema" if target.dialect == "postgres" else "database"
    hint = (
        "give another schema (`?schema=NAME` in the URL) or database"
        if target.dialect == "postgres"
        else "give the path of a new file"
    )
    raise SchemaError(
        f"{target.location} is not a maitred decision log and not empty: its {where} holds "
        f"{len(found)} other table(s) ({shown}); maitred will not add its tables beside them. "
        f"Check the --log path or URL, or {hint}"
    )


def _apply(target: MigrationTarget, migration: Migration) -> None:
    try:
        with target.transaction():
            if target.dialect == "postgres":  # serialise concurrent migrators of one schema
                target.execute(
                    "SELECT pg_advisory_xact_lock(hashtext(current_schema() || ?))",
                    (".maitred_migrations",),
                )
            target.execute(
                f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} "
                "(name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
            )
            done = target.query(
                f"SELECT 1 FROM {MIGRATIONS_TABLE} WHERE name = ?", (migration.name,)
            )
            if done:  # another process applied it while we waited for the lock
                return
            for statement in migration.statements(target.dialect):
                target.execute(statement)
            target.execute(
                f"INSERT INTO {MIGRATIONS_TABLE} (name, applied_at) VALUES (?, ?)",
                (migration.name, time.time()),
            )
    except LogError as exc:
        raise SchemaError(
            f"migration {migration.name} failed on the decision log at {target.location} and "
            f"was rolled back: {exc}; is this a maitred log? (a database with its own tables "
            "named runs/turns/pairs/snapshots cannot hold one)"
        ) from exc
