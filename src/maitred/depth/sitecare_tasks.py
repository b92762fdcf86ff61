"""Multi-skill sitecare queries: two requests in one message, labelled with both skills.

Real care chats sometimes ask for two things at once ("connect my domain, and while you're at
it cancel the old mailbox plan"). :func:`sitecare_queries` builds such messages from sitecare's
own phrase banks -- two different skills drawn by their traffic weights, each phrased in one of
the customer wordings, slots filled, joined by a connective -- and labels each with both skills
as its required set. The output is the labelled-query JSONL that ``maitred depth make-tasks``
and ``maitred eval routing`` read. Deterministic for a seed.
"""

from __future__ import annotations

import random
from typing import Final

from maitred.domains.sitecare._messages import REQUESTS, SKILL_WEIGHTS
from maitred.domains.sitecare._phrases_chat import SLOT_VALUES
from maitred.recall.evaluate import Query

CONNECTIVES: Final = (
    "{a}. also {b}",
    "{a} and {b}",
    "{a}, and while you're at it, {b}",
    "two things: {a}. second, {b}",
    "{a}. oh and {b}",
    "{a}; then {b}",
)


class _Slots(dict[str, str]):
    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self._rng = rng

    def __missing__(self, key: str) -> str:
        value = self._rng.choice(SLOT_VALUES[key])
        self[key] = value
        return value


def _phrase(rng: random.Random, skill: str, slots: _Slots) -> str:
    template = rng.choice(REQUESTS[skill])
    text = template.format_map(slots) if "{" in template else template
    return text.rstrip(".!? ")


def sitecare_queries(n: int, seed: int, prefix: str = "sc") -> list[Query]:
    """``n`` two-request messages with their two skills as gold, ids ``{prefix}{i}``."""
    rng = random.Random(seed)
    skills = list(SKILL_WEIGHTS)
    weights = [SKILL_WEIGHTS[s] for s in skills]
    out: list[Query] = []
    for i in range(n):
        first = rng.choices(skills, weights)[0]
        second = first
        while second == first:
            second = rng.choices(skills, weights)[0]
        slots = _Slots(rng)
        a, b = _phrase(rng, first, slots), _phrase(rng, second, slots)
        text = rng.choice(CONNECTIVES).format(a=a, b=b[0].lower() + b[1:])
        if rng.random() < 0.25:
            text = text.lower()
        out.append(Query(f"{prefix}{i}", text, (first, second)))
    return out
