"""Who is calling, at the HTTP edge: static bearer tokens and JWT access tokens (RFC 6750, 9728).

:class:`GatewayAuth` is the gateway's FastMCP auth provider. It accepts the config's static
tokens (by SHA-256) and, with an ``auth`` block, JWT access tokens checked by
:class:`~maitred.gateway.jwt.JwtVerifier`; either way the caller becomes one
:class:`Identity` -- a tenant, an account and the scopes granted -- which is all the gateway's
middleware reads (never a claim by name, never a request field).

**Why not FastMCP's own verifier.** ``fastmcp.server.auth.providers.jwt.JWTVerifier`` checks
one algorithm with no leeway on ``exp`` and answers ``None`` for every failure, so the client
is told only that "the token is invalid, expired, or no longer recognized", for a static token
too. The edge here (:class:`BearerEdge`, in place of the provider's default authentication
middleware) answers the MCP endpoint itself, in RFC 6750's form, saying what is wrong:

=====================================  ======  ============================================
the request                            status  ``WWW-Authenticate``
=====================================  ======  ============================================
no ``Authorization: Bearer`` header    401     ``Bearer resource_metadata="..."`` (no error:
                                               RFC 6750 3.1, the start of discovery)
a token that fails a check             401     ``Bearer error="invalid_token",
                                               error_description="<why>",
                                               resource_metadata="..."``
a JWT without ``auth.required_scopes``  403     ``Bearer error="insufficient_scope",
                                               scope="...", ...``
the issuer's JWKS could not be fetched  503     none (``Retry-After``); nothing is served
=====================================  ======  ============================================

The body is the same as JSON (``{"error", "error_description"}``). ``resource_metadata`` (the
MCP authorization spec's pointer to the metadata below) is sent only when ``auth`` is
configured; with static tokens alone there is no authorization server to discover. The
provider's other routes and FastMCP's ``RequireAuthMiddleware`` stay in place behind the edge,
so a request that reached the MCP endpoint unauthenticated would still be refused.

**Protected-resource metadata** (RFC 9728), served with ``auth`` and without a token at
``/.well-known/oauth-protected-resource`` and at that path followed by the MCP endpoint's (and
the resource's) path: the ``resource`` (``auth.resource``, else the audience when it is a URL,
else the URL the client used), ``authorization_servers`` (the issuer unless configured),
``scopes_supported`` (every scope the contracts require, and ``required_scopes``) and
``bearer_methods_supported: ["header"]``.

**Scopes** reach the gates as :attr:`Identity.scopes`; a tool whose contract requires one the
token lacks is hidden and refused by the decision kernel (:mod:`maitred.contract.kernel`),
exactly as for an exit predicate. A static token grants the ``scopes`` its config entry lists
(none by default).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from fastmcp.server.auth import AccessToken, TokenVerifier
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.authentication import AuthCredentials, UnauthenticatedUser
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from maitred.gateway.config import Token
from maitred.gateway.jwt import (
    REMEMBERED,
    JwtVerifier,
    Refused,
    Unavailable,
    Verified,
    looks_like_jwt,
)
from maitred.log.storable import identity_fault

#: the RFC 9728 well-known path (the resource's own path follows it)
WELL_KNOWN = "/.well-known/oauth-protected-resource"
#: seconds a client is asked to wait when the issuer's keys could not be fetched
RETRY_AFTER_S = 30


class Identity(AccessToken):
    """An authenticated caller: the tenant, the account whose state the gates read, and the
    OAuth scopes granted (``scopes``), from a static token's config entry or a JWT's claims."""

    tenant: str
    account: str
    via: Literal["static", "jwt"]


@dataclass(frozen=True)
class Denial:
    """Why a request is not served: the HTTP status, the RFC 6750 ``error`` (``""``: none, a
    request without credentials) and the description for people."""

    status: int
    error: str
    description: str
    scope: str = ""


def header_text(text: str) -> str:
    """``text`` as RFC 6750 allows in a quoted parameter: printable ASCII, no ``"`` or ``\\``."""
    return "".join(c if " " <= c <= "~" and c not in '"\\' else "'" for c in text)


class GatewayAuth(TokenVerifier):
    """The gateway's bearer tokens: static ones by hash, and JWTs when ``jwt`` is given.

    Args:
        tokens: the config's static tokens.
        jwt: the JWT verifier (``None``: static tokens only).
        path: the MCP endpoint's path (the only path the edge refuses requests on).
        scopes_supported: every scope a contract requires, for the metadata.
        outer: ASGI middleware to run before the bearer edge, on every request: the
            DNS-rebinding guard (:class:`~maitred.gateway.hosts.HostGuard`), which answers a
            foreign ``Host`` or ``Origin`` before anything about the token is said.
    """

    def __init__(
        self,
        tokens: Sequence[Token],
        jwt: JwtVerifier | None = None,
        *,
        path: str = "/mcp",
        scopes_supported: Sequence[str] = (),
        outer: Sequence[Middleware] = (),
    ) -> None:
        super().__init__()
        self.outer = tuple(outer)
        self.by_hash = {t.token_sha256: t for t in tokens}
        self.jwt = jwt
        self.path = path
        required = jwt.options.required_scopes if jwt is not None else ()
        self.supported = sorted({*scopes_supported, *required})
        #: the :class:`Identity` each static token (by hash) and each remembered JWT (by the
        #: verifier's :class:`Verified`) became: a client sends its token with every request,
        #: and the identity is the same model each time (built once, not per request)
        self._static: dict[str, Identity] = {}
        self._jwts: OrderedDict[str, tuple[Verified, Identity | Denial]] = OrderedDict()

    def advertise(self, scopes: Iterable[str]) -> None:
        """Add ``scopes`` to the metadata's ``scopes_supported`` (the contracts of an upstream
        that joined after the start require them)."""
        self.supported = sorted({*self.supported, *scopes})

    # -- who is calling ---------------------------------------------------------------------

    async def identify(self, token: str) -> Identity | Denial:
        """The caller ``token`` names, or why it is refused (see the module's table)."""
        digest = hashlib.sha256(token.encode("utf-8")).hexdigest()
        found = self.by_hash.get(digest)
        if found is not None:
            fault = identity_fault(found.account) or identity_fault(found.tenant)
            if fault:  # the log could not store it: every decision for it would fail
                return Denial(
                    401,
                    "invalid_token",
                    f"the token's account or tenant {fault}; ask the gateway's operator to fix "
                    "the token's entry in the config",
                )
            known = self._static.get(digest)
            if known is None:
                known = self._static[digest] = Identity(
                    token=token,
                    client_id=found.tenant,
                    scopes=sorted(found.scopes),
                    subject=found.account,
                    claims={},
                    tenant=found.tenant,
                    account=found.account,
                    via="static",
                )
            return known
        if self.jwt is None:
            return Denial(
                401,
                "invalid_token",
                "the bearer token is not one of this gateway's tokens; ask its operator for one",
            )
        if not looks_like_jwt(token):
            return Denial(
                401,
                "invalid_token",
                "the bearer token is neither one of this gateway's tokens nor a JWT access token",
            )
        outcome = await self.jwt.verify(token)
        if isinstance(outcome, Refused):
            return Denial(401, "invalid_token", outcome.reason)
        if isinstance(outcome, Unavailable):
            return Denial(503, "temporarily_unavailable", outcome.reason)
        seen = self._jwts.get(token)
        if seen is not None and seen[0] is outcome:  # the verifier remembered it: same caller
            self._jwts.move_to_end(token)
            return seen[1]
        answer = self._jwt_identity(token, outcome)
        self._jwts[token] = (outcome, answer)
        while len(self._jwts) > REMEMBERED:
            self._jwts.popitem(last=False)
        return answer

    def _jwt_identity(self, token: str, verified: Verified) -> Identity | Denial:
        assert self.jwt is not None
        lacking = sorted(set(self.jwt.options.required_scopes) - verified.scopes)
        if lacking:
            return Denial(
                403,
                "insufficient_scope",
                f"the token lacks scope(s) {' '.join(lacking)}, which every request needs",
                scope=" ".join(self.jwt.options.required_scopes),
            )
        claims = dict(verified.claims)
        client = claims.get("client_id") or claims.get("azp") or verified.account
        return Identity(
            token=token,
            client_id=str(client),
            scopes=sorted(verified.scopes),
            expires_at=verified.expires_at,
            subject=verified.account,
            claims=claims,
            tenant=verified.tenant,
            account=verified.account,
            via="jwt",
        )

    async def verify_token(self, token: str) -> AccessToken | None:
        """FastMCP's hook: the :class:`Identity`, or ``None`` (the reason is :meth:`identify`'s)."""
        found = await self.identify(token)
        return found if isinstance(found, Identity) else None

    # -- the HTTP edge ----------------------------------------------------------------------

    def get_middleware(self) -> list[Any]:
        """The edge in place of FastMCP's authentication middleware (after :attr:`outer`),
        then the SDK's context."""
        return [*self.outer, Middleware(BearerEdge, auth=self), Middleware(AuthContextMiddleware)]

    def guards(self, path: str) -> bool:
        """Whether requests to ``path`` need a token (the MCP endpoint; operator routes and
        the metadata do not)."""
        return path.rstrip("/") == self.path.rstrip("/")

    def resource(self, request_base: str) -> str:
        """This gateway's resource identifier: configured, else the audience when it is a URL,
        else ``request_base`` (the scheme and host the client used) with the MCP path."""
        if self.jwt is not None:
            options = self.jwt.options
            if options.resource:
                return options.resource
            urls = [a for a in options.audience if a.startswith(("http://", "https://"))]
            if urls:
                return urls[0]
        return request_base.rstrip("/") + self.path

    def metadata_url(self, request_base: str) -> str:
        """Where the metadata of :meth:`resource` is (RFC 9728 3.1: the well-known path is
        inserted between the host and the resource's path)."""
        parts = urlsplit(self.resource(request_base))
        return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{parts.path.rstrip('/')}"

    def challenge(self, denial: Denial, request_base: str) -> str:
        """The ``WWW-Authenticate`` value for ``denial``."""
        params = []
        if denial.error:
            params.append(f'error="{denial.error}"')
            params.append(f'error_description="{header_text(denial.description)}"')
        if denial.scope:
            params.append(f'scope="{header_text(denial.scope)}"')
        if self.jwt is not None:
            params.append(f'resource_metadata="{header_text(self.metadata_url(request_base))}"')
        else:
            params.insert(0, 'realm="maitred"')
        return "Bearer " + ", ".join(params)

    # -- the metadata -----------------------------------------------------------------------

    def get_routes(self, mcp_path: str | None = None) -> list[Route]:
        """The protected-resource metadata routes (with ``auth`` only)."""
        if self.jwt is None:
            return []
        paths = {WELL_KNOWN, WELL_KNOWN + (mcp_path or self.path).rstrip("/")}
        if self.jwt.options.resource:
            paths.add(WELL_KNOWN + urlsplit(self.jwt.options.resource).path.rstrip("/"))
        return [
            Route(p, endpoint=self._metadata, methods=["GET", "OPTIONS"]) for p in sorted(paths)
        ]

    def metadata(self, request_base: str) -> dict[str, Any]:
        """The RFC 9728 document."""
        assert self.jwt is not None
        options = self.jwt.options
        return {
            "resource": self.resource(request_base),
            "authorization_servers": list(options.authorization_servers),
            "scopes_supported": self.supported,
            "bearer_methods_supported": ["header"],
            "resource_name": "maitred MCP gateway",
        }

    async def _metadata(self, request: Request) -> Response:
        cors = {"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET"}
        if request.method == "OPTIONS":
            return Response(status_code=204, headers=cors)
        return JSONResponse(self.metadata(_base(request.scope)), headers=cors)


def _base(scope: Scope) -> str:
    """The scheme and host a request was sent to (``http://127.0.0.1:8765``)."""
    headers = dict(scope.get("headers") or [])
    host = headers.get(b"host", b"").decode("latin-1")
    if not host:
        server = scope.get("server") or ("localhost", None)
        host = server[0] if server[1] is None else f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}"


def _bearer(scope: Scope) -> str | None:
    """The token of an ``Authorization: Bearer`` header (``None``: no such header)."""
    for name, value in scope.get("headers") or ():
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            token = token.strip()
            return token if scheme.lower() == "bearer" and token else None
    return None


class BearerEdge:
    """ASGI middleware: every request gets a user (an :class:`Identity`, or unauthenticated),
    and a request to the MCP endpoint that cannot be served is answered here, saying why."""

    def __init__(self, app: ASGIApp, auth: GatewayAuth) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = _bearer(scope)
        found: Identity | Denial = (
            Denial(
                401,
                "",
                "this endpoint needs an 'Authorization: Bearer <token>' header",
            )
            if token is None
            else await self.auth.identify(token)
        )
        if isinstance(found, Identity):
            scope["user"] = AuthenticatedUser(found)
            scope["auth"] = AuthCredentials(list(found.scopes))
        elif self.auth.guards(str(scope.get("path", ""))):
            await self._refuse(found, scope, send)
            return
        else:  # an operator route or the metadata: served without a token
            scope["user"] = UnauthenticatedUser()
            scope["auth"] = AuthCredentials()
        await self.app(scope, receive, send)

    async def _refuse(self, denial: Denial, scope: Scope, send: Send) -> None:
        body = {"error": denial.error or "unauthorized", "error_description": denial.description}
        headers: Mapping[str, str] = (
            {"Retry-After": str(RETRY_AFTER_S)}
            if denial.status == 503
            else {"WWW-Authenticate": self.auth.challenge(denial, _base(scope))}
        )
        response = JSONResponse(body, status_code=denial.status, headers=dict(headers))
        await response(scope, _no_body, send)


async def _no_body() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}
