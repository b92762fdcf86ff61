"""Policy packs by name: a pack turns settings into an :class:`~maitred.actions.ActionGate`
and, where maitred has a simulator of the domain, into an executor for shadow replay."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from maitred.actions.gate import ActionGate
from maitred.errors import ConfigError

Executor = Callable[[str, Mapping[str, Any]], Any]


@dataclass(frozen=True)
class PackEntry:
    """How to build a pack's gate and (for replay) an executor over a state document."""

    make_gate: Callable[[Mapping[str, Any] | None], ActionGate]
    make_executor: Callable[[dict[str, Any], Mapping[str, Any]], Executor]


def _tau2_airline() -> PackEntry:
    from maitred.actions.packs import tau2_airline
    from maitred.actions.sim.airline.tools import AirlineSim

    def executor(db: dict[str, Any], settings: Mapping[str, Any]) -> Executor:
        return AirlineSim(db, now=str(settings.get("now") or tau2_airline.DEFAULT_NOW)).call

    return PackEntry(tau2_airline.make_gate, executor)


def _retail_control() -> PackEntry:
    from maitred.actions.packs import retail_control
    from maitred.actions.sim.retail.tools import RetailSim

    def executor(db: dict[str, Any], settings: Mapping[str, Any]) -> Executor:
        return RetailSim(db).call

    return PackEntry(retail_control.make_gate, executor)


PACKS: Mapping[str, Callable[[], PackEntry]] = {
    "retail-control": _retail_control,
    "tau2-airline": _tau2_airline,
}


def load_pack(name: str) -> PackEntry:
    """The pack registered as ``name`` (the error lists the registered names)."""
    if name not in PACKS:
        raise ConfigError(f"unknown policy pack {name!r}; choose one of {sorted(PACKS)}")
    return PACKS[name]()
