"""The console's Starlette app: read-only pages over one decision log, HTML or JSON.

Routes (relative to where the app is mounted: ``/`` for ``maitred console``, ``/console`` in
``maitred serve``)::

    GET /                      overview: the funnel over time, refusals by code, per tenant
    GET /decisions             a page of decisions, filtered (tenant, account, session, tool,
                               code, trace, kind, since, until), keyset-paginated (after=)
    GET /decisions/{id}        one turn or action decision, and whether its row stands in the
                               log's chains
    GET /accounts/{account}    an account's recent decisions, and a what-if turn (message=)
                               when the console has an engine
    GET /verify                maitred log verify, run now
    GET /login, POST /login    the operator's token, kept in a cookie (only when one is needed)
    GET /static/...            the stylesheet and the script (from the package)

Every page is also JSON at the same URL: a request whose ``Accept`` names
``application/json`` and not ``text/html`` gets the JSON the page is rendered from.

**Read-only by construction.** The app holds the log opened ``read_only=True`` (the database
refuses writes: SQLite ``mode=ro`` and ``query_only``, a PostgreSQL session that is read-only
by default), every route but ``/login`` answers ``GET`` alone, and the what-if turn runs on an
engine without a log (:mod:`maitred.console.whatif`).

**Who may look.** :class:`Access` says whether a token is needed: none on a loopback bind
(``maitred console`` on 127.0.0.1), an operator's bearer token otherwise, checked against the
SHA-256 digests of the config's ``operators`` (like the service's tenant tokens). A browser
sends it once to ``/login``, which keeps it in an ``HttpOnly``, ``SameSite=Strict`` cookie;
a script sends ``Authorization: Bearer``.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

import maitred.console.views as views
from maitred.analytics.overview import overview
from maitred.console.html import Links, esc, page
from maitred.console.whatif import WhatIf
from maitred.errors import ConfigError, DecisionNotFoundError, MaitredError
from maitred.log.base import DecisionLog
from maitred.log.browse import KINDS, Cursor, Kind, PageFilter, action_kind, decision_page
from maitred.log.lookup import LoggedAction, LoggedTurn, find_decision, parse_time
from maitred.log.rowcheck import chain_ok, check_action, check_turn
from maitred.log.verify import verify

T = TypeVar("T")
COOKIE = "maitred_console"
#: reads in flight at once (the log serialises its statements anyway)
READ_THREADS = 4
#: the overview's spans up to the newest decision (``all``: the whole log)
SPANS: dict[str, float | None] = {"1h": 3600.0, "1d": 86_400.0, "7d": 7 * 86_400.0,
                                  "30d": 30 * 86_400.0, "all": None}  # fmt: skip
_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost", "[::1]"})


@dataclass(frozen=True)
class Access:
    """Who may look at the console.

    Attributes:
        operators: SHA-256 hex digests of the operators' tokens (``operators:`` in the config).
        open: no token is asked (a loopback bind).
    """

    operators: frozenset[str] = frozenset()
    open: bool = False

    @classmethod
    def for_bind(cls, host: str, operators: frozenset[str], where: str) -> Access:
        """Open on a loopback ``host``; elsewhere only with operators.

        Raises:
            ConfigError: ``host`` is not loopback and no operator token is configured
                (``where`` names the config and field to write them in).
        """
        if host in _LOOPBACK or host.startswith("127."):
            return cls(operators, open=True)
        if not operators:
            raise ConfigError(
                f"the console bound to {host!r} (not loopback) needs an operator token: add "
                f"operators: {{NAME: {{token_sha256: ...}}}} to {where} "
                '(printf %s "$TOKEN" | sha256sum), or bind to 127.0.0.1'
            )
        return cls(operators, open=False)

    def admits(self, token: str | None) -> bool:
        if self.open:
            return True
        if not token:
            return False
        digest = hashlib.sha256(token.encode("utf-8")).hexdigest()
        return any(hmac.compare_digest(digest, known) for known in self.operators)


class _Problem(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def create_console(
    log: DecisionLog,
    access: Access,
    *,
    what_if: WhatIf | None = None,
    root: str = "",
) -> Starlette:
    """The console app over ``log`` (opened read-only; the caller closes it).

    Args:
        log: the decision log, opened with ``read_only=True`` (refused otherwise).
        access: who may look (:class:`Access`).
        what_if: the engine for what-if turns on account pages (``None``: none offered).
        root: the path the app is mounted under (``""``, or ``/console``), for its links.
    """
    if not log.read_only:
        raise ConfigError(
            f"the console reads the decision log at {log.location} read-only: open it with "
            "open_log(..., read_only=True)"
        )
    links = Links(root)
    limiter: list[anyio.CapacityLimiter] = []

    async def off_loop(call: Callable[..., T], *args: Any) -> T:
        if not limiter:
            limiter.append(anyio.CapacityLimiter(READ_THREADS))
        return await anyio.to_thread.run_sync(functools.partial(call, *args), limiter=limiter[0])

    def answer(
        request: Request, title: str, path: str, data: Any, body: Callable[[], str], note: str = ""
    ) -> Response:
        if wants_json(request):
            return JSONResponse(data)
        return HTMLResponse(page(links, title, body(), current=path, note=note))

    async def home(request: Request) -> Response:
        q = request.query_params
        tenant = q.get("tenant") or None
        since = _time(q.get("since"), "since")
        until = _time(q.get("until"), "until")
        span = q.get("span", "1d")
        if span not in SPANS:
            raise _Problem(400, "bad_filter", f"span {span!r} is not one of {', '.join(SPANS)}")
        found = await off_loop(
            functools.partial(
                overview, log, since=since, until=until, tenant=tenant, span_s=SPANS[span]
            )
        )
        data = found.to_json()
        data["span"] = span
        return answer(
            request, "Overview", "/", data, lambda: views.overview(links, data, list(SPANS))
        )

    async def decisions(request: Request) -> Response:
        asked = {k: v for k, v in request.query_params.items() if v}
        where = _filter(asked)
        found = await off_loop(decision_page, log, where)
        data = found.to_json()
        return answer(
            request, "Decisions", "/decisions", data, lambda: views.decisions(links, data, asked)
        )

    async def one(request: Request) -> Response:
        did = request.path_params["decision_id"]
        data = await off_loop(_decision_json, log, did)
        title = f"{'Turn' if data['kind'] == 'turn' else 'Decision'} {did}"
        return answer(request, title, "/decisions", data, lambda: views.decision(links, data))

    async def accounts(request: Request) -> Response:
        acc = request.query_params.get("account", "").strip()
        if acc:
            return RedirectResponse(links.account(acc), status_code=303)
        return answer(
            request,
            "Accounts",
            "/accounts",
            {"what_if": what_if is not None},
            lambda: views.accounts_index(links),
        )

    async def account(request: Request) -> Response:
        acc = request.path_params["account"]
        message = request.query_params.get("message", "").strip()
        recent = await off_loop(decision_page, log, PageFilter(account=acc, limit=25))
        data: dict[str, Any] = {"account": acc, "recent": recent.to_json(), "what_if": None}
        note = ""
        if message:
            if what_if is None:
                raise _Problem(
                    409,
                    "no_engine",
                    "what-if turns need the engine's config: start the console with --config",
                )
            data["what_if"] = await off_loop(what_if.turn, acc, message)
            note = "What-if turn below: not logged."
        return answer(
            request,
            f"Account {acc}",
            "/accounts",
            data,
            lambda: views.account(links, data, message, what_if is not None),
            note,
        )

    async def verify_page(request: Request) -> Response:
        report = await off_loop(_verified, log)
        return answer(request, "Verify", "/verify", report, lambda: views.verify(report))

    async def login(request: Request) -> Response:
        if request.method == "POST":
            form = await request.form()
            token = str(form.get("token", ""))
            if access.admits(token):
                back = RedirectResponse(links.to("/"), status_code=303)
                back.set_cookie(
                    COOKIE,
                    token,
                    httponly=True,
                    samesite="strict",
                    path=links.root or "/",
                    secure=request.url.scheme == "https",
                )
                return back
            return HTMLResponse(_login_page(links, failed=True), status_code=401)
        return HTMLResponse(_login_page(links, failed=False))

    routes = [
        Route("/", home, methods=["GET"]),
        Route("/decisions", decisions, methods=["GET"]),
        Route("/decisions/{decision_id:path}", one, methods=["GET"]),
        Route("/accounts", accounts, methods=["GET"]),
        Route("/accounts/{account:path}", account, methods=["GET"]),
        Route("/verify", verify_page, methods=["GET"]),
        Route("/login", login, methods=["GET", "POST"]),
        Mount("/static", StaticFiles(directory=str(resources.files("maitred.console") / "static"))),
    ]

    async def problem(request: Request, exc: Exception) -> Response:
        if isinstance(exc, _Problem):
            return _problem_response(request, links, exc)
        # the log failed: the operator's to see, as the page
        return _problem_response(request, links, _Problem(503, "log_unavailable", str(exc)))

    app = Starlette(routes=routes, exception_handlers={_Problem: problem, MaitredError: problem})
    app.add_middleware(_Guard, access=access, links=links)
    return app


def wants_json(request: Request) -> bool:
    """Whether the request asks for the JSON twin (``Accept`` names JSON, not HTML)."""
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


def _time(text: str | None, what: str) -> float | None:
    if not text:
        return None
    try:
        return parse_time(text, what=what)
    except ConfigError as exc:
        raise _Problem(400, "bad_filter", str(exc)) from None


def _filter(asked: Mapping[str, str]) -> PageFilter:
    """The page filter the query string asks for (unknown keys are an error naming them)."""
    known = {"tenant", "account", "session", "tool", "code", "trace", "kind", "since", "until"}
    known |= {"after", "limit"}
    extra = sorted(set(asked) - known)
    if extra:
        raise _Problem(
            400, "bad_filter", f"unknown filter {extra[0]!r}; the filters are {sorted(known)}"
        )
    kind = asked.get("kind")
    if kind is not None and kind not in KINDS:
        raise _Problem(400, "bad_filter", f"kind {kind!r} is not one of {', '.join(KINDS)}")
    try:
        limit = int(asked.get("limit", "50"))
        where = PageFilter(
            tenant=asked.get("tenant"),
            account=asked.get("account"),
            session=asked.get("session"),
            tool=asked.get("tool"),
            code=asked.get("code"),
            trace=asked.get("trace"),
            kind=_kind(kind),
            since=_time(asked.get("since"), "since"),
            until=_time(asked.get("until"), "until"),
            after=Cursor.parse(asked["after"]) if "after" in asked else None,
            limit=limit,
        )
    except ValueError:
        raise _Problem(400, "bad_filter", "limit must be a whole number") from None
    except ConfigError as exc:
        raise _Problem(400, "bad_filter", str(exc)) from None
    return where


def _kind(name: str | None) -> Kind | None:
    for kind in KINDS:
        if kind == name:
            return kind
    return None


def _decision_json(log: DecisionLog, decision_id: str) -> dict[str, Any]:
    try:
        found = find_decision(log, decision_id)
    except DecisionNotFoundError as exc:
        raise _Problem(404, "not_found", str(exc)) from None
    data = found.to_json()
    if isinstance(found, LoggedTurn):
        checks = check_turn(log, decision_id, found.hash_ok)
    else:
        assert isinstance(found, LoggedAction)
        checks = check_action(log, decision_id, found.decision_hash, found.hash_ok)
        data["kind_shown"] = action_kind(str(found.decision["call"]["name"]))
    data["checks"] = [c.to_json() for c in checks]
    data["chain_ok"] = chain_ok(checks)
    return data


def _verified(log: DecisionLog) -> dict[str, Any]:
    report = verify(log)
    return {**report.to_json(), "summary": report.summary()}


def _login_page(links: Links, *, failed: bool) -> str:
    said = '<p class="note" role="alert">That token is not an operator\'s.</p>' if failed else ""
    body = (
        f'{said}<form method="post" action="{links.to("/login")}" class="filters">'
        '<div class="field wide"><label for="f-token">Operator token</label>'
        '<input id="f-token" name="token" type="password" autocomplete="current-password" '
        'required></div><div class="actions"><button type="submit">Sign in</button></div></form>'
    )
    return page(links, "Sign in", body, current="")


class _Guard:
    """ASGI middleware: the token check (static files and the sign-in page are free)."""

    def __init__(self, app: Any, access: Access, links: Links) -> None:
        self.app, self.access, self.links = app, access, links

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        path = scope.get("path", "")
        root = scope.get("root_path", "")
        inner = path[len(root) :] if root and path.startswith(root) else path
        free = inner.startswith("/static/") or inner == "/login"
        if not free and not self.access.admits(_token(request)):
            await self._refuse(request, scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _refuse(self, request: Request, scope: Any, receive: Any, send: Any) -> None:
        if wants_json(request) or "authorization" in request.headers:
            response: Response = JSONResponse(
                {"error": "operator_token_required",
                 "message": "send an operator's token: Authorization: Bearer <token>"},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="maitred-console"'},
            )  # fmt: skip
        else:
            response = RedirectResponse(self.links.to("/login"), status_code=303)
        await response(scope, receive, send)


def _token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.cookies.get(COOKIE)


def _problem_response(request: Request, links: Links, problem: _Problem) -> Response:
    if wants_json(request):
        return JSONResponse(
            {"error": problem.code, "message": problem.message}, status_code=problem.status
        )
    body = f'<p class="note" role="alert">{esc(problem.message)}</p>'
    return HTMLResponse(page(links, "Not shown", body, current=""), status_code=problem.status)


#: the path the service and the gateway serve the console under
MOUNT = "/console"
#: the scope a gateway token needs to open the console (``tokens: [{..., scopes: [...]}]``)
OPERATOR_SCOPE = "maitred:console"


class Mounted:
    """ASGI: requests under ``prefix`` go to ``console`` (with ``root_path`` set, so its links
    stay under it), every other request to ``app``. The service wraps its app in it; the
    gateway adds it as a Starlette middleware of FastMCP's HTTP app."""

    def __init__(self, app: Any, console: Any, prefix: str = MOUNT) -> None:
        self.app, self.console, self.prefix = app, console, prefix.rstrip("/")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == self.prefix:
            await RedirectResponse(self.prefix + "/", status_code=308)(scope, receive, send)
            return
        if path.startswith(self.prefix + "/"):
            root = scope.get("root_path", "") + self.prefix
            await self.console({**scope, "root_path": root}, receive, send)
            return
        await self.app(scope, receive, send)
