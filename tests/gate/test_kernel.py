"""The decision kernel itself, as a pure function, and the paths that must go through it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from maitred.contract import CelPredicate, Contract
from maitred.contract.kernel import PROVIDER_ERROR_VERSION, decide_exit, snapshot_cause
from maitred.gate import ExecutabilityGate
from maitred.skills.model import Catalog, Skill
from maitred.state import MemoryStateProvider
from maitred.state.snapshot import Snapshot

NOW = 1_700_000_000.0
OPEN = CelPredicate(
    "domain.registrar_lock", "domain_locked", ("domain.registrar_lock",), on_missing="offer"
)
FREE = CelPredicate('account.plan == "free"', "on_free_plan", ("account.plan",))


def _snap(
    values: dict[str, object],
    missing: frozenset[str] = frozenset(),
    version: str = "",
    account_found: bool | None = None,
) -> Snapshot:
    return Snapshot(
        "acc-1", values, NOW, missing=missing, version=version, account_found=account_found
    )


@pytest.mark.parametrize("mutates", [True, False])
def test_the_causes_hide_whatever_the_fail_mode_and_ask_no_predicate(mutates: bool) -> None:
    contract = Contract(mutates=mutates, exit_predicates=(OPEN,))
    gone = _snap({}, missing=frozenset(OPEN.reads), account_found=False)
    down = _snap({}, missing=frozenset(OPEN.reads), version=PROVIDER_ERROR_VERSION)
    for snapshot, cause in ((gone, "account_not_found"), (down, "state_unavailable")):
        verdict = decide_exit(contract, snapshot, NOW)
        assert (verdict.hidden, verdict.cause, verdict.fired, verdict.soft) == (
            True,
            cause,
            (),
            (),
        )
        assert snapshot_cause(snapshot) == cause


def test_a_missing_key_of_a_known_account_follows_on_missing_and_is_kept_soft() -> None:
    for mutates in (True, False):
        contract = Contract(mutates=mutates, exit_predicates=(OPEN, FREE))
        verdict = decide_exit(contract, _snap({"account.plan": "pro"}), NOW)
        assert verdict.executable and [o.status for o in verdict.soft] == ["missing"]
        strict = Contract(mutates=mutates, exit_predicates=(replace(OPEN, on_missing="block"),))
        assert decide_exit(strict, _snap({}), NOW).hidden


def test_a_contract_that_reads_nothing_has_no_state_to_miss() -> None:
    down = _snap({}, version=PROVIDER_ERROR_VERSION)
    assert decide_exit(Contract(mutates=True), down, NOW).executable


def test_stage_2_is_the_kernel() -> None:
    catalog = Catalog(
        (
            Skill("transfer", "t", contract=Contract(mutates=True, exit_predicates=(OPEN,))),
            Skill("connect", "c", contract=Contract(exit_predicates=(FREE,))),
        )
    )
    provider = MemoryStateProvider({"acc-1": {"account": {"plan": "free"}}}, clock=lambda: NOW)
    gate = ExecutabilityGate(catalog, provider, lambda: NOW)
    for account in ("acc-1", "nobody"):
        result = gate.check(account, ["transfer", "connect"])
        for outcome in result.outcomes:
            verdict = decide_exit(catalog[outcome.skill].contract, result.snapshot, NOW)
            assert (outcome.visible, outcome.cause, outcome.fired, outcome.soft) == (
                verdict.executable,
                verdict.cause,
                verdict.fired,
                verdict.soft,
            )
