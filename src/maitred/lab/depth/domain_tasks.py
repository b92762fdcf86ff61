"""Multi-skill queries: two requests in one message, labelled with both skills.

Real care chats sometimes ask for two things at once ("connect my domain, and while you're at
it cancel the old mailbox plan"; "move my flight to Friday and add a bag").
:func:`multi_skill_queries` builds such messages from a domain's phrase banks -- two different
skills drawn by their traffic weights, each phrased in one of the customer wordings, slots
filled (once per message, so both requests share a reservation or a domain), joined by a
connective -- and labels each with both skills as its required set. :func:`domain_queries`
does it for a built-in domain by name (see :data:`maitred.lab.domains.DOMAINS`). The output is the
labelled-query JSONL that ``maitred depth make-tasks`` and ``maitred eval routing`` read.
Deterministic for a seed.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Final

from maitred.errors import ConfigError
from maitred.lab.domains import get_domain
from maitred.recall.evaluate import Query

CONNECTIVES: Final = (
    "{a}. also {b}",
    "{a} and {b}",
    "{a}, and while you're at it, {b}",
    "two things: {a}. second, {b}",
    "{a}. oh and {b}",
    "{a}; then {b}",
)
#: share of messages written all in lowercase
P_LOWERCASE: Final = 0.25


class _Slots(dict[str, str]):
    """Slot values drawn on first use, so one message's ``{slot}`` is one value."""

    def __init__(self, rng: random.Random, values: Mapping[str, Sequence[str]]) -> None:
        super().__init__()
        self._rng = rng
        self._values = values

    def __missing__(self, key: str) -> str:
        value = self._rng.choice(self._values[key])
        self[key] = value
        return value


def _phrase(rng: random.Random, phrasings: Sequence[str], slots: _Slots) -> str:
    template = rng.choice(phrasings)
    text = template.format_map(slots) if "{" in template else template
    return text.rstrip(".!? ")


def multi_skill_queries(
    requests: Mapping[str, Sequence[str]],
    weights: Mapping[str, float],
    slot_values: Mapping[str, Sequence[str]],
    n: int,
    seed: int,
    prefix: str,
    connectives: Sequence[str] = CONNECTIVES,
) -> list[Query]:
    """``n`` two-request messages with their two skills as gold, ids ``{prefix}{i}``.

    Args:
        requests: skill -> customer phrasings, with ``{slot}`` fields.
        weights: skill -> relative frequency; the skills drawn are its keys.
        slot_values: slot -> the values a ``{slot}`` field is filled with.
        n: how many messages.
        seed: the random seed; the same arguments give the same messages.
        prefix: the id prefix.
        connectives: templates joining the two requests, with ``{a}`` and ``{b}``.

    Raises:
        ConfigError: fewer than two skills have a positive weight, or a weighted skill has no
            phrasing.
    """
    skills = list(weights)
    drawn = [s for s in skills if weights[s] > 0]
    if len(drawn) < 2:
        raise ConfigError(f"two-request messages need two weighted skills, got {drawn}")
    silent = sorted(s for s in drawn if not requests.get(s))
    if silent:
        raise ConfigError(f"weighted skill(s) {silent} have no phrasings")
    rng = random.Random(seed)
    w = [weights[s] for s in skills]
    out: list[Query] = []
    for i in range(n):
        first = rng.choices(skills, w)[0]
        second = first
        while second == first:
            second = rng.choices(skills, w)[0]
        slots = _Slots(rng, slot_values)
        a = _phrase(rng, requests[first], slots)
        b = _phrase(rng, requests[second], slots)
        text = rng.choice(connectives).format(a=a, b=b[0].lower() + b[1:])
        if rng.random() < P_LOWERCASE:
            text = text.lower()
        out.append(Query(f"{prefix}{i}", text, (first, second)))
    return out


def domain_queries(domain: str, n: int, seed: int, prefix: str | None = None) -> list[Query]:
    """:func:`multi_skill_queries` over a built-in domain's phrase banks.

    Args:
        domain: a name from :data:`maitred.lab.domains.DOMAINS`.
        n: how many messages.
        seed: the random seed.
        prefix: the id prefix (default: the domain's own, ``sc`` or ``al``).

    Raises:
        ConfigError: the domain is unknown.
    """
    spec = get_domain(domain)
    return multi_skill_queries(
        spec.requests,
        spec.weights,
        spec.slot_values,
        n,
        seed,
        spec.prefix if prefix is None else prefix,
    )
