"""A forged "pre-chain" turn on a running service's PostgreSQL log (issue 35 item 1).

Three plain INSERTs (:mod:`tests.log.forgery`) -- a run without a row hash, a turn of a live
session without a chain position, one exposed pair -- made a running ``maitred serve`` allow a
call it had refused (``TOOL_NOT_OFFERED`` -> ``OK``) while ``maitred log verify`` said OK.
Now the guards refuse the run and the turn (the pair alone is a leftover to ``verify``); and
behind guards switched off and on again, ``verify`` reports every forged row and the service
still refuses the call.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient
from tests.log.forgery import Forgery, each_refused, forge
from typer.testing import CliRunner

from maitred.cli.main import app as cli
from maitred.log.verify import verify
from maitred.serve import Service, create_app, load_config, open_engine

from .deploy import auth, write_deployment

pytestmark = pytest.mark.postgres

CONNECT = {"name": "connect_custom_domain", "arguments": {"domain": "example.com"}}


def _refused(client: TestClient) -> None:
    body = {"session_id": "s-1", "call": CONNECT}
    r = client.post("/v1/calls/check", json=body, headers=auth("acme"))
    assert r.status_code == 200, r.text
    assert (r.json()["allow"], r.json()["code"]) == (False, "TOOL_NOT_OFFERED"), r.json()


def _serve(tmp_path: Path, url: str) -> tuple[TestClient, Service]:
    config = load_config(write_deployment(tmp_path, log=url))
    service = Service(open_engine(config), config.tenants, config.limits)
    return TestClient(create_app(service, config.limits)), service


@pytest.mark.parametrize("guards", ["standing", "switched off and on"])
def test_a_forged_pre_chain_turn_is_refused_and_reported(
    tmp_path: Path, pg_schema: tuple[str, str], guards: str
) -> None:
    server, schema = pg_schema
    url = f"{server}?schema={schema}"
    client, service = _serve(tmp_path, url)
    try:
        with client:
            body = {"text": "list", "account": "acc-pro", "session_id": "s-1"}
            turn = client.post("/v1/turns", json=body, headers=auth("acme"))
            assert turn.json()["exposed"] == ["list_domains"], turn.text
            _refused(client)
            forgery = Forgery("acme", "s-1", "acc-pro", CONNECT["name"])
            if guards == "standing":
                errors = each_refused((server, schema), forgery)
                assert [e.split(":")[0] for e in errors] == ["runs", "turns"], errors
                assert all("chained rows only" in e for e in errors), errors
            else:
                forge((server, schema), forgery, guards_off=True)
            _refused(client)  # the running service, its session cached: still refused
            assert service.engine.log is not None
            report = verify(service.engine.log)
    finally:
        service.engine.close()
    if guards == "standing":  # the pair went in alone: no turn owns it
        assert [(m.kind, m.key) for m in report.mismatches] == [("leftover", "pairs")], report
        return
    found = {(m.kind, m.key) for m in report.mismatches}
    assert {("unchained", "forged-run"), ("unchained", "forged-run/m1")} <= found, found
    assert report.legacy_runs == report.legacy_turns == 0
    result = CliRunner().invoke(cli, ["log", "verify", "--log", url])
    assert result.exit_code == 1, result.output
    assert "unchained forged-run/m1" in result.output
    (tmp_path / "again").mkdir()
    restarted, again = _serve(tmp_path / "again", url)
    try:
        with restarted:
            _refused(restarted)  # a fresh process: the session read from the log
    finally:
        again.engine.close()
