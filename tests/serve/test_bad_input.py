"""What the API refuses, and how: tokens, tenants, bodies, fields, and a state store that
goes down and comes back. A refused request decides nothing and logs nothing."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from maitred.serve import Service

from .deploy import DOMAIN_TEXT, TOKENS, auth, logged_decisions, logged_turns

TURN = {"text": DOMAIN_TEXT, "account": "acc-pro", "session_id": "s-1"}


@pytest.mark.parametrize(
    ("headers", "error"),
    [
        ({}, None),
        ({"Authorization": "Basic YWNtZTpwdw=="}, None),
        ({"Authorization": "Bearer "}, None),
        ({"Authorization": "Bearer not-a-token-of-anyone"}, 'error="invalid_token"'),
        ({"Authorization": f"Bearer {TOKENS['acme']}x"}, 'error="invalid_token"'),
    ],
)
def test_a_missing_or_wrong_token_is_401_and_logs_nothing(
    client: TestClient, deployment: Path, headers: dict[str, str], error: str | None
) -> None:
    for path, body in (("/v1/turns", TURN), ("/v1/calls/check", {"session_id": "s", "call": {}})):
        r = client.post(path, json=body, headers=headers)
        assert r.status_code == 401, path
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert error is None or error in r.headers["www-authenticate"]
        assert r.json()["error"]["code"] == "unauthorized"
    assert client.get("/v1/funnel", headers=headers).status_code == 401
    assert logged_turns(deployment.parent) == 0


def test_tenants_never_see_each_others_accounts_or_sessions(
    client: TestClient, deployment: Path
) -> None:
    assert client.post("/v1/turns", json=TURN, headers=auth("acme")).status_code == 200
    # globex acting on an acme account: 403, naming the account
    r = client.post("/v1/turns", json=TURN, headers=auth("globex"))
    assert r.status_code == 403
    assert r.json()["error"]["code"] == "account_forbidden"
    assert r.json()["error"]["field"] == "account"
    # globex naming acme's session: the same 404 as a session that never existed
    call = {"session_id": "s-1", "call": {"name": "list_domains", "arguments": {}}}
    theirs = client.post("/v1/calls/check", json=call, headers=auth("globex"))
    nobody = client.post(
        "/v1/calls/check", json={**call, "session_id": "s-none"}, headers=auth("globex")
    )
    assert theirs.status_code == nobody.status_code == 404
    assert theirs.json()["error"]["code"] == nobody.json()["error"]["code"]
    assert logged_turns(deployment.parent) == 1
    assert logged_decisions(deployment.parent) == []
    # globex's own session of the same id is its own
    own = {"text": DOMAIN_TEXT, "account": "glx-1", "session_id": "s-1"}
    assert client.post("/v1/turns", json=own, headers=auth("globex")).status_code == 200
    mine = client.post("/v1/calls/check", json=call, headers=auth("acme")).json()
    assert mine["decision"]["session_id"] == "s-1" and mine["allow"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "empty"),
        (b"{not json", "line 1 column 2"),
        (b'{"text": "x",', "not valid JSON"),
        (b"\xff\xfe{}", "not"),
    ],
)
def test_malformed_json_is_400_with_a_clear_message(
    client: TestClient, body: bytes, message: str
) -> None:
    headers = {**auth("acme"), "Content-Type": "application/json"}
    r = client.post("/v1/turns", content=body, headers=headers)
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["code"] == "malformed_json" and message in err["message"]


def test_an_oversized_body_is_413_before_it_is_parsed(client: TestClient, deployment: Path) -> None:
    big = b'{"text": "' + b"a" * 5000 + b'"'  # not even valid JSON: never parsed
    r = client.post("/v1/turns", content=big, headers=auth("acme"))
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "body_too_large"
    assert "4096" in r.json()["error"]["message"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: refused while it streams
        for _ in range(10):
            yield b" " * 1000

    streamed = client.post("/v1/turns", content=chunks(), headers=auth("acme"))
    assert streamed.status_code == 413
    assert logged_turns(deployment.parent) == 0


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/turns", [TURN], ""),
        ("/v1/turns", {**TURN, "text": 7}, "text"),
        ("/v1/turns", {**TURN, "text": "  "}, "text"),
        ("/v1/turns", {k: v for k, v in TURN.items() if k != "account"}, "account"),
        ("/v1/turns", {**TURN, "session_id": ["s"]}, "session_id"),
        ("/v1/turns", {**TURN, "format": "xml"}, "format"),
        ("/v1/turns", {**TURN, "conversation": "hi"}, "conversation"),
        ("/v1/turns", {**TURN, "conversation": ["hi", {"role": 1}]}, "conversation[1]"),
        ("/v1/turns", {**TURN, "acount": "x"}, "acount"),
        ("/v1/calls/check", {"session_id": "s-1"}, "call"),
        ("/v1/calls/check", {"session_id": "s-1", "call": {"arguments": {}}}, "call.name"),
        ("/v1/calls/check", {"session_id": "s-1", "call": {"name": "x", "arguments": []}},
         "call.arguments"),
        ("/v1/calls/check", {"session_id": "s-1", "call": {"name": "x", "id": 3}}, "call.id"),
        ("/v1/calls/check", {"session_id": 1, "call": {"name": "x"}}, "session_id"),
    ],
)  # fmt: skip
def test_a_wrong_field_is_422_naming_it(
    client: TestClient, path: str, body: object, field: str
) -> None:
    r = client.post(path, json=body, headers=auth("acme"))
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert (err["code"], err["field"]) == ("invalid_field", field)
    assert (repr(field) if field else "the request body") in err["message"]


@contextmanager
def _store_down(deployment: Path) -> Iterator[None]:
    """Hold the state database under an exclusive lock: every read waits past its deadline."""
    holder = sqlite3.connect(deployment.parent / "accounts.db", timeout=0)
    holder.isolation_level = None
    holder.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def _fail_closed(client: TestClient, cause: str) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(f'maitred_fail_closed_total{{cause="{cause}"}}'):
            return float(line.split()[-1])
    raise AssertionError(f"no fail-closed series for {cause}")


def test_a_store_that_goes_down_fails_closed_is_counted_and_recovers(
    client: TestClient, deployment: Path
) -> None:
    call = {
        "session_id": "s-1",
        "call": {"name": "connect_custom_domain", "arguments": {"domain": "example.com"}},
    }
    assert client.post("/v1/turns", json=TURN, headers=auth("acme")).json()["cause"] is None
    with _store_down(deployment):
        down = client.post("/v1/calls/check", json=call, headers=auth("acme")).json()
        assert (down["allow"], down["code"]) == (False, "STATE_UNAVAILABLE")
        turn = client.post("/v1/turns", json=TURN, headers=auth("acme")).json()
        assert turn["cause"] == "state_unavailable"
        assert "ran out of time (0.2s" in turn["provider_error"]  # state_timeout_s applied
        assert turn["visible"] == ["list_domains"]  # reads no state: still offered
        assert [b["skill"] for b in turn["blocked"]] == ["connect_custom_domain"]
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["checks"]["state"]["ok"] is False
    assert _fail_closed(client, "STATE_UNAVAILABLE") == 1.0
    assert _fail_closed(client, "state_unavailable") == 1.0
    # the store is back: nothing to restart, the next turn and call are decided normally
    assert client.get("/readyz").status_code == 200
    again = client.post("/v1/turns", json=TURN, headers=auth("acme")).json()
    assert again["cause"] is None and "connect_custom_domain" in again["exposed"]
    ok = client.post("/v1/calls/check", json=call, headers=auth("acme")).json()
    assert (ok["allow"], ok["code"]) == (True, "OK")
    codes = [code for _, code in logged_decisions(deployment.parent)]
    assert codes == ["STATE_UNAVAILABLE", "OK"]


def test_a_broken_decision_log_is_503_and_nothing_is_handed_out(
    client: TestClient, service: Service
) -> None:
    assert service.engine.log is not None
    service.engine.log.close()  # every later write or flush fails
    r = client.post("/v1/turns", json=TURN, headers=auth("acme"))
    assert r.status_code == 503
    err = r.json()["error"]
    assert err["code"] == "engine_unavailable" and "LogError" in err["message"]
    assert "menu" not in r.json()
    # sessions live in the log: with the log unreadable no check is decided, none allowed
    call = {"session_id": "s-1", "call": {"name": "list_domains", "arguments": {}}}
    checked = client.post("/v1/calls/check", json=call, headers=auth("acme"))
    assert checked.status_code == 503 and "allow" not in checked.json()
    ready = client.get("/readyz")
    assert ready.status_code == 503 and ready.json()["checks"]["log"]["ok"] is False
    assert 'maitred_engine_errors_total{error="LogError"} 2.0' in client.get("/metrics").text
