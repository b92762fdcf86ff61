"""State from SQL tables: SQLite (stdlib) and PostgreSQL (psycopg 3), through one code path.

Each key root maps to one table, one row per account::

    SqlStateProvider.from_url(
        "postgresql://db:5432/app",
        {
            "account": TableSpec("accounts", updated_column="updated_at"),
            "billing": TableSpec("billing", id_column="customer_id"),
        },
        timeout_s=0.5,
    )

A key ``root.field`` is column ``field`` of the root's table, in the row whose ``id_column``
equals the account id. For one fetch the provider groups the requested keys by root and issues
**one** ``SELECT col1, col2, ... FROM table WHERE id_column = ?`` per table, all inside one
read-only transaction (``REPEATABLE READ`` on PostgreSQL), so every value of a turn comes from
one consistent database state.

Invariants:

* **Nothing unvalidated reaches SQL.** Table and column names must match
  ``^[A-Za-z_][A-Za-z0-9_]*$`` (tables may be ``schema.table``); a requested column must also
  exist in the table, checked against the table's real columns (read once per table and cached).
  The account id is always a bound parameter. Names are double-quoted, so they are matched
  exactly as stored (PostgreSQL stores unquoted names in lower case).
* **Absence is data, misconfiguration is an error.** A root with no table (refused at load by
  coverage), a key that is not ``root.column`` and an account with no row give *missing* keys;
  a table that does not exist, a column a requested key names that it lacks (the same for every
  account, so the gate fails closed with ``state_unavailable`` instead of letting ``on_missing:
  offer`` pass), an ``id_column`` / ``updated_column`` it lacks, two rows for one account, a
  driver failure or a timeout raise :class:`~maitred.errors.ProviderError` /
  :class:`~maitred.errors.ProviderTimeout` naming the provider, the account and the keys.
* **Values are typed**: each column's type is read from the table's declared column types
  (SQLite ``PRAGMA table_info``; PostgreSQL the result's type OIDs) or declared in the
  :class:`TableSpec` (``types``), and every value is converted to it
  (:mod:`maitred.state.schema`): a SQLite BOOLEAN's 0/1 become ``bool``, dates and timestamps
  whole unix seconds, JSON columns dicts and lists. A value that does not fit its type is
  recorded in ``Snapshot.invalid`` (the predicates reading it fail closed); binary values are
  refused; a NULL is a *missing* key (the predicate's ``on_missing`` decides), never a null
  that a comparison quietly finds false.
* **Keys are known before any fetch**: :meth:`SqlStateProvider.schema` gives each key's type
  and names the keys with no column, so a pipeline refuses a catalog that reads a column a
  table lacks (:func:`maitred.contract.typecheck.require_typed_state`).
* **An account no table knows does not exist.** The snapshot's ``account_found`` is True as
  soon as one table read for the turn has the account's row. When none has, the provider asks
  the other mapped tables too (``SELECT 1 ... LIMIT 1`` each, same transaction, stopping at the
  first row), so a customer with no billing row but an accounts row is *found* (its billing
  keys are merely missing), while an id that no mapped table holds gives
  ``account_found=False`` and the gate fails closed with the cause ``account_not_found``.
  The extra queries run only for turns in which every table read lacked the row.
* **Coverage is known before any fetch**: :meth:`SqlStateProvider.uncovered` names the keys
  whose root has no table, so a pipeline refuses a mapping that misses a root its predicates
  read (:func:`maitred.gate.executability.require_coverage`).
* **Freshness comes from the table.** With ``updated_column`` set, every key of that root gets
  ``key_as_of`` from it (unix seconds, ISO-8601 text or a date/time; naive times are UTC). A
  NULL there means "unknown", recorded as ``0.0`` -- infinitely old -- so predicates with a
  freshness bound apply their ``on_stale`` fail mode instead of trusting it. The snapshot
  ``version`` is ``"max-updated:<seconds>"``, the newest such value read (empty without one).

Thread-safety: **one connection per thread**, opened on that thread's first fetch and kept;
the column cache is shared under a lock. A connection that raised a driver error is closed and
replaced on the next fetch. :meth:`SqlStateProvider.close` closes every connection.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from maitred.errors import ConfigError, ProviderError, ProviderTimeout
from maitred.state._sql_dialects import (
    ConnectionFactory,
    Dialect,
    DialectName,
    detect,
    dialect_named,
    open_url,
)
from maitred.state._values import IDENTIFIER, UnsupportedValue, json_safe, split_key, unix_seconds
from maitred.state.schema import InvalidValue, KeySchema, StateType, coerce, state_type
from maitred.state.snapshot import Snapshot, now

UNKNOWN_UPDATE: float = 0.0
"""``key_as_of`` recorded when a row's ``updated_column`` is NULL (see the module docstring)."""


def _check_identifier(value: str, what: str, *, qualified: bool = False) -> None:
    parts = (value.split(".") if qualified else [value]) if isinstance(value, str) else []
    if not parts or len(parts) > 2 or not all(IDENTIFIER.match(p) for p in parts):
        shape = "name or schema.name" if qualified else "name"
        raise ConfigError(
            f"{what} {value!r} is not a plain SQL {shape}: it must match "
            f"{IDENTIFIER.pattern} so it can be put in a query safely; rename it or create "
            "a view with such a name"
        )


def _quote(name: str) -> str:
    """Double-quote a name already checked by :func:`_check_identifier`."""
    return ".".join(f'"{part}"' for part in name.split("."))


@dataclass(frozen=True)
class TableSpec:
    """Where one key root lives.

    Attributes:
        table: the table (or view), ``name`` or ``schema.name``.
        id_column: the column holding the account id (one row per account).
        updated_column: optional column with when the row last changed; gives ``key_as_of``.
        types: column -> state type, where the table's declared type does not say it (a
            SQLite column declared INTEGER that holds 0/1 flags: ``{"frozen": "bool"}``);
            overrides the declared type.

    Raises:
        ConfigError: a name that is not a plain SQL identifier, or an unknown type.
    """

    table: str
    id_column: str = "account_id"
    updated_column: str | None = None
    types: Mapping[str, StateType] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        _check_identifier(self.table, "TableSpec table", qualified=True)
        _check_identifier(self.id_column, f"TableSpec({self.table!r}) id_column")
        if self.updated_column is not None:
            _check_identifier(self.updated_column, f"TableSpec({self.table!r}) updated_column")
        if not isinstance(self.types, Mapping):
            raise ConfigError(f"TableSpec({self.table!r}) types must map column -> type")
        for column, kind in self.types.items():
            _check_identifier(column, f"TableSpec({self.table!r}) types column")
            state_type(kind, f"TableSpec({self.table!r}) types[{column!r}]")


@dataclass
class _RootPlan:
    """The keys of one root to read from its table: column -> requested key."""

    root: str
    spec: TableSpec
    columns: dict[str, str] = field(default_factory=dict)
    queried: bool = False  # its row was asked for (so it needs no existence check)


@dataclass
class _Read:
    """What one fetch collected."""

    values: dict[str, Any] = field(default_factory=dict)
    key_as_of: dict[str, float] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)
    invalid: dict[str, str] = field(default_factory=dict)
    newest: float | None = None
    found: bool | None = None


class SqlStateProvider:
    """Account state from SQL tables, one row per account per key root.

    Args:
        connect: a connection factory (called once per thread; the provider switches each
            connection it returns to autocommit and runs its own read transactions) or a URL
            (see :meth:`from_url`).
        tables: key root -> :class:`TableSpec`, or a table name (then ``account_id`` is the id
            column and there is no updated column).
        timeout_s: time limit: SQLite busy timeout plus a per-read deadline, PostgreSQL
            ``statement_timeout`` for the session; exceeding it raises ``ProviderTimeout``.
        dialect: ``"sqlite"`` or ``"postgresql"``; detected from the first connection when a
            factory returns a plain ``sqlite3`` or ``psycopg`` connection.
        name: how errors and logs name this provider (defaults to the URL, password removed).
        clock: the snapshot time source.

    Raises:
        ConfigError: a bad URL, root or table name.
        MissingExtraError: PostgreSQL without the ``postgres`` extra installed.
    """

    def __init__(
        self,
        connect: ConnectionFactory | str,
        tables: Mapping[str, TableSpec | str | Mapping[str, Any]],
        *,
        timeout_s: float | None = None,
        dialect: DialectName | None = None,
        name: str | None = None,
        clock: Callable[[], float] = now,
    ) -> None:
        if timeout_s is not None and not timeout_s > 0:
            raise ConfigError(f"SQL state provider: timeout_s must be positive, not {timeout_s!r}")
        self.timeout_s = timeout_s
        self.tables = _table_specs(tables)
        self._dialect: Dialect | None = dialect_named(dialect) if dialect else None
        if isinstance(connect, str):  # the URL decides the dialect
            self._factory, self._dialect, default_name = open_url(connect, timeout_s)
        else:
            self._factory, default_name = connect, "sql"
        self.name = name or default_name
        self._clock = clock
        self._local = threading.local()
        self._lock = threading.Lock()
        self._generation = 0
        self._connections: list[Any] = []
        self._columns: dict[str, Mapping[str, StateType]] = {}  # table -> column -> type

    @classmethod
    def from_url(
        cls,
        url: str,
        tables: Mapping[str, TableSpec | str | Mapping[str, Any]],
        *,
        timeout_s: float | None = None,
        clock: Callable[[], float] = now,
    ) -> SqlStateProvider:
        """A provider for a database URL.

        Args:
            url: ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` (SQLite is
                opened read-only and must exist) or ``postgresql://user@host:port/db``
                (``postgres://`` too).
            tables: key root -> :class:`TableSpec` or table name.
            timeout_s: see the class.
            clock: the snapshot time source.
        """
        return cls(url, tables, timeout_s=timeout_s, clock=clock)

    def fetch(self, account: str, keys: Collection[str]) -> Snapshot:
        """Read every requested key of ``account`` in one transaction, one query per table.

        Raises:
            ProviderTimeout: the database did not answer within ``timeout_s``.
            ProviderError: the connection or a query failed, or the tables do not match their
                specs; the message names the provider, account, keys and what to check.
        """
        requested = frozenset(keys)
        plans, read = self._plan(requested)
        as_of = self._clock()
        if plans:
            conn, dialect = self._connection(account, requested)
            try:
                self._read(conn, dialect, account, plans, read)
            except dialect.errors() as exc:
                self._discard(conn)
                self._forget_columns(spec.table for spec in self.tables.values())
                raise self._driver_error(exc, dialect, account, requested, plans) from exc
        version = "" if read.newest is None else f"max-updated:{read.newest!r}"
        return Snapshot(
            account,
            read.values,
            as_of,
            read.key_as_of,
            frozenset(read.missing),
            version,
            account_found=read.found,
            invalid=read.invalid,
        )

    def uncovered(self, keys: Collection[str]) -> frozenset[str]:
        """The keys no table can ever serve: their root has no :class:`TableSpec` here.

        (A column the table lacks needs the table: :meth:`schema` names those.)
        """
        return frozenset(key for key in keys if split_key(key)[0] not in self.tables)

    def schema(self, keys: Collection[str]) -> KeySchema:
        """Each key's state type, and why a key has no source (no table for its root, no such
        column), read from the tables' declared column types (cached, as for fetches).

        Raises:
            ProviderError / ProviderTimeout: a table is missing or the database failed.
        """
        requested = frozenset(keys)
        plans, read = self._plan(requested)
        absent = {key: self._no_source(key) for key in read.missing}
        types: dict[str, StateType] = {}
        if plans:
            conn, dialect = self._connection("(schema)", requested)
            try:
                for plan in plans:
                    columns = self._table_columns(conn, dialect, plan.spec)
                    self._check_spec_columns(plan.root, plan.spec, columns)
                    for column, key in plan.columns.items():
                        if column in columns:
                            types[key] = plan.spec.types.get(column, columns[column])
                        else:
                            absent[key] = (
                                f"table {plan.spec.table!r} (root {plan.root!r}) has no column "
                                f"{column!r}; it has {sorted(columns)}"
                            )
            except dialect.errors() as exc:
                self._discard(conn)
                raise self._driver_error(exc, dialect, "(schema)", requested, plans) from exc
        return KeySchema(types, absent)

    def _no_source(self, key: str) -> str:
        root, column = split_key(key)
        if root not in self.tables:
            return f"no table is mapped for key root {root!r} (roots: {sorted(self.tables)})"
        return (
            f"{column!r} is not a column name of table {self.tables[root].table!r} "
            f"(root {root!r}): a key is root.column"
        )

    def refresh_columns(self) -> None:
        """Forget the cached table columns (call after adding a column to a live table)."""
        with self._lock:
            self._columns.clear()

    def close(self) -> None:
        """Close every connection this provider opened; a later fetch opens new ones."""
        with self._lock:
            connections, self._connections = self._connections, []
            self._generation += 1
        for conn in connections:
            _close_quietly(conn)

    def __enter__(self) -> SqlStateProvider:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqlStateProvider({self.name!r}, roots={sorted(self.tables)})"

    # -- planning and reading -------------------------------------------------------------

    def _plan(self, requested: frozenset[str]) -> tuple[list[_RootPlan], _Read]:
        """Group keys by root; keys that can never be columns of a known table are missing."""
        read = _Read()
        plans: dict[str, _RootPlan] = {}
        for key in requested:
            root, column = split_key(key)
            spec = self.tables.get(root)
            if spec is None or not IDENTIFIER.match(column):
                read.missing.add(key)
                continue
            plans.setdefault(root, _RootPlan(root, spec)).columns[column] = key
        return [plans[root] for root in sorted(plans)], read

    def _read(
        self, conn: Any, dialect: Dialect, account: str, plans: list[_RootPlan], read: _Read
    ) -> None:
        dialect.arm(conn, self.timeout_s)
        try:
            conn.execute(dialect.begin)
            for plan in plans:
                self._read_root(conn, dialect, account, plan, read)
            if not read.found:
                read.found = self._account_exists(conn, dialect, account, plans)
        finally:
            dialect.disarm(conn)
            self._end_transaction(conn, dialect)

    def _account_exists(
        self, conn: Any, dialect: Dialect, account: str, plans: list[_RootPlan]
    ) -> bool:
        """Whether any mapped table has a row for ``account`` (tables not yet asked, in root
        order; called only when no table read for this fetch had the row)."""
        asked = {plan.root for plan in plans if plan.queried}
        for root in sorted(set(self.tables) - asked):
            spec = self.tables[root]
            self._check_spec_columns(root, spec, self._table_columns(conn, dialect, spec))
            query = (
                f"SELECT 1 FROM {_quote(spec.table)} "
                f"WHERE {_quote(spec.id_column)} = {dialect.placeholder} LIMIT 1"
            )
            if conn.execute(query, (account,)).fetchall():
                return True
        return False

    def _check_spec_columns(
        self, root: str, spec: TableSpec, columns: Mapping[str, StateType]
    ) -> None:
        for needed, what in (
            (spec.id_column, "id_column"),
            (spec.updated_column, "updated_column"),
        ):
            if needed is not None and needed not in columns:
                raise ProviderError(
                    f"SQL state provider {self.name!r}: table {spec.table!r} (key root "
                    f"{root!r}) has no column {needed!r} for its {what}; it has "
                    f"{sorted(columns)}: fix the TableSpec or the table"
                )

    def _read_root(
        self, conn: Any, dialect: Dialect, account: str, plan: _RootPlan, read: _Read
    ) -> None:
        spec = plan.spec
        columns = self._table_columns(conn, dialect, spec)
        self._check_spec_columns(plan.root, spec, columns)
        lacking = sorted(key for c, key in plan.columns.items() if c not in columns)
        if lacking:  # the same for every account: a misconfiguration, never "no such record"
            raise ProviderError(
                f"SQL state provider {self.name!r}: table {spec.table!r} (key root "
                f"{plan.root!r}) has no column for {lacking}; it has {sorted(columns)}: add the "
                "column or map the root to a table that has it"
            )
        wanted = sorted(plan.columns)
        if not wanted:
            return
        plan.queried = True
        selected = [*wanted, *([spec.updated_column] if spec.updated_column else [])]
        query = (
            f"SELECT {', '.join(_quote(c) for c in selected)} FROM {_quote(spec.table)} "
            f"WHERE {_quote(spec.id_column)} = {dialect.placeholder} LIMIT 2"
        )
        rows = conn.execute(query, (account,)).fetchall()
        if not rows:
            read.missing.update(plan.columns.values())
            return
        read.found = True
        if len(rows) > 1:
            raise ProviderError(
                f"SQL state provider {self.name!r}: table {spec.table!r} has more than one row "
                f"with {spec.id_column} = {account!r}; the id column must be unique "
                "(add a unique constraint, or point the TableSpec at a view with one row each)"
            )
        kinds = {c: spec.types.get(c, columns[c]) for c in wanted}
        self._convert_row(account, plan, kinds, tuple(rows[0]), read)

    def _convert_row(
        self,
        account: str,
        plan: _RootPlan,
        kinds: Mapping[str, StateType],
        row: tuple[Any, ...],
        read: _Read,
    ) -> None:
        spec = plan.spec
        wanted = list(kinds)
        stamp: float | None = None
        try:
            if spec.updated_column is not None:
                stamp = unix_seconds(row[-1], f"{spec.table}.{spec.updated_column}")
            for column, value in zip(wanted, row, strict=False):
                key = plan.columns[column]
                if value is None and kinds[column] != "any":  # NULL: no value of that type
                    read.missing.add(key)
                    continue
                try:
                    read.values[key] = coerce(value, kinds[column], key)
                except InvalidValue as exc:  # kept as read, and marked: its readers fail closed
                    read.values[key] = json_safe(value, key)
                    read.invalid[key] = f"{exc} (column {spec.table}.{column})"
        except UnsupportedValue as exc:
            raise ProviderError(
                f"SQL state provider {self.name!r}, account {account!r}, table {spec.table!r}: "
                f"{exc}"
            ) from exc
        if spec.updated_column is None:
            return
        for column in wanted:
            if plan.columns[column] in read.values:
                read.key_as_of[plan.columns[column]] = UNKNOWN_UPDATE if stamp is None else stamp
        if stamp is not None and (read.newest is None or stamp > read.newest):
            read.newest = stamp

    def _table_columns(
        self, conn: Any, dialect: Dialect, spec: TableSpec
    ) -> Mapping[str, StateType]:
        """The table's real columns and their state types, read once (``LIMIT 0`` works on both
        databases; SQLite's declared types come from ``PRAGMA table_info``)."""
        with self._lock:
            cached = self._columns.get(spec.table)
        if cached is not None:
            return cached
        cursor = conn.execute(f"SELECT * FROM {_quote(spec.table)} LIMIT 0")
        description = cursor.description
        cursor.fetchall()
        columns = dialect.column_types(conn, _quote(spec.table), description)
        with self._lock:
            self._columns[spec.table] = columns
        return columns

    def _forget_columns(self, tables: Iterable[str]) -> None:
        with self._lock:
            for table in tables:
                self._columns.pop(table, None)

    # -- connections ----------------------------------------------------------------------

    def _connection(self, account: str, keys: frozenset[str]) -> tuple[Any, Dialect]:
        """This thread's connection, opened and prepared on first use."""
        held = getattr(self._local, "held", None)
        if held is not None and held[0] == self._generation:
            return held[1], held[2]
        try:
            conn = self._factory()
        except Exception as exc:  # the factory is caller code; any failure is a broken source
            raise self._connect_error(exc, account, keys) from exc
        dialect = self._dialect_for(conn)
        try:
            dialect.prepare(conn, self.timeout_s)
        except dialect.errors() as exc:
            _close_quietly(conn)
            raise self._connect_error(exc, account, keys) from exc
        with self._lock:
            self._connections.append(conn)
            self._local.held = (self._generation, conn, dialect)
        return conn, dialect

    @property
    def in_process(self) -> bool:
        """True for a SQLite database (a file of this machine), False for PostgreSQL or a
        dialect not known yet (see :attr:`maitred.Maitred.in_process`)."""
        return self._dialect is not None and self._dialect.name == "sqlite"

    def _dialect_for(self, conn: Any) -> Dialect:
        if self._dialect is None:
            detected = detect(conn)
            if detected is None:
                _close_quietly(conn)
                raise ConfigError(
                    f"SQL state provider {self.name!r}: cannot tell the database of a "
                    f"{type(conn).__module__}.{type(conn).__name__} connection; pass "
                    "dialect='sqlite' or dialect='postgresql'"
                )
            self._dialect = dialect_named(detected)
        return self._dialect

    def _discard(self, conn: Any) -> None:
        """Drop a connection that raised, so the next fetch on this thread reconnects."""
        with self._lock:
            if conn in self._connections:
                self._connections.remove(conn)
        self._local.held = None
        _close_quietly(conn)

    def _end_transaction(self, conn: Any, dialect: Dialect) -> None:
        try:
            conn.execute("ROLLBACK")  # read-only: rolling back is how a read ends
        except dialect.errors():
            # The values already read stay valid; only the connection is suspect.
            self._discard(conn)

    # -- errors ---------------------------------------------------------------------------

    def _connect_error(
        self, exc: BaseException, account: str, keys: frozenset[str]
    ) -> ProviderError:
        cls = ProviderTimeout if self._dialect and self._dialect.is_timeout(exc) else ProviderError
        return cls(
            f"SQL state provider {self.name!r} could not connect to read account {account!r} "
            f"keys [{', '.join(sorted(keys))}]: {type(exc).__name__}: {exc}; check that the "
            "database is running and reachable and that its URL or connection factory is right"
        )

    def _driver_error(
        self,
        exc: BaseException,
        dialect: Dialect,
        account: str,
        keys: frozenset[str],
        plans: list[_RootPlan],
    ) -> ProviderError:
        where = (
            f"SQL state provider {self.name!r} reading account {account!r} keys "
            f"[{', '.join(sorted(keys))}] from "
            + ", ".join(f"{p.spec.table!r} (root {p.root!r})" for p in plans)
        )
        if dialect.is_timeout(exc):
            limit = f"{self.timeout_s:g}s" if self.timeout_s is not None else "the driver default"
            return ProviderTimeout(
                f"{where} ran out of time ({limit}, {dialect.timeout_mechanism}): {exc}; look "
                "for a slow query (a view?) or a long transaction holding locks on these "
                "tables, or raise timeout_s"
            )
        return ProviderError(
            f"{where} failed: {type(exc).__name__}: {exc}; check that the database is reachable "
            "and that these tables exist and are readable by this connection's user"
        )


def _table_spec(root: str, spec: TableSpec | str | Mapping[str, Any]) -> TableSpec:
    if isinstance(spec, TableSpec):
        return spec
    if isinstance(spec, str):
        return TableSpec(spec)
    if isinstance(spec, Mapping):
        known = {"table", "id_column", "updated_column", "types"}
        unknown = sorted(set(spec) - known)
        if unknown or "table" not in spec:
            raise ConfigError(
                f"SQL state provider: root {root!r}: a table mapping needs `table` and may have "
                f"`id_column`, `updated_column`, `types` (column -> type); got keys {sorted(spec)}"
            )
        return TableSpec(**{k: spec[k] for k in known if k in spec})
    raise ConfigError(
        f"SQL state provider: root {root!r}: expected a table name, a mapping or a TableSpec, "
        f"got {type(spec).__name__}"
    )


def _table_specs(
    tables: Mapping[str, TableSpec | str | Mapping[str, Any]],
) -> dict[str, TableSpec]:
    specs: dict[str, TableSpec] = {}
    for root, spec in tables.items():
        if not isinstance(root, str) or not root or "." in root:
            raise ConfigError(
                f"SQL state provider: key root {root!r} must be a non-empty name without dots "
                "(the part of 'root.column' before the dot)"
            )
        specs[root] = _table_spec(root, spec)
    if not specs:
        raise ConfigError(
            "SQL state provider: no tables given; map each key root to a TableSpec, e.g. "
            "{'account': TableSpec('accounts')}"
        )
    return specs


def _close_quietly(conn: Any) -> None:
    with contextlib.suppress(Exception):  # best effort: the connection may already be broken
        conn.close()
