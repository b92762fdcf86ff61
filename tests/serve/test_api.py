"""The HTTP API in process (Starlette's TestClient): turns, call checks, sessions, the funnel,
and the answers the decision log must agree with."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from maitred.menu.render import RENDERERS
from maitred.serve import Service
from maitred.serve.requests import TurnRequest

from .deploy import DOMAIN_TEXT, auth, logged_decisions, logged_turns


def _turn(
    client: TestClient, account: str, session: str, tenant: str = "acme", **extra: object
) -> httpx.Response:
    body = {"text": DOMAIN_TEXT, "account": account, "session_id": session, **extra}
    return client.post("/v1/turns", json=body, headers=auth(tenant))


def _check(
    client: TestClient, session: str, name: str, args: dict[str, object], tenant: str = "acme"
) -> httpx.Response:
    body = {"session_id": session, "call": {"name": name, "arguments": args, "id": "call_1"}}
    return client.post("/v1/calls/check", json=body, headers=auth(tenant))


def test_a_free_account_is_not_offered_the_tool_and_its_call_is_rejected(
    client: TestClient, deployment: Path
) -> None:
    r = _turn(client, "acc-free", "s-1")
    assert r.status_code == 200
    turn = r.json()
    assert turn["exposed"] == ["list_domains"]
    [blocked] = turn["blocked"]
    assert blocked["skill"] == "connect_custom_domain"
    [fired] = blocked["predicates"]
    assert (fired["predicate"], fired["message"]) == (
        "on_free_plan",
        "Custom domains need a paid plan.",
    )
    c = _check(client, "s-1", "connect_custom_domain", {"domain": "example.com"})
    assert c.status_code == 200
    decision = c.json()
    assert (decision["allow"], decision["code"]) == (False, "TOOL_NOT_OFFERED")
    assert decision["turn_id"] == turn["turn_id"]
    assert decision["tool_result"]["executed"] is False
    assert decision["decision"]["call"]["id"] == "call_1"
    assert logged_decisions(deployment.parent) == [(decision["decision_id"], "TOOL_NOT_OFFERED")]


def test_a_paid_account_is_offered_the_tool_and_its_arguments_are_checked(
    client: TestClient,
) -> None:
    turn = _turn(client, "acc-pro", "s-2").json()
    assert "connect_custom_domain" in turn["exposed"]
    ok = _check(client, "s-2", "connect_custom_domain", {"domain": "example.com"}).json()
    assert (ok["allow"], ok["code"], ok["tool_result"]) == (True, "OK", None)
    bad = _check(client, "s-2", "connect_custom_domain", {"domain": 7}).json()
    assert (bad["allow"], bad["code"], bad["fields"]) == (False, "ARGS_INVALID", ["domain"])


@pytest.mark.parametrize("fmt", sorted(RENDERERS))
def test_the_menu_comes_in_the_format_each_request_asks_for(client: TestClient, fmt: str) -> None:
    turn = _turn(client, "acc-pro", f"s-{fmt}", format=fmt).json()
    assert turn["menu_format"] == fmt
    if fmt == "agentskills":
        assert turn["menu"].startswith("<available_skills>")
        assert "<name>connect_custom_domain</name>" in turn["menu"]
    else:
        key = {"openai": "type", "anthropic": "input_schema", "mcp": "inputSchema"}[fmt]
        assert all(key in entry for entry in turn["menu"])
    # the server's default format is unchanged by a request that asked for another
    assert _turn(client, "acc-pro", "s-default").json()["menu_format"] == "openai"


def test_a_session_remembers_the_latest_menu(client: TestClient) -> None:
    _turn(client, "acc-pro", "s-3")
    r = client.post(
        "/v1/turns",
        json={"text": "list my domain names", "account": "acc-pro", "session_id": "s-3"},
        headers=auth("acme"),
    )
    assert r.status_code == 200
    assert r.json()["exposed"]
    ok = _check(client, "s-3", "list_domains", {}).json()
    assert ok["allow"] and ok["turn_id"] == r.json()["turn_id"]


def test_a_session_belongs_to_one_account(client: TestClient) -> None:
    _turn(client, "acc-pro", "s-4")
    r = _turn(client, "acc-free", "s-4")
    assert r.status_code == 409
    assert r.json()["error"]["code"] == "session_account_mismatch"


def test_an_unknown_session_is_404_with_a_clear_error(client: TestClient, deployment: Path) -> None:
    r = _check(client, "never-started", "list_domains", {})
    assert r.status_code == 404
    err = r.json()["error"]
    assert err["code"] == "session_not_found" and err["field"] == "session_id"
    assert "POST /v1/turns" in err["message"]
    assert logged_decisions(deployment.parent) == []


def test_the_funnel_of_a_tenant_without_turns_is_empty(client: TestClient) -> None:
    r = client.get("/v1/funnel", headers=auth("globex"))
    assert r.status_code == 200
    assert (r.json()["messages"], r.json()["candidate_pairs"]) == (0, 0)


def test_the_funnel_counts_the_tenants_own_turns_only(client: TestClient) -> None:
    _turn(client, "acc-free", "a-1")
    _turn(client, "acc-pro", "a-2")
    _turn(client, "glx-1", "b-1", tenant="globex")
    acme = client.get("/v1/funnel", headers=auth("acme")).json()
    globex = client.get("/v1/funnel", headers=auth("globex")).json()
    assert (acme["messages"], globex["messages"]) == (2, 1)
    assert acme["blocked_pairs"] == 1 and acme["top_predicates"] == {"on_free_plan": 1}
    assert acme["run_id"].startswith("serve-acme-")
    other = client.get("/v1/funnel", params={"run_id": globex["run_id"]}, headers=auth("acme"))
    assert other.status_code == 404 and other.json()["error"]["code"] == "run_not_found"
    mine = client.get("/v1/funnel", params={"run_id": acme["run_id"]}, headers=auth("acme"))
    assert mine.json()["messages"] == 2


def test_healthz_and_readyz(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    r = client.get("/readyz")
    assert r.status_code == 200
    body = r.json()
    assert body["ready"] is True
    assert set(body["checks"]) == {"catalog", "log", "state"}
    assert all(c["ok"] for c in body["checks"].values())


def test_metrics_count_requests_stages_and_blocks(client: TestClient) -> None:
    _turn(client, "acc-free", "m-1")
    _check(client, "m-1", "connect_custom_domain", {"domain": "example.com"})
    client.get("/no/such/path")
    text = client.get("/metrics").text
    assert 'maitred_http_requests_total{method="POST",route="/v1/turns",status="200"} 1.0' in text
    assert 'maitred_http_requests_total{method="GET",route="other",status="404"} 1.0' in text
    assert 'maitred_stage_seconds_count{stage="gate"} 1.0' in text
    assert 'maitred_blocked_pairs_total{predicate="on_free_plan"} 1.0' in text
    assert 'maitred_call_decisions_total{code="TOOL_NOT_OFFERED",verdict="reject"} 1.0' in text
    assert 'maitred_fail_closed_total{cause="STATE_UNAVAILABLE"} 0.0' in text
    assert "maitred_sessions 1.0" in text


def test_concurrent_turns_are_serialised_and_each_is_logged_once(
    service: Service, deployment: Path
) -> None:
    tenant = service.tenants["acme"]
    requests = [TurnRequest(DOMAIN_TEXT, "acc-pro", f"c-{i % 4}") for i in range(16)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        turns = list(pool.map(lambda r: service.turn(tenant, r), requests))
    assert len({t["turn_id"] for t in turns}) == 16
    assert all("connect_custom_domain" in t["exposed"] for t in turns)
    assert logged_turns(deployment.parent) == 16
    assert len(service.sessions) == 4  # one per session id, however the first turns raced
