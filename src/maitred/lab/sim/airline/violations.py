"""One violating trajectory per rule of the ``tau2-airline`` pack, found in a database.

Each trajectory reads what a careful agent would read and then makes one write that breaks
exactly one rule; ``expect`` is the code the gate must answer. Rules whose violation a
database cannot show (no suitable record) are left out; :func:`violations` documents which by
returning only what it found.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from maitred.lab.sim.airline.tasks import (
    Call,
    _eligible,
    _Finder,
    _plain,
    booking_args,
    call,
)

Built = list[Call] | None


def _res_write(
    f: _Finder,
    test: Callable[[dict[str, Any]], bool],
    write: Callable[[dict[str, Any]], Call | None],
) -> Built:
    for res in f.reservations(test):
        made = write(res)
        if made is not None:
            return [*f.reads(res), made]
    return None


def _cancel(res: dict[str, Any]) -> Call:
    return call("cancel_reservation", reservation_id=res["reservation_id"])


def _flights(
    res: dict[str, Any], segs: list[dict[str, Any]], cabin: str | None = None, pay: str = ""
) -> Call:
    return call(
        "update_reservation_flights",
        reservation_id=res["reservation_id"],
        cabin=cabin or res["cabin"],
        flights=segs,
        payment_id=pay,
    )


def _same(res: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"flight_number": s["flight_number"], "date": s["date"]} for s in res["flights"]]


def _bags(
    f: _Finder, res: dict[str, Any], total: int, nonfree: int | None = None, pay: str | None = None
) -> Call:
    user = f.user(res)
    due = f.nonfree(total, len(res["passengers"]), user["membership"], res["cabin"])
    return call(
        "update_reservation_baggages",
        reservation_id=res["reservation_id"],
        total_baggages=total,
        nonfree_baggages=due if nonfree is None else nonfree,
        payment_id=pay or f.card(user),
    )


def _reservation_rules(f: _Finder) -> dict[str, Built]:
    live = f.live

    def other_date(r: dict[str, Any]) -> tuple[str, str, int] | None:
        seg = r["flights"][0]
        pax = len(r["passengers"])
        return f.open_seat(seg["origin"], seg["destination"], r["cabin"], pax, after=seg["date"])

    return {
        "AIRLINE_MUST_READ_RESERVATION": [_cancel(f.first(lambda r: True) or {})],
        "AIRLINE_CANCEL_ALREADY_CANCELLED": _res_write(f, lambda r: not live(r), _cancel),
        "AIRLINE_CANCEL_SEGMENT_FLOWN": _res_write(f, lambda r: live(r) and f.flown(r), _cancel),
        "AIRLINE_CANCEL_NOT_ELIGIBLE": _res_write(
            f, lambda r: _plain(f, r) and r["insurance"] == "no", _cancel
        ),
        "AIRLINE_FLIGHTS_BASIC_ECONOMY": _res_write(
            f,
            lambda r: (
                live(r)
                and not f.flown(r)
                and r["cabin"] == "basic_economy"
                and r["flight_type"] == "one_way"
            ),
            lambda r: (
                None
                if (o := other_date(r)) is None
                else _flights(
                    r, [{"flight_number": o[0], "date": o[1]}], pay=f.card(f.user(r)) or ""
                )
            ),
        ),
        "AIRLINE_FLIGHTS_ROUTE_CHANGED": _res_write(
            f,
            lambda r: live(r) and not f.flown(r) and r["cabin"] != "basic_economy",
            lambda r: _flights(r, _same(r)[:1] + _same(r)[:1], pay=f.card(f.user(r)) or ""),
        ),
        "AIRLINE_FLIGHTS_CABIN_AFTER_FLOWN": _res_write(
            f,
            lambda r: live(r) and f.flown(r) and r["cabin"] != "business",
            lambda r: _flights(r, _same(r), "business", f.card(f.user(r)) or ""),
        ),
        "AIRLINE_FLIGHTS_UNAVAILABLE": _res_write(
            f,
            lambda r: (
                live(r)
                and not f.flown(r)
                and r["cabin"] != "basic_economy"
                and r["flight_type"] == "one_way"
            ),
            lambda r: _flights(
                r,
                [{"flight_number": r["flights"][0]["flight_number"], "date": "2024-05-06"}],
                pay=f.card(f.user(r)) or "",
            ),
        ),
        "AIRLINE_FLIGHTS_PAYMENT": _res_write(
            f, live, lambda r: _flights(r, _same(r), pay="credit_card_0000000")
        ),
        "AIRLINE_BAGGAGE_DECREASE": _res_write(
            f,
            lambda r: live(r) and r["total_baggages"] > 0,
            lambda r: _bags(f, r, r["total_baggages"] - 1),
        ),
        "AIRLINE_BAGGAGE_NONFREE_MISMATCH": _res_write(
            f,
            live,
            lambda r: (
                _bags(f, r, r["total_baggages"] + 3, nonfree=0)
                if f.nonfree(
                    r["total_baggages"] + 3,
                    len(r["passengers"]),
                    f.user(r)["membership"],
                    r["cabin"],
                )
                > 0
                else None
            ),
        ),
        "AIRLINE_BAGGAGE_PAYMENT": _res_write(
            f, live, lambda r: _bags(f, r, r["total_baggages"], pay="gift_card_0000000")
        ),
        "AIRLINE_PASSENGER_COUNT_CHANGED": _res_write(
            f,
            live,
            lambda r: call(
                "update_reservation_passengers",
                reservation_id=r["reservation_id"],
                passengers=[*r["passengers"], r["passengers"][0]],
            ),
        ),
    }


def _booking_rules(f: _Finder) -> dict[str, Built]:
    user = f.db["users"][sorted(f.db["users"])[0]]
    base = booking_args(f, user)
    if base is None:
        return {}
    read = call("get_user_details", user_id=user["user_id"])

    def book(**change: Any) -> Built:
        args = {**copy.deepcopy(base), **change}
        return [read, call("book_reservation", **args)]

    pay = base["payment_methods"][0]
    six = [dict(base["passengers"][0], first_name=f"P{i}") for i in range(6)]
    return {
        "AIRLINE_MUST_READ_USER": [call("book_reservation", **base)],
        "AIRLINE_BOOKING_TOO_MANY_PASSENGERS": book(passengers=six),
        "AIRLINE_BOOKING_PAYMENT_METHODS": book(
            payment_methods=[dict(pay, payment_id="credit_card_0000000")]
        ),
        "AIRLINE_BOOKING_ROUTE": book(destination=base["origin"]),
        "AIRLINE_BOOKING_UNAVAILABLE": book(flights=[dict(base["flights"][0], date="2024-05-06")]),
        "AIRLINE_BOOKING_NONFREE_MISMATCH": book(
            nonfree_baggages=base["nonfree_baggages"] + 1,
            payment_methods=[dict(pay, amount=pay["amount"] + 50)],
        ),
        "AIRLINE_BOOKING_AMOUNT_MISMATCH": book(
            payment_methods=[dict(pay, amount=pay["amount"] - 1)]
        ),
    }


def _certificate_rules(f: _Finder) -> dict[str, Built]:
    from maitred.lab.sim.airline.tasks import _disrupted

    def cert(
        test: Callable[[dict[str, Any]], bool], amount: Callable[[dict[str, Any]], Any]
    ) -> Built:
        return _res_write(
            f, test, lambda r: call("send_certificate", user_id=r["user_id"], amount=amount(r))
        )

    return {
        "AIRLINE_CERTIFICATE_NOT_ELIGIBLE": cert(
            lambda r: not _eligible(f, r) and _disrupted(f, r) is not None,
            lambda r: _disrupted(f, r),
        ),
        "AIRLINE_CERTIFICATE_AMOUNT": cert(
            lambda r: _eligible(f, r) and _disrupted(f, r) is not None,
            lambda r: (_disrupted(f, r) or 0) + 50,
        ),
    }


def violations(db: dict[str, Any], seed: int = 0) -> list[dict[str, Any]]:
    """Trajectories ``{"id", "context", "calls", "expect"}``, one per rule the db can show."""
    f = _Finder(db, seed)
    found = {**_reservation_rules(f), **_booking_rules(f), **_certificate_rules(f)}
    return [
        {"id": f"violates-{code.lower()}", "context": {}, "calls": calls, "expect": code}
        for code, calls in sorted(found.items())
        if calls is not None
    ]
