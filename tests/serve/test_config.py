"""The server config: every mistake is named by file and field, and the session store keeps
its bounds."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from maitred.actions.session import Session
from maitred.cli.main import main
from maitred.errors import ConfigError
from maitred.serve import load_config, open_engine, parse_config
from maitred.serve.sessions import SessionStore

from .deploy import sha, write_deployment

GOOD = {"token_sha256": sha("t"), "accounts": ["a"]}


def test_a_good_config_resolves_paths_against_its_own_folder(tmp_path: Path) -> None:
    config = load_config(write_deployment(tmp_path))
    assert config.catalogs == (str(tmp_path / "tools.json"),)
    assert config.log == str(tmp_path / "log.sqlite")
    assert config.state_timeout_s == 0.2
    assert config.limits.max_body_bytes == 4096
    assert config.tenants["acme"].owns("acc-pro") and not config.tenants["acme"].owns("glx-1")
    assert config.tenants["globex"].owns("glx-9") and not config.tenants["globex"].owns("acc")


def test_the_log_is_committed_before_answering_unless_async_is_written_out(
    tmp_path: Path,
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert load_config(write_deployment(tmp_path / "a")).durability == "commit"
    path = write_deployment(tmp_path / "b", log={"url": "l.sqlite", "durability": "async"})
    config = load_config(path)
    assert (config.log, config.durability) == (str(tmp_path / "b" / "l.sqlite"), "async")


@pytest.mark.parametrize(
    ("overrides", "field", "hint"),
    [
        ({"tenants": {"acme": {**GOOD, "token_sha256": "hunter2"}}}, "tenants.acme.token_sha256",
         "never the token itself"),
        ({"tenants": {"acme": {"token_sha256": sha("t")}}}, "tenants.acme", "exactly one of"),
        ({"tenants": {"acme": {**GOOD, "account_prefix": "a"}}}, "tenants.acme", "exactly one"),
        ({"tenants": {"a": GOOD, "b": GOOD}}, "tenants.b.token_sha256", "same token"),
        ({"tenants": {}}, "tenants", "at least one tenant"),
        ({"tenants": {"acme": {**GOOD, "token": "x"}}}, "tenants.acme.token", "not a known"),
        ({"limits": {"max_body_bytes": -1}}, "limits.max_body_bytes", "positive"),
        ({"limits": {"max_sessions": 1.5}}, "limits.max_sessions", "whole number"),
        ({"server": {"port": "http"}}, "server.port", "port number"),
        ({"options": {"top_k": "5"}}, "options.top_k", "wrong type"),
        ({"options": {"metod": "bm25"}}, "options.metod", "not a known field"),
        ({"state_timeout_s": 0}, "state_timeout_s", "positive"),
        ({"catalogs": []}, "catalogs", "at least one"),
        ({"statee": "x"}, "statee", "not a known field"),
        ({"log": {"url": "l.sqlite", "durability": "lazy"}}, "log.durability", "'async'"),
        ({"log": {"durability": "async"}}, "log.url", "is required"),
        ({"log": {"url": "l.sqlite", "sync": True}}, "log.sync", "not a known field"),
    ],
)  # fmt: skip
def test_a_bad_field_is_named_with_the_file(
    tmp_path: Path, overrides: dict[str, Any], field: str, hint: str
) -> None:
    path = write_deployment(tmp_path, **overrides)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: field {field!r}")
    assert hint in message


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "serve.yaml"
    path.write_text("catalogs: [a\nstate: x\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{path}:\d+: not valid YAML"):
        load_config(path)


def test_a_key_given_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "serve.yaml"
    path.write_text("catalogs: [a]\nstate: x\nstate: y\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{path}:3: key 'state' is given twice"):
        load_config(path)


def test_an_engine_that_cannot_open_names_the_config(tmp_path: Path) -> None:
    path = write_deployment(tmp_path, state="sqlite:///no/such.db")
    with pytest.raises(ConfigError, match=rf"^{path}: SQL state provider: no SQLite database"):
        open_engine(load_config(path))


def test_the_serve_command_reports_a_bad_config_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_deployment(tmp_path, tenants={"acme": {"token_sha256": "x", "accounts": []}})
    monkeypatch.setattr(sys, "argv", ["maitred", "serve", "--config", str(path)])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    err = " ".join(capsys.readouterr().err.split())  # rich may wrap a long line
    assert "tenants.acme.token_sha256" in err and "sha256sum" in err


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_sessions_are_bounded_least_recently_used_first() -> None:
    store = SessionStore(max_sessions=2, idle_s=100, clock=_Clock())
    for sid in ("a", "b"):
        store.put("t", Session(id=sid, account="x"))
    assert store.get("t", "a") is not None  # "b" is now the least recently used
    store.put("t", Session(id="c", account="x"))
    assert store.get("t", "b") is None
    assert store.get("t", "a") is not None and store.get("t", "c") is not None
    assert (len(store), store.evicted) == (2, 1)


def test_sessions_expire_when_idle_and_are_scoped_by_tenant() -> None:
    clock = _Clock()
    store = SessionStore(max_sessions=10, idle_s=60, clock=clock)
    store.put("t1", Session(id="s", account="x"))
    assert store.get("t2", "s") is None
    clock.now = 59
    assert store.get("t1", "s") is not None  # used: its idle time starts again
    clock.now = 118
    assert store.get("t1", "s") is not None
    clock.now = 179
    assert store.get("t1", "s") is None
    assert store.expired == 1 and len(store) == 0


def test_tables_may_live_in_their_own_file_next_to_the_config(tmp_path: Path) -> None:
    (tmp_path / "tables.json").write_text('{"account": "accounts"}', encoding="utf-8")
    config = load_config(write_deployment(tmp_path, tables="tables.json"))
    assert config.tables == {"account": "accounts"}
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    with pytest.raises(ConfigError, match=r"field 'tables' names .*missing\.json"):
        load_config(write_deployment(elsewhere, tables="missing.json"))


def test_a_relative_sqlite_state_path_is_relative_to_the_config(tmp_path: Path) -> None:
    config = load_config(write_deployment(tmp_path, state="sqlite:///accounts.db"))
    assert config.state == f"sqlite:///{tmp_path / 'accounts.db'}"
    (tmp_path / "x").mkdir()
    absolute = load_config(write_deployment(tmp_path / "x", state="sqlite:////srv/a.db"))
    assert absolute.state == "sqlite:////srv/a.db"


def test_the_documented_config_example_is_a_valid_config(tmp_path: Path) -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "service.md"
    example = page.read_text(encoding="utf-8").split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "demo-out").mkdir()
    (tmp_path / "demo-out" / "tables.json").write_text('{"account": "accounts"}', "utf-8")
    config = parse_config(yaml.safe_load(example), "docs/service.md", base=tmp_path)
    assert config.tenants["demo"].token_sha256 == sha("demo-token")
    assert config.tenants["demo"].owns("acc-000001")
    assert config.state == f"sqlite:///{tmp_path / 'demo-out/accounts.sqlite'}"


def test_the_analyzer_and_embedder_are_options_and_a_bad_one_is_named(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    options = {"method": "bm25", "analyzer": "words", "embedder": "minilm"}
    config = load_config(write_deployment(tmp_path / "a", options=options))
    assert (config.options.analyzer, config.options.embedder) == ("words", "minilm")
    path = write_deployment(tmp_path / "b", options={"method": "bm25", "analyzer": "klingon"})
    with pytest.raises(ConfigError, match=rf"^{path}: .*'klingon'.*scripts"):
        open_engine(load_config(path))
