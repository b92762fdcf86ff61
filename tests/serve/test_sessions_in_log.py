"""Sessions live in the decision log; tenants are an identity (issue 16, defects 4 and 5).

* A turn whose commit failed (the log locked: ``POST /v1/turns`` answers 503) never becomes the
  session's offer: a later check of a tool only that turn would have offered is
  ``TOOL_NOT_OFFERED``, its decision names the turn that *is* in the log, and ``log verify``
  passes.
* A restarted server decides a session's check against the turn offered before the restart.
* Two services on one PostgreSQL log decide a session's check identically, whichever replica
  made the session's latest turn (a replica's cached offer is checked against the log's latest
  committed turn on every check).
* Tenants whose names are prefixes of each other (``acme``, ``acme-eu``) see neither each
  other's runs nor each other's sessions.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from maitred.log.base import DecisionLog
from maitred.log.sqlite import SqliteLog
from maitred.log.verify import verify
from maitred.serve import Service, create_app, load_config, open_engine

from .deploy import DOMAIN_TEXT, TOKENS, auth, sha, write_deployment
from .live import env, free_port, stop, wait_until

LIST_TEXT = "list"  # recalls list_domains alone
CONNECT = {"name": "connect_custom_domain", "arguments": {"domain": "example.com"}}


@contextmanager
def _app(config_path: Path) -> Iterator[tuple[TestClient, Service]]:
    config = load_config(config_path)
    engine = open_engine(config)
    service = Service(engine, config.tenants, config.limits)
    try:
        with TestClient(create_app(service, config.limits)) as client:
            yield client, service
    finally:
        engine.close()


def _turn(client: TestClient, text: str, session: str, tenant: str = "acme") -> dict[str, Any]:
    body = {"text": text, "account": "acc-pro", "session_id": session}
    r = client.post("/v1/turns", json=body, headers=auth(tenant))
    assert r.status_code == 200, r.text
    return dict(r.json())


def _check(client: TestClient, session: str, tenant: str = "acme") -> dict[str, Any]:
    r = client.post(
        "/v1/calls/check", json={"session_id": session, "call": CONNECT}, headers=auth(tenant)
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


@contextmanager
def _log_locked(service: Service, root: Path) -> Iterator[None]:
    """Another process holds the log's write lock; the service's commits give up at once."""
    log = service.engine.log
    assert isinstance(log, SqliteLog)
    log.execute("PRAGMA busy_timeout = 20")
    holder = sqlite3.connect(root / "log.sqlite", timeout=0, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        log.execute("PRAGMA busy_timeout = 30000")


def test_a_turn_whose_commit_failed_does_not_change_the_session(tmp_path: Path) -> None:
    with _app(write_deployment(tmp_path)) as (client, service):
        first = _turn(client, LIST_TEXT, "s-1")
        assert first["exposed"] == ["list_domains"]
        with _log_locked(service, tmp_path):
            body = {"text": DOMAIN_TEXT, "account": "acc-pro", "session_id": "s-1"}
            failed = client.post("/v1/turns", json=body, headers=auth("acme"))
            assert failed.status_code == 503, failed.text
            call = {"session_id": "s-1", "call": {"name": "list_domains", "arguments": {}}}
            unlogged = client.post("/v1/calls/check", json=call, headers=auth("acme"))
            assert unlogged.status_code == 503 and "allow" not in unlogged.json()
        decision = _check(client, "s-1")
        assert (decision["allow"], decision["code"]) == (False, "TOOL_NOT_OFFERED")
        assert decision["turn_id"] == first["turn_id"]  # the turn that is in the log
        assert service.engine.log is not None
        report = verify(service.engine.log)
        assert report.ok, report.summary()
        assert (report.turns, report.decisions) == (1, 1)  # the failed turn and check are not


def test_a_restarted_server_decides_against_the_turn_offered_before(tmp_path: Path) -> None:
    path = write_deployment(tmp_path)
    with _app(path) as (client, _):
        offered = _turn(client, DOMAIN_TEXT, "s-offered")
        _turn(client, LIST_TEXT, "s-listed")
    with _app(path) as (client, _):  # a new process: nothing of the old one in memory
        allowed = _check(client, "s-offered")
        assert (allowed["allow"], allowed["turn_id"]) == (True, offered["turn_id"])
        refused = _check(client, "s-listed")
        assert (refused["allow"], refused["code"]) == (False, "TOOL_NOT_OFFERED")
        unknown = client.post(
            "/v1/calls/check", json={"session_id": "never", "call": CONNECT}, headers=auth("acme")
        )
        assert unknown.status_code == 404
        # the session continues: its account is the log's, another account is refused
        body = {"text": LIST_TEXT, "account": "acc-free", "session_id": "s-offered"}
        r = client.post("/v1/turns", json=body, headers=auth("acme"))
        assert r.status_code == 409, r.text


def _prefix_tenants(root: Path) -> Path:
    tenants = {
        "acme": {"token_sha256": sha(TOKENS["acme"]), "accounts": ["acc-pro"]},
        "acme-eu": {"token_sha256": sha(TOKENS["globex"]), "accounts": ["acc-pro"]},
    }
    return write_deployment(root, tenants=tenants)


def _as(tenant: str) -> str:
    return {"acme": "acme", "acme-eu": "globex"}[tenant]  # whose token the tenant holds


def test_a_tenant_whose_name_is_a_prefix_reads_no_other_tenants_run(tmp_path: Path) -> None:
    with _app(_prefix_tenants(tmp_path)) as (client, service):
        _turn(client, DOMAIN_TEXT, "s-eu", _as("acme-eu"))
        eu_run = service.run_ids["acme-eu"]
        assert eu_run.startswith(f"serve-{'acme'}-")  # the old prefix test let acme in
        theirs = client.get(f"/v1/funnel?run_id={eu_run}", headers=auth(_as("acme")))
        assert theirs.status_code == 404, theirs.text
        assert theirs.json()["error"]["code"] == "run_not_found"
        own = client.get(f"/v1/funnel?run_id={eu_run}", headers=auth(_as("acme-eu")))
        assert own.status_code == 200 and own.json()["messages"] == 1


def test_a_session_id_of_another_tenant_is_not_found(tmp_path: Path) -> None:
    path = _prefix_tenants(tmp_path)
    with _app(path) as (client, _):
        _turn(client, DOMAIN_TEXT, "shared", _as("acme-eu"))
    with _app(path) as (client, _):  # from the log, not from memory
        r = client.post(
            "/v1/calls/check", json={"session_id": "shared", "call": CONNECT}, headers=auth("acme")
        )
        assert r.status_code == 404, r.text
        assert _check(client, "shared", _as("acme-eu"))["allow"] is True


@pytest.mark.postgres
def test_two_replicas_on_one_postgres_log_decide_a_session_alike(
    tmp_path: Path, pg_schema: tuple[str, str]
) -> None:
    server, schema = pg_schema
    url = f"{server}?schema={schema}"
    roots = [tmp_path / "a", tmp_path / "b"]
    for root in roots:
        root.mkdir()
    with (
        _app(write_deployment(roots[0], log=url)) as (a, sa),
        _app(write_deployment(roots[1], log=url)) as (b, _),
    ):
        listed = _turn(a, LIST_TEXT, "s-1")  # replica a: list_domains only
        for replica in (a, b):
            d = _check(replica, "s-1")
            assert (d["allow"], d["code"], d["turn_id"]) == (
                False,
                "TOOL_NOT_OFFERED",
                listed["turn_id"],
            )
        offered = _turn(b, DOMAIN_TEXT, "s-1")  # replica b: a newer turn of the session
        for replica in (a, b):  # a's cached menu is stale: the log's latest turn wins
            d = _check(replica, "s-1")
            assert (d["allow"], d["turn_id"]) == (True, offered["turn_id"])
        assert sa.engine.log is not None
        _verified(sa.engine.log)


def _verified(log: DecisionLog) -> None:
    report = verify(log)
    assert report.ok, report.summary()
    assert report.decisions == 4


def test_async_a_check_right_after_a_turn_commits_that_turn_first(tmp_path: Path) -> None:
    """``durability: async`` answers a turn before its commit; the session's offer is still
    its last *committed* turn, so a check of the session commits the pending turn first."""
    path = write_deployment(tmp_path, log={"url": "log.sqlite", "durability": "async"})
    config = load_config(path)
    engine = open_engine(config)
    service = Service(engine, config.tenants, config.limits, durability=config.durability)
    log = engine.log
    assert isinstance(log, SqliteLog)
    log._flusher.stop()  # only explicit commits: nothing lands behind the test's back
    try:
        with TestClient(create_app(service, config.limits)) as client:
            offered = _turn(client, DOMAIN_TEXT, "s-1")
            assert log.committed_turn("acme", "s-1") is None  # answered, not yet committed
            decision = _check(client, "s-1")
            assert (decision["allow"], decision["turn_id"]) == (True, offered["turn_id"])
            assert log.committed_turn("acme", "s-1") == offered["turn_id"]
    finally:
        engine.close()


def _serve(config: Path) -> tuple[str, subprocess.Popen[bytes]]:
    port = free_port()
    command = [sys.executable, "-m", "maitred.cli.main", "serve", "--config", str(config)]
    proc = subprocess.Popen(
        [*command, "--port", str(port)],
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    wait_until("the server answers", lambda: _answers(base), proc)
    return base, proc


def _answers(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=1.0).status_code == 200
    except httpx.TransportError:
        return False


@pytest.mark.slow
def test_maitred_serve_killed_and_restarted_keeps_its_sessions(tmp_path: Path) -> None:
    config = write_deployment(tmp_path)
    base, proc = _serve(config)
    try:
        body = {"text": DOMAIN_TEXT, "account": "acc-pro", "session_id": "s-1"}
        offered = httpx.post(f"{base}/v1/turns", json=body, headers=auth("acme")).json()
    finally:
        proc.send_signal(signal.SIGKILL)  # nothing of it survives but the log
        stop(proc)
    base, proc = _serve(config)
    try:
        check = {"session_id": "s-1", "call": CONNECT}
        r = httpx.post(f"{base}/v1/calls/check", json=check, headers=auth("acme"))
        assert r.status_code == 200, r.text
        assert (r.json()["allow"], r.json()["turn_id"]) == (True, offered["turn_id"])
    finally:
        stop(proc)
