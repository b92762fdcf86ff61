"""Stage 2, the executability gate: V(m) = { s in C(m) : not E_s(x) }.

For one turn the gate collects every state key the candidates' exit predicates declare,
fetches them from the provider in **one** call, and evaluates each candidate's predicates on that
snapshot with :func:`maitred.contract.evaluate` -- the function the skills' own procedures use.
A candidate is blocked when any predicate holds; every outcome that holds is kept, with the
values it read, so the log can say exactly why.

If the provider fails, the gate builds a snapshot in which every requested key is missing, so
each predicate's ``on_missing`` policy decides (fail-closed by default) -- and the error text is
kept on the result. The gate never calls a model and never reads recall's internals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from maitred.contract.evaluate import PredicateOutcome, evaluate
from maitred.errors import MaitredError
from maitred.skills.model import Catalog
from maitred.state.snapshot import Snapshot, StateProvider, now


@dataclass(frozen=True)
class GateOutcome:
    """The gate's verdict on one candidate.

    Attributes:
        skill: the candidate.
        visible: True when no exit predicate holds.
        fired: the outcomes that hold (why it is blocked); empty when visible.
        soft: outcomes that did not hold but were decided by a fail-open policy (logged).
    """

    skill: str
    visible: bool
    fired: tuple[PredicateOutcome, ...] = ()
    soft: tuple[PredicateOutcome, ...] = ()


@dataclass(frozen=True)
class GateResult:
    """All verdicts of one turn, the snapshot they were made on and the provider error, if any."""

    snapshot: Snapshot
    outcomes: tuple[GateOutcome, ...]
    provider_error: str = ""

    @property
    def visible(self) -> tuple[str, ...]:
        return tuple(o.skill for o in self.outcomes if o.visible)

    @property
    def blocked(self) -> tuple[str, ...]:
        return tuple(o.skill for o in self.outcomes if not o.visible)


class ExecutabilityGate:
    """Evaluates exit predicates of candidate skills against fresh state."""

    def __init__(
        self,
        catalog: Catalog,
        provider: StateProvider,
        clock: Callable[[], float] = now,
    ) -> None:
        self.catalog = catalog
        self.provider = provider
        self.clock = clock

    def keys_for(self, skills: Sequence[str]) -> frozenset[str]:
        """Every state key the given skills' predicates declare."""
        keys: set[str] = set()
        for name in skills:
            keys |= self.catalog[name].contract.reads
        return frozenset(keys)

    def fetch(self, account: str, skills: Sequence[str]) -> tuple[Snapshot, str]:
        """One batched fetch; a failing provider gives an all-missing snapshot and its error."""
        keys = self.keys_for(skills)
        t = self.clock()
        if not keys:
            return Snapshot(account, {}, t), ""
        try:
            return self.provider.fetch(account, keys), ""
        except MaitredError as exc:
            error = f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a broken provider must not become a silent offer
            error = f"{type(exc).__name__}: {exc}"
        return Snapshot(account, {}, t, missing=keys, version="provider-error"), error

    def check(self, account: str, skills: Sequence[str]) -> GateResult:
        """Decide visibility for each of ``skills`` (in order) for ``account``."""
        snapshot, error = self.fetch(account, skills)
        t = self.clock()
        return GateResult(snapshot, tuple(self.decide(s, snapshot, t) for s in skills), error)

    def decide(self, skill: str, snapshot: Snapshot, at: float) -> GateOutcome:
        """The verdict on one skill for a snapshot taken already (used by replays and audits)."""
        fired: list[PredicateOutcome] = []
        soft: list[PredicateOutcome] = []
        for predicate in self.catalog[skill].contract.exit_predicates:
            outcome = evaluate(predicate, snapshot, at)
            if outcome.holds:
                fired.append(outcome)
            elif outcome.status != "ok":
                soft.append(outcome)
        return GateOutcome(skill, not fired, tuple(fired), tuple(soft))
