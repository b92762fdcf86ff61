"""DNS-rebinding defence at the HTTP edge: the ``Host`` and ``Origin`` of every request.

A web page a user opens can make their browser send requests to ``http://127.0.0.1:8765``
by resolving a name it controls (``evil.example``) to the loopback address: the request then
carries ``Host: evil.example:8765`` and ``Origin: http://evil.example``. The MCP
specification's security guidance asks a server to check both. :class:`HostGuard` stands in
front of everything the HTTP gateway serves (the MCP endpoint and the operator routes) as
plain ASGI, before authentication and before anything is parsed:

* ``Host`` must name this gateway: by default a loopback name (``localhost``, ``127.0.0.1``,
  ``[::1]``, any port) or the address ``server.host`` binds when that is a concrete address
  (not ``0.0.0.0`` / ``::``); ``server.allowed_hosts`` replaces that list. An entry is a name
  (any port) or ``name:port``; ``*`` turns the check off (a proxy in front checks it). Anything
  else is ``421 Misdirected Request``.
* ``Origin``, when a browser sends one, must be allowed: by default any origin whose host is a
  loopback name; ``server.allowed_origins`` replaces that (``https://app.example.com``, the
  port optional for the scheme's default; ``*`` allows any). Anything else is
  ``403 Forbidden``. A request without ``Origin`` (every non-browser client) passes.

A refusal is a JSON-RPC error naming the header, the value and the config field to change;
nothing is decided, logged or sent upstream.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from maitred.gateway.limits import App, Receive, Scope, Send

#: the loopback names every default accepts
LOOPBACK = ("localhost", "127.0.0.1", "[::1]")


def _split(host: str) -> tuple[str, int | None]:
    """``name:port`` -> (lower-case name, port); an IPv6 literal keeps its brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        name, rest = host[: end + 1], host[end + 1 :]
    elif host.count(":") > 1:  # a bare IPv6 address, no port
        return f"[{host}]", None
    else:
        name, _, rest = host.partition(":")
        rest = f":{rest}" if rest else ""
    port = rest[1:] if rest.startswith(":") else ""
    return name, int(port) if port.isdigit() else None


def is_loopback(name: str) -> bool:
    """Whether a host name (as :func:`_split` returns it) is this machine's loopback."""
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def default_hosts(bind: str) -> tuple[str, ...]:
    """The hosts allowed when ``server.allowed_hosts`` is not set, for a server bound to
    ``bind``: the loopback names, and ``bind`` itself when it is a concrete address."""
    name, _ = _split(bind)
    try:
        concrete = not ipaddress.ip_address(name.strip("[]")).is_unspecified
    except ValueError:
        concrete = bool(name)  # a host name
    return LOOPBACK + ((name,) if concrete and name not in LOOPBACK else ())


@dataclass(frozen=True)
class HostRules:
    """What ``Host`` and ``Origin`` may be (``None``: the defaults described above)."""

    hosts: tuple[str, ...]
    origins: tuple[str, ...] | None = None

    def host_allowed(self, host: str) -> bool:
        if "*" in self.hosts:
            return True
        name, port = _split(host)
        for allowed in self.hosts:
            want, want_port = _split(allowed)
            if want == name and (want_port is None or want_port == port):
                return True
        return False

    def origin_allowed(self, origin: str) -> bool:
        if self.origins is None:
            try:
                hostname = urlsplit(origin).hostname
            except ValueError:
                return False
            return hostname is not None and is_loopback(_split(hostname)[0])
        if "*" in self.origins:
            return True
        return _origin(origin) in {_origin(o) for o in self.origins}


def _origin(value: str) -> str:
    """An origin in one spelling: lower-case scheme and host, the default port written out."""
    try:
        parts = urlsplit(value.strip().rstrip("/"))
        port = parts.port
    except ValueError:
        return value.strip().lower()
    scheme = parts.scheme.lower()
    port = port or {"http": 80, "https": 443}.get(scheme)
    host = (parts.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}:{port}" if port else f"{scheme}://{host}"


def rules(bind: str, hosts: Sequence[str] | None, origins: Sequence[str] | None) -> HostRules:
    """The rules for a gateway bound to ``bind`` with the config's lists (``None``: unset)."""
    return HostRules(
        tuple(hosts) if hosts is not None else default_hosts(bind),
        tuple(origins) if origins is not None else None,
    )


class HostGuard:
    """ASGI middleware: a request whose ``Host`` or ``Origin`` is not allowed is refused."""

    def __init__(self, app: App, rules: HostRules) -> None:
        self.app = app
        self.rules = rules

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = _header(scope["headers"], b"host") or ""
        if not self.rules.host_allowed(host):
            shown = ", ".join(self.rules.hosts)
            await _refuse(
                send,
                421,
                f"the Host header {host!r} is not a name this gateway serves ({shown}); "
                "requests for other names are refused against DNS rebinding. If clients reach "
                "the gateway under this name, add it to server.allowed_hosts in the config",
            )
            return
        origin = _header(scope["headers"], b"origin")
        if origin is not None and not self.rules.origin_allowed(origin):
            shown = ", ".join(self.rules.origins) if self.rules.origins else "loopback origins"
            await _refuse(
                send,
                403,
                f"the Origin {origin!r} is not allowed ({shown}); a web page from another "
                "site may not call this gateway. If it should, add the origin to "
                "server.allowed_origins in the config",
            )
            return
        await self.app(scope, receive, send)


def _header(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def _refuse(send: Send, status: int, message: str) -> None:
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    payload = json.dumps(error).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode("ascii")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
