"""The what-if turn: what an account would be offered now for a message, never logged.

An operator on an account's page types a message; the console routes it through the same
stages a logged turn goes through -- recall, the executability gate, depth, the menu -- on an
engine **without a log** (:func:`unlogged`: the serving engine's catalog, recall index, state
provider and options, with ``log=None``), so nothing is written and no session's offer moves.
Beside the turn it asks the gate about every tool of the catalog for that account on one
state read (:meth:`~maitred.gate.executability.ExecutabilityGate.check`), so a tool the
message did not recall is explained too: each hidden tool with the predicates that hold and
the values they read, or the cause (state unavailable, account not found, a missing scope).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from maitred.engine import Maitred
from maitred.pipeline import Pipeline


def unlogged(engine: Maitred) -> Maitred:
    """An engine over ``engine``'s parts that logs nothing (its own is left as it is)."""
    source = engine.pipeline
    pipeline = Pipeline(
        source.catalog,
        source.recaller,
        source.executability_gate.provider,
        cutoff=source.cutoff,
        family_mode=source.family_mode,
        depth=source.depth,
        renderer=source.renderer,
        log=None,
        clock=source.clock,
        config=source.config,
        clock_skew_s=source.executability_gate.clock_skew_s,
    )
    return Maitred(pipeline)


@dataclass(frozen=True)
class WhatIf:
    """Answers what-if turns on an engine without a log (see the module docstring)."""

    engine: Maitred

    def __post_init__(self) -> None:
        if self.engine.log is not None:
            raise ValueError("a what-if engine must have no log: build it with unlogged()")

    def turn(self, account: str, message: str) -> dict[str, Any]:
        """The turn's JSON (:meth:`maitred.pipeline.Turn.to_json`), marked ``logged: false``,
        with ``tools``: every catalog tool's verdict for ``account`` now."""
        turn = self.engine.turn(message, account=account)
        out = turn.to_json()
        gate = self.engine.pipeline.executability_gate
        names = [s.name for s in self.engine.catalog]
        result = gate.check(account, names)
        predicates = {s.name: s.contract.predicates_by_name for s in self.engine.catalog}
        tools = []
        for outcome in result.outcomes:
            by_name = predicates.get(outcome.skill, {})
            tools.append(
                {
                    "tool": outcome.skill,
                    "visible": outcome.visible,
                    "cause": outcome.cause,
                    "missing_scopes": sorted(outcome.missing_scopes),
                    "predicates": [
                        {**o.to_json(), "message": getattr(by_name.get(o.predicate), "message", "")}
                        for o in outcome.fired
                    ],
                }
            )
        out["logged"] = False
        out["tools"] = tools
        out["provider_error"] = out.get("provider_error") or result.provider_error or None
        return out
