"""The gateway as an OAuth 2.1 resource server: real signed JWTs against `maitred mcp --http`.

One deployment per module: `maitred mcp` in a subprocess on loopback, in front of the recording
upstream (``upstream_server.py``, over stdio), with ``auth:`` naming an issuer whose RSA and
EC keys the test generated (``jwt_issuer.py``; the JWKS is a file, as an operator would keep
it) and one static token beside it. The upstream's contracts gate ``get_plan`` on the scope
``shop:read``, ``upgrade`` on ``shop:write`` and ``export_report`` on the account's plan.

Every refused token is sent as a raw HTTP request (status, ``WWW-Authenticate``, body) and
through a real client; valid ones through ``fastmcp.Client`` (2026-07-28, sessionless) and the
``mcp`` SDK's ``ClientSession`` (a handshake-era session), and their turns and decisions are
read back from the decision log.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fastmcp import Client
from tests.mcp.conftest import UPSTREAM, Process, child_env, http_client, sha256
from tests.mcp.jwt_issuer import AUDIENCE, ISSUER, Issuer

from maitred.log.base import open_log

pytestmark = pytest.mark.slow  # starts the gateway and an upstream as subprocesses

STATIC = "tok-static-ops-2b7e"  # a static token beside the JWTs: acc-2, scope shop:read
SIDECAR = """\
tools:
  get_plan:
    scopes: [shop:read]
  upgrade:
    mutates: true
    scopes: [shop:write]
  export_report:
    exit_predicates:
      - name: free_plan
        expr: account.plan == "free"
        reads: [account.plan]
"""
METADATA = "https://mcp.test.example/.well-known/oauth-protected-resource/mcp"


@dataclass
class Site:
    url: str
    root: Path
    issuer: Issuer
    gateway: Process

    @property
    def base(self) -> str:
        return self.url.rsplit("/", 1)[0]

    def upstream_calls(self) -> list[str]:
        path = self.root / "calls.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        return [json.loads(line)["name"] for line in lines]

    def decisions(self) -> list[dict[str, Any]]:
        with open_log(str(self.root / "gateway.sqlite")) as log:
            return sorted(log.iter_action_decisions(), key=lambda r: str(r["decided_at"]))

    def turns(self) -> list[dict[str, Any]]:
        with open_log(str(self.root / "gateway.sqlite")) as log:
            return list(log.iter_turns())


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("auth")
    issuer = Issuer()
    (root / "jwks.json").write_text(json.dumps(issuer.jwks()), encoding="utf-8")
    accounts = {"acc-1": {"account": {"plan": "free"}}, "acc-2": {"account": {"plan": "pro"}}}
    (root / "accounts.json").write_text(json.dumps(accounts), encoding="utf-8")
    (root / "shop.maitred.yaml").write_text(SIDECAR, encoding="utf-8")
    env = {"CALLS_FILE": str(root / "calls.jsonl"), "ACCOUNTS": str(root / "accounts.json")}
    config = root / "gateway.yaml"
    config.write_text(
        "state: accounts.json\n"
        "log: gateway.sqlite\n"
        "server: {host: 127.0.0.1, port: 0}\n"
        "tokens:\n"
        f"  - {{token_sha256: {sha256(STATIC)}, tenant: ops, account: acc-2, "
        "scopes: [shop:read]}\n"
        "auth:\n"
        f"  issuer: {ISSUER}\n"
        f"  audience: {AUDIENCE}\n"
        "  jwks_file: jwks.json\n"
        "  tenant_claim: org_id\n"
        "upstreams:\n"
        "  - name: shop\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(UPSTREAM))}]\n"
        f"    env: {json.dumps(env)}\n"
        "    contracts: shop.maitred.yaml\n",
        encoding="utf-8",
    )
    args = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
    gateway = Process(args, child_env(), r"serving (http://\S+)")
    try:
        yield Site(gateway.match.group(1), root, issuer, gateway)
    finally:
        gateway.stop()


def _post(url: str, token: str | None) -> httpx2.Response:
    """A raw ``tools/list`` with ``token`` (``None``: no Authorization header)."""
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    return httpx2.post(url, json=body, headers=headers, timeout=30)


def _tools(url: str, token: str) -> list[str]:
    async def main() -> list[str]:
        async with Client(url, auth=token) as client:
            return sorted(t.name for t in await client.list_tools())

    return anyio.run(main)


def _refused_by_client(url: str, token: str) -> bool:
    async def main() -> None:
        async with Client(url, auth=token) as client:
            await client.list_tools()

    try:
        anyio.run(main)
    except Exception:  # the client's own error type for a 401
        return True
    return False


def _refusals(issuer: Issuer) -> dict[str, tuple[str, str]]:
    """Each bad token, with the description fragment its 401 must carry."""
    now = int(time.time())
    return {
        "expired": (issuer.mint(exp=now - 3600), "the token expired at"),
        "expired ES256": (issuer.mint(alg="ES256", exp=now - 3600), "the token expired at"),
        "nbf in the future": (issuer.mint(nbf=now + 3600), "not valid before"),
        "wrong audience": (
            issuer.mint(aud="https://other.example/mcp"),
            "is for audience https://other.example/mcp, not this gateway",
        ),
        "wrong issuer": (
            issuer.mint(iss="https://evil.example"),
            "names issuer https://evil.example, not https://id.test.example",
        ),
        "alg none": (issuer.unsigned(), "alg none (an unsigned token) is never accepted"),
        "HS/RS confusion": (issuer.hs_confusion(), "alg HS256 is not accepted here"),
        "bad signature": (issuer.by_stranger(), "the signature does not verify"),
        "unknown kid": (issuer.mint(header={"kid": "rsa-9"}), "no key of the issuer has kid rsa-9"),
        "no exp": (issuer.mint(exp=None), "no exp (expiry) claim"),
        "no tenant": (issuer.mint(org_id=None), "no org_id claim"),
        # validly signed, but an account the log cannot store (issue 35 item 2): was accepted,
        # then tools/list was -32603 and tools/call GATE_UNAVAILABLE, unlogged
        "sub over 768 bytes": (issuer.mint(sub="a" * 769), "sub claim is longer than 512"),
        "sub with a NUL": (issuer.mint(sub="acc-\x001"), "not base64url-encoded I-JSON"),
        "not a token": ("tok-nobody", "neither one of this gateway's tokens nor a JWT"),
    }


def test_each_bad_token_is_a_401_saying_why_and_nothing_is_decided(site: Site) -> None:
    decided, turns, calls = len(site.decisions()), len(site.turns()), len(site.upstream_calls())
    for case, (token, why) in _refusals(site.issuer).items():
        answer = _post(site.url, token)
        challenge = answer.headers.get("www-authenticate", "")
        assert answer.status_code == 401, case
        assert challenge.startswith('Bearer error="invalid_token", error_description="'), case
        assert why in challenge, (case, challenge)
        assert f'resource_metadata="{METADATA}"' in challenge, case
        body = answer.json()
        assert set(body) == {"error", "error_description"} and body["error"] == "invalid_token"
        assert why in body["error_description"], case
        assert '"' not in challenge.split('error_description="')[1].split('",')[0], case
    for case in ("expired", "alg none", "HS/RS confusion", "wrong audience"):
        assert _refused_by_client(site.url, _refusals(site.issuer)[case][0]), case
    # nothing decided, nothing logged, nothing reached the upstream
    assert (len(site.decisions()), len(site.turns())) == (decided, turns)
    assert len(site.upstream_calls()) == calls


def test_no_token_is_a_401_without_an_error_that_points_to_the_metadata(site: Site) -> None:
    answer = _post(site.url, None)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == f'Bearer resource_metadata="{METADATA}"'
    assert "Authorization: Bearer" in answer.json()["error_description"]
    for path in (
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ):
        document = httpx2.get(site.base + path, timeout=30)
        assert document.status_code == 200, path
        assert document.json() == {
            "resource": AUDIENCE,
            "authorization_servers": [ISSUER],
            "scopes_supported": ["shop:read", "shop:write"],
            "bearer_methods_supported": ["header"],
            "resource_name": "maitred MCP gateway",
        }
    assert httpx2.get(site.base + "/healthz", timeout=30).status_code == 200  # still open


def test_valid_rs256_and_es256_tokens_see_what_their_scopes_and_account_allow(site: Site) -> None:
    issuer = site.issuer
    reader_rs = issuer.mint()  # acme/acc-1 (free), shop:read
    reader_es = issuer.mint(alg="ES256")
    writer = issuer.mint(alg="ES256", sub="acc-2", org_id="globex", scope="shop:read shop:write")
    nobody = issuer.mint(scope=None)
    listed_scope = issuer.mint(scope=["shop:read", "shop:write"])  # a list claim works too
    assert _tools(site.url, reader_rs) == ["crash", "get_plan"]
    assert _tools(site.url, reader_es) == ["crash", "get_plan"]
    assert _tools(site.url, nobody) == ["crash"]
    assert _tools(site.url, listed_scope) == ["crash", "get_plan", "upgrade"]
    assert _tools(site.url, writer) == ["crash", "export_report", "get_plan", "upgrade"]
    assert _tools(site.url, STATIC) == ["crash", "export_report", "get_plan"]  # static: acc-2
    leeway = issuer.mint(exp=int(time.time()) - 5)  # within the default leeway of 30 s
    assert _tools(site.url, leeway) == ["crash", "get_plan"]


def test_a_scope_gated_tool_is_absent_and_refused_by_name_with_insufficient_scope(
    site: Site,
) -> None:
    before = len(site.upstream_calls())
    reader = site.issuer.mint(sub="acc-1", org_id="acme", scope="shop:read")
    got: dict[str, Any] = {}

    async def main() -> None:
        async with Client(site.url, auth=reader) as client:
            got["tools"] = sorted(t.name for t in await client.list_tools())
            refused = await client.call_tool(
                "upgrade", {"account": "acc-1", "plan": "pro"}, raise_on_error=False
            )
            got["refused"] = (refused.is_error, json.loads(refused.content[0].text))
            got["meta"] = refused.meta
            plan = await client.call_tool("get_plan", {"account": "acc-1"})
            got["plan"] = plan.content[0].text

    anyio.run(main)
    assert "upgrade" not in got["tools"]
    is_error, payload = got["refused"]
    assert is_error and payload["code"] == "INSUFFICIENT_SCOPE"
    assert "shop:write" in payload["message"] and "upgrade" not in payload["message"]
    assert payload["executed"] is False and payload["error"] == "insufficient_scope"
    assert got["meta"]["maitred/decision_id"] == payload["decision_id"]
    assert got["plan"] == "free"
    assert site.upstream_calls()[before:] == ["get_plan"]  # the refused call never reached it
    row = next(r for r in site.decisions() if r["decision_id"] == payload["decision_id"])
    assert (row["code"], row["tenant"]) == ("INSUFFICIENT_SCOPE", "acme")
    assert row["session_id"].startswith("acme-")
    logged = json.loads(row["decision_json"])
    assert logged["outcomes"][0]["predicate"] == "scopes"
    assert logged["outcomes"][0]["values"] == {"granted": ["shop:read"]}
    assert "missing scope(s): shop:write" in logged["outcomes"][0]["detail"]


def test_tenant_and_account_from_the_claims_reach_the_decision_log(site: Site) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    token = site.issuer.mint(
        alg="ES256", sub="acc-2", org_id="initech", scope="shop:read shop:write"
    )
    got: dict[str, Any] = {}

    async def main() -> None:
        async with (
            http_client(headers={"Authorization": f"Bearer {token}"}) as http,
            streamable_http_client(site.url, http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()  # a handshake-era session
            got["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            done = await session.call_tool("upgrade", {"account": "acc-2", "plan": "pro"})
            got["upgrade"] = (done.is_error, done.content[0].text)

    anyio.run(main)
    assert got["tools"] == ["crash", "export_report", "get_plan", "upgrade"]
    assert got["upgrade"] == (False, "acc-2 is on pro")
    mine = [t for t in site.turns() if t["tenant"] == "initech"]
    assert mine and {t["account_id"] for t in mine} == {"acc-2"}
    decided = [r for r in site.decisions() if r["tenant"] == "initech"]
    assert [(r["tool"], r["code"]) for r in decided] == [("upgrade", "OK")]
    assert decided[0]["session_id"].startswith("initech-")
