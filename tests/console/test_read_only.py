"""No URL of the console changes the log, on SQLite and PostgreSQL: every page, every filter,
one decision of each kind, the what-if turn, verify, sign-in, unknown paths and every method
other than GET are asked for, and the log's every table is the same, row for row, afterwards
(and ``verify`` still passes)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient
from tests.log.builders import Opener, make_run, make_turn

from maitred.actions.model import Decision, ToolCall
from maitred.console import Access, create_console
from maitred.contract.evaluate import PredicateOutcome
from maitred.log import DecisionLog, open_log, verify

from .test_console import SECRET, sha


def _fill(opener: Opener) -> tuple[str, str]:
    """Three turns and two action decisions (a call and a surface read)."""
    with opener() as log:
        log.begin_run(dataclasses.replace(make_run("run-1"), tenant="acme"))
        turns = [make_turn(n) for n in range(3)]
        for t in turns:
            log.write(t)
        outcome = PredicateOutcome("too_big", "c1:v", True, "ok", {"args.size": 7})
        call = Decision(ToolCall("deploy", {"size": 7}), "reject", "ARGS_INVALID",
                        outcomes=(outcome,), now=1_700_000_300.0, session_id="conv-1",
                        turn_id=turns[-1].turn_id, tenant="acme", account="acct-1")  # fmt: skip
        read = Decision(ToolCall("resources/read", {"uri": "file:///a"}), "allow", "OK",
                        now=1_700_000_301.0, session_id="conv-1", tenant="acme",
                        account="acct-1")  # fmt: skip
        log.write_decisions([call, read])
    return turns[-1].turn_id, call.decision_id


def _fingerprint(log: DecisionLog) -> dict[str, str]:
    """Each table's rows, hashed in a stable order."""
    out = {}
    tables = [r[0] for r in log.query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'"
        if log.dialect == "sqlite"
        else "SELECT table_name FROM information_schema.tables "
        "WHERE table_schema = current_schema()"
    )]  # fmt: skip
    for table in sorted(tables):
        rows = [json.dumps(list(r), default=str) for r in log.query(f"SELECT * FROM {table}")]
        out[table] = hashlib.sha256("\n".join(sorted(rows)).encode()).hexdigest()
    return out


@pytest.fixture
def filled(opener: Opener) -> Iterator[tuple[Opener, str, str]]:
    turn, decision = _fill(opener)
    yield opener, turn, decision


def test_no_url_changes_the_log(filled: tuple[Opener, str, str]) -> None:
    opener, turn, decision = filled
    with opener(read_only=True) as log:
        before = _fingerprint(log)
        app = create_console(log, Access(frozenset({sha(SECRET)})))
        urls = [
            "/",
            "/?tenant=acme&since=2023-11-14",
            "/decisions",
            "/decisions?limit=1",
            "/decisions?tenant=acme&account=acct-1&session=conv-1&tool=deploy&code=ARGS_INVALID",
            *(f"/decisions?kind={k}" for k in ("turn", "call", "read", "find", "task")),
            "/decisions?since=2023-11-14&until=2030-01-01",
            "/decisions?after=1700000300.0~x",
            "/decisions?kind=nope",
            f"/decisions/{quote(turn, safe='')}",
            f"/decisions/{decision}",
            "/decisions/not-a-decision",
            "/accounts",
            "/accounts?account=acct-1",
            "/accounts/acct-1",
            "/accounts/acct-1?message=deploy",  # no engine: refused, nothing routed
            "/verify",
            "/login",
            "/static/console.css",
            "/static/console.js",
            "/no/such/page",
        ]
        headers = {"Authorization": f"Bearer {SECRET}"}
        with TestClient(app) as client:
            statuses = set()
            for url in urls:
                for accept in ("text/html", "application/json"):
                    r = client.get(url, headers={**headers, "Accept": accept})
                    statuses.add(r.status_code)
                for method in ("POST", "PUT", "PATCH", "DELETE"):
                    r = client.request(
                        method, url, headers=headers, data={"token": SECRET}, follow_redirects=False
                    )
                    assert r.status_code in (303, 401, 404, 405), (method, url, r.status_code)
            client.cookies.clear()  # the sign-in above set one
            r = client.get(urls[0], follow_redirects=False)
            assert r.status_code == 303  # no token: sent to sign in, not shown
        assert 200 in statuses and 400 in statuses and 404 in statuses
        assert _fingerprint(log) == before
        assert verify(log).ok
    with opener(read_only=True) as log:  # and a fresh connection sees the same
        assert _fingerprint(log) == before


def test_the_console_refuses_a_writable_log(tmp_path: Path) -> None:
    from maitred.errors import ConfigError

    with open_log(tmp_path / "log.sqlite") as log, pytest.raises(ConfigError, match="read-only"):
        create_console(log, Access(open=True))
