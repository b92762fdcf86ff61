"""State providers by name: turn a configuration string into a provider.

``open_provider`` reads the spec's URL scheme and hands it to the opener registered for it::

    open_provider("sqlite:///state.db", tables={"account": TableSpec("accounts")})
    open_provider("postgresql://db:5432/app", tables={"account": "accounts"}, timeout_s=0.5)
    open_provider("json:fixtures/state.json")   # or just "fixtures/state.json"

Schemes are entry points of the group ``maitred.state_providers``, each naming a
:class:`ProviderScheme` (the built-ins are declared in ``pyproject.toml``; another package adds
its own the same way), and :func:`register_provider` adds one in-process. The "choose one of" list
in the error for an unknown spec is generated from them, so it always names exactly the schemes
that work. Providers built in code
(:class:`~maitred.state.memory.MemoryStateProvider`,
:class:`~maitred.state.callables.CallableStateProvider`) have no spec and are not listed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import maitred.plugins as plugins
from maitred.errors import ConfigError
from maitred.state.memory import JsonStateProvider
from maitred.state.snapshot import StateProvider
from maitred.state.sql import SqlStateProvider, TableSpec

Tables = Mapping[str, TableSpec | str | Mapping[str, Any]]
Opener = Callable[[str, Tables | None, float | None], StateProvider]
"""``(spec, tables, timeout_s) -> provider``."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")


@dataclass(frozen=True)
class ProviderScheme:
    """One registered kind of provider.

    Attributes:
        scheme: the URL scheme that selects it (``sqlite``).
        example: a spec to show in help and errors (``sqlite:///path/to.db``).
        opener: builds the provider from ``(spec, tables, timeout_s)``.
    """

    scheme: str
    example: str
    opener: Opener


_REGISTRY: dict[str, ProviderScheme] = {}


def register_provider(scheme: str, example: str, opener: Opener) -> None:
    """Make ``open_provider`` accept specs starting with ``scheme:``.

    Raises:
        ConfigError: ``scheme`` is malformed or already registered.
    """
    key = scheme.lower()
    if not _SCHEME.match(f"{key}:"):
        raise ConfigError(f"state provider scheme {scheme!r} is not a valid URL scheme")
    if key in _REGISTRY or key in plugins.names("state"):
        raise ConfigError(f"state provider scheme {scheme!r} is already registered")
    _REGISTRY[key] = ProviderScheme(key, example, opener)


def _scheme(name: str) -> ProviderScheme | None:
    """The scheme registered in-process or declared as an entry point, or None."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name not in plugins.names("state"):
        return None
    found = plugins.load("state", name, what="state provider scheme")
    if not isinstance(found, ProviderScheme):
        raise ConfigError(
            f"state provider scheme {name!r}: its entry point is not a ProviderScheme"
        )
    return found


def provider_schemes() -> tuple[ProviderScheme, ...]:
    """Every registered scheme, in name order."""
    names = sorted(set(_REGISTRY) | set(plugins.names("state")))
    return tuple(s for s in (_scheme(n) for n in names) if s is not None)


def open_provider(
    spec: str, tables: Tables | None = None, *, timeout_s: float | None = None
) -> StateProvider:
    """The state provider a spec names.

    Args:
        spec: a URL (``sqlite:///path.db``, ``postgresql://host:port/db``, ``json:path``) or a
            path ending in ``.json``.
        tables: key root -> table, for SQL providers (required there, refused elsewhere).
        timeout_s: the SQL provider's time limit (refused for JSON files).

    Raises:
        ConfigError: an unknown scheme (the message lists the registered ones), or tables /
            timeout_s missing or given where they do not apply.
        MissingExtraError: PostgreSQL without the ``postgres`` extra.
    """
    match = _SCHEME.match(spec)
    entry = _scheme(match.group(1).lower()) if match else None
    if entry is None and spec.lower().endswith(".json"):
        entry = _scheme("json")
        spec = f"json:{spec}"
    if entry is None:
        choices = ", ".join(item.example for item in provider_schemes())
        raise ConfigError(
            f"unknown state provider {spec!r}: choose one of {choices}, or a path ending in .json"
        )
    return entry.opener(spec, tables, timeout_s)


def _open_sql(spec: str, tables: Tables | None, timeout_s: float | None) -> StateProvider:
    if not tables:
        raise ConfigError(
            f"the {spec.partition(':')[0]} state provider needs tables: map each key root to "
            "a table, e.g. tables={'account': 'accounts'}"
        )
    return SqlStateProvider.from_url(spec, tables, timeout_s=timeout_s)


def _open_json(spec: str, tables: Tables | None, timeout_s: float | None) -> StateProvider:
    path = spec.partition(":")[2]
    if not path:
        raise ConfigError("state provider 'json:' needs a path: json:path/to/state.json")
    if tables:
        raise ConfigError(
            f"state provider {spec!r}: tables apply to SQL providers only; "
            "a JSON file holds its fields per account"
        )
    if timeout_s is not None:
        raise ConfigError(
            f"state provider {spec!r}: timeout_s applies to SQL providers only; "
            "a JSON file is read locally, without one"
        )
    return JsonStateProvider(path)


# the built-in schemes (entry points of ``maitred.state_providers`` in pyproject.toml)
JSON = ProviderScheme("json", "json:path/to/state.json", _open_json)
POSTGRES = ProviderScheme("postgres", "postgres://user@host:5432/db", _open_sql)
POSTGRESQL = ProviderScheme("postgresql", "postgresql://user@host:5432/db", _open_sql)
SQLITE = ProviderScheme("sqlite", "sqlite:///path/to/state.db", _open_sql)
