"""Stage 2, the executability gate: V(m) = { s in C(m) : not E_s(x) }.

For one turn the gate collects every state key the candidates' exit predicates declare,
fetches them from the provider in **one** call, and decides each candidate on that snapshot with
the decision kernel, :func:`maitred.contract.kernel.decide_exit` -- the function stage 5, the
gateway's listing and the parity audit call too, so a tool hidden here is a tool the action gate
refuses. A candidate is blocked when any predicate holds; every outcome that holds is kept, with
the values it read, so the log can say exactly why.

When the state itself cannot be trusted the predicates are not asked at all, because their
``on_missing`` policies are written for *a key* this account lacks, not for a state store that
is down or an account that does not exist (an ``on_missing: offer`` predicate would otherwise
turn an outage into an offer). The turn then has a **cause**, and every candidate that reads
state is blocked with it (a candidate that reads nothing is decided as usual):

* ``state_unavailable`` -- the provider raised (down, timed out, misconfigured table);
* ``account_not_found`` -- the provider answered, but has no record of the account at all
  (``Snapshot.account_found`` is False).

The cause is data: it is on each :class:`GateOutcome`, and the turn's ``provider_error`` text
starts with it (``"state_unavailable: ProviderError: ..."``), which is how the decision log keeps
it without a new column and how :attr:`maitred.records.TurnRecord.cause` reads it back.

:func:`require_coverage` is the load-time half of the same promise: a provider that can tell
which keys it can never serve (:class:`~maitred.state.snapshot.CoverageAware`) must serve every
key the catalog's predicates read, or the pipeline is not built. The gate never calls a model
and never reads recall's internals.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from maitred.contract.evaluate import PredicateOutcome
from maitred.contract.kernel import (
    PROVIDER_ERROR_VERSION,
    decide_exit,
    missing_scopes,
    snapshot_cause,
)
from maitred.contract.kernel import SCOPES as SCOPES  # the scope rule's outcome, for adapters
from maitred.errors import ConfigError, MaitredError
from maitred.records import Cause, cause_of_text, cause_text
from maitred.skills.model import Catalog
from maitred.state.answer import DEFAULT_CLOCK_SKEW_S, accept
from maitred.state.snapshot import CoverageAware, Snapshot, StateProvider, now


@dataclass(frozen=True)
class GateOutcome:
    """The gate's verdict on one candidate.

    Attributes:
        skill: the candidate.
        visible: True when no exit predicate holds and the turn has no cause.
        fired: the outcomes that hold (why it is blocked); empty when visible or when it was
            blocked for the turn's cause (no predicate was asked then).
        soft: outcomes that did not hold but were decided by a fail-open mode (``offer``, logged).
        cause: set when the candidate was blocked because state could not be trusted.
        missing_scopes: the scopes its contract requires that the caller was not granted
            (then ``fired`` is the kernel's one :data:`~maitred.contract.kernel.SCOPES` outcome).
    """

    skill: str
    visible: bool
    fired: tuple[PredicateOutcome, ...] = ()
    soft: tuple[PredicateOutcome, ...] = ()
    cause: Cause | None = None
    missing_scopes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class GateResult:
    """All verdicts of one turn, the snapshot they were made on and the provider error, if any.

    ``provider_error`` starts with the turn's cause when it has one (see the module docstring).
    """

    snapshot: Snapshot
    outcomes: tuple[GateOutcome, ...]
    provider_error: str = ""

    @property
    def visible(self) -> tuple[str, ...]:
        return tuple(o.skill for o in self.outcomes if o.visible)

    @property
    def blocked(self) -> tuple[str, ...]:
        return tuple(o.skill for o in self.outcomes if not o.visible)

    @property
    def cause(self) -> Cause | None:
        """Why the turn failed closed as a whole, if it did."""
        return cause_of_text(self.provider_error)


class ExecutabilityGate:
    """Evaluates exit predicates of candidate skills against fresh state."""

    def __init__(
        self,
        catalog: Catalog,
        provider: StateProvider,
        clock: Callable[[], float] = now,
        clock_skew_s: float = DEFAULT_CLOCK_SKEW_S,
    ) -> None:
        self.catalog = catalog
        self.provider = provider
        self.clock = clock
        self.clock_skew_s = clock_skew_s

    def keys_for(self, skills: Sequence[str]) -> frozenset[str]:
        """Every state key the given skills' predicates declare."""
        keys: set[str] = set()
        for name in skills:
            keys |= self.catalog[name].contract.reads
        return frozenset(keys)

    def fetch(self, account: str, skills: Sequence[str]) -> tuple[Snapshot, str]:
        """One batched fetch; a failing provider gives an all-missing snapshot and its error."""
        keys = self.keys_for(skills)
        return fetch_keys(self.provider, account, keys, self.clock, self.clock_skew_s)

    def check(
        self, account: str, skills: Sequence[str], granted: Collection[str] | None = None
    ) -> GateResult:
        """Decide visibility for each of ``skills`` (in order) for ``account``, for a caller
        granted the scopes ``granted`` (``None``: not said; see :mod:`maitred.contract.kernel`).

        State is read for the skills the scope rule lets through only: what a caller may not
        see is never a reason to read an account's state.
        """
        readable = (
            skills
            if granted is None
            else [s for s in skills if not missing_scopes(self.catalog[s].contract, granted)]
        )
        snapshot, error = self.fetch(account, readable)
        t = self.clock()
        outcomes = tuple(self.decide(s, snapshot, t, granted) for s in skills)
        cause = snapshot_cause(snapshot)
        if cause == "state_unavailable":
            error = cause_text(cause, error)
        elif cause == "account_not_found":
            error = cause_text(
                cause,
                f"the state provider has no record of account {account!r}; every skill that "
                "reads state is withheld (check the account id, or that the account is synced)",
            )
        return GateResult(snapshot, outcomes, error)

    def decide(
        self, skill: str, snapshot: Snapshot, at: float, granted: Collection[str] | None = None
    ) -> GateOutcome:
        """The kernel's verdict on one skill for a snapshot taken already (the turn's, a
        replay's, an audit's or the gateway's state watch), for a caller granted ``granted``."""
        verdict = decide_exit(self.catalog[skill].contract, snapshot, at, granted)
        return GateOutcome(
            skill,
            verdict.executable,
            verdict.fired,
            verdict.soft,
            verdict.cause,
            verdict.missing_scopes,
        )


def fetch_keys(
    provider: StateProvider,
    account: str,
    keys: frozenset[str],
    clock: Callable[[], float] = now,
    skew_s: float = DEFAULT_CLOCK_SKEW_S,
) -> tuple[Snapshot, str]:
    """Both gates' state read: ``keys`` for ``account`` in one provider call, and its error.

    The answer must pass :func:`maitred.state.answer.accept` (a snapshot of this account that
    answers every key; keys dated more than ``skew_s`` ahead of ``clock`` are marked invalid).
    A provider that fails, or answers something else, gives the all-missing snapshot with the
    :data:`~maitred.contract.kernel.PROVIDER_ERROR_VERSION` marker (on which the kernel hides
    everything that reads state) and the error's text; no keys read nothing. The gateway's
    resources and prompts (:mod:`maitred.gateway.surfaces`) are read through it too.
    """
    t = clock()
    if not keys:
        return Snapshot(account, {}, t), ""
    try:
        return accept(provider.fetch(account, keys), account, keys, t, skew_s), ""
    except MaitredError as exc:
        error = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # a broken provider must not become a silent offer
        error = f"{type(exc).__name__}: {exc}"
    snapshot = Snapshot(account, {}, t, missing=keys, version=PROVIDER_ERROR_VERSION)
    return snapshot, error


def require_coverage(catalog: Catalog, provider: StateProvider) -> None:
    """Refuse a provider that can never serve some key the catalog's predicates read.

    Providers that cannot tell ahead of time (documents, whose accounts carry their own fields)
    are not :class:`~maitred.state.snapshot.CoverageAware` and pass.

    Raises:
        ConfigError: naming each uncovered key, the skills whose predicates read it, and the
            key roots to add to the provider's mapping.
    """
    if not isinstance(provider, CoverageAware):
        return
    readers: dict[str, list[str]] = {}
    for skill in catalog:
        for key in skill.contract.reads:
            readers.setdefault(key, []).append(skill.name)
    uncovered = sorted(provider.uncovered(readers))
    if not uncovered:
        return
    roots = sorted({key.partition(".")[0] for key in uncovered})
    listing = "; ".join(f"{key} (read by {', '.join(sorted(readers[key]))})" for key in uncovered)
    raise ConfigError(
        f"state provider {getattr(provider, 'name', type(provider).__name__)!r} has no source "
        f"for key root(s) {roots}, which exit predicates read: {listing}. Every account would "
        "look as if it had no such record, so fail-open predicates would offer skills that "
        f"must be blocked: add {roots} to the tables mapping (or the fetchers)"
    )
