"""Simulators of tool domains, for tests, shadow replay and gated-agent experiments.

:func:`make_executor` gives, for a policy pack's name, a function that runs that pack's tools
on a state document (``maitred actions check`` applies allowed writes with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maitred.actions.packs import Executor
from maitred.errors import ConfigError


def make_executor(pack: str, db: dict[str, Any], settings: Mapping[str, Any]) -> Executor:
    """Run ``pack``'s tools on ``db`` (changed in place by allowed writes).

    Raises:
        ConfigError: no simulator implements that pack's tools.
    """
    if pack == "tau2-airline":
        from maitred.lab.sim.airline.tools import AirlineSim

        return AirlineSim(db, now=str(settings.get("now") or "2024-05-15T15:00:00")).call
    if pack == "retail-control":
        from maitred.lab.sim.retail.tools import RetailSim

        return RetailSim(db).call
    raise ConfigError(
        f"no simulator runs the tools of pack {pack!r}; simulated: ['retail-control', "
        "'tau2-airline']"
    )
