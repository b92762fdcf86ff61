"""Assemble conversations from the phrase banks: who says what, in which order, how messily.

A conversation is 1-6 messages. About half of all conversations are *topical*: they contain a
request for one of the family's skills (``gold`` = the skill), often followed by follow-ups
("how long will it take?", ``gold`` = ``None``) and sometimes preceded by a greeting or followed
by thanks. The rest are off-topic throughout. The shares are tuned so that about 23% of all
messages carry a gold skill, as in the paper's traffic.

Every message is *dressed*: an optional opener and closer, slot fills (domains, amounts, dates),
and the noise real chat has -- all lowercase, dropped punctuation, text-speak, a typo or two.
Everything draws from one ``random.Random``, so a seed fixes the whole stream; the work per
message is a handful of ``rng`` calls and string operations (100k messages in about a second).
"""

from __future__ import annotations

import random

from maitred.lab.domains.sitecare._phrases_billing import BILLING_REQUESTS
from maitred.lab.domains.sitecare._phrases_chat import (
    CLOSERS,
    FOLLOW_UPS,
    GREETINGS,
    OFF_TOPIC,
    OPENERS,
    SLOT_VALUES,
    THANKS,
)
from maitred.lab.domains.sitecare._phrases_site import SITE_REQUESTS

#: skill -> the phrasings a request for it is drawn from
REQUESTS: dict[str, tuple[str, ...]] = {**SITE_REQUESTS, **BILLING_REQUESTS}

Message = tuple[str, str | None]

#: conversation length -> weight (most chats are short)
_LENGTHS = (1, 2, 3, 4, 5, 6)
_LENGTH_WEIGHTS = (34, 24, 17, 11, 8, 6)
#: share of conversations that ask for a skill at least once
P_TOPICAL = 0.54
#: how often a topical conversation asks for a second, different skill
P_SECOND_REQUEST = 0.08
P_FOLLOW_UP = 0.35

#: relative request frequency (domains and publishing dominate care traffic)
SKILL_WEIGHTS: dict[str, int] = {
    "connect-domain": 16,
    "publish-site": 13,
    "upgrade-plan": 12,
    "cancel-subscription": 10,
    "request-refund": 9,
    "setup-mailbox": 9,
    "update-payment-method": 8,
    "restore-site-version": 7,
    "change-site-url": 6,
    "transfer-domain": 5,
    "reset-two-factor": 5,
}
_SKILLS = tuple(SKILL_WEIGHTS)
_SKILL_CUM = tuple(sum(SKILL_WEIGHTS[s] for s in _SKILLS[: i + 1]) for i in range(len(_SKILLS)))
_OFF_TOPIC_FLAT = tuple(text for bank in OFF_TOPIC.values() for text in bank)
_TEXT_SPEAK = (("please", "pls"), ("you", "u"), ("thanks", "thx"), ("your", "ur"))


class _Slots(dict[str, str]):
    """Slot values drawn on first use, so one message's ``{domain}`` is one domain."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self._rng = rng

    def __missing__(self, key: str) -> str:
        value = self._rng.choice(SLOT_VALUES[key])
        self[key] = value
        return value


def conversation(rng: random.Random) -> list[Message]:
    """One conversation's messages as ``(text, gold)`` pairs."""
    length = rng.choices(_LENGTHS, _LENGTH_WEIGHTS)[0]
    if rng.random() >= P_TOPICAL:
        return [(_chat(rng, i, length), None) for i in range(length)]
    return _topical(rng, length)


def _topical(rng: random.Random, length: int) -> list[Message]:
    out: list[Message] = []
    if length > 1 and rng.random() < 0.2:
        out.append((_dress(rng, rng.choice(GREETINGS), 0.0, 0.0), None))
    skill = _pick_skill(rng)
    out.append((_dress(rng, rng.choice(REQUESTS[skill]), 0.45, 0.35), skill))
    while len(out) < length:
        roll = rng.random()
        if roll < P_FOLLOW_UP:
            out.append((_dress(rng, rng.choice(FOLLOW_UPS), 0.05, 0.1), None))
        elif roll < P_FOLLOW_UP + P_SECOND_REQUEST:
            other = _pick_skill(rng)
            if other != skill:
                skill = other
                out.append((_dress(rng, rng.choice(REQUESTS[skill]), 0.3, 0.2), skill))
        elif len(out) == length - 1 and rng.random() < 0.5:
            out.append((_dress(rng, rng.choice(THANKS), 0.0, 0.0), None))
        else:
            out.append((_dress(rng, rng.choice(_OFF_TOPIC_FLAT), 0.2, 0.2), None))
    return out


def _chat(rng: random.Random, index: int, length: int) -> str:
    """An off-topic message; greetings open and thanks close longer chats now and then."""
    if index == 0 and length > 1 and rng.random() < 0.2:
        return _dress(rng, rng.choice(GREETINGS), 0.0, 0.0)
    if index == length - 1 and length > 1 and rng.random() < 0.3:
        return _dress(rng, rng.choice(THANKS), 0.0, 0.0)
    return _dress(rng, rng.choice(_OFF_TOPIC_FLAT), 0.35, 0.3)


def _pick_skill(rng: random.Random) -> str:
    point = rng.random() * _SKILL_CUM[-1]
    for name, cum in zip(_SKILLS, _SKILL_CUM, strict=True):
        if point < cum:
            return name
    return _SKILLS[-1]


def _dress(rng: random.Random, template: str, p_opener: float, p_closer: float) -> str:
    """Fill slots, add an opener/closer, then apply chat noise."""
    slots = _Slots(rng)
    text = _fill(template, slots)
    if rng.random() < p_opener:
        opener = _fill(rng.choice(OPENERS), slots)
        if opener[-1] in ",:" and not text.startswith(("I ", "I'")) and not text[:2].isupper():
            text = text[0].lower() + text[1:]
        text = f"{opener} {text}"
    if rng.random() < p_closer:
        text = f"{text} {_fill(rng.choice(CLOSERS), slots)}"
    return _noise(rng, text)


def _fill(template: str, slots: _Slots) -> str:
    return template.format_map(slots) if "{" in template else template


def _noise(rng: random.Random, text: str) -> str:
    roll = rng.random()
    if roll < 0.22:
        text = text.lower()
    if rng.random() < 0.18:
        text = text.rstrip(".!?")
    if rng.random() < 0.06:
        for word, short in _TEXT_SPEAK:
            text = text.replace(f" {word} ", f" {short} ")
    if rng.random() < 0.1:
        text = _typo(rng, text)
    return text


def _typo(rng: random.Random, text: str) -> str:
    """One realistic slip: two letters swapped, one dropped or one doubled."""
    words = text.split(" ")
    candidates = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha()]
    if not candidates:
        return text
    i = rng.choice(candidates)
    word = words[i]
    j = rng.randrange(1, len(word) - 1)
    kind = rng.randrange(3)
    if kind == 0:
        word = word[:j] + word[j + 1] + word[j] + word[j + 2 :]
    elif kind == 1:
        word = word[:j] + word[j + 1 :]
    else:
        word = word[:j] + word[j] + word[j:]
    words[i] = word
    return " ".join(words)
