"""Requests for the airline skills, in travellers' own words, and the values their slots take.

Hand-written the way people write to an airline's chat: terse ("cancel ZFA04Y"), chatty ("my
daughter's school trip got moved so..."), symptom-first ("the app says my flight is red"),
indirect ("I won't make it on the 12th anyway"). They deliberately avoid the wording of the
skills' descriptions, so routing is tested on paraphrase rather than on copied keywords.
``{slot}`` fields are filled per message from :data:`SLOT_VALUES`; one message fills a slot
once, so both requests of a two-request message talk about the same reservation.
"""

from __future__ import annotations

BOOK_FLIGHT = (
    "I need to book a flight {route} {date}",
    "can you get me a ticket to {city}? leaving {date}",
    "book me on {flight} please, economy",
    "I'd like to buy a round trip {route}, leaving {date}",
    "want to reserve seats for me and my two kids to {city}",
    "please book the cheapest option {route}, one way",
    "I found a fare I like on {flight}, can you make the booking for {name}",
    "we're four people going to {city} {date}, can you book us",
    "buy ticket {route} {date}",
    "I'd like to purchase a business class seat to {city} using my travel certificate",
    "can I book a trip for my mother? she flies {route}",
    "go ahead and book that one for me",
)

FIND_FLIGHTS = (
    "what flights do you have {route} {date}?",
    "is there anything nonstop to {city} {date}",
    "when's the earliest departure {route} tomorrow",
    "how much is a flight to {city} right now",
    "are there still seats on {flight} {date}?",
    "just looking at options {route}, nothing booked yet",
    "what does business cost to {city} next week",
    "any one-stop connections {route} if there's no direct?",
    "which day is cheapest to fly to {city}?",
    "show me evening flights {route}",
    "do you fly to {city} at all?",
)

CANCEL_RESERVATION = (
    "I need to cancel my reservation {reservation}",
    "cancel {reservation} please",
    "I can't travel anymore, please cancel the trip and refund me",
    "my dad is in hospital, I won't be able to fly {date}, I want to cancel",
    "please call off the whole booking to {city}",
    "I booked this trip an hour ago by mistake, can you undo it",
    "you cancelled my flight so I want to cancel the rest of the reservation and get my money back",
    "there's a hurricane coming, I don't want to fly to {city}, cancel it",
    "how do I get rid of this booking and get a refund",
    "we're not going to {city} after all, scrap reservation {reservation}",
    "kill the booking, plans changed",
)

CHANGE_FLIGHT = (
    "can I fly {date} instead of the day I booked?",
    "I want to change reservation {reservation} to a later flight",
    "is there an earlier flight I can switch to on the same day",
    "need to fly out a day later than booked, same route",
    "please put me on {flight} instead of my current one",
    "my meeting got moved, can you rebook my return flight {date}",
    "change the date of my trip to {city}",
    "I missed my connection, can you get me on the next one",
    "swap the outbound leg of {reservation} to a flight {date} please",
    "can I change my flight without cancelling the whole thing?",
    "move my trip back a week",
)

CHANGE_CABIN = (
    "I'd like to upgrade to business on {reservation}",
    "can I move up from basic economy to regular economy",
    "how much to upgrade my seat to business for the flight to {city}",
    "please bump us all up to business class",
    "I want to downgrade to economy and get the difference back",
    "upgrade cabin on my booking",
    "is it possible to switch my whole reservation to a better class",
    "I'm stuck in basic economy, can I pay to get out of it?",
    "my wife and I want business seats on the same flights we booked",
    "change class to economy on {reservation}",
)

ADD_CHECKED_BAGS = (
    "I need to add a bag to my booking",
    "can I add {bags} checked bags to {reservation}?",
    "how many suitcases am I allowed for free?",
    "we're bringing more luggage than planned, add two bags please",
    "what does an extra checked bag cost",
    "add luggage to reservation {reservation}",
    "I'm gold, do I get free bags on my flight to {city}?",
    "I want to pay for a second suitcase now instead of at the airport",
    "my ski gear needs to go in the hold, can you add it",
    "add one more bag for each of us",
)

UPDATE_PASSENGERS = (
    "my name is spelled wrong on the ticket",
    "can you fix the date of birth for one passenger on {reservation}",
    "I need to change the traveller name to {name}",
    "my friend {name} will fly instead of me, can you swap the name",
    "the booking says Jon but my passport says John",
    "correct passenger details on {reservation}",
    "I typed my son's birthday wrong when I booked",
    "my colleague can't come, {name} is taking her seat",
    "update the last name, I got married",
    "wrong birthdate on my reservation, please fix",
)

CHECK_FLIGHT_STATUS = (
    "is {flight} on time today?",
    "has my flight to {city} been delayed?",
    "what's the status of {flight} {date}",
    "did the {city} flight land yet? picking someone up",
    "the app shows my flight in red, what's going on",
    "is {flight} still leaving at the scheduled time",
    "flight status {flight}",
    "has {flight} taken off yet",
    "my departure board says cancelled, is that right?",
    "what time will {flight} get in?",
)

COMPENSATE_DISRUPTION = (
    "my flight was delayed 5 hours, what are you going to do about it",
    "you cancelled {flight} and I want compensation",
    "I'd like a voucher for the delay on my trip to {city}",
    "is there any credit for the cancelled flight on {reservation}?",
    "I missed a whole day of my holiday because of your delay, I expect something",
    "can I get some compensation? {flight} was cancelled {date}",
    "do I get anything for the delay? I'm a gold member",
    "the delay ruined my plans, I want a travel credit",
    "as a silver member I'd expect some goodwill for this cancellation",
    "your airline delayed us again, how about a certificate",
)

LOOKUP_RESERVATION = (
    "can you tell me what's on my booking?",
    "I lost my confirmation number, can you find my reservation",
    "when is my flight to {city}?",
    "what's in reservation {reservation}",
    "can you resend my itinerary",
    "I forgot which flight I booked, it's {date} I think",
    "show me my upcoming trips",
    "do I have insurance and bags on {reservation}? just checking the details",
    "what time do I leave {date}",
    "what did I book last month",
)

TRACK_REFUND = (
    "where is my refund?",
    "I cancelled {reservation} last week and haven't seen the money",
    "how long does the refund take to hit my card",
    "when will I get my {amount} back",
    "my flight was cancelled and I'm still waiting on the refund",
    "refund status for {reservation}",
    "still no refund after the cancellation, what's happening?",
    "how much am I getting back from the cancelled trip to {city}",
    "did the refund go to my gift card or my credit card?",
    "you owe me {amount} from a cancelled booking",
)

REVIEW_TRAVEL_INSURANCE = (
    "do I have travel insurance on {reservation}?",
    "what does the travel insurance actually cover",
    "can I add insurance to my existing booking",
    "if I get sick before the trip, does my insurance refund me?",
    "is bad weather covered by the insurance I bought",
    "I want to remove the insurance from my reservation",
    "did I buy trip protection for the flight to {city}?",
    "what's the $30 insurance thing on my receipt",
    "is it worth having the insurance on my booking?",
    "does the insurance cover me if I just change my mind",
)

TRANSFER_TO_HUMAN = (
    "let me talk to a real person",
    "I want a human agent please",
    "agent",
    "this isn't helping, get me a supervisor",
    "can I speak to someone from customer service",
    "transfer me to a representative",
    "I'd rather deal with a person about this",
    "stop, put me through to an actual human",
    "is there a person I can talk to about my complaint?",
    "I need to speak to a manager now",
)

#: skill -> the phrasings a request for it is drawn from
REQUESTS: dict[str, tuple[str, ...]] = {
    "book-flight": BOOK_FLIGHT,
    "find-flights": FIND_FLIGHTS,
    "cancel-reservation": CANCEL_RESERVATION,
    "change-flight": CHANGE_FLIGHT,
    "change-cabin": CHANGE_CABIN,
    "add-checked-bags": ADD_CHECKED_BAGS,
    "update-passengers": UPDATE_PASSENGERS,
    "check-flight-status": CHECK_FLIGHT_STATUS,
    "compensate-disruption": COMPENSATE_DISRUPTION,
    "lookup-reservation": LOOKUP_RESERVATION,
    "track-refund": TRACK_REFUND,
    "review-travel-insurance": REVIEW_TRAVEL_INSURANCE,
    "transfer-to-human": TRANSFER_TO_HUMAN,
}

#: relative request frequency (changes, cancellations and status checks dominate airline chat)
SKILL_WEIGHTS: dict[str, int] = {
    "change-flight": 14,
    "cancel-reservation": 13,
    "check-flight-status": 12,
    "book-flight": 11,
    "lookup-reservation": 9,
    "add-checked-bags": 8,
    "compensate-disruption": 8,
    "find-flights": 8,
    "track-refund": 7,
    "change-cabin": 6,
    "update-passengers": 6,
    "review-travel-insurance": 5,
    "transfer-to-human": 5,
}

_CITIES = (
    "Boston",
    "Denver",
    "Dallas",
    "New York",
    "Los Angeles",
    "Miami",
    "Chicago",
    "Seattle",
    "San Francisco",
    "Atlanta",
)
_CODES = ("BOS", "DEN", "DFW", "JFK", "LAX", "MIA", "ORD", "SEA", "SFO", "ATL")

#: slot -> the values one ``{slot}`` in a phrase is filled with
SLOT_VALUES: dict[str, tuple[str, ...]] = {
    "city": (*_CITIES, "NYC", "LA", "SF", "Dallas Fort Worth"),
    "route": tuple(f"{a} to {b}" for a, b in zip(_CITIES, _CITIES[3:] + _CITIES[:3], strict=True))
    + tuple(f"{a} to {b}" for a, b in zip(_CODES, _CODES[5:] + _CODES[:5], strict=True))
    + ("from Boston to Seattle", "from JFK to Miami", "LAX-ORD", "sfo to atlanta"),
    "date": (
        "on May 20",
        "on the 18th",
        "next Friday",
        "tomorrow",
        "on May 22",
        "this weekend",
        "on 5/27",
        "on June 1",
        "on Monday",
        "on the 24th",
        "next week",
        "on 2024-05-21",
    ),
    "reservation": (
        "ZFA04Y",
        "8JX2WO",
        "HXDUBJ",
        "4WQ150",
        "SDZQKO",
        "M20IZO",
        "1N99U6",
        "EHGLP3",
        "NM1VX1",
        "K1NW8N",
        "XEHM4B",
        "3JA7XV",
    ),
    "flight": (
        "HAT045",
        "HAT139",
        "HAT002",
        "HAT083",
        "HAT271",
        "HAT213",
        "HAT034",
        "hat156",
        "HAT 190",
        "flight 227",
    ),
    "name": (
        "Mia Li",
        "Noah Garcia",
        "Ava Kim",
        "Omar Ahmed",
        "Yara Rossi",
        "Ivan Novak",
        "Sofia Patel",
        "Raj Silva",
        "Lena Brown",
        "Liam Smith",
    ),
    "amount": ("$312", "$1,240", "$89", "$450", "$628.50", "400 dollars", "$175", "$96"),
    "bags": ("2", "3", "two", "three", "a couple of", "4"),
}
