"""Fixtures of the console tests: a deployment whose log holds real turns and decisions made
through the service's own HTTP API, and the console over that log."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="needs the serve extra: pip install 'maitred[serve]'")

from starlette.testclient import TestClient
from tests.log.builders import Opener
from tests.serve.deploy import DOMAIN_TEXT, auth, write_deployment

from maitred.console import Access, WhatIf, create_console
from maitred.log import open_log
from maitred.serve import Service, create_app, load_config, open_engine


@dataclass(frozen=True)
class Made:
    """What the test made through the service: ids to find in the console."""

    config: Path
    log: Path
    turn_free: str
    turn_pro: str
    refused: str
    allowed: str


def make_decisions(root: Path) -> Made:
    """Two turns (acc-free: the domain tool hidden; acc-pro: offered) and two checks."""
    config = write_deployment(root)
    settings = load_config(config)
    engine = open_engine(settings)
    try:
        service = Service(engine, settings.tenants, settings.limits)
        with TestClient(create_app(service, settings.limits)) as api:
            free = api.post(
                "/v1/turns",
                json={"account": "acc-free", "text": DOMAIN_TEXT, "session_id": "s-free"},
                headers=auth("acme"),
            ).json()
            pro = api.post(
                "/v1/turns",
                json={"account": "acc-pro", "text": DOMAIN_TEXT, "session_id": "s-pro"},
                headers=auth("acme"),
            ).json()
            refused = api.post(
                "/v1/calls/check",
                json={"session_id": "s-free", "call": {"name": "connect_custom_domain",
                      "arguments": {"domain": "example.org"}, "id": "call-1"}},
                headers=auth("acme"),
            ).json()  # fmt: skip
            allowed = api.post(
                "/v1/calls/check",
                json={"session_id": "s-pro", "call": {"name": "connect_custom_domain",
                      "arguments": {"domain": "example.org"}, "id": "call-2"}},
                headers=auth("acme"),
            ).json()  # fmt: skip
    finally:
        engine.close()
    return Made(
        config,
        root / "log.sqlite",
        free["turn_id"],
        pro["turn_id"],
        refused["decision_id"],
        allowed["decision_id"],
    )


@pytest.fixture
def made(tmp_path: Path) -> Made:
    return make_decisions(tmp_path)


@pytest.fixture
def console(made: Made) -> Iterator[TestClient]:
    settings = load_config(made.config)
    engine = open_engine(replace(settings, log=None))
    log = open_log(made.log, read_only=True)
    try:
        app = create_console(log, Access(open=True), what_if=WhatIf(engine))
        with TestClient(app) as client:
            yield client
    finally:
        log.close()
        engine.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """open_log(...) bound to a fresh log on the parametrised backend."""
    if request.param == "sqlite":
        path = tmp_path / "log.db"
        return lambda **kw: open_log(path, **kw)
    url, schema = request.getfixturevalue("pg_schema")
    return lambda **kw: open_log(url, schema=schema, **kw)
