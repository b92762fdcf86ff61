"""The airline skill folders: strict Agent Skills, loadable contracts, predicates that bite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maitred.contract import Contract, load_sidecar
from maitred.contract.evaluate import evaluate
from maitred.contract.kernel import exits
from maitred.lab.domains import get_domain
from maitred.lab.domains.airline import skills_dir
from maitred.skills.catalog import load_catalog, validate
from maitred.state import Snapshot

SKILLS = sorted(p for p in skills_dir().iterdir() if p.is_dir())
NOW = 1_715_785_200  # 2024-05-15T15:00:00Z
HOUR, DAY = 3600, 86400

#: a state in which every airline skill is offered; each case below changes a few keys
HAPPY: dict[str, Any] = {
    "user.membership": "silver",
    "user.reservation_count": 2,
    "user.payment_method_count": 2,
    "user.card_on_file": True,
    "reservation.status": "active",
    "reservation.cabin": "economy",
    "reservation.insurance": "no",
    "reservation.created_at": NOW - 2 * HOUR,
    "reservation.amount_paid": 312,
    "reservation.segments_remaining": 2,
    "reservation.segment_flown": False,
    "reservation.segment_cancelled": False,
    "reservation.segment_delayed": True,
    "reservation.certificate_sent": False,
    "flight.departs_at": NOW + DAY,
    "inventory.sales_open": True,
    "support.queue_open": 1,
}
#: where HAPPY is not a state the skill runs in: only a cancelled reservation has a refund
OVERRIDES: dict[str, dict[str, Any]] = {"track-refund": {"reservation.status": "cancelled"}}


def _contract(name: str) -> Contract:
    return load_sidecar(skills_dir() / name, name)[0]


def _held(name: str, changes: dict[str, Any], drop: tuple[str, ...] = ()) -> list[str]:
    """The exit predicates of skill ``name`` that hold in its happy state updated by ``changes``."""
    state = {**HAPPY, **OVERRIDES.get(name, {}), **changes}
    values = {k: v for k, v in state.items() if k not in drop}
    snap = Snapshot("user-1", values, float(NOW), missing=frozenset(drop))
    return [p.name for p in _contract(name).exit_predicates if evaluate(p, snap, NOW).holds]


def test_strict_validation_is_clean() -> None:
    report = validate([str(skills_dir())], strict=True)
    assert report["errors"] == [] and report["warnings"] == []
    assert report["valid"] == report["skills"] == len(SKILLS) >= 12


def test_catalog_loads_with_contracts_and_registry_agrees() -> None:
    catalog = load_catalog(skills_dir(), strict=True)
    assert sorted(s.name for s in catalog) == [p.name for p in SKILLS]
    assert {s.family for s in catalog} == {"airline"}
    assert {s.contract.cost for s in catalog} == {1.0, 2.0, 3.0}  # heterogeneous costs
    assert any(s.contract.mutates for s in catalog) and not all(s.contract.mutates for s in catalog)
    assert get_domain("airline").skills_dir == skills_dir()


@pytest.mark.parametrize("folder", SKILLS, ids=lambda p: p.name)
def test_skill_md_says_what_and_when(folder: Path) -> None:
    catalog = load_catalog(folder, strict=True)
    skill = catalog.skills[0]
    assert skill.name == folder.name and skill.license == "Apache-2.0"
    assert "Use when" in skill.description and 40 <= len(skill.description.split()) <= 75
    assert set(skill.metadata) == {"family", "owner", "version"}
    for heading in ("## Before you start", "## Steps", "## What to tell the customer"):
        assert heading in skill.body, heading


@pytest.mark.parametrize("folder", SKILLS, ids=lambda p: p.name)
def test_sidecar_loads(folder: Path) -> None:
    contract, family = load_sidecar(folder, folder.name)
    assert family == "airline"
    assert contract.cost in (1, 2, 3) and contract.procedure is None
    assert 1 <= len(contract.exit_predicates) <= 4
    for predicate in contract.exit_predicates:
        assert predicate.reads and predicate.message, predicate.name
        assert set(predicate.reads) <= set(HAPPY), predicate.name  # the documented keys


@pytest.mark.parametrize("folder", SKILLS, ids=lambda p: p.name)
def test_happy_state_offers_every_skill(folder: Path) -> None:
    assert _held(folder.name, {}) == []


@pytest.mark.parametrize("folder", SKILLS, ids=lambda p: p.name)
def test_nothing_known_blocks_unless_declared_fail_open(folder: Path) -> None:
    contract = _contract(folder.name)
    snap = Snapshot("user-1", {}, float(NOW), missing=contract.reads)
    open_ = all(p.on_missing == "offer" for p in contract.exit_predicates)
    assert exits(contract, snap, NOW) is not open_


@pytest.mark.parametrize(
    ("skill", "changes", "held"),
    [
        ("cancel-reservation", {"reservation.created_at": NOW - 3 * DAY}, ["not_eligible"]),
        ("cancel-reservation", {"reservation.created_at": NOW - DAY}, []),  # 24h still counts
        (
            "cancel-reservation",
            {"reservation.created_at": NOW - 3 * DAY, "reservation.insurance": "yes"},
            [],
        ),
        (
            "cancel-reservation",
            {"reservation.created_at": NOW - 3 * DAY, "reservation.segment_cancelled": 1},
            [],
        ),
        (
            "cancel-reservation",
            {"reservation.status": "cancelled", "reservation.segment_flown": 1},
            ["already_cancelled", "segment_flown"],
        ),
        ("change-flight", {"reservation.cabin": "basic_economy"}, ["basic_economy_fare"]),
        ("change-flight", {"user.card_on_file": 0}, ["no_card_on_file"]),
        ("change-cabin", {"reservation.cabin": "basic_economy"}, []),
        ("change-cabin", {"reservation.segment_flown": True}, ["segment_flown"]),
        ("add-checked-bags", {"reservation.segments_remaining": 0}, ["trip_completed"]),
        ("update-passengers", {"reservation.status": "cancelled"}, ["already_cancelled"]),
        ("compensate-disruption", {"reservation.segment_delayed": False}, ["no_disruption"]),
        ("compensate-disruption", {"user.membership": "regular"}, ["not_eligible"]),
        (
            "compensate-disruption",
            {"user.membership": "regular", "reservation.cabin": "business"},
            [],
        ),
        ("compensate-disruption", {"reservation.certificate_sent": 1}, ["already_compensated"]),
        ("check-flight-status", {"flight.departs_at": NOW - 8 * DAY}, ["status_archived"]),
        ("check-flight-status", {"flight.departs_at": NOW - 6 * DAY}, []),
        ("book-flight", {"user.payment_method_count": 0}, ["no_payment_method"]),
        ("find-flights", {"inventory.sales_open": 0}, ["sales_paused"]),
        ("lookup-reservation", {"user.reservation_count": 0}, ["no_reservations"]),
        ("track-refund", {"reservation.status": "active"}, ["not_cancelled"]),
        ("track-refund", {"reservation.amount_paid": 0}, ["nothing_paid"]),
        ("review-travel-insurance", {"reservation.segments_remaining": 0}, ["trip_completed"]),
        ("transfer-to-human", {"support.queue_open": False}, ["queue_closed"]),
    ],
)
def test_predicates_bite(skill: str, changes: dict[str, Any], held: list[str]) -> None:
    assert _held(skill, changes) == held


def test_missing_state_follows_each_predicates_policy() -> None:
    assert _held("check-flight-status", {}, drop=("flight.departs_at",)) == []
    assert _held("compensate-disruption", {}, drop=("reservation.certificate_sent",)) == []
    assert _held("cancel-reservation", {}, drop=("reservation.insurance",)) == ["not_eligible"]
