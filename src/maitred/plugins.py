"""Interchangeable parts found by name through entry points.

maitred's registries -- recall methods, depth rules, state-provider schemes, log backends, policy
packs -- know names, not modules. Each name is an entry point in a group (built-ins are declared
the same way, in ``pyproject.toml``)::

    [project.entry-points."maitred.depth_rules"]
    camdf = "maitred.depth.camdf:make_camdf_rule"

An entry point may name the extra it needs, as in
``native = "maitred.native.methods:make_native [native]"``; when that extra is missing, loading
it raises :class:`~maitred.errors.MissingExtraError` with the install command. A third-party
package adds its own parts by declaring entry points in these groups; nothing in maitred imports
it until its name is asked for. A registry therefore never imports its plugins,
and an optional part (native routing, with torch) forms no import cycle with the core.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from maitred.errors import ConfigError, MissingExtraError

GROUPS = {
    "recall": "maitred.recall_methods",
    "depth": "maitred.depth_rules",
    "state": "maitred.state_providers",
    "log": "maitred.log_backends",
    "packs": "maitred.policy_packs",
}


@cache
def _entries(group: str) -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=group)}


def names(kind: str) -> list[str]:
    """Every registered name of a kind (``"recall"``, ``"depth"``, ``"state"``, ``"log"``,
    ``"packs"``), sorted."""
    return sorted(_entries(GROUPS[kind]))


def load(kind: str, name: str, *, what: str | None = None) -> Any:
    """The object registered as ``name`` (imported now).

    Raises:
        ConfigError: no part of that kind has that name (the message lists the names), or the
            package that declared it cannot be imported.
    """
    group = GROUPS[kind]
    entry = _entries(group).get(name)
    label = what or kind
    if entry is None:
        known = names(kind)
        hint = (
            "" if known else " (no entry points at all: is maitred installed? run `make install`)"
        )
        raise ConfigError(f"unknown {label} {name!r}; choose one of {known}{hint}")
    try:
        return entry.load()
    except ModuleNotFoundError as exc:
        if entry.extras:  # declared as "module:attr [extra]": that extra is not installed
            raise MissingExtraError(f"{label} {name!r}", entry.extras[0], exc.name) from exc
        raise ConfigError(
            f"{label} {name!r} is declared by {entry.value!r}, which cannot be imported: {exc}"
        ) from exc
    except ImportError as exc:
        raise ConfigError(
            f"{label} {name!r} is declared by {entry.value!r}, which cannot be imported: {exc}"
        ) from exc
