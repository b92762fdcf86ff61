"""Every rule of the tau2-airline pack: a passing call, violating calls, and boundaries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maitred.actions import ActionGate, Session
from maitred.actions.packs import tau2_airline
from maitred.actions.packs.tau2_airline._common import FREE_BAGS

from .builders import NOW, check, make_db, read_all

SEG = {"flight_number": "HAT001", "date": "2024-05-20"}


# cancellation ---------------------------------------------------------------------------


def _created(db: dict[str, Any], rid: str, when: str) -> None:
    db["reservations"][rid]["created_at"] = when


def test_cancel_exactly_24_hours_after_booking_is_allowed(gate: ActionGate, db: Any) -> None:
    _created(db, "ECO", "2024-05-14T15:00:00")
    assert check(gate, db, "cancel_reservation", reservation_id="ECO").allow


def test_cancel_one_second_past_24_hours_is_rejected(gate: ActionGate, db: Any) -> None:
    _created(db, "ECO", "2024-05-14T14:59:59")
    d = check(gate, db, "cancel_reservation", reservation_id="ECO")
    assert d.code == "AIRLINE_CANCEL_NOT_ELIGIBLE"
    assert d.fields == ("reservation_id",)
    assert "not executed" in d.message_for_model


def test_cancel_paths(gate: ActionGate, db: Any) -> None:
    assert check(gate, db, "cancel_reservation", reservation_id="BIZ").allow
    assert check(gate, db, "cancel_reservation", reservation_id="AIRCX").allow
    health = read_all(cancel_reason="health")
    assert check(gate, db, "cancel_reservation", health, reservation_id="INS").allow
    weather = read_all(cancel_reason="Weather")
    assert check(gate, db, "cancel_reservation", weather, reservation_id="INS").allow


def test_insurance_without_a_reason_is_not_enough_by_default(db: Any) -> None:
    strict = tau2_airline.make_gate({"now": NOW})
    assert check(strict, db, "cancel_reservation", reservation_id="INS").code == (
        "AIRLINE_CANCEL_NOT_ELIGIBLE"
    )
    other = read_all(cancel_reason="change of plans")
    assert check(strict, db, "cancel_reservation", other, reservation_id="INS").reject
    lax = tau2_airline.make_gate({"now": NOW, "insurance_needs_reason": False})
    assert check(lax, db, "cancel_reservation", reservation_id="INS").allow
    assert lax.rulebook.version != strict.rulebook.version


@pytest.mark.parametrize(
    ("rid", "code"),
    [
        ("FLOWN", "AIRLINE_CANCEL_SEGMENT_FLOWN"),
        ("GONE", "AIRLINE_CANCEL_ALREADY_CANCELLED"),
        ("ECO", "AIRLINE_CANCEL_NOT_ELIGIBLE"),
        ("BASIC", "AIRLINE_CANCEL_NOT_ELIGIBLE"),
    ],
)
def test_cancel_rejections(gate: ActionGate, db: Any, rid: str, code: str) -> None:
    assert check(gate, db, "cancel_reservation", reservation_id=rid).code == code


def test_flown_business_cannot_be_cancelled(gate: ActionGate, db: Any) -> None:
    db["reservations"]["FLOWN"]["cabin"] = "business"
    d = check(gate, db, "cancel_reservation", reservation_id="FLOWN")
    assert d.code == "AIRLINE_CANCEL_SEGMENT_FLOWN"


def test_cancel_of_a_reservation_that_does_not_exist(gate: ActionGate, db: Any) -> None:
    s = read_all()
    s.mark_read("get_reservation_details", "NOPE")
    d = check(gate, db, "cancel_reservation", s, reservation_id="NOPE")
    assert d.code == "AIRLINE_RESERVATION_NOT_FOUND"


def test_now_is_a_setting(db: Any) -> None:
    later = tau2_airline.make_gate({"now": "2024-05-02T10:00:00"})
    assert check(later, db, "cancel_reservation", reservation_id="ECO").allow
    aware = tau2_airline.make_gate({"now": "2024-05-02T14:00:00+00:00"})  # 10:00 Eastern
    assert check(aware, db, "cancel_reservation", reservation_id="ECO").allow


# must read before write -------------------------------------------------------------------


def test_must_read_reservation_before_changing_it(gate: ActionGate, db: Any) -> None:
    d = check(gate, db, "cancel_reservation", Session(), reservation_id="BIZ")
    assert d.code == "AIRLINE_MUST_READ_RESERVATION"
    assert d.fields == ("reservation_id",)
    s = Session()
    s.mark_read("get_reservation_details", "ECO")  # another record does not count
    assert check(gate, db, "cancel_reservation", s, reservation_id="BIZ").reject
    s.mark_read("get_reservation_details", "BIZ")
    assert check(gate, db, "cancel_reservation", s, reservation_id="BIZ").allow


def test_must_read_user_before_booking_or_certificate(gate: ActionGate, db: Any) -> None:
    d = check(gate, db, "send_certificate", Session(), user_id="gold", amount=100)
    assert d.code == "AIRLINE_MUST_READ_USER"
    d = check(gate, db, "book_reservation", Session(), **_booking())
    assert d.code == "AIRLINE_MUST_READ_USER"


# flights ------------------------------------------------------------------------------------


def _change(gate: ActionGate, db: Any, rid: str, flights: list[Any], **kw: Any) -> Any:
    args = {"reservation_id": rid, "cabin": "economy", "flights": flights,
            "payment_id": "credit_card_1", **kw}  # fmt: skip
    return check(gate, db, "update_reservation_flights", **args)


def test_change_flights_allowed(gate: ActionGate, db: Any) -> None:
    assert _change(gate, db, "ECO", [dict(SEG, date="2024-05-22")]).allow
    assert _change(gate, db, "ECO", [SEG], payment_id="gift_card_1").allow
    # basic economy may change cabin, keeping its flights
    assert _change(gate, db, "BASIC", [SEG]).allow


def test_change_flights_rejections(gate: ActionGate, db: Any) -> None:
    new = [dict(SEG, date="2024-05-22")]
    assert _change(gate, db, "BASIC", new, cabin="basic_economy").code == (
        "AIRLINE_FLIGHTS_BASIC_ECONOMY"
    )
    sea = [{"flight_number": "HAT003", "date": "2024-05-20"}]
    d = _change(gate, db, "ECO", sea)
    assert (d.code, d.fields) == ("AIRLINE_FLIGHTS_ROUTE_CHANGED", ("flights",))
    one_way = [SEG]  # a round trip cut to one way
    assert _change(gate, db, "ROUND", one_way).code == "AIRLINE_FLIGHTS_ROUTE_CHANGED"
    flown = [{"flight_number": "HAT001", "date": "2024-05-14"}]
    assert _change(gate, db, "FLOWN", flown, cabin="business").code == (
        "AIRLINE_FLIGHTS_CABIN_AFTER_FLOWN"
    )
    assert _change(gate, db, "ECO", [dict(SEG, date="2024-05-16")]).code == (
        "AIRLINE_FLIGHTS_UNAVAILABLE"
    )
    d = _change(gate, db, "ECO", [SEG], payment_id="certificate_1")
    assert (d.code, d.fields) == ("AIRLINE_FLIGHTS_PAYMENT", ("payment_id",))
    assert _change(gate, db, "ECO", [SEG], payment_id="credit_card_9").code == (
        "AIRLINE_FLIGHTS_PAYMENT"
    )


def test_seats_boundary_for_new_segments(gate: ActionGate, db: Any) -> None:
    one_seat = [dict(SEG, date="2024-05-21")]
    assert _change(gate, db, "ECO", one_seat).allow  # 1 seat, 1 passenger
    db["reservations"]["ECO"]["passengers"] *= 2
    d = _change(gate, db, "ECO", one_seat)
    assert (d.code, d.fields) == ("AIRLINE_FLIGHTS_UNAVAILABLE", ("flights[0]",))


def test_kept_segments_need_no_seat_but_repriced_ones_do(gate: ActionGate, db: Any) -> None:
    db["flights"]["HAT001"]["dates"]["2024-05-20"]["available_seats"]["economy"] = 0
    db["flights"]["HAT001"]["dates"]["2024-05-20"]["available_seats"]["business"] = 0
    assert _change(gate, db, "ECO", [SEG]).allow  # same cabin, same flight: not re-priced
    assert _change(gate, db, "ECO", [SEG], cabin="business").code == ("AIRLINE_FLIGHTS_UNAVAILABLE")


# baggage and passengers ------------------------------------------------------------------------


def _bags(gate: ActionGate, db: Any, rid: str, total: int, nonfree: int, pay: str = "") -> Any:
    return check(gate, db, "update_reservation_baggages", reservation_id=rid,
                 total_baggages=total, nonfree_baggages=nonfree,
                 payment_id=pay or "credit_card_1")  # fmt: skip


def test_baggage_rules(gate: ActionGate, db: Any) -> None:
    assert _bags(gate, db, "ECO", 1, 0).allow  # unchanged total is not a decrease
    assert _bags(gate, db, "ECO", 2, 1).allow
    assert _bags(gate, db, "ECO", 0, 0).code == "AIRLINE_BAGGAGE_DECREASE"
    d = _bags(gate, db, "ECO", 3, 1)
    assert (d.code, d.fields) == ("AIRLINE_BAGGAGE_NONFREE_MISMATCH", ("nonfree_baggages",))
    assert _bags(gate, db, "ECO", 2, 1, "gift_card_99").code == "AIRLINE_BAGGAGE_PAYMENT"


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    membership=st.sampled_from(sorted(FREE_BAGS)),
    cabin=st.sampled_from(["basic_economy", "economy", "business"]),
    pax=st.integers(1, 5),
    extra=st.integers(0, 12),
    offset=st.integers(-3, 3),
)
def test_nonfree_arithmetic(membership: str, cabin: str, pax: int, extra: int, offset: int) -> None:
    db = make_db()
    gate = tau2_airline.make_gate({"now": NOW})
    res = db["reservations"]["ECO"]
    res.update(cabin=cabin, total_baggages=0, nonfree_baggages=0)
    res["passengers"] = res["passengers"] * pax
    db["users"]["reg"]["membership"] = membership
    due = max(0, extra - FREE_BAGS[membership][cabin] * pax)
    d = _bags(gate, db, "ECO", extra, due + offset)
    assert d.allow == (offset == 0)
    if offset:
        assert d.code == "AIRLINE_BAGGAGE_NONFREE_MISMATCH"


def test_passenger_count(gate: ActionGate, db: Any) -> None:
    one = [{"first_name": "C", "last_name": "D", "dob": "1980-02-02"}]
    assert check(gate, db, "update_reservation_passengers", reservation_id="ECO",
                 passengers=one).allow  # fmt: skip
    for people in ([], one * 2):
        d = check(gate, db, "update_reservation_passengers", reservation_id="ECO",
                  passengers=people)  # fmt: skip
        assert (d.code, d.fields) == ("AIRLINE_PASSENGER_COUNT_CHANGED", ("passengers",))


# booking -----------------------------------------------------------------------------------


def _booking(**change: Any) -> dict[str, Any]:
    """Two passengers, economy JFK->LAX on 05-20 (fare 100), insured, 3 bags (1 nonfree)."""
    args = {
        "user_id": "reg", "origin": "JFK", "destination": "LAX", "flight_type": "one_way",
        "cabin": "economy", "flights": [SEG],
        "passengers": [{"first_name": "P", "last_name": "Q", "dob": "1990-01-01"}] * 2,
        "payment_methods": [{"payment_id": "credit_card_1", "amount": 310}],
        "total_baggages": 3, "nonfree_baggages": 1, "insurance": "yes",
    }  # fmt: skip
    args.update(change)
    return args


def test_booking_allowed(gate: ActionGate, db: Any) -> None:
    assert check(gate, db, "book_reservation", **_booking()).allow
    round_trip = _booking(
        flight_type="round_trip",
        flights=[SEG, {"flight_number": "HAT002", "date": "2024-05-25"}],
        payment_methods=[{"payment_id": "credit_card_1", "amount": 510}],
    )
    assert check(gate, db, "book_reservation", **round_trip).allow


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"passengers": [{"first_name": "P", "last_name": "Q", "dob": "1990-01-01"}] * 6},
         "AIRLINE_BOOKING_TOO_MANY_PASSENGERS"),
        ({"payment_methods": [{"payment_id": "credit_card_9", "amount": 310}]},
         "AIRLINE_BOOKING_PAYMENT_METHODS"),
        ({"payment_methods": [{"payment_id": "credit_card_1", "amount": 155},
                              {"payment_id": "credit_card_2", "amount": 155}]},
         "AIRLINE_BOOKING_PAYMENT_METHODS"),
        ({"payment_methods": [{"payment_id": f"gift_card_{i}", "amount": 77.5}
                              for i in range(1, 5)]},
         "AIRLINE_BOOKING_PAYMENT_METHODS"),
        ({"payment_methods": [{"payment_id": "certificate_1", "amount": 110},
                              {"payment_id": "credit_card_1", "amount": 200}]},
         "AIRLINE_BOOKING_PAYMENT_METHODS"),
        ({"destination": "SEA"}, "AIRLINE_BOOKING_ROUTE"),
        ({"flight_type": "round_trip"}, "AIRLINE_BOOKING_ROUTE"),
        ({"flights": [dict(SEG, date="2024-05-15")]}, "AIRLINE_BOOKING_UNAVAILABLE"),
        ({"flights": [dict(SEG, date="2024-05-21")]}, "AIRLINE_BOOKING_UNAVAILABLE"),
        ({"nonfree_baggages": 0}, "AIRLINE_BOOKING_NONFREE_MISMATCH"),
        ({"payment_methods": [{"payment_id": "credit_card_1", "amount": 309}]},
         "AIRLINE_BOOKING_AMOUNT_MISMATCH"),
        ({"insurance": "no"}, "AIRLINE_BOOKING_AMOUNT_MISMATCH"),
    ],
)  # fmt: skip
def test_booking_rejections(gate: ActionGate, db: Any, change: Any, code: str) -> None:
    assert check(gate, db, "book_reservation", **_booking(**change)).code == code


def test_five_passengers_is_the_limit(gate: ActionGate, db: Any) -> None:
    five = _booking(
        passengers=[{"first_name": "P", "last_name": "Q", "dob": "1990-01-01"}] * 5,
        total_baggages=5, nonfree_baggages=0,
        payment_methods=[{"payment_id": "credit_card_1", "amount": 650}],
    )  # fmt: skip
    assert check(gate, db, "book_reservation", **five).allow


@settings(max_examples=150, deadline=None)
@given(
    cuts=st.lists(st.integers(0, 310), min_size=0, max_size=3),
    delta=st.sampled_from([0, 0, 0, -1, 1, 50]),
)
def test_payment_split_must_sum_to_the_price(cuts: list[int], delta: int) -> None:
    """Any split over one credit card and up to three gift cards is fine iff it sums up."""
    gate = tau2_airline.make_gate({"now": NOW})
    db = make_db()
    points = sorted(cuts)
    parts = [b - a for a, b in zip([0, *points], [*points, 310], strict=True)]
    pays = [{"payment_id": "credit_card_1", "amount": parts[0] + delta}]
    pays += [{"payment_id": f"gift_card_{i}", "amount": p} for i, p in enumerate(parts[1:], 1)]
    d = check(gate, db, "book_reservation", **_booking(payment_methods=pays))
    assert d.allow == (delta == 0), d.message
    if delta:
        assert d.code == "AIRLINE_BOOKING_AMOUNT_MISMATCH"


# certificates ---------------------------------------------------------------------------


def _after_reading(rid: str, user: str) -> Session:
    s = Session()
    s.mark_read("get_user_details", user)
    s.mark_read("get_reservation_details", rid)
    return s


def test_certificate_amounts(gate: ActionGate, db: Any) -> None:
    delayed = _after_reading("DELAY", "gold")  # gold, 2 passengers, delayed
    assert check(gate, db, "send_certificate", delayed, user_id="gold", amount=100).allow
    d = check(gate, db, "send_certificate", delayed, user_id="gold", amount=200)
    assert (d.code, d.fields) == ("AIRLINE_CERTIFICATE_AMOUNT", ("amount",))
    db["reservations"]["AIRCX"]["insurance"] = "yes"  # regular, insured, airline-cancelled
    cancelled = _after_reading("AIRCX", "reg")
    assert check(gate, db, "send_certificate", cancelled, user_id="reg", amount=100).allow
    assert check(gate, db, "send_certificate", cancelled, user_id="reg", amount=50).reject


def test_certificate_eligibility(gate: ActionGate, db: Any) -> None:
    s = _after_reading("AIRCX", "reg")  # regular, economy, uninsured
    d = check(gate, db, "send_certificate", s, user_id="reg", amount=100)
    assert d.code == "AIRLINE_CERTIFICATE_NOT_ELIGIBLE"
    s = _after_reading("ECO", "reg")  # nothing disrupted
    s.mark_read("get_user_details", "gold")
    d = check(gate, db, "send_certificate", s, user_id="gold", amount=50)
    assert d.code == "AIRLINE_CERTIFICATE_NOT_ELIGIBLE"  # that reservation is not gold's
    gold_only = Session()
    gold_only.mark_read("get_user_details", "gold")
    d = check(gate, db, "send_certificate", gold_only, user_id="gold", amount=100)
    assert d.code == "AIRLINE_CERTIFICATE_AMOUNT"  # no reservation read: amount unknowable


def test_every_code_is_tested_here() -> None:
    text = Path(__file__).read_text(encoding="utf-8")
    missing = [c for c in tau2_airline.codes() if c not in text]
    assert not missing
