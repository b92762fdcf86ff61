"""The console under ``/console`` beside the service's routes, as ``maitred serve`` mounts it:
behind the operators' tokens, its links under the mount, the service's routes untouched."""

from __future__ import annotations

from dataclasses import replace

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
