"""Agents for the gated-agent evaluation: scripted ones for tests, and the registry by name.

An agent works one task through a tool registry (gated or not -- it cannot tell, except that a
gated registry may answer a call with a rejection) and returns; the evaluation then compares
the database with the task's expected final state.

* ``gold`` -- makes the task's gold calls, in order. Passes every task, gates on or off.
* ``reckless`` -- with probability ``rate`` per trial, first makes one forbidden write (a
  violating trajectory of the domain, drawn at random), then -- whether the write was rejected
  or silently executed -- continues with the gold calls, as an agent that re-plans on a
  rejection would. Where tools are policy-permissive, an executed forbidden write leaves a wrong
  final state; a gate turns it into a rejection and the task still passes.
* ``llm`` -- :class:`~maitred.lab.agents.llm.LLMAgent`, over an OpenAI-compatible endpoint.

Randomness comes from the ``rng`` the runner passes, seeded per (task, trial) and shared by the
two arms, so the arms are paired: the same trial attempts the same forbidden write in both.
"""

from __future__ import annotations

import random
from typing import Protocol

from maitred.actions.wrap import GatedRegistry
from maitred.lab.agents.domains import Domain, EvalTask


class Agent(Protocol):
    """Works one task through ``tools``."""

    name: str

    def run(self, task: EvalTask, tools: GatedRegistry, rng: random.Random) -> None:
        """Make calls through ``tools`` until the agent considers the task done."""
        ...


class GoldAgent:
    """Makes the gold calls of the task, in order."""

    name = "gold"

    def run(self, task: EvalTask, tools: GatedRegistry, rng: random.Random) -> None:
        for c in task.task.calls:
            tools.call(c["name"], c["arguments"])


class RecklessAgent:
    """Attempts one forbidden write with probability ``rate``, then makes the gold calls.

    Args:
        rate: the chance per trial of attempting a forbidden write (0..1).
    """

    name = "reckless"

    def __init__(self, rate: float = 0.5) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"rate must be between 0 and 1, got {rate}")
        self.rate = rate

    def run(self, task: EvalTask, tools: GatedRegistry, rng: random.Random) -> None:
        attempt = rng.random() < self.rate
        pick = rng.randrange(len(task.forbidden)) if task.forbidden else -1
        if attempt and pick >= 0:
            for c in task.forbidden[pick]:
                tools.call(c["name"], c["arguments"])
        GoldAgent().run(task, tools, rng)


AGENTS = ("gold", "llm", "reckless")


def describe(domain: Domain) -> str:
    """The agents' names, for error messages."""
    return f"{', '.join(AGENTS)} (pack {domain.pack})"
