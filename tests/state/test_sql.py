"""SqlStateProvider: one set of test bodies, run on a real SQLite file and real PostgreSQL."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import pytest

from maitred.errors import ConfigError, ProviderError, ProviderTimeout
from maitred.state import SqlStateProvider, TableSpec
from maitred.state.sql import UNKNOWN_UPDATE

from .conftest import PostgresBackend, SqlBackend

T_ACCOUNT = 1_700_000_000.0
T_BILLING = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)

TABLES = {
    "account": TableSpec("accounts", updated_column="updated_at"),
    "billing": TableSpec("billing", id_column="customer_id", updated_column="changed"),
}


def seed(db: SqlBackend) -> None:
    db.create(
        "accounts",
        "account_id TEXT PRIMARY KEY, plan TEXT, seats INTEGER, updated_at DOUBLE PRECISION",
        [("acct-1", "free", 3, T_ACCOUNT), ("acct-2", "premium", 10, None)],
    )
    db.create(
        "billing",
        "customer_id TEXT PRIMARY KEY, status TEXT, balance NUMERIC(10,2), note TEXT, changed TEXT",
        [("acct-1", "past_due", 12.5, None, T_BILLING.isoformat())],
    )


def test_values_key_as_of_and_version(sql_backend: SqlBackend) -> None:
    seed(sql_backend)
    provider = sql_backend.provider(TABLES)
    snap = provider.fetch(
        "acct-1", ["account.plan", "account.seats", "billing.status", "billing.balance"]
    )
    assert snap.values == {
        "account.plan": "free",
        "account.seats": 3,
        "billing.status": "past_due",
        "billing.balance": 12.5,
    }
    assert snap.missing == frozenset()
    assert snap.key_as_of == {
        "account.plan": T_ACCOUNT,
        "account.seats": T_ACCOUNT,
        "billing.status": T_BILLING.timestamp(),
        "billing.balance": T_BILLING.timestamp(),
    }
    assert snap.version == f"max-updated:{T_BILLING.timestamp()!r}"
    assert snap.hash == snap.compute_hash()


def test_one_query_per_root_table_and_columns_checked_once(sql_backend: SqlBackend) -> None:
    seed(sql_backend)
    provider = sql_backend.provider(TABLES)
    keys = ["account.plan", "account.seats", "billing.status", "billing.note", "billing.balance"]
    provider.fetch("acct-1", keys)
    assert len(sql_backend.row_queries()) == 2
    assert len(sql_backend.column_checks()) == 2
    sql_backend.statements.clear()
    provider.fetch("acct-1", keys)
    assert len(sql_backend.row_queries()) == 2
    assert sql_backend.column_checks() == []
    assert sql_backend.connections == 1


def test_absent_things_are_missing_keys(sql_backend: SqlBackend) -> None:
    seed(sql_backend)
    provider = sql_backend.provider(TABLES)
    snap = provider.fetch(
        "acct-2",
        [
            "account.plan",  # present
            "billing.status",  # acct-2 has no billing row
            "billing.balance",
            "domain.registrar_lock",  # no table for the root
            "account",  # not root.column
            "account.plan.deeper",  # not a column name
        ],
    )
    assert snap.values == {"account.plan": "premium"}
    assert snap.missing == {
        "billing.status",
        "billing.balance",
        "domain.registrar_lock",
        "account",
        "account.plan.deeper",
    }
    assert len(sql_backend.row_queries()) == 2  # both tables were read; billing had no row


def test_a_column_the_table_lacks_is_a_provider_error(sql_backend: SqlBackend) -> None:
    """Missing for every account is a misconfiguration, not absence: were it a missing key, an
    ``on_missing: offer`` predicate would pass (issue 16, defect 2, when the store was down at
    start and the load-time check could not read the columns)."""
    seed(sql_backend)
    provider = sql_backend.provider(TABLES)
    with pytest.raises(ProviderError, match=r"no column for \['account.no_such_column'\]"):
        provider.fetch("acct-2", ["account.plan", "account.no_such_column"])


def test_unknown_account_gives_all_missing(sql_backend: SqlBackend) -> None:
    seed(sql_backend)
    snap = sql_backend.provider(TABLES).fetch("nobody", ["account.plan", "billing.status"])
    assert snap.values == {} and snap.missing == {"account.plan", "billing.status"}


def test_a_null_in_a_typed_column_is_missing_and_null_updated_is_infinitely_old(
    sql_backend: SqlBackend,
) -> None:
    seed(sql_backend)
    provider = sql_backend.provider(TABLES)
    snap = provider.fetch("acct-1", ["billing.note"])
    assert snap.values == {} and snap.missing == {"billing.note"}  # under on_missing
    snap = provider.fetch("acct-2", ["account.plan"])
    assert snap.key_as_of == {"account.plan": UNKNOWN_UPDATE}
    assert snap.version == ""
    assert snap.age("account.plan", now=T_ACCOUNT) == T_ACCOUNT


def test_identifiers_with_sql_are_refused(sql_backend: SqlBackend) -> None:
    seed(sql_backend)
    with pytest.raises(ConfigError, match="plain SQL"):
        TableSpec("accounts; DROP TABLE accounts")
    with pytest.raises(ConfigError, match="id_column"):
        TableSpec("accounts", id_column="account_id OR 1=1")
    with pytest.raises(ConfigError, match="updated_column"):
        TableSpec("accounts", updated_column='x" --')
    provider = sql_backend.provider(TABLES)
    evil = 'account.plan" FROM accounts; DROP TABLE accounts; --'
    snap = provider.fetch("acct-1' OR '1'='1", [evil, "account.plan"])
    assert snap.missing == {evil, "account.plan"}  # the id is bound, never spliced in
    assert not any("DROP" in s for s in sql_backend.statements)
    assert provider.fetch("acct-1", ["account.plan"]).values == {"account.plan": "free"}


def test_missing_table_is_a_provider_error_naming_everything(sql_backend: SqlBackend) -> None:
    provider = sql_backend.provider({"account": "no_such_table"})
    with pytest.raises(ProviderError) as info:
        provider.fetch("acct-1", ["account.plan"])
    message = str(info.value)
    for needed in ("test-", "'acct-1'", "account.plan", "'no_such_table'", "check that"):
        assert needed in message
    assert not isinstance(info.value, ProviderTimeout)


def test_misconfigured_spec_columns_are_errors(sql_backend: SqlBackend) -> None:
    seed(sql_backend)
    provider = sql_backend.provider({"account": TableSpec("accounts", id_column="customer")})
    with pytest.raises(ProviderError, match="no column 'customer' for its id_column"):
        provider.fetch("acct-1", ["account.plan"])
    provider = sql_backend.provider({"account": TableSpec("accounts", updated_column="mtime")})
    with pytest.raises(ProviderError, match="no column 'mtime' for its updated_column"):
        provider.fetch("acct-1", ["account.plan"])


def test_two_rows_for_one_account_is_an_error(sql_backend: SqlBackend) -> None:
    sql_backend.create("dupes", "account_id TEXT, plan TEXT", [("a", "x"), ("a", "y")])
    with pytest.raises(ProviderError, match="more than one row"):
        sql_backend.provider({"account": "dupes"}).fetch("a", ["account.plan"])


def test_binary_values_are_refused(sql_backend: SqlBackend) -> None:
    sql_backend.create(
        "blobs", f"account_id TEXT, data {sql_backend.blob_type}, plan TEXT", [("a", b"\x00", "x")]
    )
    provider = sql_backend.provider({"account": "blobs"})
    with pytest.raises(ProviderError, match="binary values are not allowed"):
        provider.fetch("a", ["account.data"])
    assert provider.fetch("a", ["account.plan"]).values == {"account.plan": "x"}


def test_a_held_lock_times_out_then_recovers(sql_backend: SqlBackend) -> None:
    seed(sql_backend)
    provider = sql_backend.provider(TABLES, timeout_s=0.1)
    with sql_backend.lock("accounts"), pytest.raises(ProviderTimeout) as info:
        provider.fetch("acct-1", ["account.plan"])
    assert "timeout_s" in str(info.value) and "'acct-1'" in str(info.value)
    assert provider.fetch("acct-1", ["account.plan"]).values == {"account.plan": "free"}


def test_a_slow_query_times_out(sql_backend: SqlBackend) -> None:
    sql_backend.execute(f"CREATE VIEW slow AS {sql_backend.slow_view}")
    provider = sql_backend.provider({"account": "slow"}, timeout_s=0.1)
    with pytest.raises(ProviderTimeout, match="ran out of time"):
        provider.fetch("a", ["account.plan"])


def test_from_url(sql_backend: SqlBackend) -> None:
    seed(sql_backend)
    tables = {
        "account": TableSpec(sql_backend.table("accounts"), updated_column="updated_at"),
        "billing": TableSpec(sql_backend.table("billing"), id_column="customer_id"),
    }
    with SqlStateProvider.from_url(sql_backend.url, tables, timeout_s=5) as provider:
        snap = provider.fetch("acct-1", ["account.plan", "billing.status"])
    assert snap.values == {"account.plan": "free", "billing.status": "past_due"}
    assert snap.key_as_of == {"account.plan": T_ACCOUNT}


def test_one_connection_per_thread(sql_backend: SqlBackend) -> None:
    seed(sql_backend)
    provider = sql_backend.provider(TABLES)
    results: list[object] = []

    def work() -> None:
        results.append(provider.fetch("acct-1", ["account.plan"]).values)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [{"account.plan": "free"}] * 3
    assert sql_backend.connections == 3
    provider.close()
    provider.fetch("acct-1", ["account.plan"])
    assert sql_backend.connections == 4


# -- one database only -------------------------------------------------------------------


@pytest.mark.postgres
def test_postgres_native_types(postgres_backend: PostgresBackend) -> None:
    postgres_backend.create(
        "typed",
        "account_id INTEGER PRIMARY KEY, balance NUMERIC(10,2), whole NUMERIC(12,0), "
        "renews DATE, flags JSONB, tags TEXT[], updated TIMESTAMPTZ",
        [(7, "9.90", "42", dt.date(2025, 1, 31), '{"beta": true}', ["a", "b"], T_BILLING)],
    )
    provider = postgres_backend.provider({"account": TableSpec("typed", updated_column="updated")})
    keys = ["account.balance", "account.whole", "account.renews", "account.flags", "account.tags"]
    snap = provider.fetch("7", keys)
    assert snap.values == {
        "account.balance": 9.9,
        "account.whole": 42,
        "account.renews": 1738281600,  # a date is its midnight UTC, in unix seconds (typed state)
        "account.flags": {"beta": True},
        "account.tags": ["a", "b"],
    }
    assert set(snap.key_as_of.values()) == {T_BILLING.timestamp()}
    assert provider.schema(keys).types == {
        "account.balance": "double",
        "account.whole": "int",
        "account.renews": "timestamp",
        "account.flags": "json",
        "account.tags": "json",
    }


def test_sqlite_url_must_name_an_existing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no SQLite database"):
        SqlStateProvider.from_url(f"sqlite:///{tmp_path}/absent.db", {"account": "accounts"})
    with pytest.raises(ConfigError, match="in-memory"):
        SqlStateProvider.from_url("sqlite:///:memory:", {"account": "accounts"})
    with pytest.raises(ConfigError, match="unsupported database URL 'mysql://u:\\*\\*\\*@h/db'"):
        SqlStateProvider("mysql://u:secret@h/db", {"account": "accounts"})


def test_sqlite_url_opens_read_only(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "s.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE accounts (account_id TEXT, plan TEXT)")
    provider = SqlStateProvider.from_url(f"sqlite:///{path}", {"account": "accounts"})
    assert provider.fetch("a", ["account.plan"]).missing == {"account.plan"}
    conn = provider._connection("a", frozenset())[0]
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("INSERT INTO accounts VALUES ('a', 'x')")


def test_bad_configuration() -> None:
    with pytest.raises(ConfigError, match="no tables"):
        SqlStateProvider(lambda: None, {})
    with pytest.raises(ConfigError, match="without dots"):
        SqlStateProvider(lambda: None, {"a.b": "t"})
    with pytest.raises(ConfigError, match="timeout_s must be positive"):
        SqlStateProvider(lambda: None, {"a": "t"}, timeout_s=0)
    with pytest.raises(ConfigError, match="pass dialect="):
        SqlStateProvider(lambda: object(), {"a": "t"}).fetch("x", ["a.b"])


def test_a_failing_factory_is_a_provider_error() -> None:
    def connect() -> object:
        raise OSError("no route to host")

    with pytest.raises(ProviderError, match=r"could not connect.*no route to host"):
        SqlStateProvider(connect, {"a": "t"}, dialect="sqlite").fetch("x", ["a.b"])


def test_account_found_when_any_mapped_table_has_its_row(sql_backend: SqlBackend) -> None:
    seed(sql_backend)
    provider = sql_backend.provider(TABLES)
    assert provider.fetch("acct-1", ["billing.status"]).account_found is True
    # acct-2 has no billing row, but the accounts table knows it: billing keys are missing data
    sql_backend.statements.clear()
    snap = provider.fetch("acct-2", ["billing.status"])
    assert snap.account_found is True and snap.missing == {"billing.status"}
    assert len(sql_backend.row_queries()) == 2  # billing, then the existence check
    # an id no mapped table holds is an unknown account, not "every key missing"
    snap = provider.fetch("nobody", ["account.plan", "billing.status"])
    assert snap.account_found is False
    assert snap.to_json()["account_found"] is False
    # a turn that found its row asks nothing more
    sql_backend.statements.clear()
    provider.fetch("acct-1", ["account.plan"])
    assert len(sql_backend.row_queries()) == 1


def test_uncovered_names_keys_whose_root_has_no_table(sql_backend: SqlBackend) -> None:
    provider = sql_backend.provider(TABLES)
    keys = ["account.plan", "billing.status", "domain.registrar_lock", "site.published"]
    assert provider.uncovered(keys) == {"domain.registrar_lock", "site.published"}
