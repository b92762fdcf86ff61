"""Routing accuracy of a recall method on a labelled query set.

A query file is JSONL, one query per line::

    {"id": "q17", "text": "will it rain in Lyon tomorrow?", "gold": ["weather-forecast"]}

``gold`` is the set of skills the query needs (one or more). A line that cannot be used (not
JSON, a missing or empty field, a wrong type, a repeated id) is reported with ``file:line`` and
what is wrong, and skipped; the rest of the file is still read. Blank lines are ignored.

Metrics (every one averaged over the evaluated queries, in [0, 1]):

- ``hit_at_1``: the top skill is a gold skill;
- ``recall_at_5`` / ``recall_at_10``: share of the query's gold skills in the top 5 / 10;
- ``mrr``: 1 / rank of the first gold skill in the top :data:`MRR_DEPTH`, 0 if none is there;
- ``ndcg_at_10``: binary-gain nDCG: sum over gold hits at rank i <= 10 of 1/log2(i+1), divided
  by the same sum for an ideal ranking (all gold first);
- ``complete_at_10``: the top 10 holds *all* the query's gold skills (what a multi-skill task
  needs).

A query naming a gold skill that is not in the catalog cannot be scored fairly (no method could
find it): such queries are left out of every metric, counted, and reported through
``on_unknown`` (default: a logged warning).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from maitred.errors import InputError
from maitred.jsonl import parse_object, read_labelled
from maitred.recall.base import Recaller

MRR_DEPTH: Final = 100
"""How deep MRR looks for the first gold skill."""

METRIC_KEYS: Final = (
    "method",
    "n_queries",
    "hit_at_1",
    "recall_at_5",
    "recall_at_10",
    "mrr",
    "ndcg_at_10",
    "complete_at_10",
)
"""The keys of :func:`evaluate_routing`'s result, in order."""

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Query:
    """One labelled query.

    Attributes:
        id: unique id within its file.
        text: the message.
        gold: the skills it needs, in the file's order, without repeats.
    """

    id: str
    text: str
    gold: tuple[str, ...]


def _parse_line(raw: str, seen: set[str]) -> Query:
    """One JSONL line -> Query; raises ValueError with what is wrong."""
    obj = parse_object(raw, ("id", "text", "gold"))
    qid, text, gold = obj["id"], obj["text"], obj["gold"]
    if not isinstance(qid, (str, int)) or isinstance(qid, bool):
        raise ValueError(f"field 'id' must be a string or integer, got {qid!r}")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("field 'text' must be a non-empty string")
    if isinstance(gold, str):
        gold = [gold]
    if not isinstance(gold, list) or not gold or not all(isinstance(g, str) and g for g in gold):
        raise ValueError("field 'gold' must be a non-empty list of skill names")
    if str(qid) in seen:
        raise ValueError(f"id {qid!r} repeats an earlier line; ids must be unique")
    return Query(str(qid), text, tuple(dict.fromkeys(gold)))


def load_queries(
    path: Path | str, *, on_error: Callable[[InputError], None] | None = None
) -> list[Query]:
    """Read a JSONL query file, skipping (and reporting) lines that cannot be used.

    Args:
        path: the file.
        on_error: called with an :class:`~maitred.errors.InputError` (path, line, message) for
            each bad line; by default each is logged as a warning.

    Returns:
        The good queries, in file order.

    Raises:
        InputError: the file itself cannot be read (line 0).
    """
    return read_labelled(path, _parse_line, what="query", on_error=on_error)


def query_metrics(ranked: Sequence[str], gold: Collection[str]) -> dict[str, float]:
    """The per-query metrics of one ranking (names best first) against its gold set."""
    gold_set = set(gold)
    hits = [i for i, name in enumerate(ranked[:MRR_DEPTH], start=1) if name in gold_set]
    top5 = gold_set.intersection(ranked[:5])
    top10 = gold_set.intersection(ranked[:10])
    dcg = sum(1.0 / math.log2(i + 1) for i in hits if i <= 10)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(gold_set), 10) + 1))
    return {
        "hit_at_1": 1.0 if hits and hits[0] == 1 else 0.0,
        "recall_at_5": len(top5) / len(gold_set),
        "recall_at_10": len(top10) / len(gold_set),
        "mrr": 1.0 / hits[0] if hits else 0.0,
        "ndcg_at_10": dcg / ideal if ideal else 0.0,
        "complete_at_10": 1.0 if len(top10) == len(gold_set) else 0.0,
    }


def evaluate_routing(
    recaller: Recaller,
    queries: Sequence[Query],
    method_name: str,
    *,
    known: Collection[str] | None = None,
    on_unknown: Callable[[list[Query]], None] | None = None,
) -> dict[str, Any]:
    """Rank every query and average the routing metrics.

    Args:
        recaller: the method under test.
        queries: labelled queries.
        method_name: the name written in the result's ``method``.
        known: the skill names that exist; default: the recaller's ``catalog.names`` when it
            has a catalog (otherwise every query is scored).
        on_unknown: called once with the queries left out because a gold skill is not in
            the catalog; by default a warning with their count and first ids is logged.

    Returns:
        Exactly the keys of :data:`METRIC_KEYS`: ``method``, ``n_queries`` (queries scored)
        and the six metrics (0.0 each when no query could be scored).
    """
    if known is None:
        catalog = getattr(recaller, "catalog", None)
        known = set(catalog.names) if catalog is not None else None
    usable = [q for q in queries if known is None or all(g in known for g in q.gold)]
    skipped = [q for q in queries if known is not None and not all(g in known for g in q.gold)]
    if skipped:
        if on_unknown is not None:
            on_unknown(skipped)
        else:
            logger.warning(
                "%d of %d queries name a gold skill that is not in the catalog and were left "
                "out (first ids: %s)",
                len(skipped),
                len(queries),
                ", ".join(q.id for q in skipped[:5]),
            )
    totals = dict.fromkeys(METRIC_KEYS[2:], 0.0)
    for query in usable:
        ranked = [c.name for c in recaller.rank(query.text, MRR_DEPTH)]
        for key, value in query_metrics(ranked, query.gold).items():
            totals[key] += value
    n = len(usable)
    result: dict[str, Any] = {"method": method_name, "n_queries": n}
    result.update({key: (totals[key] / n if n else 0.0) for key in METRIC_KEYS[2:]})
    return result
