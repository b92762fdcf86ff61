"""open_provider: specs by URL scheme, generated choices, and the public surface."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

import maitred.state
from maitred.errors import ConfigError, MissingExtraError
from maitred.state import (
    JsonStateProvider,
    SqlStateProvider,
    TableSpec,
    open_provider,
    provider_schemes,
    register_provider,
)


def test_all_is_sorted_and_complete() -> None:
    names = maitred.state.__all__
    assert list(names) == sorted(names)
    assert {"Snapshot", "StateProvider", "open_provider"} <= set(names)
    assert all(hasattr(maitred.state, name) for name in names)


def test_json_by_scheme_or_suffix(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"a": {"account": {"plan": "free"}}}))
    for spec in (f"json:{path}", str(path)):
        provider = open_provider(spec)
        assert isinstance(provider, JsonStateProvider)
        assert provider.fetch("a", ["account.plan"]).values == {"account.plan": "free"}
    with pytest.raises(ConfigError, match="tables apply to SQL providers only"):
        open_provider(str(path), {"account": "accounts"})
    with pytest.raises(ConfigError, match="timeout_s applies to SQL providers only"):
        open_provider(str(path), timeout_s=1)


def test_sqlite_url(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE accounts (account_id TEXT, plan TEXT)")
        conn.execute("INSERT INTO accounts VALUES ('a', 'free')")
    provider = open_provider(f"sqlite:///{path}", {"account": TableSpec("accounts")})
    assert isinstance(provider, SqlStateProvider)
    assert provider.fetch("a", ["account.plan"]).values == {"account.plan": "free"}
    with pytest.raises(ConfigError, match="sqlite state provider needs tables"):
        open_provider(f"sqlite:///{path}")


def test_postgres_url_builds_without_connecting() -> None:
    pytest.importorskip(
        "psycopg", reason="needs the postgres extra: pip install 'maitred[postgres]'"
    )
    for scheme in ("postgresql", "postgres"):
        provider = open_provider(f"{scheme}://u:pw@127.0.0.1:1/db", {"account": "accounts"})
        assert isinstance(provider, SqlStateProvider)
        assert "pw" not in provider.name


def test_postgres_without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # makes `import psycopg` fail
    with pytest.raises(MissingExtraError, match=r"pip install 'maitred\[postgres\]'"):
        open_provider("postgresql://127.0.0.1/db", {"account": "accounts"})


def test_unknown_spec_lists_every_registered_scheme() -> None:
    with pytest.raises(ConfigError, match="choose one of") as info:
        open_provider("redis://cache:6379")
    for entry in provider_schemes():
        assert entry.example in str(info.value)
    assert {entry.scheme for entry in provider_schemes()} >= {"json", "postgresql", "sqlite"}


def test_register_refuses_duplicates_and_bad_schemes() -> None:
    with pytest.raises(ConfigError, match="already registered"):
        register_provider("sqlite", "sqlite:///x", lambda spec, tables, timeout: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(ConfigError, match="not a valid URL scheme"):
        register_provider("1x", "1x:", lambda spec, tables, timeout: None)  # type: ignore[arg-type,return-value]
