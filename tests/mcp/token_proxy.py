"""A loopback HTTP proxy that adds one bearer token to every request it passes on.

``conformance server --url URL`` sends no ``Authorization`` header, and ``maitred mcp`` over
HTTP answers 401 without one. The conformance test puts this proxy between the suite and the
real gateway: every request is passed on as it came (method, path, query, body, and every
header, ``Host`` and ``Origin`` included, so the gateway's DNS-rebinding check sees what the
suite sent), with ``Authorization: Bearer <token>`` added; every response comes back as it
went, streamed (an SSE stream stays open for as long as the gateway keeps it open).

    python token_proxy.py TARGET_URL TOKEN    # prints "token proxy: http://127.0.0.1:PORT"
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import httpx
import uvicorn

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]

#: headers that belong to one hop, never passed on (RFC 9110 section 7.6.1)
HOP = frozenset({b"connection", b"keep-alive", b"transfer-encoding", b"te", b"trailer", b"upgrade"})


class TokenProxy:
    """ASGI app: each request to ``target`` with the bearer token added."""

    def __init__(self, target: str, token: str) -> None:
        self.target = target.rstrip("/")
        self.token = token
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(60.0, read=None))

    async def __call__(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        headers = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in scope["headers"]
            if k.lower() not in HOP and k.lower() not in (b"authorization", b"content-length")
        ]
        headers.append(("authorization", f"Bearer {self.token}"))
        query = scope.get("query_string", b"").decode("latin-1")
        url = self.target + scope["path"] + (f"?{query}" if query else "")
        request = self.client.build_request(scope["method"], url, headers=headers, content=body)
        response = await self.client.send(request, stream=True)
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [(k, v) for k, v in response.headers.raw if k.lower() not in HOP],
                }
            )
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        except (OSError, httpx.HTTPError):
            pass  # the suite went away, or the gateway closed the stream
        finally:
            await response.aclose()


def main() -> None:
    target, token = sys.argv[1], sys.argv[2]
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY on accepted connections only then (else
    # Nagle holds each response back ~40 ms for the client's delayed ACK)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"token proxy: http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(TokenProxy(target, token), log_level="warning", lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
