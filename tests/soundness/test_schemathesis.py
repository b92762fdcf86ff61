"""schemathesis against the service's own OpenAPI document (``GET /openapi.json``).

Every operation is driven with inputs generated from its described request (bodies, query
parameters, the bearer token), against the real app in process (ASGI) over a real engine, store
and log. Each response must be no 5xx, carry a status the document lists for the operation, and
match that status's schema and content type. A stateful run follows the one link the API has --
a turn's ``session_id`` into a call check of that session -- added to the document for the run
(the served document declares no links).

The budget follows ``MAITRED_SOUNDNESS_EXAMPLES`` (see conftest.py).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterator
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


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    tmp: Path = tmp_path_factory.mktemp("schemathesis")
    world = spec.World()
    world.roots["acc-a"] = {"account"}
    world.accounts["acc-a"] = {"account.plan": "pro"}
    tools = spec.write_catalog(tmp / "catalog", CATALOG)
    engine = Maitred.open(
        [str(tools)], Store(world), OPTIONS, log=str(tmp / "log.sqlite"), cache_dir=tmp / "cache"
    )
    # a tenant that owns every account id, so generated turns reach the engine
    tenant = Tenant("any", hashlib.sha256(TOKEN.encode()).hexdigest(), account_prefix="")
    service = Service(engine, {"any": tenant}, LIMITS)
    application = create_app(service, LIMITS)
    with TestClient(application):  # runs the lifespan
        yield application
    engine.close()


def _document(app: Any, *, linked: bool) -> Any:
    with TestClient(app) as client:
        raw = client.get("/openapi.json").json()
    if linked:
        raw = copy.deepcopy(raw)
        raw["paths"]["/v1/turns"]["post"]["operationId"] = "turn"
        raw["paths"]["/v1/calls/check"]["post"]["operationId"] = "check"
        raw["paths"]["/v1/turns"]["post"]["responses"]["200"]["links"] = {
            "CheckInTheSession": {
                "operationId": "check",
                "requestBody": {
                    "session_id": "$response.body#/session_id",
                    "call": {"name": "export_ledger", "arguments": {"n": 1}},
                },
            }
        }
    schema = schemathesis.openapi.from_dict(raw)
    schema.app = app
    return schema


HEADERS = {"Authorization": f"Bearer {TOKEN}"}


def _operations(app: Any) -> list[Any]:
    return [result.ok() for result in _document(app, linked=False).get_all_operations()]


def test_every_operation_answers_within_its_document(app: Any) -> None:
    """Each operation, generated inputs: no 5xx; status, content type and body as described."""
    operations = _operations(app)
    assert {op.path for op in operations} >= {"/v1/turns", "/v1/calls/check", "/v1/funnel"}
    for operation in operations:

        @settings(SOUNDNESS, max_examples=examples(0.6))
        @given(case=operation.as_strategy())
        def one(case: Any) -> None:
            response = case.call(headers=HEADERS)
            case.validate_response(response, checks=CHECKS, headers=HEADERS)

        one()


def test_turns_then_checks_of_the_same_session_stay_within_the_document(app: Any) -> None:
    """The stateful run: turns, then checks in the session each turn opened."""
    machine = _document(app, linked=True).as_state_machine()

    class Linked(machine):  # type: ignore[misc, valid-type]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": HEADERS}

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            case.validate_response(response, checks=CHECKS, headers=HEADERS)

    Linked.run(settings=settings(SOUNDNESS, max_examples=examples(0.4)))
