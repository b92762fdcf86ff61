"""Training and evaluation data for the glance: MetaTool split *by tool*, and skill texts.

The benchmark script (``benchmarks/metatool_routing.py``) splits MetaTool's queries by query text,
so every tool appears on both sides. A trained read-out would then be scored on tools it was
trained on. :func:`split_by_tool` instead assigns each *tool* to ``train``, ``val`` or ``test``
by a seeded hash of its name, and each query to the side that holds all its gold tools (queries
whose gold straddles sides are dropped): evaluation on ``test`` is zero-shot on tools never seen
in training, while the catalog searched stays the full library (the unseen tools must be found
among the seen ones, which is harder than searching them alone).

This module imports neither torch nor numpy.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Final, Literal

from maitred.recall.evaluate import Query
from maitred.recall.fields import split_identifier, strip_markdown, truncate
from maitred.skills.model import Skill

Side = Literal["train", "val", "test"]

SHARES: Final[tuple[float, float]] = (0.7, 0.1)
"""Default shares of tools for train and val; the rest (20%) is test."""

SKILL_TEXT_CHARS: Final = 600
"""Characters of a skill's text read (the backbone also truncates at a token count)."""


def skill_text(skill: Skill, *, chars: int = SKILL_TEXT_CHARS) -> str:
    """The text a skill's key bank is read from: ``"<name words>: <description>\\n<body>"``.

    The name is split into words (``getWeather`` -> ``get Weather``) so its tokens are words the
    model knows; the body is stripped of markdown and the whole is truncated at a word boundary.
    """
    head = f"{split_identifier(skill.name)}: {skill.description.strip()}"
    body = strip_markdown(skill.body).strip() if skill.body else ""
    return truncate(f"{head}\n{body}" if body else head, chars)


def tool_side(name: str, seed: int = 0, shares: tuple[float, float] = SHARES) -> Side:
    """The side of a tool: a seeded hash of its name, uniform in [0, 1), cut at ``shares``."""
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    if u < shares[0]:
        return "train"
    return "val" if u < shares[0] + shares[1] else "test"


def split_by_tool(
    queries: Sequence[Query], tools: Sequence[str], *, seed: int = 0
) -> dict[Side, list[Query]]:
    """Queries per side, each side's gold tools disjoint from the others'.

    Args:
        queries: labelled queries (gold = tool names).
        tools: every tool name of the catalog.
        seed: the split seed.

    Returns:
        ``{"train": [...], "val": [...], "test": [...]}``, in input order; a query whose gold
        tools fall on two sides, or that names an unknown tool, is dropped.
    """
    side = {t: tool_side(t, seed) for t in tools}
    out: dict[Side, list[Query]] = {"train": [], "val": [], "test": []}
    for query in queries:
        sides = {side.get(g) for g in query.gold}
        if len(sides) == 1 and None not in sides:
            (only,) = sides
            assert only is not None
            out[only].append(query)
    return out


def sample(queries: Sequence[Query], n: int, *, seed: int = 0) -> list[Query]:
    """At most ``n`` queries, a seeded sample kept in input order."""
    if n >= len(queries):
        return list(queries)
    keep = set(random.Random(seed).sample(range(len(queries)), n))
    return [q for i, q in enumerate(queries) if i in keep]
