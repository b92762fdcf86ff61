"""The decision kernel: may this tool or skill run for this account now? One function, one answer.

:func:`decide_exit` is the only place where a contract's exit predicates are turned into a verdict.
Stage 2 (:meth:`ExecutabilityGate.decide <maitred.gate.executability.ExecutabilityGate.decide>`,
so also the gateway's listing and the state watch), stage 5's executability step
(:class:`~maitred.actions.ActionGate`) and the parity audit all call it, with the contract, one
:class:`~maitred.state.snapshot.Snapshot` (one state read) and one clock reading. It is pure: the
same contract, snapshot and time give the same verdict, wherever it is asked.

Every input ends in exactly one of these outcomes, each with one rule:

==========================  ======================================================  ==========
outcome                     rule                                                     verdict
==========================  ======================================================  ==========
``insufficient_scope``      the caller was granted scopes (``granted`` is not        hidden
                            ``None``) and lacks one the contract requires
                            (``Contract.scopes``): no state is asked; who is
                            asking is decided before what their account holds
``state_unavailable``       the provider failed (the snapshot carries the            hidden
                            :data:`PROVIDER_ERROR_VERSION` marker): no predicate
                            is asked; ``on_missing`` is about *a key* an account
                            lacks, never about a store that is down
``account_not_found``       the provider answered and has no record of the           hidden
                            account (``Snapshot.account_found is False``): no
                            predicate is asked, for the same reason
predicate holds             its exit condition is true                               hidden
missing key                 the predicate's ``on_missing``: ``block`` holds,         per fail mode
                            ``offer`` does not (and is kept in ``soft``)
stale key                   the predicate's ``on_stale``, likewise                   per fail mode
evaluation error            holds, always (an error never passes)                    hidden
otherwise                   --                                                       executable
==========================  ======================================================  ==========

**Scopes** are the caller's permissions (an OAuth access token's ``scope``, passed per request
as :attr:`CallContext.granted <maitred.context.CallContext.granted>`): ``granted=None`` means
the caller did not say (a library call, a stdio launch), and the scope rule is not asked;
a contract without ``scopes`` never is. A missing scope is kept as one
:class:`~maitred.contract.evaluate.PredicateOutcome` named :data:`SCOPES` (in ``fired``), so the
decision log says which scopes were missing the way it says which predicate held, and
``missing_scopes`` names them. :func:`missing_scopes` is the rule itself, for a caller that must
refuse before it reads anything (the action gate, before the offer: ``INSUFFICIENT_SCOPE``).

The two causes apply to any contract whose predicates read state, mutating or not: a tool
that reads state cannot be judged without it, and a read-only tool offered on state that
could not be read would be a guess too. A contract that reads nothing has no state to miss.

**Missing state on mutating tools.** ``mutates`` decides how a tool fails when nothing can be
decided -- the causes and evaluation errors above, all of which hide -- but it does not override
a predicate's declared ``on_missing`` / ``on_stale``. A *missing key* here is a fact about a
known account on a store that answered (an account with no domain record yet), and an
``on_missing: offer`` predicate is its author saying what that fact means ("no domain record:
nothing is connected"); the sitecare and airline skills rely on it for writes. A key that is
missing for *every* account (a table mapping that lacks it) is refused when the engine is
built (:func:`~maitred.gate.executability.require_coverage`), not decided here. Call policies
over ``args``/``state``/``session`` are stricter: a fail-open one on a mutating tool is refused
when the rulebook is built (:class:`~maitred.actions.Rulebook`).

The verdict keeps every predicate outcome that decided it (``fired``) and every one that did not
hold only because a fail-open mode (``offer``) decided (``soft``), so a log row can say exactly why.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from maitred._canonical import text_hash
from maitred.contract.evaluate import PredicateOutcome, evaluate
from maitred.contract.model import Contract
from maitred.records import Cause
from maitred.state.snapshot import Snapshot

#: ``Snapshot.version`` of the all-missing snapshot recorded when the provider failed.
PROVIDER_ERROR_VERSION = "provider-error"
#: the name of the outcome that records missing scopes (never a predicate of a contract)
SCOPES = "scopes"


def missing_scopes(contract: Contract, granted: Collection[str] | None) -> frozenset[str]:
    """The scopes ``contract`` requires that ``granted`` lacks (empty: the scope rule passes).

    ``granted=None`` is a caller that did not say which scopes it holds: nothing is missing.
    """
    if granted is None or not contract.scopes:
        return frozenset()
    return contract.scopes.difference(granted)


def scope_outcome(
    contract: Contract, lacking: Collection[str], granted: Collection[str]
) -> PredicateOutcome:
    """The outcome a missing scope is logged as: it holds, names what was missing, and keeps
    the scopes the caller was granted as the values it "read"."""
    required = sorted(contract.scopes)
    return PredicateOutcome(
        SCOPES,
        text_hash(" ".join(required)),
        True,
        "ok",
        {"granted": sorted(granted)},
        f"missing scope(s): {', '.join(sorted(lacking))} (requires {', '.join(required)})",
    )


def snapshot_cause(snapshot: Snapshot) -> Cause | None:
    """The cause a snapshot alone shows: the provider failed, or has no such account."""
    if snapshot.version == PROVIDER_ERROR_VERSION:
        return "state_unavailable"
    if snapshot.account_found is False:
        return "account_not_found"
    return None


@dataclass(frozen=True)
class ExitVerdict:
    """What the kernel decided for one contract on one snapshot at one time.

    Attributes:
        executable: True when the contract may run now (nothing fired, no cause).
        cause: set when it is hidden because the state itself could not be trusted; no
            predicate was asked then, so ``fired`` and ``soft`` are empty.
        fired: the outcomes that hold (why it is hidden), in declaration order.
        soft: outcomes that did not hold only because a fail-open mode (``offer``) decided (logged).
        mutates: the contract's ``mutates``, kept so a caller can say how it fails.
        missing_scopes: the required scopes the caller lacks (then ``fired`` is the one
            :data:`SCOPES` outcome, and no state was asked).
    """

    executable: bool
    cause: Cause | None = None
    fired: tuple[PredicateOutcome, ...] = ()
    soft: tuple[PredicateOutcome, ...] = ()
    mutates: bool = False
    missing_scopes: frozenset[str] = frozenset()

    @property
    def hidden(self) -> bool:
        """True when the contract must not be offered, and a call to it must not run."""
        return not self.executable


def decide_exit(
    contract: Contract,
    snapshot: Snapshot,
    now: float,
    granted: Collection[str] | None = None,
) -> ExitVerdict:
    """The verdict on ``contract`` for a caller granted ``granted`` (``None``: not said) over
    ``snapshot`` at ``now``: its scopes, then its exit predicates.

    See the module docstring for the one rule of each outcome.
    """
    lacking = missing_scopes(contract, granted)
    if lacking and granted is not None:
        denied = (scope_outcome(contract, lacking, granted),)
        return ExitVerdict(False, None, denied, mutates=contract.mutates, missing_scopes=lacking)
    cause = snapshot_cause(snapshot)
    if cause is not None and contract.reads:
        return ExitVerdict(False, cause, mutates=contract.mutates)
    fired: list[PredicateOutcome] = []
    soft: list[PredicateOutcome] = []
    for predicate in contract.exit_predicates:
        outcome = evaluate(predicate, snapshot, now)
        if outcome.holds:
            fired.append(outcome)
        elif outcome.status != "ok":
            soft.append(outcome)
    return ExitVerdict(not fired, None, tuple(fired), tuple(soft), contract.mutates)


__all__ = [
    "PROVIDER_ERROR_VERSION",
    "SCOPES",
    "ExitVerdict",
    "decide_exit",
    "missing_scopes",
    "scope_outcome",
    "snapshot_cause",
]


def exits(contract: Contract, snapshot: Snapshot, now: float) -> bool:
    """True when the kernel hides ``contract``'s skill or tool on ``snapshot`` at ``now`` (the
    gate's answer, which a skill's own procedure must match: the parity audit's question)."""
    return not decide_exit(contract, snapshot, now).executable
