"""``/openapi.json`` describes every route, and real responses match its schemas."""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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


_CHARS = st.sampled_from(["a", "\x00", " ", "\u3000", "\x1c", "\u00e9", "\U0001f600"])


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    text=st.text(_CHARS, max_size=6),
    account=st.one_of(st.text(_CHARS, max_size=6), st.text(_CHARS, min_size=126, max_size=132)),
    session_id=st.text(_CHARS, max_size=6),
)
def test_the_document_refuses_exactly_what_the_server_refuses(
    client: TestClient, text: str, account: str, session_id: str
) -> None:
    """Issue 35 item 3: a turn's strings with NULs, blanks and lengths around ``maxLength`` --
    the document's schema admits the request exactly when the server does not refuse it as a
    field's fault (422 ``invalid_field``, naming the field; never ``malformed_json``)."""
    spec = client.get("/openapi.json").json()
    root = {"$ref": "#/components/schemas/TurnRequest", "components": spec["components"]}
    body = {"text": text, "account": account, "session_id": session_id}
    valid = jsonschema.Draft202012Validator(root).is_valid(body)
    r = client.post("/v1/turns", json=body, headers=auth("acme"))
    if valid:  # answered (an account not the tenant's: 403; a session of another: 409)
        assert r.status_code in (200, 403, 409), (body, r.status_code, r.text)
    else:
        assert r.status_code == 422, (body, r.status_code, r.text)
        assert r.json()["error"]["code"] == "invalid_field"
        assert r.json()["error"]["field"] in body


@pytest.mark.parametrize("bad", ["acc-\ud800", "acc-\udfff-1"])
def test_a_lone_surrogate_is_a_field_fault_too(client: TestClient, bad: str) -> None:
    """A lone surrogate is no character, so no pattern a generator uses can name it; the
    document says so in words (I-JSON), and the server refuses it as the field's fault."""
    body = json.dumps({"text": DOMAIN_TEXT, "account": bad, "session_id": "s"})  # \\udxxx
    r = client.post("/v1/turns", content=body, headers=auth("acme"))
    assert r.status_code == 422, r.text
    assert (r.json()["error"]["code"], r.json()["error"]["field"]) == ("invalid_field", "account")
    description = client.get("/openapi.json").json()["components"]["schemas"]["Json"]
    assert "lone surrogate" in description["description"]
