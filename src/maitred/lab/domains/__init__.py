"""The built-in demo domains by name: their skill folders and how their customers ask.

* ``sitecare`` -- a website builder's customer care (:mod:`maitred.lab.domains.sitecare`);
* ``airline`` -- an airline's customer service after tau2-bench
  (:mod:`maitred.lab.domains.airline`).

:func:`get_domain` resolves a name to a :class:`Domain`, importing only that domain's package;
every "choose one of" message is generated from :data:`DOMAINS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from maitred.errors import ConfigError


@dataclass(frozen=True)
class Domain:
    """One demo domain: where its skills live and how its customers ask for them.

    Attributes:
        name: the registry name.
        skills_dir: the folder of Agent Skills folders.
        requests: skill -> the customer phrasings a request is drawn from (``{slot}`` fields
            included).
        weights: skill -> relative request frequency; its keys are the skills requested.
        slot_values: slot -> the values a ``{slot}`` field is filled with.
        prefix: the short id prefix of generated messages (``sc0``, ``al0`` ...).
    """

    name: str
    skills_dir: Path
    requests: Mapping[str, tuple[str, ...]]
    weights: Mapping[str, int]
    slot_values: Mapping[str, tuple[str, ...]]
    prefix: str


def _sitecare() -> Domain:
    from maitred.lab.domains.sitecare._messages import REQUESTS, SKILL_WEIGHTS
    from maitred.lab.domains.sitecare._phrases_chat import SLOT_VALUES
    from maitred.lab.domains.sitecare.generate import skills_dir

    return Domain("sitecare", skills_dir(), REQUESTS, SKILL_WEIGHTS, SLOT_VALUES, "sc")


def _airline() -> Domain:
    from maitred.lab.domains.airline import skills_dir
    from maitred.lab.domains.airline._phrases import REQUESTS, SKILL_WEIGHTS, SLOT_VALUES

    return Domain("airline", skills_dir(), REQUESTS, SKILL_WEIGHTS, SLOT_VALUES, "al")


_LOADERS: Final[Mapping[str, Callable[[], Domain]]] = {
    "sitecare": _sitecare,
    "airline": _airline,
}
#: every built-in domain name
DOMAINS: Final = tuple(_LOADERS)


def get_domain(name: str) -> Domain:
    """The built-in domain called ``name``.

    Raises:
        ConfigError: no domain has that name.
    """
    loader = _LOADERS.get(name)
    if loader is None:
        raise ConfigError(f"unknown domain {name!r}; choose one of {', '.join(DOMAINS)}")
    return loader()


__all__ = ["DOMAINS", "Domain", "get_domain"]
