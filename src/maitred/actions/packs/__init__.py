"""Policy packs: ready-made catalogs of tools with their contracts, found by name.

A pack is an ordinary tools file and its contract sidecar (``tools.json`` +
``tools.maitred.yaml``), plus the settings its rules take and, for packs whose rules read a
business clock, that clock. Packs are found by name (:mod:`maitred.plugins`: the built-ins
listed there, a third party's as entry points of ``maitred.policy_packs``), each naming a
:class:`Pack`; :func:`load_pack` finds one by name, and a third-party package can add its own.

Running the tools (for shadow replay) is not the pack's business: the simulators that execute
the packs' tools live with the evaluation code (:mod:`maitred.lab.sim`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import maitred.plugins as plugins
from maitred.actions.gate import ActionGate
from maitred.actions.rules import Rulebook
from maitred.errors import ConfigError
from maitred.skills.catalog import load_catalog
from maitred.skills.model import Catalog

Executor = Callable[[str, Mapping[str, Any]], Any]
"""Runs a tool by name on a state document (the simulators provide these)."""


@dataclass(frozen=True)
class Pack:
    """A policy pack.

    Attributes:
        name: the pack's name (``tau2-airline``).
        tools_file: its tool definitions; the contracts are in the sidecar beside it.
        defaults: every setting and its default; settings other than ``now`` fill the rule
            factories of the sidecar.
        clock: ``settings -> now in unix seconds`` for a pack with a business clock (the
            ``now`` setting); ``None``: the wall clock.
        check: validates settings (raises :class:`~maitred.errors.ConfigError`).
    """

    name: str
    tools_file: Path
    defaults: Mapping[str, Any] = field(default_factory=dict)
    clock: Callable[[Mapping[str, Any]], float] | None = None
    check: Callable[[Mapping[str, Any]], None] | None = None

    def settings(self, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The defaults updated by ``overrides`` (unknown names and bad values refused)."""
        out = dict(self.defaults)
        for key, value in (overrides or {}).items():
            if key not in self.defaults:
                raise ConfigError(
                    f"pack {self.name!r} has no setting {key!r}; choose one of "
                    f"{sorted(self.defaults) or 'none (it has no settings)'}"
                )
            if value is not None:
                out[key] = value
        if self.check is not None:
            self.check(out)
        return out

    def catalog(self, overrides: Mapping[str, Any] | None = None) -> Catalog:
        """The pack's tools with their contracts, loaded as any tools file is."""
        rules = {k: v for k, v in self.settings(overrides).items() if k != "now"}
        return load_catalog([self.tools_file], strict=True, settings=rules)

    def rulebook(self, overrides: Mapping[str, Any] | None = None) -> Rulebook:
        """The pack as the action gate's :class:`Rulebook`."""
        return Rulebook.from_catalog(self.catalog(overrides), self.name, self.settings(overrides))

    def now(self, overrides: Mapping[str, Any] | None = None) -> Callable[[], float] | None:
        """The gates' clock under these settings (``None``: the wall clock)."""
        if self.clock is None:
            return None
        at = self.clock(self.settings(overrides))
        return lambda: at

    def make_gate(self, overrides: Mapping[str, Any] | None = None) -> ActionGate:
        """An :class:`ActionGate` for the pack, on the pack's clock."""
        clock = self.now(overrides)
        rulebook = self.rulebook(overrides)
        return ActionGate(rulebook) if clock is None else ActionGate(rulebook, clock=clock)


def pack_names() -> list[str]:
    """Every registered pack's name."""
    return plugins.names("packs")


def load_pack(name: str) -> Pack:
    """The pack registered as ``name`` (the error lists the registered names)."""
    pack = plugins.load("packs", name, what="policy pack")
    if not isinstance(pack, Pack):
        raise ConfigError(f"policy pack {name!r} is declared, but its entry point is not a Pack")
    return pack
