"""Limits on what a client may send the gateway, enforced before anything decides on it.

**Arguments a call cannot carry.** :func:`argument_fault` refuses a ``tools/call`` whose name
or arguments are not I-JSON (:mod:`maitred._ijson`: a lone surrogate, ``NaN``/``Infinity``,
nesting past 32 levels) or hold a NUL, which the decision log cannot store. MCP's JSON reader
accepts ``NaN`` and ``1e400``, and a client in the same process hands Python strings over
unparsed, so such a value would otherwise reach the
decision log and fail there -- a crash, or a "gate unavailable" that is no outage. The refusal
is the tool result an invalid call gets (``isError``, ``ARGS_INVALID``, the argument named,
``TOOL_UNKNOWN`` for a name that is no text). It is logged like every refusal, as a decision on
the call with its arguments *withheld* (``{}``; the decision's message names the argument at
fault and says they were withheld) and a name that is no text escaped, so the bad value itself
is never stored; nothing is sent upstream. Being a log write, it is charged to the caller's
rate limits like any call (past a rate, the refusal is ``RATE_LIMITED``).

**JSON that is not I-JSON, over HTTP.** The body, once read (for its size), is parsed as
I-JSON too: a key twice in one object (the SDK keeps the last, so the log and a proxy in front
could disagree on what was called), ``NaN``, a lone surrogate or nesting past 32 levels is a
``400`` with a JSON-RPC error naming the field (``-32602`` inside ``params``); a body that is
not JSON at all is left to the SDK's own parse error. Over stdio, :func:`argument_fault`
still refuses what the SDK's reader lets through (``NaN``, ``1e400``).

**Body size.**

FastMCP's streamable-HTTP transport reads and parses a request body whole, whatever its size,
so one client could make the gateway hold and parse any amount of JSON. :class:`BodyLimit`
stands in front of it as plain ASGI: a request that declares a ``Content-Length`` over the
limit is answered ``413`` at once, and a body sent without one (chunked) is read up to the limit
and refused as soon as it passes it. Either way the answer is a JSON-RPC error naming the limit
and the config field that sets it, nothing is decided or logged, and the connection's server
stays up. A body within the limit is handed on unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from maitred._ijson import NotIJson, fault, is_text, loads, surely_ijson
from maitred.actions.model import TOOL_UNKNOWN, Hold, ToolCall
from maitred.actions.refusals import invalid_arguments

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def argument_fault(name: str, arguments: Mapping[str, Any]) -> tuple[ToolCall, Hold] | None:
    """For a call whose name or arguments are not I-JSON: what of it the log may store (its
    arguments withheld, a name that is no text escaped) and the refusal to log it with;
    else ``None``."""
    withheld = "The call's arguments are withheld from this record (the log cannot store them)"
    if not is_text(name) or "\x00" in name:
        why = (
            f"the tool name {name!r} holds a lone surrogate or a NUL (not a character a name "
            "may hold)"
        )
        reason = f"{why}; it is recorded escaped. {withheld}"
        return ToolCall(_storable(name), {}), invalid_arguments(
            why, reason=reason, code=TOOL_UNKNOWN
        )
    found = fault(dict(arguments))
    if found is None:
        return None
    top = _storable(found.where).split(".", 1)[0].split("[", 1)[0]
    why = f"argument {found.where!r} {found.what}"
    return ToolCall(name, {}), invalid_arguments(
        why, (top,) if top else (), reason=f"{why}. {withheld}"
    )


def _storable(text: str) -> str:
    """``text`` with what the log cannot store (a lone surrogate, a NUL) escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")


class BodyLimit:
    """ASGI middleware: request bodies larger than ``max_bytes`` are a ``413``, never parsed."""

    def __init__(self, app: App, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(send, f"{declared} bytes")
            return
        if declared is None and scope.get("method") in ("GET", "HEAD", "DELETE", "OPTIONS"):
            await self.app(scope, receive, send)  # no body to read (a GET is the event stream)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = bytes(message.get("body", b""))
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(send, f"more than {self.max_bytes} bytes")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        refused = _not_ijson(body)
        if refused is not None:
            await _answer(send, 400, refused)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: the disconnect, when it comes

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send, size: str) -> None:
        error = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": f"the request body ({size}) is over the gateway's limit of "
                f"{self.max_bytes} bytes; send less, or raise server.max_body_bytes in the "
                "gateway's config",
            },
        }
        await _answer(send, 413, error)


def _not_ijson(body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error for a body that is JSON but not I-JSON, else ``None``.

    A body that is not JSON at all is left to the MCP SDK (its parse error, -32700). A fault
    inside ``params`` is ``-32602`` (invalid params), anywhere else ``-32600``.
    """
    if not body.strip() or surely_ijson(body):
        return None
    try:
        loads(body)
    except NotIJson as exc:
        where, what = exc.fault.where, exc.fault.what
        inside = where.startswith(("params.", "params[")) or ("].params" in where)
        subject = f"{where!r}" if where else "the request body"
        return {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32602 if inside else -32600,
                "message": f"{subject} {what}; nothing was decided or sent upstream",
                "data": {"field": where},
            },
        }
    except ValueError:  # not JSON (or not UTF-8): the SDK answers it
        return None
    return None


async def _answer(send: Send, status: int, error: Mapping[str, Any]) -> None:
    payload = json.dumps(error).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode("ascii")),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # not a number: read the body and count
    return None
