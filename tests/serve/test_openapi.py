"""``/openapi.json`` describes every route, and real responses match its schemas."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema
import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from maitred.serve import Service, create_app
from maitred.serve.config import Limits

from .deploy import DOMAIN_TEXT, auth


def _routes(service: Service) -> list[Route]:
    app: Any = create_app(service, Limits())
    return [r for r in app.app.routes if isinstance(r, Route)]


def test_every_route_and_method_is_described(client: TestClient, service: Service) -> None:
    spec = client.get("/openapi.json").json()
    assert spec["openapi"].startswith("3.1")
    served = {(r.path, m.lower()) for r in _routes(service) for m in r.methods or () if m != "HEAD"}
    described = {(p, m) for p, ops in spec["paths"].items() for m in ops}
    assert served == described


def _validate(spec: dict[str, Any], path: str, method: str, response: httpx.Response) -> None:
    """``response`` against the schema the spec gives for its status."""
    described = spec["paths"][path][method]["responses"]
    assert str(response.status_code) in described, (path, response.status_code)
    content = described[str(response.status_code)]["content"]
    schema = content["application/json"]["schema"]
    root = {**schema, "components": spec["components"]}
    jsonschema.validate(response.json(), root, cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize("fmt", ["openai", "agentskills"])
def test_real_responses_match_the_described_schemas(client: TestClient, fmt: str) -> None:
    spec = client.get("/openapi.json").json()
    turn_body = {"text": DOMAIN_TEXT, "account": "acc-free", "session_id": "s", "format": fmt}
    check_body = {"session_id": "s", "call": {"name": "list_domains", "arguments": {}}}
    cases = [
        ("/v1/turns", "post", client.post("/v1/turns", json=turn_body, headers=auth("acme"))),
        ("/v1/calls/check", "post",
         client.post("/v1/calls/check", json=check_body, headers=auth("acme"))),
        ("/v1/calls/check", "post",
         client.post("/v1/calls/check", json={**check_body, "session_id": "x"},
                     headers=auth("acme"))),
        ("/v1/turns", "post", client.post("/v1/turns", json=turn_body)),
        ("/v1/turns", "post", client.post("/v1/turns", json={}, headers=auth("acme"))),
        ("/v1/turns", "post",
         client.post("/v1/turns", json={**turn_body, "account": "glx-1"}, headers=auth("acme"))),
        ("/v1/funnel", "get", client.get("/v1/funnel", headers=auth("acme"))),
        ("/healthz", "get", client.get("/healthz")),
        ("/readyz", "get", client.get("/readyz")),
        ("/openapi.json", "get", client.get("/openapi.json")),
    ]  # fmt: skip
    assert {r.status_code for _, _, r in cases} == {200, 401, 403, 404, 422}
    for path, method, response in cases:
        _validate(spec, path, method, response)


def test_a_field_the_schema_lacks_would_fail_validation(client: TestClient) -> None:
    """The check above can fail: a response missing a required field does not validate."""
    spec = client.get("/openapi.json").json()
    response = client.post(
        "/v1/turns",
        json={"text": DOMAIN_TEXT, "account": "acc-free", "session_id": "s"},
        headers=auth("acme"),
    )
    body = response.json()
    del body["turn_id"]
    broken = httpx.Response(200, json=body)
    with pytest.raises(jsonschema.ValidationError, match="turn_id"):
        _validate(spec, "/v1/turns", "post", broken)


def test_the_turn_links_to_a_check_of_its_session(client: TestClient) -> None:
    """The link a stateful client follows is well formed: it names an operation that exists,
    its runtime expression points at a field every turn response has, and the field it fills
    is one of the check request's."""
    spec = client.get("/openapi.json").json()
    operations = {
        op["operationId"]: op for ops in spec["paths"].values() for op in ops.values()
        if "operationId" in op
    }  # fmt: skip
    links = spec["paths"]["/v1/turns"]["post"]["responses"]["200"]["links"]
    assert set(links) == {"CheckACallOfThisSession"}
    link = links["CheckACallOfThisSession"]
    assert operations[link["operationId"]] is spec["paths"]["/v1/calls/check"]["post"]
    schemas = spec["components"]["schemas"]
    for field, expression in link["requestBody"].items():
        assert field in schemas["CheckRequest"]["properties"]
        source, _, pointer = expression.partition("#/")
        assert source == "$response.body"
        assert pointer in schemas["TurnResponse"]["required"]
