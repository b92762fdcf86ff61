"""Turning an HTTP request into checked values: who is asking, and what they asked for.

Everything here runs *before* the engine sees a request, and each failure becomes one JSON
error with a stable ``code``:

=====  ========================  ==============================================================
401    ``unauthorized``          no ``Authorization: Bearer ...`` header, or a token no tenant
                                 has (with ``WWW-Authenticate: Bearer``)
413    ``body_too_large``        a body over ``limits.max_body_bytes``, refused from its
                                 ``Content-Length`` or while it streams, before any parsing
400    ``malformed_json``        a body that is empty, not UTF-8 or not JSON (line and column
                                 named), or JSON whose structure is outside I-JSON (RFC 7493):
                                 a key twice in one object, nesting deeper than 32 levels
                                 (``field`` names where, dotted)
422    ``invalid_field``         the one code for a fault in a field: missing, of the wrong
                                 type, unknown, blank, too long, an id the log cannot store,
                                 or a value I-JSON cannot carry -- a NUL, a lone surrogate
                                 (``"\\ud800"``, in a value or a key), ``NaN``/``Infinity`` or
                                 a number out of float range (``1e400``); ``field`` names it,
                                 dotted (``call.arguments.domain``)
=====  ========================  ==============================================================

Why I-JSON: every value of a body ends up in the decision log as canonical JSON and, for call
arguments, in CEL. A value those cannot hold (``NaN``, a surrogate that is no character) would
fail *inside* the engine and be answered as an outage (503) or a crash (500); a duplicate key
would mean two readers of one body (the log, a proxy in front) could see different values. So
the body is refused at the edge, as the client's error, before the engine sees it.

Tokens are compared as SHA-256 digests with :func:`hmac.compare_digest` against **every**
tenant (no early exit), so the time taken says nothing about which tenant came close.

:class:`Problem` is not one of maitred's errors: it is an HTTP answer on its way out, raised
inside a request handler and turned into a response by the app, never seen by a caller of the
library.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from maitred._ijson import NotIJson, loads
from maitred.contract.sidecar import SCOPE_PATTERN
from maitred.log.storable import identity_fault
from maitred.menu.render import RENDERERS
from maitred.serve.config import Tenant

MAX_ID = 128
#: what "blank" means for a required string: made only of these (Python's whitespace and
#: ECMAScript's, so the OpenAPI pattern below means the same to every JSON Schema validator)
BLANK = (
    "\t\n\x0b\x0c\r \x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
#: the JSON Schema ``pattern`` of a string that is not blank (one character outside BLANK)
NOT_BLANK_PATTERN = "[^" + "".join(f"\\u{ord(c):04x}" for c in BLANK) + "]"


class Problem(Exception):
    """An error response in flight: status, stable code, message, and optionally the field."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str | None = None,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})

    def body(self) -> dict[str, Any]:
        """The JSON error body: ``{"error": {"status", "code", "message", "field"?, ...}}``
        (``...``: what this error adds, e.g. a 429's ``retry_after_s`` and ``scope``)."""
        out: dict[str, Any] = {"status": self.status, "code": self.code, "message": self.message}
        if self.field is not None:
            out["field"] = self.field
        out.update(self.extra)
        return {"error": out}


@dataclass(frozen=True)
class TurnRequest:
    """``POST /v1/turns``: one user message of one session."""

    text: str
    account: str
    session_id: str
    format: str | None = None
    conversation: tuple[Any, ...] = field(default=())
    scopes: frozenset[str] | None = None


@dataclass(frozen=True)
class CheckRequest:
    """``POST /v1/calls/check``: one tool call the model made in a session."""

    session_id: str
    name: str
    arguments: Mapping[str, Any]
    call_id: str = ""
    scopes: frozenset[str] | None = None


def authenticate(request: Request, tenants: Mapping[str, Tenant]) -> Tenant:
    """The tenant whose token the request bears.

    Raises:
        Problem: 401 when the header is missing, malformed or matches no tenant.
    """
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Problem(
            401,
            "unauthorized",
            "send the tenant's token as 'Authorization: Bearer <token>'",
            headers={"WWW-Authenticate": 'Bearer realm="maitred"'},
        )
    digest = hashlib.sha256(token.encode("utf-8")).hexdigest()
    found: Tenant | None = None
    for tenant in tenants.values():  # every tenant, always: no early exit to time
        if hmac.compare_digest(digest, tenant.token_sha256):
            found = tenant
    if found is None:
        raise Problem(
            401,
            "unauthorized",
            "the bearer token is not valid for any tenant of this server",
            headers={"WWW-Authenticate": 'Bearer realm="maitred", error="invalid_token"'},
        )
    return found


async def read_json(request: Request, max_bytes: int) -> dict[str, Any]:
    """The request body as a JSON object, refused when it is too large or not JSON.

    Raises:
        Problem: 413 (too large, before parsing), 400 (not JSON), 422 (not an object).
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise _too_large(max_bytes)
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > max_bytes:
            raise _too_large(max_bytes)
        chunks.append(chunk)
    data = decode_json(b"".join(chunks))
    if not isinstance(data, dict):
        raise _invalid("", f"the body must be a JSON object, not {_kind(data)}")
    return data


def decode_json(raw: bytes) -> Any:
    """``raw`` as an I-JSON value (RFC 7493), or a 400 naming what and where it is not.

    Refused: an empty body, bytes that are not UTF-8, text that is not JSON, a key twice in
    one object, ``NaN``/``Infinity``/``-Infinity``, a number beyond float range, a string or
    key holding a lone surrogate, and nesting deeper than
    :data:`~maitred._ijson.MAX_DEPTH`.

    A string, key or number that I-JSON cannot carry inside otherwise well-formed JSON (a NUL,
    a lone surrogate, ``NaN``, ``1e400``) is a fault of that field, not of the JSON: 422
    ``invalid_field`` naming it, like every other field fault.

    Raises:
        Problem: 400 ``malformed_json``, with ``field`` (dotted) when the fault is inside; 422
            ``invalid_field`` for a field's value.
    """
    if not raw.strip():
        raise Problem(400, "malformed_json", "the request body is empty; send a JSON object")
    try:
        return loads(raw)
    except NotIJson as exc:
        where, what = exc.fault.where, exc.fault.what
        if exc.fault.in_value and where:  # well-formed JSON; a field holds what is refused
            raise _invalid(where, what) from None
        subject = f"field {where!r}" if where else "the request body"
        raise Problem(400, "malformed_json", f"{subject} {what}", field=where or None) from None
    except json.JSONDecodeError as exc:
        raise Problem(
            400,
            "malformed_json",
            f"the request body is not valid JSON: {exc.msg} at line {exc.lineno} column "
            f"{exc.colno}",
        ) from None
    except UnicodeDecodeError as exc:
        raise Problem(
            400, "malformed_json", f"the request body is not UTF-8 JSON: {exc.reason}"
        ) from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise Problem(
            400, "malformed_json", f"the request body is not usable JSON: {exc}"
        ) from None


def parse_turn(data: Mapping[str, Any]) -> TurnRequest:
    """Check a turn request's fields (422 naming the first bad one)."""
    _no_unknown(data, ("text", "account", "session_id", "conversation", "format", "scopes"), "")
    fmt = data.get("format")
    if fmt is not None and (not isinstance(fmt, str) or fmt not in RENDERERS):
        raise _invalid("format", f"must be one of {sorted(RENDERERS)}, not {fmt!r}")
    conversation = data.get("conversation", [])
    if not isinstance(conversation, list):
        raise _invalid("conversation", f"must be a list of messages, not {_kind(conversation)}")
    for i, item in enumerate(conversation):
        if isinstance(item, str):
            continue
        if not (
            isinstance(item, dict)
            and isinstance(item.get("role"), str)
            and isinstance(item.get("content"), str)
        ):
            raise _invalid(
                f"conversation[{i}]",
                'must be a string or an object {"role": string, "content": string}',
            )
    return TurnRequest(
        text=_string(data, "text", limit=None),
        account=_string(data, "account"),
        session_id=_string(data, "session_id"),
        format=fmt,
        conversation=tuple(conversation),
        scopes=_scopes(data),
    )


def parse_check(data: Mapping[str, Any]) -> CheckRequest:
    """Check a call-check request's fields (422 naming the first bad one)."""
    _no_unknown(data, ("session_id", "call", "scopes"), "")
    session_id = _string(data, "session_id")
    call = data.get("call")
    if not isinstance(call, dict):
        raise _invalid("call", f'must be an object {{"name", "arguments"}}, not {_kind(call)}')
    _no_unknown(call, ("name", "arguments", "id"), "call.")
    arguments = call.get("arguments", {})
    if not isinstance(arguments, dict):
        raise _invalid("call.arguments", f"must be an object, not {_kind(arguments)}")
    call_id = call.get("id", "")
    if not isinstance(call_id, str):
        raise _invalid("call.id", f"must be a string, not {_kind(call_id)}")
    name = _string(call, "name", prefix="call.")
    return CheckRequest(session_id, name, arguments, call_id, _scopes(data))


def _scopes(data: Mapping[str, Any]) -> frozenset[str] | None:
    """The OAuth scopes the application's user was granted (``None``: not said, and tools'
    required ``scopes`` are not asked), each an RFC 6749 scope token."""
    value = data.get("scopes")
    if value is None:
        return None
    if not isinstance(value, list):
        raise _invalid("scopes", f"must be a list of scope names, not {_kind(value)}")
    for i, scope in enumerate(value):
        if not isinstance(scope, str) or not SCOPE_PATTERN.fullmatch(scope):
            raise _invalid(
                f"scopes[{i}]",
                "must be an OAuth scope: printable ASCII without spaces, '\"' or '\\'",
            )
    return frozenset(value)


def _string(
    data: Mapping[str, Any], key: str, *, prefix: str = "", limit: int | None = MAX_ID
) -> str:
    value = data.get(key)
    if value is None:
        raise _invalid(prefix + key, "is required")
    if not isinstance(value, str):
        raise _invalid(prefix + key, f"must be a string, not {_kind(value)}")
    if not value.strip(BLANK):
        raise _invalid(prefix + key, "must not be empty")
    if limit is not None and len(value) > limit:
        raise _invalid(prefix + key, f"must be at most {limit} characters")
    if limit is not None and (fault := identity_fault(value)):  # an id: what the log stores
        raise _invalid(prefix + key, fault)
    return value


def _no_unknown(data: Mapping[str, Any], known: tuple[str, ...], prefix: str) -> None:
    for key in data:
        if key not in known:
            raise _invalid(prefix + str(key), f"is not a known field; choose from {list(known)}")


def _invalid(where: str, what: str) -> Problem:
    subject = f"field {where!r}" if where else "the request body"
    return Problem(422, "invalid_field", f"{subject} {what}", field=where)


def _too_large(max_bytes: int) -> Problem:
    return Problem(
        413,
        "body_too_large",
        f"the request body is larger than this server accepts ({max_bytes} bytes, "
        "limits.max_body_bytes)",
    )


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)
