"""Shared facts of the tau2 airline domain: free bags, flown segments, routes, the clock.

Times in the tau2 airline database are naive wall-clock times in US Eastern
(``2024-05-14T09:52:38``). The pack turns them, and its own ``now``, into seconds *as if* they
were UTC: only differences matter, so the 24-hour rule is exact whatever the machine's zone.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

FREE_BAGS: Mapping[str, Mapping[str, int]] = {
    "regular": {"basic_economy": 0, "economy": 1, "business": 2},
    "silver": {"basic_economy": 1, "economy": 2, "business": 3},
    "gold": {"basic_economy": 2, "economy": 3, "business": 4},
}
FLOWN = frozenset({"flying", "landed"})
BAG_FEE = 50
INSURANCE_FEE = 30
DAY_S = 24 * 3600
EASTERN = ZoneInfo("America/New_York")
DEFAULT_NOW = "2024-05-15T15:00:00"
RES = "state.reservations[args.reservation_id]"


def wall_seconds(text: str) -> float:
    """Seconds for an Eastern wall-clock ISO time; an aware time is converted to Eastern."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is not None:
        moment = moment.astimezone(EASTERN).replace(tzinfo=None)
    return moment.replace(tzinfo=UTC).timestamp()


def free_bags(membership: str, cabin: str) -> int:
    """Free checked bags per passenger (raises KeyError on an unknown tier or cabin)."""
    return FREE_BAGS[membership][cabin]


def expected_nonfree(total: int, passengers: int, membership: str, cabin: str) -> int:
    """max(0, total - free x passengers): the bags that must be paid for."""
    return max(0, total - free_bags(membership, cabin) * passengers)


def date_record(flights: Mapping[str, Any], number: str, date: str) -> Mapping[str, Any] | None:
    """The flight's record for one date, or None when the flight or date is unknown."""
    flight = flights.get(number)
    if not isinstance(flight, Mapping):
        return None
    record = flight.get("dates", {}).get(date)
    return record if isinstance(record, Mapping) else None


def status_of(flights: Mapping[str, Any], segment: Mapping[str, Any]) -> str | None:
    record = date_record(flights, str(segment["flight_number"]), str(segment["date"]))
    return None if record is None else str(record.get("status"))


def any_status(
    flights: Mapping[str, Any], segments: Sequence[Mapping[str, Any]], wanted: frozenset[str]
) -> bool:
    return any(status_of(flights, s) in wanted for s in segments)


def seat_problem(
    flights: Mapping[str, Any], segment: Mapping[str, Any], cabin: str, passengers: int
) -> str | None:
    """Why a segment cannot be sold in ``cabin`` to ``passengers`` people, or None."""
    number, date = str(segment["flight_number"]), str(segment["date"])
    record = date_record(flights, number, date)
    if record is None:
        return f"flight {number} does not fly on {date}"
    if record.get("status") != "available":
        return f"flight {number} on {date} is {record.get('status')}, not available"
    seats = int(record.get("available_seats", {}).get(cabin, 0))
    if seats < passengers:
        return f"flight {number} on {date} has {seats} {cabin} seat(s) for {passengers}"
    return None


def route_problem(
    flights: Mapping[str, Any],
    segments: Sequence[Mapping[str, Any]],
    origin: str,
    destination: str,
    flight_type: str,
) -> str | None:
    """Why ``segments`` do not chain from origin to destination (and back), or None."""
    if not segments:
        return "the itinerary has no flights"
    legs: list[tuple[str, str]] = []
    for seg in segments:
        flight = flights.get(str(seg["flight_number"]))
        if not isinstance(flight, Mapping):
            return f"flight {seg['flight_number']} does not exist"
        legs.append((str(flight["origin"]), str(flight["destination"])))
    for (_, arrive), (depart, _) in itertools.pairwise(legs):
        if arrive != depart:
            return f"the flights do not connect ({arrive} then {depart})"
    stops = [legs[0][0]] + [b for _, b in legs]
    if stops[0] != origin:
        return f"the itinerary starts at {stops[0]}, not {origin}"
    if flight_type == "one_way":
        return (
            None
            if stops[-1] == destination
            else (f"a one-way trip must end at {destination}, not {stops[-1]}")
        )
    if stops[-1] != origin or destination not in stops[1:-1]:
        return f"a round trip must go {origin} -> {destination} -> {origin}"
    return None


def fare(flights: Mapping[str, Any], segment: Mapping[str, Any], cabin: str) -> int:
    """The current price of one seat on a segment in ``cabin`` (KeyError if not priced)."""
    record = date_record(flights, str(segment["flight_number"]), str(segment["date"]))
    if record is None:
        raise KeyError(f"{segment['flight_number']} on {segment['date']}")
    return int(record["prices"][cabin])
