"""A seeded generator of airline databases in the tau2 schema.

The same ``(seed, sizes, now)`` always gives the same database. Dates run from ten days before
``now`` to twenty days after: earlier dates are ``landed`` (a few ``cancelled``), today's flights
are ``landed``/``flying``/``on time``/``delayed``/``cancelled`` by departure time, later dates are
``available`` with seats and prices (a few sold out in a cabin, a few ``cancelled`` or
``delayed``, so certificate and cancellation cases exist). Reservations are consistent with
the policy when created: nonfree bags and payments add up, ``created_at`` is before ``now``,
and about one in six was booked within the last day.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

AIRPORTS = ("ATL", "BOS", "DEN", "DFW", "JFK", "LAX", "MIA", "ORD", "SEA", "SFO")
FIRST = ("Mia", "Noah", "Ava", "Liam", "Emma", "Omar", "Yara", "Ivan", "Sofia", "Raj", "Lena")
LAST = ("Li", "Garcia", "Kim", "Smith", "Ahmed", "Rossi", "Novak", "Patel", "Silva", "Brown")
CABINS = ("basic_economy", "economy", "business")
PRICE = {"basic_economy": (50, 100), "economy": (100, 200), "business": (250, 600)}


def generate_db(
    seed: int = 0, n_users: int = 40, now: str = "2024-05-15T15:00:00"
) -> dict[str, Any]:
    """A database with ``n_users`` users, their reservations and a flight network."""
    rng = random.Random(seed)
    clock = datetime.fromisoformat(now)
    flights = _flights(rng, clock)
    users: dict[str, Any] = {}
    reservations: dict[str, Any] = {}
    for _ in range(n_users):
        uid, user = _user(rng)
        users[uid] = user
        for _ in range(rng.randint(1, 4)):
            res = _reservation(rng, clock, uid, user, flights)
            if res is not None and res["reservation_id"] not in reservations:
                reservations[res["reservation_id"]] = res
                user["reservations"].append(res["reservation_id"])
    return {"flights": flights, "users": users, "reservations": reservations}


def _today_status(rng: random.Random, depart: str, clock: datetime) -> str:
    hour = int(depart[:2])
    if rng.random() < 0.1:
        return "cancelled"
    if hour + 3 <= clock.hour:
        return "landed"
    if hour <= clock.hour:
        return "flying"
    return "delayed" if rng.random() < 0.3 else "on time"


def _date_record(rng: random.Random, day: datetime, depart: str, clock: datetime) -> Any:
    if day.date() < clock.date():
        return {"status": "cancelled" if rng.random() < 0.05 else "landed"}
    if day.date() == clock.date():
        return {"status": _today_status(rng, depart, clock)}
    roll = rng.random()
    if roll < 0.04:
        return {"status": "cancelled"}
    if roll < 0.08 and day.date() <= (clock + timedelta(days=2)).date():
        return {"status": "delayed"}
    seats = {
        c: rng.choice([0, 1, 2, 5, 9, 14, 20]) if rng.random() < 0.1 else rng.randint(3, 20)
        for c in CABINS
    }
    prices = {c: rng.randint(*PRICE[c]) for c in CABINS}
    return {"status": "available", "available_seats": seats, "prices": prices}


def _flights(rng: random.Random, clock: datetime) -> dict[str, Any]:
    flights: dict[str, Any] = {}
    pairs = [(a, b) for a in AIRPORTS for b in AIRPORTS if a != b and rng.random() < 0.45]
    days = [clock + timedelta(days=d) for d in range(-10, 21)]
    for n, (origin, dest) in enumerate(pairs):
        for k in range(rng.randint(1, 2)):
            dep = rng.randint(5, 19)
            number = f"HAT{n * 2 + k + 1:03d}"
            depart = f"{dep:02d}:{rng.choice([0, 30]):02d}:00"
            arrive = f"{min(23, dep + rng.randint(2, 4)):02d}:{rng.choice([0, 30]):02d}:00"
            flights[number] = {
                "flight_number": number,
                "origin": origin,
                "destination": dest,
                "scheduled_departure_time_est": depart,
                "scheduled_arrival_time_est": arrive,
                "dates": {
                    d.strftime("%Y-%m-%d"): _date_record(rng, d, depart, clock) for d in days
                },
            }
    return flights


def _user(rng: random.Random) -> tuple[str, dict[str, Any]]:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    uid = f"{first.lower()}_{last.lower()}_{rng.randint(1000, 9999)}"
    methods: dict[str, Any] = {}
    for _ in range(rng.randint(1, 2)):
        pid = f"credit_card_{rng.randint(10**6, 10**7 - 1)}"
        methods[pid] = {"source": "credit_card", "id": pid, "brand": "visa", "last_four": "1234"}
    for _ in range(rng.randint(0, 2)):
        pid = f"gift_card_{rng.randint(10**6, 10**7 - 1)}"
        methods[pid] = {"source": "gift_card", "id": pid, "amount": rng.randint(0, 400)}
    for _ in range(rng.randint(0, 2)):
        pid = f"certificate_{rng.randint(10**6, 10**7 - 1)}"
        methods[pid] = {"source": "certificate", "id": pid, "amount": rng.choice([100, 250, 500])}
    membership = rng.choices(["regular", "silver", "gold"], [5, 3, 2])[0]
    user = {
        "user_id": uid,
        "name": {"first_name": first, "last_name": last},
        "membership": membership,
        "payment_methods": methods,
        "saved_passengers": [],
        "reservations": [],
    }
    return uid, user


def _route(rng: random.Random, flights: dict[str, Any], round_trip: bool) -> list[str] | None:
    """Flight numbers of a direct itinerary (and its return), or None."""
    number = rng.choice(sorted(flights))
    out = flights[number]
    if not round_trip:
        return [number]
    back = [
        n
        for n, f in sorted(flights.items())
        if f["origin"] == out["destination"] and f["destination"] == out["origin"]
    ]
    return [number, rng.choice(back)] if back else None


def _reservation(
    rng: random.Random, clock: datetime, uid: str, user: dict[str, Any], flights: dict[str, Any]
) -> dict[str, Any] | None:
    round_trip = rng.random() < 0.4
    numbers = _route(rng, flights, round_trip)
    if numbers is None:
        return None
    start = clock + timedelta(days=rng.randint(-8, 14))
    dates = [start, start + timedelta(days=rng.randint(2, 5))][: len(numbers)]
    cabin = rng.choices(CABINS, [3, 5, 2])[0]
    segments = []
    for number, day in zip(numbers, dates, strict=True):
        date = day.strftime("%Y-%m-%d")
        if date not in flights[number]["dates"]:
            return None
        prices = flights[number]["dates"][date].get("prices", {})
        price = int(prices.get(cabin, rng.randint(*PRICE[cabin])))
        f = flights[number]
        segments.append(
            {
                "flight_number": number,
                "date": date,
                "origin": f["origin"],
                "destination": f["destination"],
                "price": price,
            }
        )
    pax = rng.randint(1, 3)
    passengers = [
        {
            "first_name": rng.choice(FIRST),
            "last_name": rng.choice(LAST),
            "dob": f"19{rng.randint(50, 99)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
        }
        for _ in range(pax)
    ]
    free = {"regular": (0, 1, 2), "silver": (1, 2, 3), "gold": (2, 3, 4)}[user["membership"]]
    total_bags = rng.randint(0, pax * 2)
    nonfree = max(0, total_bags - free[CABINS.index(cabin)] * pax)
    insurance = "yes" if rng.random() < 0.35 else "no"
    amount = sum(s["price"] for s in segments) * pax + 50 * nonfree
    amount += 30 * pax if insurance == "yes" else 0
    card = next(p for p, m in user["payment_methods"].items() if m["source"] == "credit_card")
    hours_ago = rng.uniform(1, 23) if rng.random() < 0.17 else rng.uniform(25, 24 * 20)
    created = min(clock - timedelta(hours=hours_ago), start - timedelta(hours=1))
    rid = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6))
    res: dict[str, Any] = {
        "reservation_id": rid,
        "user_id": uid,
        "origin": segments[0]["origin"],
        "destination": segments[0]["destination"],
        "flight_type": "round_trip" if round_trip else "one_way",
        "cabin": cabin,
        "flights": segments,
        "passengers": passengers,
        "payment_history": [{"payment_id": card, "amount": amount}],
        "created_at": created.replace(microsecond=0).isoformat(),
        "total_baggages": total_bags,
        "nonfree_baggages": nonfree,
        "insurance": insurance,
    }
    if rng.random() < 0.08:
        res["status"] = "cancelled"
    return res
