"""Tasks with gold call sequences and expected final state, and one violating call per rule.

A task is what a user wants (``instruction``), what the application knows (``context``, e.g. a
stated cancellation reason), the gold sequence of calls that a policy-following agent makes
(reads, then writes) and the content hash of the database after the gold calls. Tasks are
found in a generated database by looking for records that fit each kind (a reservation booked
within the last day, a delayed flight of a gold member ...); the same database and seed give
the same tasks.

:func:`violations` builds, for each rule of the ``tau2-airline`` pack, a trajectory whose last
call breaks exactly that rule, with the code the gate must answer (``expect``). The price and
bag arithmetic here is written independently of the pack, so the tests cross-check the two.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from maitred.lab.sim.airline.tools import AirlineSim, state_hash

NOW_DATE = "2024-05-15"
FREE = {"regular": (0, 1, 2), "silver": (1, 2, 3), "gold": (2, 3, 4)}
CABINS = ("basic_economy", "economy", "business")

Call = dict[str, Any]


def call(name: str, **arguments: Any) -> Call:
    return {"name": name, "arguments": arguments}


@dataclass(frozen=True)
class Task:
    """One task: the gold calls and the database hash they lead to."""

    id: str
    kind: str
    instruction: str
    calls: list[Call]
    context: dict[str, Any] = field(default_factory=dict)
    expected_state: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "instruction": self.instruction,
            "context": self.context,
            "calls": self.calls,
            "expected_state": self.expected_state,
        }


class _Finder:
    """Queries over one database that the task and violation builders share."""

    def __init__(self, db: dict[str, Any], seed: int) -> None:
        self.db, self.rng = db, random.Random(seed)

    def status(self, seg: dict[str, Any]) -> str:
        rec = self.db["flights"][seg["flight_number"]]["dates"].get(seg["date"], {})
        return str(rec.get("status", ""))

    def flown(self, res: dict[str, Any]) -> bool:
        return any(self.status(s) in ("flying", "landed") for s in res["flights"])

    def live(self, res: dict[str, Any]) -> bool:
        return res.get("status") != "cancelled"

    def reservations(self, test: Callable[[dict[str, Any]], bool]) -> Iterator[dict[str, Any]]:
        for rid in sorted(self.db["reservations"]):
            res = self.db["reservations"][rid]
            if test(res):
                yield res

    def first(self, test: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
        return next(self.reservations(test), None)

    def user(self, res: dict[str, Any]) -> dict[str, Any]:
        return self.db["users"][res["user_id"]]  # type: ignore[no-any-return]

    def card(self, user: dict[str, Any], source: str = "credit_card") -> str | None:
        return next(
            (p for p, m in sorted(user["payment_methods"].items()) if m["source"] == source), None
        )

    def nonfree(self, total: int, pax: int, membership: str, cabin: str) -> int:
        return max(0, total - FREE[membership][CABINS.index(cabin)] * pax)

    def open_seat(
        self, origin: str, dest: str, cabin: str, pax: int, after: str = NOW_DATE
    ) -> tuple[str, str, int] | None:
        """(flight number, date, price) of an available flight on the route after ``after``."""
        for number, flight in sorted(self.db["flights"].items()):
            if (flight["origin"], flight["destination"]) != (origin, dest):
                continue
            for date, rec in sorted(flight["dates"].items()):
                open_ = rec["status"] == "available" and rec["available_seats"][cabin] >= pax
                if date > after and open_:
                    return number, date, int(rec["prices"][cabin])
        return None

    def reads(self, res: dict[str, Any]) -> list[Call]:
        return [
            call("get_user_details", user_id=res["user_id"]),
            call("get_reservation_details", reservation_id=res["reservation_id"]),
        ]


def _recent(f: _Finder, res: dict[str, Any]) -> bool:
    return bool(res["created_at"] >= "2024-05-14T15:00:00")


def _plain(f: _Finder, res: dict[str, Any]) -> bool:
    """Live, unflown, not recent, not business, no airline cancellation."""
    return (
        f.live(res)
        and not f.flown(res)
        and not _recent(f, res)
        and res["cabin"] != "business"
        and not any(f.status(s) == "cancelled" for s in res["flights"])
    )


def _gold_cancel(f: _Finder, kind: str) -> tuple[list[Call], dict[str, Any]] | None:
    tests: dict[str, Callable[[dict[str, Any]], bool]] = {
        "cancel_recent": lambda r: f.live(r) and not f.flown(r) and _recent(f, r),
        "cancel_business": lambda r: (
            f.live(r) and not f.flown(r) and not _recent(f, r) and r["cabin"] == "business"
        ),
        "cancel_insured": lambda r: _plain(f, r) and r["insurance"] == "yes",
    }
    res = f.first(tests[kind])
    if res is None:
        return None
    context = {"cancel_reason": "health"} if kind == "cancel_insured" else {}
    rid = res["reservation_id"]
    return [*f.reads(res), call("cancel_reservation", reservation_id=rid)], context


def _gold_bags(f: _Finder) -> tuple[list[Call], dict[str, Any]] | None:
    res = f.first(lambda r: f.live(r) and not f.flown(r))
    if res is None:
        return None
    user = f.user(res)
    total = int(res["total_baggages"]) + 1
    nonfree = f.nonfree(total, len(res["passengers"]), user["membership"], res["cabin"])
    write = call(
        "update_reservation_baggages",
        reservation_id=res["reservation_id"],
        total_baggages=total,
        nonfree_baggages=nonfree,
        payment_id=f.card(user),
    )
    return [*f.reads(res), write], {}


def _gold_change(f: _Finder) -> tuple[list[Call], dict[str, Any]] | None:
    for res in f.reservations(
        lambda r: (
            f.live(r)
            and not f.flown(r)
            and r["cabin"] != "basic_economy"
            and r["flight_type"] == "one_way"
        )
    ):
        seg = res["flights"][0]
        found = f.open_seat(
            seg["origin"],
            seg["destination"],
            res["cabin"],
            len(res["passengers"]),
            after=seg["date"],
        )
        if found is not None:
            number, date, _ = found
            write = call(
                "update_reservation_flights",
                reservation_id=res["reservation_id"],
                cabin=res["cabin"],
                flights=[{"flight_number": number, "date": date}],
                payment_id=f.card(f.user(res)),
            )
            return [*f.reads(res), write], {}
    return None


def _gold_passengers(f: _Finder) -> tuple[list[Call], dict[str, Any]] | None:
    res = f.first(lambda r: f.live(r) and not f.flown(r))
    if res is None:
        return None
    people = copy.deepcopy(res["passengers"])
    people[0]["first_name"] = "Alex"
    write = call(
        "update_reservation_passengers", reservation_id=res["reservation_id"], passengers=people
    )
    return [*f.reads(res), write], {}


def booking_args(f: _Finder, user: dict[str, Any], pax: int = 2) -> dict[str, Any] | None:
    """A policy-correct one-way economy booking for ``user``, or None if no flight fits."""
    for number, flight in sorted(f.db["flights"].items()):
        found = f.open_seat(flight["origin"], flight["destination"], "economy", pax)
        if found is None or found[0] != number:
            continue
        _, date, price = found
        bags = pax + 1
        nonfree = f.nonfree(bags, pax, user["membership"], "economy")
        amount = price * pax + 30 * pax + 50 * nonfree
        return {
            "user_id": user["user_id"],
            "origin": flight["origin"],
            "destination": flight["destination"],
            "flight_type": "one_way",
            "cabin": "economy",
            "flights": [{"flight_number": number, "date": date}],
            "passengers": [
                {"first_name": "Pat", "last_name": "Lee", "dob": "1990-01-0" + str(i)}
                for i in range(1, pax + 1)
            ],
            "payment_methods": [{"payment_id": f.card(user), "amount": amount}],
            "total_baggages": bags,
            "nonfree_baggages": nonfree,
            "insurance": "yes",
        }
    return None


def _gold_book(f: _Finder) -> tuple[list[Call], dict[str, Any]] | None:
    user = f.db["users"][sorted(f.db["users"])[0]]
    args = booking_args(f, user)
    if args is None:
        return None
    return [call("get_user_details", user_id=user["user_id"]), call("book_reservation", **args)], {}


def _disrupted(f: _Finder, res: dict[str, Any]) -> int | None:
    pax = len(res["passengers"])
    if any(f.status(s) == "cancelled" for s in res["flights"]):
        return 100 * pax
    if any(f.status(s) == "delayed" for s in res["flights"]):
        return 50 * pax
    return None


def _eligible(f: _Finder, res: dict[str, Any]) -> bool:
    member = f.user(res)["membership"] in ("silver", "gold")
    return member or res["insurance"] == "yes" or res["cabin"] == "business"


def _gold_certificate(f: _Finder) -> tuple[list[Call], dict[str, Any]] | None:
    res = f.first(lambda r: _disrupted(f, r) is not None and _eligible(f, r))
    if res is None:
        return None
    amount = _disrupted(f, res)
    return [*f.reads(res), call("send_certificate", user_id=res["user_id"], amount=amount)], {}


KINDS: dict[str, tuple[str, Callable[[_Finder], Any]]] = {
    "cancel_recent": (
        "Cancel my reservation, I booked it yesterday.",
        lambda f: _gold_cancel(f, "cancel_recent"),
    ),
    "cancel_business": (
        "Cancel my business-class trip.",
        lambda f: _gold_cancel(f, "cancel_business"),
    ),
    "cancel_insured": (
        "I am sick and cannot travel; I have insurance. Please cancel.",
        lambda f: _gold_cancel(f, "cancel_insured"),
    ),
    "add_bag": ("Add one checked bag to my reservation.", _gold_bags),
    "change_flight": ("Move my flight to a later date on the same route.", _gold_change),
    "rename_passenger": ("Fix the first passenger's first name to Alex.", _gold_passengers),
    "book": ("Book a one-way economy trip for two with insurance and three bags.", _gold_book),
    "certificate": ("My flight was disrupted; I would like compensation.", _gold_certificate),
}


def make_tasks(db: dict[str, Any], seed: int = 0, now: str = "2024-05-15T15:00:00") -> list[Task]:
    """One task per kind that the database supports, each with its expected final state."""
    finder = _Finder(db, seed)
    tasks = []
    for kind, (instruction, build) in KINDS.items():
        found = build(finder)
        if found is None:
            continue
        calls, context = found
        sim = AirlineSim(copy.deepcopy(db), now=now)
        for c in calls:
            sim.call(c["name"], c["arguments"])
        tasks.append(Task(f"{kind}-{seed}", kind, instruction, calls, context, state_hash(sim.db)))
    return tasks
