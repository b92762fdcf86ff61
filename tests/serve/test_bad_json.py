"""Bodies that are JSON to a lenient parser but not I-JSON: refused at the edge naming the
field, never a 500 (a crash) or a 503 (an outage the client caused); nothing is decided or
logged, and the engine's error counter stays at zero.

A fault of the JSON's structure (a key twice, nesting too deep) is 400 ``malformed_json``; a
value a field cannot hold inside well-formed JSON (a NUL, a lone surrogate, a non-finite
number) is the field's fault, 422 ``invalid_field``, like every other (issue 35 item 3: it was
``malformed_json``)."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
from starlette.testclient import TestClient

from .deploy import DOMAIN_TEXT, auth, logged_decisions

TURN = f'{{"text": "{DOMAIN_TEXT}", "account": "acc-pro", "session_id": "s-1"}}'


def _check(arguments: str, name: str = "connect_custom_domain") -> str:
    return f'{{"session_id": "s-1", "call": {{"name": "{name}", "arguments": {arguments}}}}}'


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


CASES = [
    # ~1,100 deep: the parser's own recursion limit (was a 500 RecursionError)
    ("/v1/turns", TURN[:-1] + f', "conversation": {_nested(1100)}}}', None, "deeper than"),
    # deep enough to parse, too deep to carry into the log and CEL
    ("/v1/calls/check", _check(f'{{"domain": "x", "n": {_nested(200)}}}'),
     "call.arguments.n" + "[0]" * 29, "deeper than 32"),
    # lone surrogates (were 500 UnicodeEncodeError)
    ("/v1/turns", TURN.replace('"acc-pro"', '"acc-\\ud800"'), "account", "lone surrogate"),
    ("/v1/calls/check", _check("{}", name="list\\udfff"), "call.name", "lone surrogate"),
    ("/v1/calls/check", _check('{"domain": "a\\ud800b"}'), "call.arguments.domain",
     "lone surrogate"),
    ("/v1/calls/check", _check('{"\\ud800": 1}'), "call.arguments.\\ud800", "key that"),
    # NUL: PostgreSQL text cannot store it (was a 503 that failed other tenants' commits)
    ("/v1/turns", TURN.replace('"acc-pro"', '"acc-\\u0000pro"'), "account", "NUL"),
    ("/v1/calls/check", _check('{"domain": "a\\u0000b"}'), "call.arguments.domain", "NUL"),
    # non-finite numbers (were 503 engine_unavailable, counted as an outage)
    ("/v1/calls/check", _check('{"domain": "x", "n": NaN}'), "call.arguments.n", "NaN"),
    ("/v1/calls/check", _check('{"domain": "x", "n": Infinity}'), "call.arguments.n",
     "Infinity"),
    ("/v1/calls/check", _check('{"domain": "x", "n": [-Infinity]}'), "call.arguments.n[0]",
     "-Infinity"),
    ("/v1/calls/check", _check('{"domain": "x", "n": 1e400}'), "call.arguments.n", "1e400"),
    # duplicate keys (were accepted: the last one won)
    ("/v1/calls/check", '{"session_id": "s-1", "session_id": "s-2", "call": {"name": "x"}}',
     "session_id", "twice"),
    ("/v1/calls/check", _check('{"domain": "a.com", "domain": "b.com"}'),
     "call.arguments.domain", "twice"),
]  # fmt: skip


IDS = [
    "nested-1100", "nested-200", "surrogate-account", "surrogate-call-name",
    "surrogate-argument", "surrogate-key", "nul-account", "nul-argument", "nan", "infinity",
    "minus-infinity", "1e400",
    "duplicate-session-id", "duplicate-argument",
]  # fmt: skip


#: the structure's faults; every other case is a field's value
STRUCTURE = {"nested-1100", "nested-200", "duplicate-session-id", "duplicate-argument"}


@pytest.mark.parametrize(("path", "body", "field", "message"), CASES, ids=IDS)
def test_a_body_outside_i_json_is_refused_naming_the_field(
    client: TestClient,
    deployment: Path,
    request: pytest.FixtureRequest,
    path: str,
    body: str,
    field: str | None,
    message: str,
) -> None:
    structure = request.node.callspec.id in STRUCTURE
    status, code = (400, "malformed_json") if structure else (422, "invalid_field")
    assert client.post("/v1/turns", content=TURN, headers=auth("acme")).status_code == 200
    r = client.post(path, content=body.encode(), headers=auth("acme"))
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code
    assert err.get("field") == field
    assert message in err["message"]
    spec = client.get("/openapi.json").json()
    answer = spec["paths"][path]["post"]["responses"][str(status)]
    schema = answer["content"]["application/json"]
    jsonschema.validate(
        r.json(),
        {**schema["schema"], "components": spec["components"]},
        cls=jsonschema.Draft202012Validator,
    )
    assert logged_decisions(deployment.parent) == []
    metrics = client.get("/metrics").text
    assert "maitred_engine_errors_total{" not in metrics  # the client's error, not an outage
    assert f'maitred_refused_requests_total{{code="{code}"}} 1.0' in metrics


def test_a_format_that_is_not_a_string_is_422(client: TestClient) -> None:
    body = TURN[:-1] + ', "format": ["openai"]}'  # was a 500 (unhashable list)
    r = client.post("/v1/turns", content=body, headers=auth("acme"))
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "format"


def test_the_good_values_next_to_them_still_pass(client: TestClient) -> None:
    assert client.post("/v1/turns", content=TURN, headers=auth("acme")).status_code == 200
    fine = _check(f'{{"domain": "caf\\u00e9.com \\ud83d\\ude00", "n": [1e300, {_nested(20)}]}}')
    r = client.post("/v1/calls/check", content=fine, headers=auth("acme"))
    assert r.status_code == 200, r.text  # a surrogate *pair* is a character; 1e300 is finite
    assert r.json()["code"] != "OK" or r.json()["allow"]


@pytest.mark.parametrize("blank", [" \t", "\x1c\x1f", "\u3000\xa0", "\ufeff"])
def test_a_blank_id_is_422_and_the_schema_says_so(client: TestClient, blank: str) -> None:
    """The server's "blank" and the OpenAPI pattern agree on every whitespace character, so a
    schema-valid request is never refused as empty (schemathesis found ``"\\u001c"``)."""
    body = {"text": DOMAIN_TEXT, "account": blank, "session_id": "s-9"}
    r = client.post("/v1/turns", json=body, headers=auth("acme"))
    assert r.status_code == 422 and r.json()["error"]["field"] == "account"
    account = client.get("/openapi.json").json()["components"]["schemas"]["TurnRequest"]
    schema = account["properties"]["account"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(blank, schema, cls=jsonschema.Draft202012Validator)
    jsonschema.validate(f"{blank}x", schema, cls=jsonschema.Draft202012Validator)
