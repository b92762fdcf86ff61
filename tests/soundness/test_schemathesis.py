"""schemathesis against the service's own OpenAPI document (``GET /openapi.json``), on a SQLite
log and on a PostgreSQL one.

Every operation is driven with inputs generated from its described request (bodies, query
parameters, the bearer token), against the real app in process (ASGI) over a real engine, store
and log. Each response must be no 5xx, carry a status the document lists for the operation, and
match that status's schema and content type. schemathesis's strings hold NULs and 4-byte
characters (its defaults): on PostgreSQL, whose ``text`` cannot hold a NUL, those must be a
client's 4xx too, never a 500 or 503.

The stateful run follows the link the served document declares -- a turn's ``session_id`` into
a call check of that session -- and the test asserts that it did: some check was made in a
session a turn of the same scenario opened, and was decided (200, not a 404 for an unknown id).

The budget follows ``MAITRED_SOUNDNESS_EXAMPLES`` (see conftest.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

pytest.importorskip("starlette", reason="needs the serve extra: pip install 'maitred[serve]'")
schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is in the dev extra")

from schemathesis import checks as st_checks  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from maitred import Maitred  # noqa: E402
from maitred.serve import Limits, Service, Tenant, create_app  # noqa: E402

from . import spec  # noqa: E402
from .conftest import SOUNDNESS, examples  # noqa: E402
from .harness import Store  # noqa: E402
from .machine import OPTIONS  # noqa: E402

TOKEN = "schemathesis-token-0123456789"
LIMITS = Limits(max_body_bytes=16_384, max_sessions=1000, session_idle_s=3600)
CATALOG = spec.CatalogSpec(
    (
        spec.ToolSpec(
            "deploy_site", True, (spec.Pred("on_free", "eq", "account.plan", "free"),), 3
        ),
        spec.ToolSpec("export_ledger", False, ()),
    )
)
CHECKS = [
    st_checks.not_a_server_error,
    st_checks.status_code_conformance,
    st_checks.content_type_conformance,
    st_checks.response_schema_conformance,
]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    log = str(tmp_path / "log.sqlite")
    if request.param == "postgres":
        server, schema = request.getfixturevalue("pg_schema")
        log = f"{server}?schema={schema}"
    world = spec.World()
    world.roots["acc-a"] = {"account"}
    world.accounts["acc-a"] = {"account.plan": "pro"}
    tools = spec.write_catalog(tmp_path / "catalog", CATALOG)
    engine = Maitred.open(
        [str(tools)], Store(world), OPTIONS, log=log, cache_dir=tmp_path / "cache"
    )
    # a tenant that owns every account id, so generated turns reach the engine
    tenant = Tenant("any", hashlib.sha256(TOKEN.encode()).hexdigest(), account_prefix="")
    service = Service(engine, {"any": tenant}, LIMITS)
    application = create_app(service, LIMITS)
    try:
        with TestClient(application):  # runs the lifespan
            yield application
    finally:
        engine.close()


def _document(app: Any) -> Any:
    with TestClient(app) as client:
        raw = client.get("/openapi.json").json()
    schema = schemathesis.openapi.from_dict(raw)
    schema.app = app
    return schema


HEADERS = {"Authorization": f"Bearer {TOKEN}"}


def test_every_operation_answers_within_its_document(app: Any) -> None:
    """Each operation, generated inputs: no 5xx; status, content type and body as described."""
    operations = [result.ok() for result in _document(app).get_all_operations()]
    assert {op.path for op in operations} >= {"/v1/turns", "/v1/calls/check", "/v1/funnel"}
    for operation in operations:

        @settings(SOUNDNESS, max_examples=examples(0.6))
        @given(case=operation.as_strategy())
        def one(case: Any) -> None:
            response = case.call(headers=HEADERS)
            case.validate_response(response, checks=CHECKS, headers=HEADERS)

        one()


@dataclass
class _Seen:
    """What the stateful run did: the sessions turns answered, the checks made in them."""

    turn_sessions: set[str] = field(default_factory=set)
    linked_checks: list[tuple[str, int]] = field(default_factory=list)  # (session, status)
    statuses: list[int] = field(default_factory=list)


def test_turns_then_checks_of_the_same_session_stay_within_the_document(app: Any) -> None:
    """The stateful run: turns, then checks in the session each turn opened (the document's
    link), every response within the document -- and the link was followed."""
    schema = _document(app)
    machine = schema.as_state_machine()
    seen = _Seen()

    class Linked(machine):  # type: ignore[misc, valid-type]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": HEADERS}

        def step(self, input: Any) -> Any:
            output = super().step(input)
            body, status = input.case.body, output.response.status_code
            seen.statuses.append(status)
            if input.case.operation.path == "/v1/turns" and status == 200:
                seen.turn_sessions.add(output.response.json()["session_id"])
            elif (
                input.case.operation.path == "/v1/calls/check"
                and input.transition is not None
                and input.is_applied
                and isinstance(body, dict)
                and body.get("session_id") in seen.turn_sessions
            ):
                seen.linked_checks.append((body["session_id"], status))
            return output

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            case.validate_response(response, checks=CHECKS, headers=HEADERS)

    Linked.run(settings=settings(SOUNDNESS, max_examples=examples(0.4)))
    assert not [s for s in seen.statuses if s >= 500]
    assert seen.turn_sessions, "no turn was answered: the stateful phase had nothing to follow"
    decided = [sid for sid, status in seen.linked_checks if status == 200]
    assert decided, f"no check followed a turn's session to a decision: {seen.linked_checks}"
