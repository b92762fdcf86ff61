"""Faults of the state store: every affected turn fails closed, says why, is counted, and the CLI
exits non-zero.

* an unreachable store (``postgresql://127.0.0.1:1``) through ``maitred route`` and ``maitred
  run``, and a SQLite store held under an exclusive lock for a whole ``run``;
* a store that stops mid-run: a throwaway PostgreSQL database whose connections are killed
  (``pg_terminate_backend``) and which is then dropped, and a SQLite file locked for a stretch of
  the run and released again (the turns after the release are decided normally);
* a ``db.json`` for ``maitred actions check`` that is empty or of the wrong shape.

The cause is read back from the decision log (``turns.provider_error``) and the funnel, never
from the running pipeline alone, so what an operator would see is what is asserted.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from maitred.analytics.funnel import funnel
from maitred.cli.main import app
from maitred.contract import CelPredicate, Contract
from maitred.errors import ConfigError
from maitred.lab.domains import sitecare
from maitred.log import open_log
from maitred.pipeline import Pipeline
from maitred.recall.base import Candidate
from maitred.records import Message
from maitred.skills.model import Catalog, Skill
from maitred.state import SqlStateProvider

UNREACHABLE = "postgresql://127.0.0.1:1/state"
N_MESSAGES = 12
STOP_AFTER = 5  # turns decided on a healthy store before it stops

# -- the CLI against a store that cannot be read ---------------------------------------------


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("faults")
    paths = {
        "db": root / "accounts.sqlite",
        "messages": root / "messages.jsonl",
        "tables": root / "tables.json",
        "cache": root / "cache",
    }
    sitecare.write_accounts(paths["db"], 20, seed=7)
    sitecare.write_messages(paths["messages"], 40, 20, seed=7)
    paths["tables"].write_text(json.dumps(sitecare.TABLES), encoding="utf-8")
    return paths


def _pipeline_args(deployment: dict[str, Path], state: str) -> list[str]:
    return [
        "--skills", str(sitecare.skills_dir()), "--state", state,
        "--tables", str(deployment["tables"]), "--method", "bm25",
        "--cache-dir", str(deployment["cache"]),
    ]  # fmt: skip


def _assert_every_turn_failed_closed(log_path: Path, printed: dict[str, Any]) -> None:
    """Every turn with candidates is state_unavailable with all its pairs withheld (every
    sitecare skill reads state), and the funnel counts exactly those."""
    with sqlite3.connect(log_path) as conn:
        turns = conn.execute("SELECT turn_id, provider_error, n_candidates FROM turns").fetchall()
        visible = conn.execute("SELECT COUNT(*) FROM pairs WHERE visible").fetchone()[0]
    conn.close()
    matched = [t for t in turns if t[2] > 0]
    assert matched, "the messages matched no skill; the test proves nothing"
    assert all(t[1].startswith("state_unavailable: ") for t in matched)
    assert all(t[1] == "" for t in turns if t[2] == 0)  # no state read, nothing to fail
    assert visible == 0
    fail = printed["fail_closed"]["state_unavailable"]
    assert fail["turns"] == len(matched) == printed["matched_messages"]
    assert fail["pairs"] == printed["candidate_pairs"] == printed["blocked_pairs"]
    assert printed["predicate_blocked_pairs"] == 0
    assert printed["top_predicates"] == {}


def test_run_against_an_unreachable_store_exits_3_with_counts(
    deployment: dict[str, Path], tmp_path: Path
) -> None:
    pytest.importorskip(
        "psycopg", reason="needs the postgres extra: pip install 'maitred[postgres]'"
    )
    log_path = tmp_path / "log.sqlite"
    result = CliRunner().invoke(
        app,
        ["run", str(deployment["messages"]), *_pipeline_args(deployment, UNREACHABLE),
         "--log", str(log_path), "--json"],
    )  # fmt: skip
    assert result.exit_code == 3, (result.stderr, result.exception)
    printed = json.loads(result.stdout)
    _assert_every_turn_failed_closed(log_path, printed)
    assert f"{printed['fail_closed']['state_unavailable']['turns']} state_unavailable" in (
        result.stderr
    )


def test_route_against_an_unreachable_store_exits_3_and_names_the_cause(
    deployment: dict[str, Path],
) -> None:
    pytest.importorskip(
        "psycopg", reason="needs the postgres extra: pip install 'maitred[postgres]'"
    )
    result = CliRunner().invoke(
        app,
        ["route", "please connect my own domain to my site", "--account", sitecare.account_id(0),
         *_pipeline_args(deployment, UNREACHABLE), "--json"],
    )  # fmt: skip
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    assert data["cause"] == "state_unavailable"
    assert data["provider_error"].startswith("state_unavailable: ProviderError: ")
    assert data["visible"] == [] and data["blocked"]
    assert all(b["cause"] == "state_unavailable" for b in data["blocked"])


def test_run_against_a_store_that_is_not_a_database_exits_3(
    deployment: dict[str, Path], tmp_path: Path
) -> None:
    broken = tmp_path / "state.sqlite"
    broken.write_bytes(b"this is not a SQLite database" * 100)
    log_path = tmp_path / "log.sqlite"
    result = CliRunner().invoke(
        app,
        ["run", str(deployment["messages"]), "--limit", "8",
         *_pipeline_args(deployment, f"sqlite:///{broken}"), "--log", str(log_path), "--json"],
    )  # fmt: skip
    assert result.exit_code == 3, (result.stderr, result.exception)
    _assert_every_turn_failed_closed(log_path, json.loads(result.stdout))


# -- a store that stops in the middle of a run -------------------------------------------------

READS_PLAN = CelPredicate('account.plan == "free"', "on_free_plan", ("account.plan",))
# fail-open on a missing key: an outage must still not make this an offer
READS_LOCK = CelPredicate(
    "domain.registrar_lock", "domain_locked", ("domain.registrar_lock",), on_missing="offer"
)


def _skill(name: str, *predicates: CelPredicate) -> Skill:
    return Skill(name, f"{name} for the customer.", contract=Contract(exit_predicates=predicates))


CATALOG = Catalog(
    (
        _skill("connect-domain", READS_PLAN),
        _skill("transfer-domain", READS_LOCK),
        _skill("say-hello"),
    )
)
STATE_READERS = {"connect-domain", "transfer-domain"}


class _EverySkill:
    """Recall stand-in: every skill is a candidate of every message (the gate is under test)."""

    name = "every-skill"

    def rank(self, text: str, k: int) -> list[Candidate]:
        return [Candidate(s.name, i, 1.0 / i) for i, s in enumerate(CATALOG, start=1)]


def _messages() -> list[Message]:
    return [Message(f"m{i:02d}", "hello", "acct-1") for i in range(N_MESSAGES)]


def _run_and_stop(
    provider: SqlStateProvider, log_path: Path, stop: Callable[[], None], resume: Callable[[], None]
) -> str:
    """Route N_MESSAGES: ``stop()`` after STOP_AFTER turns, ``resume()`` two before the end."""
    done = 0

    def progress(n: int) -> None:
        nonlocal done
        done += n
        if done == STOP_AFTER:
            stop()
        if done == N_MESSAGES - 2:
            resume()

    with open_log(log_path) as log:
        pipeline = Pipeline(CATALOG, _EverySkill(), provider, log=log)
        pipeline.run(_messages(), progress=progress)
        return pipeline.run_id


def _turns(log_path: Path) -> list[tuple[str, str]]:
    """(message id, provider_error) of every logged turn, in message order."""
    with sqlite3.connect(log_path) as conn:
        rows = conn.execute("SELECT message_id, provider_error FROM turns ORDER BY message_id")
        out = [(str(m), str(e)) for m, e in rows]
    conn.close()
    return out


def _withheld(log_path: Path, message_id: str) -> dict[str, tuple[bool, str]]:
    with sqlite3.connect(log_path) as conn:
        rows = conn.execute(
            "SELECT p.skill, p.visible, p.fired_json FROM pairs p JOIN turns t "
            "ON t.turn_id = p.turn_id WHERE t.message_id = ?",
            (message_id,),
        ).fetchall()
    conn.close()
    return {str(s): (bool(v), str(f)) for s, v, f in rows}


def _assert_stopped_stretch(log_path: Path, run_id: str, stopped: range) -> None:
    """Turns in ``stopped`` failed closed as state_unavailable; the others were decided."""
    turns = _turns(log_path)
    assert len(turns) == N_MESSAGES
    for index, (message_id, error) in enumerate(turns):
        pairs = _withheld(log_path, message_id)
        assert pairs["say-hello"][0], "a skill that reads no state is decided as usual"
        if index in stopped:
            assert error.startswith("state_unavailable: "), (index, error)
            for skill in STATE_READERS:
                assert pairs[skill] == (False, "[]"), (index, skill)  # withheld, no predicate
        else:
            assert error == "", (index, error)
            assert pairs["transfer-domain"][0]  # healthy: no lock record, fail-open offers
    f = funnel(log_path, run_id)
    assert f.state_unavailable_turns == len(stopped)
    assert f.state_unavailable_pairs == len(stopped) * len(STATE_READERS)
    assert f.account_not_found_turns == 0


@pytest.fixture
def throwaway_pg(pg_server: str) -> Iterator[str]:
    """The URL of a new PostgreSQL database with an accounts table; dropped afterwards."""
    import psycopg

    name = f"maitred_fault_{uuid.uuid4().hex[:12]}"
    url = pg_server.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(pg_server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE accounts (account_id TEXT PRIMARY KEY, plan TEXT, registrar_lock BOOLEAN)"
        )
        conn.execute("INSERT INTO accounts VALUES ('acct-1', 'premium', FALSE)")
    yield url
    with psycopg.connect(pg_server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.postgres
def test_a_postgres_store_killed_and_dropped_mid_run_fails_closed(
    pg_server: str, throwaway_pg: str, tmp_path: Path
) -> None:
    import psycopg

    name = throwaway_pg.rsplit("/", 1)[1]

    def stop() -> None:  # kill the provider's connection, then take the database away
        with psycopg.connect(pg_server, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')

    provider = SqlStateProvider.from_url(
        throwaway_pg, {"account": "accounts", "domain": "accounts"}, timeout_s=2.0
    )
    with provider:
        run_id = _run_and_stop(provider, tmp_path / "log.sqlite", stop, lambda: None)
    _assert_stopped_stretch(tmp_path / "log.sqlite", run_id, range(STOP_AFTER, N_MESSAGES))


def test_a_sqlite_store_locked_mid_run_fails_closed_then_recovers(tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE accounts (account_id TEXT PRIMARY KEY, plan TEXT, registrar_lock BOOLEAN)"
        )
        conn.execute("INSERT INTO accounts VALUES ('acct-1', 'premium', FALSE)")
    conn.close()
    holder = sqlite3.connect(db, isolation_level=None)

    def stop() -> None:
        holder.execute("BEGIN EXCLUSIVE")  # readers now wait, then time out

    def resume() -> None:
        holder.execute("ROLLBACK")

    provider = SqlStateProvider.from_url(
        f"sqlite:///{db}", {"account": "accounts", "domain": "accounts"}, timeout_s=0.05
    )
    try:
        with provider:
            run_id = _run_and_stop(provider, tmp_path / "log.sqlite", stop, resume)
    finally:
        holder.close()
    _assert_stopped_stretch(tmp_path / "log.sqlite", run_id, range(STOP_AFTER, N_MESSAGES - 2))


# -- a state document of the wrong shape for `maitred actions check` -------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{}", "missing ['flights', 'reservations', 'users']"),
        ("[]", "must be a JSON object with the collections ['flights', 'reservations', 'users']"),
        ('{"flights": [], "users": {}}', "missing ['reservations']; flights is a list"),
    ],
)
def test_actions_check_refuses_a_db_of_the_wrong_shape(
    tmp_path: Path, content: str, expected: str
) -> None:
    db = tmp_path / "db.json"
    db.write_text(content, encoding="utf-8")
    calls = [{"name": "cancel_reservation", "arguments": {"reservation_id": "X"}}]
    trajectories = tmp_path / "t.jsonl"
    trajectories.write_text(json.dumps({"id": "t", "calls": calls}) + "\n", encoding="utf-8")
    result = CliRunner().invoke(
        app,
        ["actions", "check", "--pack", "tau2-airline", "--db", str(db),
         "--trajectories", str(trajectories)],
    )  # fmt: skip
    assert result.exit_code != 0 and result.stdout == ""
    assert isinstance(result.exception, ConfigError)
    text = str(result.exception)
    assert str(db) in text and "tau2-airline" in text and expected in text


def test_actions_check_names_what_the_retail_pack_needs(tmp_path: Path) -> None:
    db = tmp_path / "db.json"
    db.write_text('{"orders": {}}', encoding="utf-8")
    trajectories = tmp_path / "t.jsonl"
    trajectories.write_text('{"id": "t", "calls": []}\n', encoding="utf-8")
    result = CliRunner().invoke(
        app,
        ["actions", "check", "--pack", "retail-control", "--db", str(db),
         "--trajectories", str(trajectories)],
    )  # fmt: skip
    assert isinstance(result.exception, ConfigError)
    assert "missing ['products', 'users']" in str(result.exception)
