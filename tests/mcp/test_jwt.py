"""The JWT verifier and the auth config, in process: leeway edges on a fixed clock, a JWKS
fetched from a real local HTTP server (cached, fetched again for a rotated key, an outage),
the HTTP edge's 503, and config errors that name the field."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest
from joserfc import jws
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient
from tests.mcp.jwt_issuer import AUDIENCE, ISSUER, Issuer

from maitred.errors import ConfigError
from maitred.gateway.auth import BearerEdge, Denial, GatewayAuth, Identity
from maitred.gateway.config import AuthOptions, Token, parse_config
from maitred.gateway.jwt import (
    REFRESH_MIN_S,
    JwtVerifier,
    KeySource,
    Refused,
    Unavailable,
    Verified,
    parse_jwks,
)

NOW = 1_900_000_000
OPTIONS = AuthOptions(issuer=ISSUER, audience=(AUDIENCE,), tenant_claim="org_id")


@pytest.fixture(scope="module")
def issuer() -> Issuer:
    return Issuer()


def _verify(verifier: JwtVerifier, token: str) -> Verified | Refused | Unavailable:
    return anyio.run(verifier.verify, token)


def _fixed(issuer: Issuer, leeway: float = 30.0) -> JwtVerifier:
    keys = KeySource(parse_jwks(json.dumps(issuer.jwks()), "test"))
    options = AuthOptions(
        issuer=ISSUER, audience=(AUDIENCE,), tenant_claim="org_id", leeway_s=leeway
    )
    return JwtVerifier(options, keys, clock=lambda: NOW)


@pytest.mark.parametrize(
    ("claims", "accepted"),
    [
        ({"exp": NOW - 29}, True),  # expired, but within the leeway
        ({"exp": NOW - 31}, False),
        ({"nbf": NOW + 29}, True),  # a clock a little ahead at the issuer
        ({"nbf": NOW + 31}, False),
        ({"aud": ["https://other.example", AUDIENCE]}, True),  # one audience of several
        ({"aud": ["https://other.example"]}, False),
        ({"exp": "never"}, False),
        ({"sub": None}, False),
        ({"org_id": "not a tenant!"}, False),
        # an account the log cannot store (issue 35 item 2): refused here, not later
        ({"sub": "a" * 512}, True),
        ({"sub": "a" * 769}, False),
        ({"sub": "\u00e9" * 257}, False),  # 514 bytes of UTF-8 in 257 characters
        ({"sub": "acc-\x001"}, False),
    ],
)
def test_claims_on_a_fixed_clock(issuer: Issuer, claims: dict[str, Any], accepted: bool) -> None:
    base = {"iat": NOW, "exp": NOW + 600}
    token = issuer.mint(**{**base, **claims})
    outcome = _verify(_fixed(issuer), token)
    assert isinstance(outcome, Verified) == accepted, outcome
    if accepted:
        assert isinstance(outcome, Verified)
        assert (outcome.tenant, outcome.scopes) == ("acme", frozenset({"shop:read"}))
        assert outcome.account == claims.get("sub", "acc-1")


def test_no_leeway_means_none(issuer: Issuer) -> None:
    token = issuer.mint(iat=NOW, exp=NOW - 1)
    assert isinstance(_verify(_fixed(issuer, leeway=0), token), Refused)
    assert isinstance(_verify(_fixed(issuer, leeway=30), token), Verified)


def test_a_repeated_claim_or_an_encrypted_token_is_no_token(issuer: Issuer) -> None:
    """Two ``exp`` members, signed: readers could disagree on which counts, so none does."""
    verifier = _fixed(issuer)
    good = issuer.mint(iat=NOW, exp=NOW + 600)
    assert isinstance(_verify(verifier, good), Verified)
    assert isinstance(_verify(verifier, good + ".x.y"), Refused)  # five parts: a JWE
    payload = (
        f'{{"iss": "{ISSUER}", "aud": "{AUDIENCE}", "sub": "acc-1", "org_id": "acme", '
        f'"exp": {NOW - 3600}, "exp": {NOW + 600}}}'
    ).encode()
    head = {"alg": "RS256", "kid": "rsa-1"}
    twice = jws.serialize_compact(head, payload, issuer.rsa, algorithms=["RS256"])
    outcome = _verify(verifier, twice)
    assert isinstance(outcome, Refused) and "I-JSON" in outcome.reason


class _Jwks(BaseHTTPRequestHandler):
    document: ClassVar[bytes] = b""
    hits: ClassVar[list[str]] = []
    down: ClassVar[bool] = False

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        if type(self).down:
            self.send_response(503)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(type(self).document)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def jwks_server() -> Iterator[tuple[str, type[_Jwks]]]:
    handler = type("Jwks", (_Jwks,), {"hits": [], "document": b"", "down": False})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/jwks.json", handler
    finally:
        server.shutdown()
        server.server_close()


def test_a_jwks_url_is_fetched_once_cached_and_fetched_again_for_a_rotated_key(
    issuer: Issuer, jwks_server: tuple[str, type[_Jwks]]
) -> None:
    url, served = jwks_server
    only_rsa = {"keys": [issuer.jwks()["keys"][0]]}
    served.document = json.dumps(only_rsa).encode()
    clock = [1000.0]
    keys = KeySource(url=url, timeout_s=5, cache_s=300, clock=lambda: clock[0])
    verifier = JwtVerifier(OPTIONS, keys)
    assert isinstance(_verify(verifier, issuer.mint(jti="first")), Verified)
    assert isinstance(_verify(verifier, issuer.mint(jti="second")), Verified)
    assert len(served.hits) == 1  # the keys are cached

    served.document = json.dumps(issuer.jwks()).encode()  # the issuer adds ec-1
    es = issuer.mint(alg="ES256")
    assert isinstance(_verify(verifier, es), Refused)  # too soon after the last fetch
    assert len(served.hits) == 1
    clock[0] += REFRESH_MIN_S + 1
    assert isinstance(_verify(verifier, es), Verified)  # unknown kid: fetched again
    assert len(served.hits) == 2

    served.down = True
    clock[0] += 301  # the cache has expired and the URL fails: the keys known still serve
    assert isinstance(_verify(verifier, issuer.mint(jti="third")), Verified)
    assert len(served.hits) == 3


def test_a_jwks_url_that_never_answered_fails_closed_with_a_503(
    issuer: Issuer, jwks_server: tuple[str, type[_Jwks]]
) -> None:
    url, served = jwks_server
    served.down = True
    verifier = JwtVerifier(OPTIONS, KeySource(url=url, timeout_s=5))
    outcome = _verify(verifier, issuer.mint())
    assert isinstance(outcome, Unavailable) and url in outcome.reason

    def mcp(request: Any) -> PlainTextResponse:
        return PlainTextResponse("served")  # never reached

    app = Starlette(
        routes=[Route("/mcp", mcp, methods=["POST"])],
        middleware=[Middleware(BearerEdge, auth=GatewayAuth((), verifier))],
    )
    with TestClient(app) as client:
        answer = client.post("/mcp", headers={"Authorization": f"Bearer {issuer.mint()}"})
    assert answer.status_code == 503 and answer.headers["retry-after"] == "30"
    assert answer.json()["error"] == "temporarily_unavailable"
    assert "could not be fetched" in answer.json()["error_description"]


def test_required_scopes_are_a_403_insufficient_scope(issuer: Issuer) -> None:
    options = AuthOptions(
        issuer=ISSUER, audience=(AUDIENCE,), tenant="acme", required_scopes=("mcp:use",)
    )
    keys = KeySource(parse_jwks(json.dumps(issuer.jwks()), "test"))
    auth = GatewayAuth((), JwtVerifier(options, keys))

    def mcp(request: Any) -> PlainTextResponse:
        return PlainTextResponse("served")

    app = Starlette(
        routes=[Route("/mcp", mcp, methods=["POST"])],
        middleware=[Middleware(BearerEdge, auth=auth)],
    )
    with TestClient(app, base_url="http://gw.test") as client:
        lacking = client.post("/mcp", headers={"Authorization": f"Bearer {issuer.mint()}"})
        holding = issuer.mint(scope="shop:read mcp:use")
        served = client.post("/mcp", headers={"Authorization": f"Bearer {holding}"})
    assert lacking.status_code == 403
    challenge = lacking.headers["www-authenticate"]
    assert challenge.startswith('Bearer error="insufficient_scope"')
    assert 'scope="mcp:use"' in challenge
    assert served.status_code == 200 and served.text == "served"


def _config(tmp_path: Path, auth: dict[str, Any]) -> None:
    (tmp_path / "jwks.json").write_text('{"keys": []}', encoding="utf-8")
    data = {
        "state": "accounts.json",
        "upstreams": [{"name": "shop", "command": "shop-server"}],
        "auth": auth,
    }
    parse_config(data, "gateway.yaml", base=tmp_path)


GOOD = {"issuer": ISSUER, "audience": AUDIENCE, "jwks_file": "jwks.json", "tenant": "acme"}


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"algorithms": ["HS256"]}, "auth.algorithms[0]", "HS/RS confusion"),
        ({"algorithms": ["none"]}, "auth.algorithms[0]", "not accepted"),
        ({"jwks_url": "https://id.example/jwks"}, "auth.jwks_file", "exactly one"),
        ({"jwks_file": None}, "auth.jwks_file", "exactly one"),
        ({"jwks_file": "missing.json"}, "auth.jwks_file", "does not exist"),
        ({"tenant_claim": "org_id"}, "auth.tenant_claim", "exactly one"),
        ({"tenant": None}, "auth.tenant_claim", "exactly one"),
        ({"leeway_s": 3600}, "auth.leeway_s", "0-300"),
        ({"required_scopes": ["a b"]}, "auth.required_scopes[0]", "not an OAuth scope"),
        ({"audiences": [AUDIENCE]}, "auth.audiences", "not a known field"),
        ({"issuer": None}, "auth.issuer", "is required"),
    ],
)
def test_auth_config_errors_name_the_field(
    tmp_path: Path, change: dict[str, Any], field: str, says: str
) -> None:
    auth = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    with pytest.raises(ConfigError) as raised:
        _config(tmp_path, auth)
    assert f"field {field!r}" in str(raised.value) and says in str(raised.value)


def test_a_jwks_file_without_keys_is_refused_when_the_gateway_opens(tmp_path: Path) -> None:
    (tmp_path / "jwks.json").write_text(
        '{"keys": [{"kty": "oct", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTMyYg"}]}', "utf-8"
    )
    data = {
        "state": "accounts.json",
        "upstreams": [{"name": "shop", "command": "shop-server"}],
        "auth": GOOD,
    }
    config = parse_config(data, "gateway.yaml", base=tmp_path)
    assert config.auth is not None and config.auth.leeway_s == 30.0
    with pytest.raises(ConfigError, match="no public RSA, EC or OKP key"):
        JwtVerifier.open(config.auth, config.source)


def test_the_defaults(tmp_path: Path) -> None:
    (tmp_path / "jwks.json").write_text('{"keys": []}', encoding="utf-8")
    data = {"state": "a.json", "upstreams": [{"name": "s", "command": "s"}], "auth": GOOD}
    auth = parse_config(data, "gateway.yaml", base=tmp_path).auth
    assert auth == AuthOptions(
        issuer=ISSUER,
        audience=(AUDIENCE,),
        jwks_file=str(tmp_path / "jwks.json"),
        tenant="acme",
        authorization_servers=(ISSUER,),
    )
    assert (auth.algorithms, auth.account_claim, auth.scope_claim) == (
        ("RS256", "ES256"),
        "sub",
        "scope",
    )
    assert (auth.jwks_timeout_s, auth.jwks_cache_s, auth.required_scopes) == (5.0, 300.0, ())


def test_a_remembered_token_is_refused_once_it_expires(issuer: Issuer) -> None:
    clock = [float(NOW)]
    keys = KeySource(parse_jwks(json.dumps(issuer.jwks()), "test"))
    verifier = JwtVerifier(OPTIONS, keys, clock=lambda: clock[0])
    token = issuer.mint(iat=NOW, exp=NOW + 60)
    assert isinstance(_verify(verifier, token), Verified)
    keys.keys = []  # remembered: accepted without its signature checked again ...
    assert isinstance(_verify(verifier, token), Verified)
    clock[0] = NOW + 60 + OPTIONS.leeway_s + 1  # ... until it expires
    outcome = _verify(verifier, token)
    assert isinstance(outcome, Refused)
    keys.keys = parse_jwks(json.dumps(issuer.jwks()), "test")
    assert "expired" in str(_verify(verifier, token))


def test_a_caller_s_identity_is_built_once_and_never_outlives_its_token(issuer: Issuer) -> None:
    clock = [float(NOW)]
    keys = KeySource(parse_jwks(json.dumps(issuer.jwks()), "test"))
    auth = GatewayAuth((), JwtVerifier(OPTIONS, keys, clock=lambda: clock[0]))
    token = issuer.mint(iat=NOW, exp=NOW + 60, sub="acc-1", org_id="acme")
    other = issuer.mint(iat=NOW, exp=NOW + 60, sub="acc-2", org_id="acme")
    first = anyio.run(auth.identify, token)
    assert isinstance(first, Identity) and (first.tenant, first.account) == ("acme", "acc-1")
    assert anyio.run(auth.identify, token) is first  # the same model, not one per request
    second = anyio.run(auth.identify, other)
    assert isinstance(second, Identity) and second.account == "acc-2"
    clock[0] = NOW + 60 + OPTIONS.leeway_s + 1  # expired: the kept identity is not served
    late = anyio.run(auth.identify, token)
    assert isinstance(late, Denial) and "expired" in late.description


@pytest.mark.parametrize(
    ("tenant", "account", "fault"),
    [
        ("acme", "a" * 513, "longer than 512 bytes"),
        ("acme", "acc\x00", "NUL"),
        ("acme", "", "is empty"),
        ("acme\ud800", "acc-1", "lone surrogate"),
    ],
)
def test_a_static_token_whose_account_the_log_cannot_store_is_invalid(
    tenant: str, account: str, fault: str
) -> None:
    """Issue 35 item 2: an identity the log cannot store is a 401 ``invalid_token`` when the
    token is presented, never a gate that fails later on every decision made for it."""
    import hashlib

    token = "static-secret"
    digest = hashlib.sha256(token.encode()).hexdigest()
    auth = GatewayAuth([Token(digest, tenant, account)])
    found = anyio.run(auth.identify, token)
    assert isinstance(found, Denial), found
    assert (found.status, found.error) == (401, "invalid_token")
    assert fault in found.description
