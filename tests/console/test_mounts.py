"""The console under ``/console`` beside the service's routes, as ``maitred serve`` mounts it:
behind the operators' tokens, its links under the mount, the service's routes untouched."""

from __future__ import annotations

from dataclasses import replace

import pytest
from starlette.testclient import TestClient
from tests.serve.deploy import auth

from maitred.console import MOUNT, Access, Mounted, WhatIf, create_console, unlogged
from maitred.log import open_log
from maitred.serve import Service, create_app, load_config, open_engine

from .conftest import Made
from .test_console import JSON, SECRET, sha


def test_the_service_serves_the_console_under_console(made: Made) -> None:
    settings = replace(load_config(made.config), operators={"alice": sha(SECRET)})
    engine = open_engine(settings)
    log = open_log(made.log, read_only=True)
    try:
        service = Service(engine, settings.tenants, settings.limits)
        console = create_console(
            log,
            Access(frozenset(settings.operators.values())),
            what_if=WhatIf(unlogged(engine)),
            root=MOUNT,
        )
        app = Mounted(create_app(service, settings.limits), console)
        operator = {"Authorization": f"Bearer {SECRET}"}
        with TestClient(app) as client:
            assert client.get("/healthz").json() == {"status": "ok"}
            assert client.get("/console/decisions", headers=JSON).status_code == 401
            tenant = {**JSON, **auth("acme")}  # a tenant's token opens no console
            assert client.get("/console/decisions", headers=tenant).status_code == 401
            r = client.get("/console/decisions?account=acc-free", headers={**JSON, **operator})
            assert {d["decision_id"] for d in r.json()["decisions"]} == {
                made.turn_free,
                made.refused,
            }
            page = client.get("/console/decisions", headers=operator).text
            assert 'href="/console/static/console.css"' in page
            assert f'href="/console/decisions/{made.refused}"' in page
            css = client.get("/console/static/console.css")
            assert css.status_code == 200 and "text/css" in css.headers["content-type"]
            bare = client.get("/console", headers=operator, follow_redirects=False)
            assert bare.status_code == 308 and bare.headers["location"] == "/console/"
            what_if = client.get(
                "/console/accounts/acc-free?message=connect+my+custom+domain",
                headers={**JSON, **operator},
            ).json()["what_if"]
            assert what_if["logged"] is False
            assert client.post("/v1/turns", json={}, headers=auth("acme")).status_code == 422
    finally:
        log.close()
        engine.close()


def test_the_gateway_serves_it_for_tokens_granting_the_console_scope(made: Made) -> None:
    pytest.importorskip("fastmcp", reason="needs the mcp extra")
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from maitred.gateway import parse_config
    from maitred.gateway.serve import _console

    base = {
        "account": "acc-1",
        "state": "accounts.json",
        "log": str(made.log),
        "upstreams": [{"name": "t", "url": "http://h"}],
    }
    user = {"token_sha256": sha("user"), "tenant": "acme", "account": "acc-free"}
    ops = {**user, "token_sha256": sha(SECRET), "scopes": ["maitred:console"]}
    without, none = _console(parse_config({**base, "tokens": [user]}, "gw.yaml"))
    assert without is None and none is None  # no operator: no console
    console, log = _console(parse_config({**base, "tokens": [user, ops]}, "gw.yaml"))
    assert console is not None and log is not None and log.read_only
    try:

        async def mcp(request: object) -> PlainTextResponse:
            return PlainTextResponse("mcp")

        app = Mounted(Starlette(routes=[Route("/mcp", mcp)]), console)
        with TestClient(app) as client:
            assert client.get("/mcp").text == "mcp"
            user_auth = {**JSON, "Authorization": "Bearer user"}
            assert client.get("/console/", headers=user_auth).status_code == 401
            ops_auth = {**JSON, "Authorization": f"Bearer {SECRET}"}
            ids = {d["decision_id"] for d in client.get("/console/decisions", headers=ops_auth)
                   .json()["decisions"]}  # fmt: skip
            assert made.refused in ids
    finally:
        log.close()
