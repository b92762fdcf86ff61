"""A tiny hand-written airline database whose every record is chosen for a rule's boundary."""

from __future__ import annotations

from typing import Any

from maitred.actions import ActionGate, Decision, Session, ToolCall

NOW = "2024-05-15T15:00:00"


def _date(status: str, seats: int = 9, price: int = 100) -> dict[str, Any]:
    if status != "available":
        return {"status": status}
    return {
        "status": "available",
        "available_seats": {"basic_economy": seats, "economy": seats, "business": seats},
        "prices": {"basic_economy": price // 2, "economy": price, "business": price * 3},
    }


def _flight(number: str, origin: str, dest: str, dates: dict[str, Any]) -> dict[str, Any]:
    return {
        "flight_number": number,
        "origin": origin,
        "destination": dest,
        "scheduled_departure_time_est": "08:00:00",
        "scheduled_arrival_time_est": "11:00:00",
        "dates": dates,
    }


def _res(rid: str, user: str, cabin: str, flights: list[tuple[str, str]], **extra: Any) -> Any:
    legs = {"HAT001": ("JFK", "LAX"), "HAT002": ("LAX", "JFK"), "HAT003": ("JFK", "SEA")}
    segs = [
        {"flight_number": n, "date": d, "origin": legs[n][0], "destination": legs[n][1],
         "price": 100}
        for n, d in flights
    ]  # fmt: skip
    base = {
        "reservation_id": rid, "user_id": user, "origin": segs[0]["origin"],
        "destination": segs[0]["destination"], "flight_type": "one_way", "cabin": cabin,
        "flights": segs, "passengers": [{"first_name": "A", "last_name": "B", "dob": "1990-01-01"}],
        "payment_history": [{"payment_id": "credit_card_1", "amount": 100}],
        "created_at": "2024-05-01T10:00:00", "total_baggages": 1, "nonfree_baggages": 0,
        "insurance": "no",
    }  # fmt: skip
    base.update(extra)
    return base


def make_db() -> dict[str, Any]:
    flights = {
        "HAT001": _flight("HAT001", "JFK", "LAX", {
            "2024-05-14": _date("landed"), "2024-05-15": _date("delayed"),
            "2024-05-16": _date("cancelled"), "2024-05-20": _date("available"),
            "2024-05-21": _date("available", seats=1), "2024-05-22": _date("available"),
        }),
        "HAT002": _flight("HAT002", "LAX", "JFK", {
            "2024-05-20": _date("available"), "2024-05-25": _date("available"),
        }),
        "HAT003": _flight("HAT003", "JFK", "SEA", {"2024-05-20": _date("available")}),
    }  # fmt: skip
    users = {
        "reg": {"user_id": "reg", "membership": "regular", "reservations": [],
                "payment_methods": {
                    "credit_card_1": {"source": "credit_card", "id": "credit_card_1"},
                    "credit_card_2": {"source": "credit_card", "id": "credit_card_2"},
                    "gift_card_1": {"source": "gift_card", "id": "gift_card_1", "amount": 500},
                    "gift_card_2": {"source": "gift_card", "id": "gift_card_2", "amount": 500},
                    "gift_card_3": {"source": "gift_card", "id": "gift_card_3", "amount": 500},
                    "gift_card_4": {"source": "gift_card", "id": "gift_card_4", "amount": 500},
                    "certificate_1": {"source": "certificate", "id": "certificate_1",
                                      "amount": 100},
                }},
        "gold": {"user_id": "gold", "membership": "gold", "reservations": [],
                 "payment_methods": {
                     "credit_card_9": {"source": "credit_card", "id": "credit_card_9"}}},
    }  # fmt: skip
    reservations = {
        "ECO": _res("ECO", "reg", "economy", [("HAT001", "2024-05-20")]),
        "BASIC": _res("BASIC", "reg", "basic_economy", [("HAT001", "2024-05-20")]),
        "BIZ": _res("BIZ", "reg", "business", [("HAT001", "2024-05-20")]),
        "FLOWN": _res("FLOWN", "reg", "economy", [("HAT001", "2024-05-14")]),
        "DELAY": _res("DELAY", "gold", "economy", [("HAT001", "2024-05-15")],
                      passengers=[{"first_name": "A", "last_name": "B", "dob": "1990-01-01"}] * 2),
        "AIRCX": _res("AIRCX", "reg", "economy", [("HAT001", "2024-05-16")]),
        "INS": _res("INS", "reg", "economy", [("HAT001", "2024-05-20")], insurance="yes"),
        "GONE": _res("GONE", "reg", "economy", [("HAT001", "2024-05-20")], status="cancelled"),
        "ROUND": _res("ROUND", "reg", "economy",
                      [("HAT001", "2024-05-20"), ("HAT002", "2024-05-25")],
                      flight_type="round_trip"),
    }  # fmt: skip
    return {"flights": flights, "users": users, "reservations": reservations}


def read_all(session: Session | None = None, **context: Any) -> Session:
    """A session that has read every user and reservation of :func:`make_db`."""
    s = session or Session(context=dict(context))
    for uid in make_db()["users"]:
        s.mark_read("get_user_details", uid)
    for rid in make_db()["reservations"]:
        s.mark_read("get_reservation_details", rid)
    return s


def check(
    gate: ActionGate, db: dict[str, Any], name: str, session: Session | None = None, **args: Any
) -> Decision:
    return gate.check(ToolCall(name, args), db, session if session is not None else read_all())
