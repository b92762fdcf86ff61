"""The ``server`` block of the gateway's config: how it serves streamable HTTP.

Where it listens (``host``, ``port``, ``path``), how many sessions it keeps and how large a
request body may be, the ``Host`` and ``Origin`` values it serves (:mod:`maitred.gateway.hosts`),
and the secrets that seal the ``requestState`` handed to 2026-07-28 clients, shared by every
replica (:func:`request_state_keys`; :mod:`maitred.gateway.channels`). Read with the rest of the
config by :func:`maitred.gateway.config.parse_config`, whose errors it shares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maitred.config_reader import ConfigReader, resolve_path


@dataclass(frozen=True)
class HttpServer:
    """Where the gateway listens over streamable HTTP, and how many sessions it remembers."""

    host: str = "127.0.0.1"
    port: int = 8765
    path: str = "/mcp"
    max_sessions: int = 1000
    #: a larger request is a 413, never parsed
    max_body_bytes: int = 1 << 20
    #: the ``Host`` names clients may use (``None``: loopback and the bound address;
    #: :mod:`maitred.gateway.hosts`)
    allowed_hosts: tuple[str, ...] | None = None
    #: the browser ``Origin`` values allowed (``None``: loopback origins)
    allowed_origins: tuple[str, ...] | None = None
    #: a file of secrets sealing the ``requestState`` handed to 2026-07-28 clients, one per
    #: line (``#`` comments and blank lines skipped), each at least 32 bytes: the first seals,
    #: every one unseals (rotation). Every replica behind one load balancer names the same
    #: file, so a round started on one is continued on another or after a restart (``""``: a
    #: key made when the process starts, known to this process only; read by
    #: :func:`request_state_keys`)
    request_state_keys_file: str = ""
    #: how long a sealed ``requestState`` is accepted after it was handed out
    request_state_ttl_s: float = 600.0


def read_server(r: ConfigReader, value: Any, root: Path) -> HttpServer:
    """The ``server`` block, checked field by field (``root``: the config file's folder)."""
    data = r.mapping(value, "server")
    r.no_unknown(
        data,
        frozenset(
            {
                "host",
                "port",
                "path",
                "max_sessions",
                "max_body_bytes",
                "allowed_hosts",
                "allowed_origins",
                "request_state_keys_file",
                "request_state_ttl_s",
            }
        ),
        "server",
    )
    host = r.string(data.get("host", "127.0.0.1"), "server.host")
    port = data.get("port", 8765)
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        r.fail("server.port", f"must be a port number 0-65535 (0: any free one), not {port!r}")
    path = r.string(data.get("path", "/mcp"), "server.path")
    if not path.startswith("/"):
        r.fail("server.path", f"must start with '/', not {path!r}")
    most = data.get("max_sessions", 1000)
    if not isinstance(most, int) or isinstance(most, bool) or most < 1:
        r.fail("server.max_sessions", f"must be a whole number >= 1, not {most!r}")
    body = data.get("max_body_bytes", 1 << 20)
    if not isinstance(body, int) or isinstance(body, bool) or body < 1024:
        r.fail("server.max_body_bytes", f"must be a whole number >= 1024, not {body!r}")
    hosts = _names(r, data.get("allowed_hosts"), "server.allowed_hosts", "host names")
    origins = _names(r, data.get("allowed_origins"), "server.allowed_origins", "origins")
    for i, origin in enumerate(origins or ()):
        if origin != "*" and not re.match(r"^https?://[^/?#]+$", origin):
            r.fail(
                f"server.allowed_origins[{i}]",
                f"must be an origin such as https://app.example.com (scheme and host, no "
                f"path) or '*', not {origin!r}",
            )
    keys_file = ""
    if data.get("request_state_keys_file") is not None:
        keys_file = resolve_path(
            root, r.string(data["request_state_keys_file"], "server.request_state_keys_file")
        )
        request_state_keys(keys_file, r.source)  # every mistake in it is a start error
    ttl = data.get("request_state_ttl_s", 600.0)
    if not isinstance(ttl, (int, float)) or isinstance(ttl, bool) or not 0 < ttl < float("inf"):
        r.fail("server.request_state_ttl_s", f"must be a positive number of seconds, not {ttl!r}")
    return HttpServer(host, port, path, most, body, hosts, origins, keys_file, float(ttl))


#: the shortest secret the MCP SDK's AES-GCM request-state codec accepts (it derives the key
#: from it with HKDF-SHA256)
MIN_KEY_BYTES = 32


def request_state_keys(path: str, source: str) -> tuple[bytes, ...]:
    """The secrets of ``server.request_state_keys_file`` at ``path``, in order: each line
    stripped of surrounding whitespace, its UTF-8 bytes one key; blank lines and lines that
    start with ``#`` skipped. ``source`` (the config file) names the error.

    Raises:
        ConfigError: the file cannot be read, holds no key, or a line is shorter than
            :data:`MIN_KEY_BYTES` bytes or repeats an earlier one (naming the line).
    """
    r = ConfigReader(source)
    where = "server.request_state_keys_file"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        r.fail(where, f"{path} does not exist; write it (one secret a line) or fix the path")
    except (OSError, UnicodeDecodeError) as exc:
        r.fail(where, f"cannot read {path}: {exc}")
    keys: list[bytes] = []
    seen: dict[bytes, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        secret = line.strip()
        if not secret or secret.startswith("#"):
            continue
        key = secret.encode("utf-8")
        if len(key) < MIN_KEY_BYTES:
            r.fail(
                where,
                f"{path} line {number}: a key is at least {MIN_KEY_BYTES} bytes of secret "
                f"randomness, this one is {len(key)}; make one with: "
                'python -c "import secrets; print(secrets.token_hex(32))"',
            )
        if key in seen:
            r.fail(where, f"{path} line {number}: the same key as line {seen[key]}")
        seen[key] = number
        keys.append(key)
    if not keys:
        r.fail(
            where,
            f"{path} holds no key (only blank lines and comments); write one secret of at least "
            f"{MIN_KEY_BYTES} bytes a line, the one that seals first",
        )
    return tuple(keys)


def _names(r: ConfigReader, value: Any, where: str, what: str) -> tuple[str, ...] | None:
    """A list of non-empty strings, or ``None`` when the field is absent."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        r.fail(where, f"must be a list of {what} (or '*' for any), not {value!r}")
    return tuple(v.strip() for v in value)
