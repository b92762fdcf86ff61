"""The airline tools, policy-permissive: any well-formed call runs, whatever the policy says.

This is the failure mode the action gate exists for: cancelling a non-refundable reservation,
changing a basic-economy itinerary or under-charging bags all *succeed* here, silently. The tools
fail (with :class:`SimToolError`, a loud error the model sees) only when a named record does not
exist or an argument is malformed. Writes mutate ``self.db`` in place; copy it first to keep one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from maitred._canonical import canonical_json


class SimToolError(Exception):
    """A loud tool error (unknown record, malformed argument), returned to the model as text."""


class AirlineSim:
    """The tau2 airline tools over one database (a dict, mutated in place by writes).

    Args:
        db: ``{"flights": ..., "users": ..., "reservations": ...}`` in the tau2 schema.
        now: the wall clock for ``created_at`` of new reservations (Eastern, naive ISO).
    """

    READS = (
        "get_reservation_details",
        "get_user_details",
        "search_direct_flight",
        "search_onestop_flight",
        "get_flight_status",
        "list_all_airports",
    )
    WRITES = (
        "book_reservation",
        "cancel_reservation",
        "update_reservation_flights",
        "update_reservation_baggages",
        "update_reservation_passengers",
        "send_certificate",
    )

    def __init__(self, db: dict[str, Any], now: str = "2024-05-15T15:00:00") -> None:
        self.db = db
        self.now = now
        self.tools: dict[str, Callable[..., Any]] = {
            name: getattr(self, name) for name in (*self.READS, *self.WRITES)
        }

    def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Run tool ``name``; an unknown tool or bad arguments raise :class:`SimToolError`."""
        tool = self.tools.get(name)
        if tool is None:
            raise SimToolError(f"unknown tool {name!r}")
        try:
            return tool(**arguments)
        except TypeError as exc:
            raise SimToolError(f"{name}: bad arguments: {exc}") from None

    # reads -------------------------------------------------------------------------------

    def _reservation(self, reservation_id: str) -> dict[str, Any]:
        res = self.db["reservations"].get(reservation_id)
        if res is None:
            raise SimToolError(f"Reservation {reservation_id} not found")
        return res  # type: ignore[no-any-return]

    def _user(self, user_id: str) -> dict[str, Any]:
        user = self.db["users"].get(user_id)
        if user is None:
            raise SimToolError(f"User {user_id} not found")
        return user  # type: ignore[no-any-return]

    def get_reservation_details(self, reservation_id: str) -> dict[str, Any]:
        return self._reservation(reservation_id)

    def get_user_details(self, user_id: str) -> dict[str, Any]:
        return self._user(user_id)

    def _on(self, number: str, date: str) -> dict[str, Any] | None:
        flight = self.db["flights"].get(number)
        if flight is None:
            return None
        record = flight["dates"].get(date)
        if record is None or record.get("status") != "available":
            return None
        keep = ("scheduled_departure_time_est", "scheduled_arrival_time_est")
        return {
            "flight_number": number,
            "origin": flight["origin"],
            "destination": flight["destination"],
            **{k: flight[k] for k in keep},
            "date": date,
            **record,
        }

    def search_direct_flight(self, origin: str, destination: str, date: str) -> list[Any]:
        out = []
        for number, flight in sorted(self.db["flights"].items()):
            if flight["origin"] == origin and flight["destination"] == destination:
                found = self._on(number, date)
                if found is not None:
                    out.append(found)
        return out

    def search_onestop_flight(self, origin: str, destination: str, date: str) -> list[Any]:
        out = []
        for first in self.search_direct_flight_from(origin, date):
            for second in self.search_direct_flight(first["destination"], destination, date):
                if second["scheduled_departure_time_est"] > first["scheduled_arrival_time_est"]:
                    out.append([first, second])
        return out

    def search_direct_flight_from(self, origin: str, date: str) -> list[dict[str, Any]]:
        out = []
        for number, flight in sorted(self.db["flights"].items()):
            if flight["origin"] == origin:
                found = self._on(number, date)
                if found is not None:
                    out.append(found)
        return out

    def get_flight_status(self, flight_number: str, date: str) -> str:
        flight = self.db["flights"].get(flight_number)
        if flight is None or date not in flight["dates"]:
            raise SimToolError(f"Flight {flight_number} not found on {date}")
        return str(flight["dates"][date]["status"])

    def list_all_airports(self) -> list[str]:
        codes = {f["origin"] for f in self.db["flights"].values()}
        codes |= {f["destination"] for f in self.db["flights"].values()}
        return sorted(codes)

    # writes ------------------------------------------------------------------------------

    def _price(self, segment: Mapping[str, Any], cabin: str) -> int:
        flight = self.db["flights"].get(segment["flight_number"])
        if flight is None:
            raise SimToolError(f"Flight {segment['flight_number']} not found")
        record = flight["dates"].get(segment["date"], {})
        return int(record.get("prices", {}).get(cabin, 0))  # permissive: unpriced is free

    def _segment(self, segment: Mapping[str, Any], cabin: str) -> dict[str, Any]:
        flight = self.db["flights"].get(segment["flight_number"])
        if flight is None:
            raise SimToolError(f"Flight {segment['flight_number']} not found")
        return {
            "flight_number": segment["flight_number"],
            "date": segment["date"],
            "origin": flight["origin"],
            "destination": flight["destination"],
            "price": self._price(segment, cabin),
        }

    def _take_seats(self, segments: list[dict[str, Any]], cabin: str, count: int) -> None:
        for seg in segments:
            record = self.db["flights"][seg["flight_number"]]["dates"].get(seg["date"], {})
            seats = record.get("available_seats")
            if isinstance(seats, dict) and cabin in seats:
                seats[cabin] -= count  # permissive: may go negative

    def _charge(self, user: dict[str, Any], payment_id: str, amount: float) -> None:
        method = user["payment_methods"].get(payment_id)
        if method is not None and method["source"] in ("gift_card", "certificate"):
            method["amount"] = round(float(method.get("amount", 0)) - amount, 2)
            if method["source"] == "certificate":
                del user["payment_methods"][payment_id]

    def _new_id(self) -> str:
        n = len(self.db["reservations"])
        while True:
            digest = hashlib.sha256(f"{n}:{self.now}".encode()).hexdigest().upper()
            rid = "R" + "".join(c for c in digest if c.isalnum())[:5]
            if rid not in self.db["reservations"]:
                return rid
            n += 1

    def book_reservation(
        self,
        user_id: str,
        origin: str,
        destination: str,
        flight_type: str,
        cabin: str,
        flights: list[dict[str, Any]],
        passengers: list[dict[str, Any]],
        payment_methods: list[dict[str, Any]],
        total_baggages: int,
        nonfree_baggages: int,
        insurance: str,
    ) -> dict[str, Any]:
        user = self._user(user_id)
        segments = [self._segment(s, cabin) for s in flights]
        rid = self._new_id()
        res = {
            "reservation_id": rid,
            "user_id": user_id,
            "origin": origin,
            "destination": destination,
            "flight_type": flight_type,
            "cabin": cabin,
            "flights": segments,
            "passengers": [dict(p) for p in passengers],
            "payment_history": [dict(p) for p in payment_methods],
            "created_at": self.now,
            "total_baggages": total_baggages,
            "nonfree_baggages": nonfree_baggages,
            "insurance": insurance,
        }
        for pay in payment_methods:
            self._charge(user, pay["payment_id"], float(pay["amount"]))
        self._take_seats(segments, cabin, len(passengers))
        self.db["reservations"][rid] = res
        user.setdefault("reservations", []).append(rid)
        return res

    def cancel_reservation(self, reservation_id: str) -> dict[str, Any]:
        res = self._reservation(reservation_id)
        refunds = [
            {"payment_id": p["payment_id"], "amount": -p["amount"]} for p in res["payment_history"]
        ]
        res["payment_history"].extend(refunds)
        res["status"] = "cancelled"
        return res

    def update_reservation_flights(
        self, reservation_id: str, cabin: str, flights: list[dict[str, Any]], payment_id: str
    ) -> dict[str, Any]:
        res = self._reservation(reservation_id)
        old = {(s["flight_number"], s["date"]): s for s in res["flights"]}
        new: list[dict[str, Any]] = []
        for seg in flights:
            kept = old.get((seg["flight_number"], seg["date"]))
            new.append(dict(kept) if kept and cabin == res["cabin"] else self._segment(seg, cabin))
        pax = len(res["passengers"])
        diff = (sum(s["price"] for s in new) - sum(s["price"] for s in res["flights"])) * pax
        if diff:
            res["payment_history"].append({"payment_id": payment_id, "amount": diff})
            self._charge(self._user(res["user_id"]), payment_id, diff)
        res["flights"], res["cabin"] = new, cabin
        return res

    def update_reservation_baggages(
        self, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
    ) -> dict[str, Any]:
        res = self._reservation(reservation_id)
        fee = 50 * max(0, nonfree_baggages - int(res["nonfree_baggages"]))
        if fee:
            res["payment_history"].append({"payment_id": payment_id, "amount": fee})
            self._charge(self._user(res["user_id"]), payment_id, fee)
        res["total_baggages"], res["nonfree_baggages"] = total_baggages, nonfree_baggages
        return res

    def update_reservation_passengers(
        self, reservation_id: str, passengers: list[dict[str, Any]]
    ) -> dict[str, Any]:
        res = self._reservation(reservation_id)
        res["passengers"] = [dict(p) for p in passengers]
        return res

    def send_certificate(self, user_id: str, amount: float) -> str:
        user = self._user(user_id)
        n = len(user["payment_methods"])
        digest = int(hashlib.sha256(f"{user_id}:{n}".encode()).hexdigest(), 16)
        pid = f"certificate_{digest % 10**7:07d}"
        user["payment_methods"][pid] = {"source": "certificate", "id": pid, "amount": amount}
        return f"Certificate {pid} added to user {user_id} with amount {amount}."


def state_hash(db: Mapping[str, Any]) -> str:
    """A short content hash of a database (for expected final states)."""
    return hashlib.sha256(canonical_json(db).encode("utf-8")).hexdigest()[:16]
