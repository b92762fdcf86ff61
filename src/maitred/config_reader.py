"""Reading a YAML config file field by field, for the service's and the gateway's configs.

:class:`ConfigReader` checks each value's type and raises a :class:`~maitred.errors.ConfigError`
that names the file and the dotted field (``serve.yaml: field 'limits.max_body_bytes' must
be ...``), so a user is told exactly what to fix. The ``resolve_*`` functions make the paths a
config names relative to the config file itself, leaving URLs alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from maitred.errors import ConfigError

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class ConfigReader:
    """Type checks that raise a ConfigError naming the file and the dotted field."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, what: str) -> NoReturn:
        field_name = f" field {where!r}" if where else ""
        raise ConfigError(f"{self.source}:{field_name} {what}")

    def require(self, data: Mapping[str, Any], key: str, prefix: str) -> Any:
        if data.get(key) is None:
            self.fail(join(prefix, key), "is required")
        return data[key]

    def mapping(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            self.fail(where, f"must be a mapping, not {type(value).__name__}")
        return {str(k): v for k, v in value.items()}

    def string(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value:
            self.fail(where, f"must be a non-empty string, not {value!r}")
        return value

    def str_list(self, value: Any, where: str) -> list[str]:
        """A list of non-empty strings (one string is taken as a list of one)."""
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            self.fail(where, f"must be a list of strings, not {type(value).__name__}")
        return [self.string(v, f"{where}[{i}]") for i, v in enumerate(value)]

    def no_unknown(self, data: Mapping[str, Any], known: frozenset[str], prefix: str) -> None:
        extra = sorted(set(data) - known)
        if extra:
            self.fail(
                join(prefix, extra[0]), f"is not a known field; choose one of {sorted(known)}"
            )

    def token_digest(self, data: Mapping[str, Any], where: str) -> str:
        """The ``token_sha256`` of ``data``, lower-cased: 64 hex digits, never a token itself."""
        digest = self.string(self.require(data, "token_sha256", where), f"{where}.token_sha256")
        digest = digest.lower()
        if not _HEX64.match(digest):
            self.fail(
                f"{where}.token_sha256",
                "must be the SHA-256 of the token as 64 hex digits (never the token itself): "
                'printf %s "$TOKEN" | sha256sum',
            )
        return digest


def join(prefix: str, key: str) -> str:
    """``prefix.key``, or ``key`` at the top level."""
    return f"{prefix}.{key}" if prefix else key


def resolve_path(root: Path, value: str) -> str:
    """A path from the config, relative to the config's folder ``root`` unless absolute."""
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else root / path)


def resolve_state(root: Path, spec: str) -> str:
    """A state spec: JSON and SQLite files are relative to the config; other URLs are kept."""
    sqlite = "sqlite:///"
    if spec.startswith(sqlite) and not spec[len(sqlite) :].startswith("/"):
        return sqlite + resolve_path(root, spec[len(sqlite) :])
    if spec.startswith("json:"):
        return "json:" + resolve_path(root, spec[5:])
    if ":" not in spec.split("/")[0] and spec.lower().endswith(".json"):
        return resolve_path(root, spec)
    return spec


def resolve_log(root: Path, value: str) -> str:
    """A log location: a file relative to the config; a URL as it is."""
    return value if "://" in value else resolve_path(root, value)
