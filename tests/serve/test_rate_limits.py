"""Rate limits of ``maitred serve`` (``rate_limits:``): 429 with ``Retry-After`` and the
service's error body, per tenant and per tool, counted in ``/metrics``, never logged as a
decision; two service instances on one Redis share one budget; a store that does not answer
fails closed for checks of tools that change things."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from starlette.testclient import TestClient

from maitred.errors import ConfigError
from maitred.serve import Service, create_app, load_config, open_engine
from maitred.serve.rates import open_limiter

from .deploy import DOMAIN_TEXT, TOKENS, auth, logged_decisions, logged_turns, sha, write_deployment


@contextmanager
def _serving(config: Path) -> Iterator[TestClient]:
    """The service of ``config`` with its rate limits, in process."""
    settings = load_config(config)
    engine = open_engine(settings)
    try:
        service = Service(engine, settings.tenants, settings.limits)
        app = create_app(service, settings.limits, limiter=open_limiter(settings, engine))
        with TestClient(app, raise_server_exceptions=True) as client:
            yield client
    finally:
        engine.close()


def _turn(client: TestClient, account: str, session: str, tenant: str = "acme") -> httpx.Response:
    body = {"text": DOMAIN_TEXT, "account": account, "session_id": session}
    return client.post("/v1/turns", json=body, headers=auth(tenant))


def _check(client: TestClient, session: str, name: str, args: dict[str, Any]) -> httpx.Response:
    body = {"session_id": session, "call": {"name": name, "arguments": args}}
    return client.post("/v1/calls/check", json=body, headers=auth("acme"))


def _count(metrics: str, series: str) -> float:
    for line in metrics.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _refused(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 429, response.text
    error: dict[str, Any] = response.json()["error"]
    assert response.headers["Retry-After"] == str(error["retry_after_s"])
    assert error["code"] == "rate_limited"
    return error


def test_a_tenant_past_its_rate_gets_429_with_retry_after_and_nothing_is_logged(
    tmp_path: Path,
) -> None:
    config = write_deployment(tmp_path, rate_limits={"per_tenant": "2/minute"})
    with _serving(config) as client:
        assert [_turn(client, "acc-free", f"s-{i}").status_code for i in range(2)] == [200, 200]
        refused = _refused(_turn(client, "acc-free", "s-2"))
        other = _turn(client, "glx-1", "g-1", tenant="globex")  # a budget of its own
        metrics = client.get("/metrics").text
        spec = client.get("/openapi.json").json()
    assert refused["scope"] == "per_tenant" and refused["status"] == 429
    assert 1 <= refused["retry_after_s"] <= 60 and "2/minute" in refused["message"]
    assert other.status_code == 200
    assert logged_turns(tmp_path) == 3  # the refused turn was never routed nor logged
    assert _count(metrics, 'maitred_rate_limited_total{scope="per_tenant"}') == 1
    assert _count(metrics, 'maitred_refused_requests_total{code="rate_limited"}') == 1
    # the 429 is the one the API describes
    schema = spec["paths"]["/v1/turns"]["post"]["responses"]["429"]["content"]
    root = {**schema["application/json"]["schema"], "components": spec["components"]}
    jsonschema.validate({"error": refused}, root, cls=jsonschema.Draft202012Validator)


def test_a_tool_rate_limits_checks_of_that_tool_and_lifts_once_its_window_passed(
    tmp_path: Path,
) -> None:
    config = write_deployment(tmp_path, rate_limits={"per_tool": {"list_domains": "2/second"}})
    with _serving(config) as client:
        assert _turn(client, "acc-pro", "s").status_code == 200
        answers = [_check(client, "s", "list_domains", {}) for _ in range(50)]
        refused = next(r for r in answers if r.status_code == 429)  # 2 a second: soon
        domain = _check(client, "s", "connect_custom_domain", {"domain": "example.com"})
        error = _refused(refused)
        time.sleep(error["retry_after_s"])
        again = _check(client, "s", "list_domains", {})
    assert error["scope"] == "per_tool" and error["retry_after_s"] == 1
    assert domain.status_code == 200 and domain.json()["allow"] is True  # another tool
    assert again.status_code == 200 and again.json()["allow"] is True
    decided = [r.json()["decision_id"] for r in [*answers, domain, again] if r.status_code == 200]
    assert sorted(decided) == sorted(d for d, _ in logged_decisions(tmp_path))


def test_two_services_on_one_redis_share_one_budget(tmp_path: Path) -> None:
    import redis

    try:
        redis.Redis(socket_connect_timeout=2).ping()
    except redis.ConnectionError:
        pytest.skip("no Redis server answers at 127.0.0.1:6379")
    tenant = f"t{uuid.uuid4().hex[:12]}"  # a budget no earlier run has touched
    tenants = {tenant: {"token_sha256": sha(TOKENS["acme"]), "accounts": ["acc-free"]}}
    limits = {"per_tenant": "3/minute", "storage": "redis://127.0.0.1:6379/0"}
    roots = [tmp_path / "a", tmp_path / "b"]
    for root in roots:
        root.mkdir()
    configs = [write_deployment(r, tenants=tenants, rate_limits=limits) for r in roots]
    with _serving(configs[0]) as first, _serving(configs[1]) as second:
        clients = [first, second]
        order = (0, 1, 0, 1, 0)
        codes = [_turn(clients[i], "acc-free", f"s-{n}").status_code for n, i in enumerate(order)]
    # the second instance refuses its own second request: the budget is theirs together
    assert codes == [200, 200, 200, 429, 429]


def test_a_store_that_does_not_answer_fails_closed_for_checks_of_writes(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    limits = {"per_tenant": "100/minute", "storage": f"redis://:secret@127.0.0.1:{port}/0"}
    config = write_deployment(tmp_path, rate_limits=limits)
    with _serving(config) as client:
        turn = _turn(client, "acc-pro", "s")  # read-only: counted by this process alone
        read = _check(client, "s", "list_domains", {})
        write = _check(client, "s", "connect_custom_domain", {"domain": "example.com"})
        metrics = client.get("/metrics").text
    assert (turn.status_code, read.status_code) == (200, 200)
    assert write.status_code == 503
    error = write.json()["error"]
    assert error["code"] == "rate_limit_unavailable" and "secret" not in error["message"]
    assert [code for _, code in logged_decisions(tmp_path)] == ["OK"]  # the write: undecided
    assert _count(metrics, "maitred_rate_limit_store_errors_total") == 3


def test_rate_limit_config_errors_name_the_field(tmp_path: Path) -> None:
    def deployment(name: str, limits: dict[str, Any]) -> Path:
        (tmp_path / name).mkdir()
        return write_deployment(tmp_path / name, rate_limits=limits)

    with pytest.raises(ConfigError) as token:
        load_config(deployment("token", {"per_token": "1/second"}))
    assert "field 'rate_limits.per_token'" in str(token.value) and "per_tenant" in str(token.value)
    with pytest.raises(ConfigError) as rate:
        load_config(deployment("rate", {"per_tenant": "lots"}))
    assert "field 'rate_limits.per_tenant'" in str(rate.value) and "'60/minute'" in str(rate.value)
    config = deployment("tool", {"per_tool": {"list_domain": "1/second"}})
    settings = load_config(config)
    engine = open_engine(settings)
    try:
        with pytest.raises(ConfigError) as tool:
            open_limiter(settings, engine)
    finally:
        engine.close()
    assert "field 'rate_limits.per_tool.list_domain' names no tool" in str(tool.value)
