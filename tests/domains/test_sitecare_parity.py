"""Parity: each sitecare procedure completes exactly when the gate would offer its skill.

States are generated per skill over exactly the keys its predicates read, with boundary values
(timestamps a second either side of 1, 14, 30 and 60 days), odd values (unknown enum members,
``None``), missing keys and stale keys (ages a second either side of each freshness bound).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maitred.contract import Contract, load_sidecar
from maitred.contract.kernel import exits
from maitred.lab.domains.sitecare import skills_dir
from maitred.state import Snapshot

NOW = 1_780_272_000
DAY = 86400
SKILLS = sorted(p for p in skills_dir().iterdir() if p.is_dir())

_ENUMS: dict[str, tuple[str, ...]] = {
    "account.plan": ("free", "basic", "premium", "business", "enterprise"),
    "billing.status": ("active", "past_due", "cancelled", "none", "frozen"),
    "subscription.status": ("active", "past_due", "cancelled", "expired", "trialing"),
    "domain.status": ("none", "pending", "active", "expired", "transfer_locked", "parked"),
    "site.status": ("draft", "published", "suspended", "deleted", "archived"),
}
_BOUNDARIES = [NOW - d * DAY + delta for d in (0, 1, 14, 30, 60) for delta in (-1, 0, 1)]
_AGES = [0, 3599, 3600, 3601, 21599, 21600, 21601, 86399, 86400, 86401, 604800, 604801, 10**7]


def typical(key: str) -> st.SearchStrategy[Any]:
    """Plausible values for one state key, boundaries included."""
    field = key.split(".", 1)[1]
    if key in _ENUMS:
        return st.sampled_from(_ENUMS[key][:-1])
    if field.endswith("_at"):
        return st.one_of(st.sampled_from(_BOUNDARIES), st.integers(NOW - 400 * DAY, NOW))
    if field in {"count", "limit", "version_count"}:
        return st.integers(0, 6)
    if field == "last_payment_amount":
        return st.sampled_from([0, 1, 900, 1800, 35000])
    return st.sampled_from([True, False, 1, 0])  # flags: bools, or 0/1 as SQLite stores them


def odd(key: str) -> st.SearchStrategy[Any]:
    """Values a well-behaved source should not send: unknown members, None, out of range."""
    if key in _ENUMS:
        return st.sampled_from((_ENUMS[key][-1], "", None))
    return st.one_of(st.none(), st.integers(-(10**9), -1), st.text(max_size=3))


@st.composite
def snapshots(draw: st.DrawFn, keys: frozenset[str]) -> Snapshot:
    """A snapshot over ``keys``: mostly present and fresh, some missing, stale or odd."""
    values: dict[str, Any] = {}
    key_as_of: dict[str, float] = {}
    for key in sorted(keys):
        mode = draw(st.integers(0, 15))
        if mode == 0:
            continue  # missing
        values[key] = draw(odd(key) if mode == 1 else typical(key))
        age = draw(st.sampled_from(_AGES)) if draw(st.integers(0, 5)) == 0 else 0
        key_as_of[key] = float(NOW - age)
    missing = frozenset(keys - values.keys())
    return Snapshot("acc-000001", values, float(NOW), key_as_of, missing)


def _contract(folder: Path) -> Contract:
    return load_sidecar(folder, folder.name)[0]


@pytest.mark.parametrize("folder", SKILLS, ids=lambda p: p.name)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_procedure_completes_iff_gate_offers(folder: Path, data: st.DataObject) -> None:
    contract = _contract(folder)
    snap = data.draw(snapshots(contract.reads))
    result = contract.run(folder.name, snap, NOW)
    assert result.completed is (not exits(contract, snap, NOW))
    if result.completed:
        assert result.calls, "a completed procedure performed its steps through ctx.tools"
    else:
        assert result.exit is not None and result.exit.holds


@pytest.mark.parametrize("folder", SKILLS, ids=lambda p: p.name)
def test_empty_state_is_blocked_or_offered_consistently(folder: Path) -> None:
    """With nothing known, fail-closed predicates block and the procedure stops too."""
    contract = _contract(folder)
    snap = Snapshot("acc-000001", {}, float(NOW), missing=contract.reads)
    assert exits(contract, snap, NOW)
    assert not contract.run(folder.name, snap, NOW).completed


#: a state in which every skill can run, save the per-skill overrides below
HAPPY: dict[str, Any] = {
    "account.plan": "premium",
    "account.email_verified": True,
    "billing.status": "active",
    "billing.last_payment_at": NOW - 3 * DAY,
    "billing.last_payment_amount": 1800,
    "billing.refund_requested": False,
    "subscription.status": "active",
    "subscription.cancel_at_period_end": False,
    "domain.owned": True,
    "domain.status": "active",
    "domain.registrar_lock": False,
    "domain.registered_at": NOW - 400 * DAY,
    "domain.connected": True,
    "site.status": "published",
    "site.version_count": 12,
    "site.url_changed_at": None,
    "site.premium_features": True,
    "mailbox.count": 1,
    "mailbox.limit": 5,
    "security.two_factor": True,
    "security.identity_verified": True,
    "security.last_reset_at": None,
}
OVERRIDES: dict[str, dict[str, Any]] = {
    "connect-domain": {"domain.connected": False},
    "change-site-url": {"domain.connected": False},
}


def happy(skill: str, keys: frozenset[str]) -> dict[str, Any]:
    state = {**HAPPY, **OVERRIDES.get(skill, {})}
    return {k: state[k] for k in keys}


@pytest.mark.parametrize("folder", SKILLS, ids=lambda p: p.name)
def test_happy_state_completes_and_each_missing_key_policy_is_honoured(folder: Path) -> None:
    contract = _contract(folder)
    values = happy(folder.name, contract.reads)
    snap = Snapshot("acc-000001", values, float(NOW))
    assert not exits(contract, snap, NOW)
    result = contract.run(folder.name, snap, NOW, args={"domain": "bluebirdbakery.com"})
    assert result.completed and result.calls
    for predicate in contract.exit_predicates:
        partial = {k: v for k, v in values.items() if k not in predicate.reads}
        gone = Snapshot("acc-000001", partial, float(NOW), missing=frozenset(predicate.reads))
        blocked = exits(contract, gone, NOW)
        if predicate.on_missing == "block":
            assert blocked, predicate.name
        assert contract.run(folder.name, gone, NOW).completed is (not blocked)
