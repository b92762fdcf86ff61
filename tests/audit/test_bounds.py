"""Boundary values read off CEL comparisons and Python predicate sources."""

from __future__ import annotations

from maitred.audit.bounds import DAY, hints_for
from maitred.audit.fixtures import FixtureSpace
from maitred.contract import CelPredicate, exit_predicate
from maitred.contract.predicate import StateView

NOW = 1_780_272_000
WINDOW_S = 14 * DAY
AUDIT_VALUES = {"billing.currency": ["EUR", "USD"]}


def cel(expr: str, *reads: str) -> CelPredicate:
    return CelPredicate(expression=expr, name="p", reads=reads)


def test_numeric_literal_gives_boundary_and_neighbours() -> None:
    hints = hints_for([cel("site.version_count < 2", "site.version_count")], NOW)
    assert hints["site.version_count"].values == [1, 2, 3]


def test_membership_and_flags() -> None:
    hints = hints_for(
        [
            cel('site.status in ["suspended", "deleted"]', "site.status"),
            cel("domain.connected in [true, 1]", "domain.connected"),
        ],
        NOW,
    )
    assert hints["site.status"].values == ["suspended", "deleted"]
    flags = hints["domain.connected"].values
    assert [type(v) for v in flags[:4]] == [bool, bool, int, int]  # True and 1 are both kept


def test_keys_compared_with_each_other_share_values() -> None:
    hints = hints_for(
        [cel("mailbox.count >= mailbox.limit", "mailbox.count", "mailbox.limit")], NOW
    )
    assert hints["mailbox.count"].values == hints["mailbox.limit"].values
    assert hints["mailbox.count"].linked == {"mailbox.limit"}


def test_age_comparisons_become_timestamps() -> None:
    hints = hints_for([cel("now - site.url_changed_at < 2592000", "site.url_changed_at")], NOW)
    edge = NOW - 30 * DAY
    assert {edge - 1, edge, edge + 1} <= set(hints["site.url_changed_at"].values)
    hints = hints_for([cel("billing.due_at < now - 86400", "billing.due_at")], NOW)
    assert {NOW - DAY - 1, NOW - DAY, NOW - DAY + 1} <= set(hints["billing.due_at"].values)


@exit_predicate(reads=["billing.last_payment_at"], max_age_s=21600)
def too_old(state: StateView) -> bool:
    """Older than the window."""
    paid_at = state["billing.last_payment_at"]
    return paid_at is None or bool(state.now - paid_at > WINDOW_S)


@exit_predicate(reads=["billing.currency"])
def odd_currency(state: StateView) -> bool:
    """Not a currency we bill in."""
    return bool(state["billing.currency"] not in ("EUR",))


def test_python_constants_module_names_and_declared_hints() -> None:
    hints = hints_for([too_old, odd_currency], NOW)
    edge = NOW - WINDOW_S
    paid = hints["billing.last_payment_at"].values
    assert {edge - 1, edge, edge + 1} <= set(paid)
    assert 21600 not in paid  # decorator options are not compared values
    assert set(hints["billing.currency"].values) >= {"EUR", "USD"}


def test_pools_add_other_members_odd_values_and_stale_ages() -> None:
    space = FixtureSpace.for_predicates("s", [cel('plan == "free"', "plan"), too_old], NOW)
    pools = {p.key: p for p in space.pools}
    assert pools["plan"].typical == ("free", "other")
    assert pools["plan"].passing == ("other",)
    assert None in pools["plan"].odd
    assert pools["billing.last_payment_at"].ages[:4] == (0, 21599, 21600, 21601)
