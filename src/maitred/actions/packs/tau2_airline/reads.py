"""Must-read-before-write for the airline writes: a reservation or user record must have been
read in this session (or created in it) before a write names it."""

from __future__ import annotations

from maitred.actions.session import must_read_before_write

RESERVATION_WRITES = (
    "cancel_reservation",
    "update_reservation_flights",
    "update_reservation_baggages",
    "update_reservation_passengers",
)

must_read_reservation = must_read_before_write(
    RESERVATION_WRITES,
    id_arg="reservation_id",
    read_tool="get_reservation_details",
    code="AIRLINE_MUST_READ_RESERVATION",
)
must_read_user = must_read_before_write(
    ("book_reservation", "send_certificate"),
    id_arg="user_id",
    read_tool="get_user_details",
    code="AIRLINE_MUST_READ_USER",
)
