"""Routing accuracy of a recall method on a labelled query set.

A query file is JSONL, one query per line::

    {"id": "q17", "text": "will it rain in Lyon tomorrow?", "gold": ["weather-forecast"]}

``gold`` is the set of skills the query needs (one or more). A query may also carry ``steps``,
the needs of a multi-step task, each asked on its own (how an agent discovers tools sub-task by
sub-task)::

    {"id": "t3", "text": "plan a weekend in Yosemite", "gold": ["findParks", "maps_directions"],
     "steps": ["find the park and its campgrounds", "driving directions from San Jose"]}

A line that cannot be used (not JSON, a missing or empty field, a wrong type, ``steps`` that is
not a non-empty list of non-empty strings, a repeated id) is reported with ``file:line`` and what
is wrong, and skipped; the rest of the file is still read. Blank lines are ignored.

Metrics (every one averaged over the evaluated queries, in [0, 1]):

- ``hit_at_1``: the top skill is a gold skill;
- ``recall_at_5`` / ``recall_at_10``: share of the query's gold skills in the top 5 / 10;
- ``mrr``: 1 / rank of the first gold skill in the top :data:`MRR_DEPTH`, 0 if none is there;
- ``ndcg_at_10``: binary-gain nDCG: sum over gold hits at rank i <= 10 of 1/log2(i+1), divided
  by the same sum for an ideal ranking (all gold first);
- ``complete_at_10``: the top 10 holds *all* the query's gold skills (what a multi-skill task
  needs);
- ``ms_per_query``: mean wall-clock milliseconds of one ``rank`` call (a speed figure, not a
  quality one: it varies between runs).

Every query, with steps or without, is scored on its ``text`` by the metrics above. When some of
the scored queries have steps, the result also has (over those queries only, see
:data:`STEP_KEYS`):

- ``n_step_queries``: how many were scored step-wise; ``step_k``: the k each step was asked with;
- ``step_complete_at_k``: every gold skill is in the union of the steps' top ``step_k`` (the
  steps ranked together by default, :func:`~maitred.recall.steps.rank_steps`; ``steps="apart"``
  asks each on its own);
- ``step_exposed``: the mean size of that union (the skills the task was shown in all);
- ``oneshot_complete_at_exposed``: the same task asked once (its ``text``), its top *n* holding
  every gold skill, where *n* is that task's own union size: step-wise against one-shot at the
  same number of skills shown.

A query naming a gold skill that is not in the catalog cannot be scored fairly (no method could
find it): such queries are left out of every metric, counted, and reported through
``on_unknown`` (default: a logged warning). A query the method ranks nothing for (no word the
catalog knows, for a lexical method) is scored (as a miss) and reported through
``on_unranked``.

Several sets are evaluated at once from a sets file (:func:`load_sets`), a JSON object::

    {"sets": [{"name": "bfcl", "catalog": "bfcl/tools.jsonl", "queries": "bfcl/queries.jsonl"}]}

whose paths are relative to the file (``catalog`` may be a list of paths).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, Protocol, TypeVar

from maitred.errors import ConfigError, InputError
from maitred.jsonl import parse_object, read_labelled
from maitred.recall.base import Recaller
from maitred.recall.steps import rank_steps

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
    "ms_per_query",
)
"""The keys of :func:`evaluate_routing`'s result, in order."""

QUALITY_KEYS: Final = METRIC_KEYS[2:-1]
"""The six quality metrics (each in [0, 1])."""

STEP_K: Final = 10
"""The default k each step of a step-wise query is asked with."""

STEP_KEYS: Final = (
    "n_step_queries",
    "step_k",
    "step_complete_at_k",
    "step_exposed",
    "oneshot_complete_at_exposed",
)
"""The keys :func:`evaluate_routing` adds, after :data:`METRIC_KEYS`, when queries have steps."""

StepMode = Literal["together", "apart"]
"""How the steps of a step-wise query are ranked (see :func:`evaluate_routing`)."""

logger = logging.getLogger(__name__)


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=_HasId)


@dataclass(frozen=True)
class Query:
    """One labelled query.

    Attributes:
        id: unique id within its file.
        text: the message.
        gold: the skills it needs, in the file's order, without repeats.
        steps: the needs of a multi-step task, each asked on its own (empty: a one-shot query).
    """

    id: str
    text: str
    gold: tuple[str, ...]
    steps: tuple[str, ...] = ()


class RepeatedId(ValueError):
    """A line whose id an earlier line of the file already has (raised by a line parser)."""

    def __init__(self, item_id: str, what: str = "query") -> None:
        super().__init__(
            f"id {item_id!r} repeats an earlier line; ids must be unique: give this {what} its "
            "own id"
        )
        self.item_id = item_id


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
    steps = obj.get("steps", [])
    if "steps" in obj and (
        not isinstance(steps, list)
        or not steps
        or not all(isinstance(s, str) and s.strip() for s in steps)
    ):
        raise ValueError(
            "field 'steps' must be a non-empty list of non-empty strings (one need per step); "
            "leave it out for a one-shot query"
        )
    if str(qid) in seen:
        raise RepeatedId(str(qid))
    return Query(str(qid), text, tuple(dict.fromkeys(gold)), tuple(steps))


def load_queries(
    path: Path | str,
    *,
    on_error: Callable[[InputError], None] | None = None,
    repeated: Literal["skip", "refuse"] = "skip",
) -> list[Query]:
    """Read a JSONL query file, skipping (and reporting) lines that cannot be used.

    Args:
        path: the file.
        on_error: called with an :class:`~maitred.errors.InputError` (path, line, message) for
            each bad line; by default each is logged as a warning.
        repeated: what a repeated id does. ``skip``: the later line is a bad line like any
            other. ``refuse``: the whole file is refused once every line was read (the other
            bad lines reported first): two queries under one id mean the file is not the set
            its figures would claim to describe (two files joined, an edit gone wrong), and
            which line is the query is a guess.

    Returns:
        The good queries, in file order.

    Raises:
        InputError: the file itself cannot be read (line 0), or (``refuse``) an id repeats:
            the message names the file, the first repeating line, the id and its first line.
    """
    if repeated == "skip":
        return read_labelled(path, _parse_line, what="query", on_error=on_error)
    return read_unique(path, _parse_line, what="query", on_error=on_error)


def read_unique(
    path: Path | str,
    parse: Callable[[str, set[str]], T],
    *,
    what: str,
    on_error: Callable[[InputError], None] | None = None,
) -> list[T]:
    """:func:`~maitred.jsonl.read_labelled`, refusing the file when an id repeats.

    ``parse`` raises :class:`RepeatedId` for a repeated id. Every other bad line goes to
    ``on_error`` as usual; once the whole file was read, a repeat raises.

    Raises:
        InputError: at the first repeating line, naming the id and the line it repeats.
    """
    numbers: list[int] = []
    first: dict[str, int] = {}
    repeats: list[tuple[int, str]] = []
    report = on_error or (lambda err: logger.warning("%s (line skipped)", err))

    def parse_line(raw: str, seen: set[str]) -> T:
        try:
            item = parse(raw, seen)
        except RepeatedId as exc:
            repeats.append((numbers[-1], exc.item_id))
            raise
        first[item.id] = numbers[-1]
        return item

    def reported(err: InputError) -> None:
        if not (repeats and repeats[-1][0] == err.line):  # a repeat is refused, not skipped
            report(err)

    items = read_labelled(path, parse_line, what=what, on_error=reported, line_numbers=numbers)
    if repeats:
        line, item_id = repeats[0]
        more = f" (and {len(repeats) - 1} more repeated id(s))" if len(repeats) > 1 else ""
        raise InputError(
            str(path),
            line,
            f"{what} id {item_id!r} repeats line {first[item_id]}{more}; refusing to score a "
            f"file whose ids are not unique: give each {what} its own id",
        )
    return items


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


def step_metrics(
    step_rankings: Sequence[Sequence[str]],
    oneshot: Sequence[str],
    gold: Collection[str],
    k: int,
) -> dict[str, float]:
    """The step-wise figures of one task.

    Args:
        step_rankings: each step's ranking (names best first); only its top ``k`` counts.
        oneshot: the task's own ranking (its ``text`` asked once), at least as deep as the
            union of the steps' top ``k`` when that many skills were ranked.
        gold: the skills the task needs.
        k: how many skills each step is shown.

    Returns:
        ``step_complete_at_k`` (1.0 when the union of the steps' top ``k`` holds every gold
        skill), ``step_exposed`` (the union's size) and ``oneshot_complete_at_exposed`` (1.0
        when ``oneshot``'s top *n* holds every gold skill, *n* the union's size).
    """
    union = dict.fromkeys(name for ranked in step_rankings for name in ranked[:k])
    needed = set(gold)
    return {
        "step_complete_at_k": 1.0 if needed <= union.keys() else 0.0,
        "step_exposed": float(len(union)),
        "oneshot_complete_at_exposed": 1.0 if needed <= set(oneshot[: len(union)]) else 0.0,
    }


def evaluate_routing(
    recaller: Recaller,
    queries: Sequence[Query],
    method_name: str,
    *,
    known: Collection[str] | None = None,
    on_unknown: Callable[[list[Query]], None] | None = None,
    on_unranked: Callable[[list[Query]], None] | None = None,
    step_k: int = STEP_K,
    steps: StepMode = "together",
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
        on_unranked: called once with the scored queries the method ranked nothing for
            (only when there are some); by default nothing is reported.
        step_k: how many skills each step of a step-wise query is asked for.
        steps: ``"together"`` ranks a query's steps as one task
            (:func:`~maitred.recall.steps.rank_steps`: the task's servers weigh in, each step
            shows tools the earlier ones did not), ``"apart"`` asks each step on its own.

    Returns:
        The keys of :data:`METRIC_KEYS`: ``method``, ``n_queries`` (queries scored), the six
        metrics (0.0 each when no query could be scored) and ``ms_per_query``; then, only when
        some scored query has steps, the keys of :data:`STEP_KEYS` (averaged over those
        queries; see the module docstring).

    Raises:
        ValueError: ``step_k`` is below 1.
    """
    if step_k < 1:
        raise ValueError(f"step_k must be at least 1, got {step_k}")
    if known is None:
        catalog = getattr(recaller, "catalog", None)
        known = set(catalog.names) if catalog is not None else None
    usable = [q for q in queries if known is None or all(g in known for g in q.gold)]
    skipped = [q for q in queries if known is not None and not all(g in known for g in q.gold)]
    if skipped and on_unknown is not None:
        on_unknown(skipped)
    elif skipped:
        logger.warning(
            "%d of %d queries name a gold skill that is not in the catalog and were left out "
            "(%s); check that the catalog is the one the queries were written for",
            len(skipped),
            len(queries),
            describe_unknown(skipped, known or ()),
        )
    totals = dict.fromkeys(QUALITY_KEYS, 0.0)
    step_totals = dict.fromkeys(STEP_KEYS[2:], 0.0)
    n_steps = 0
    unranked: list[Query] = []
    elapsed = 0.0
    for query in usable:
        start = time.perf_counter()
        ranked = [c.name for c in recaller.rank(query.text, MRR_DEPTH)]
        elapsed += time.perf_counter() - start
        if not ranked:
            unranked.append(query)
        for key, value in query_metrics(ranked, query.gold).items():
            totals[key] += value
        if query.steps:
            n_steps += 1
            for key, value in _steps_of(recaller, query, ranked, step_k, steps).items():
                step_totals[key] += value
    if unranked and on_unranked is not None:
        on_unranked(unranked)
    n = len(usable)
    result: dict[str, Any] = {"method": method_name, "n_queries": n}
    result.update({key: (totals[key] / n if n else 0.0) for key in QUALITY_KEYS})
    result["ms_per_query"] = 1000.0 * elapsed / n if n else 0.0
    if n_steps:
        result.update({"n_step_queries": n_steps, "step_k": step_k})
        result.update({key: value / n_steps for key, value in step_totals.items()})
    return result


def _steps_of(
    recaller: Recaller, query: Query, ranked: list[str], step_k: int, mode: StepMode
) -> dict[str, float]:
    """One step-wise query: each step asked for its top ``step_k`` (together or apart); the
    text is ranked again, deeper, when the union is larger than the ranking already made."""
    if mode == "together":
        joint = rank_steps(recaller, query.steps, step_k)
        steps = [[c.name for c in r[:step_k]] for r in joint]
    else:
        steps = [[c.name for c in recaller.rank(step, step_k)] for step in query.steps]
    exposed = len({name for names in steps for name in names[:step_k]})
    if exposed > len(ranked) and len(ranked) == MRR_DEPTH:  # cut short by depth, not catalog
        ranked = [c.name for c in recaller.rank(query.text, exposed)]
    return step_metrics(steps, ranked, query.gold, step_k)


def describe_unknown(skipped: Sequence[Query], known: Collection[str], *, show: int = 3) -> str:
    """``query q3 needs 'x', query q9 needs 'y', ...``: what is missing, for messages."""
    parts = []
    for q in skipped[:show]:
        missing = [g for g in q.gold if g not in known] or list(q.gold)
        parts.append(f"query {q.id} needs {', '.join(repr(g) for g in missing)}")
    more = f" and {len(skipped) - show} more" if len(skipped) > show else ""
    return "; ".join(parts) + more


@dataclass(frozen=True)
class EvalSet:
    """One labelled evaluation set: a catalog and its queries.

    Attributes:
        name: how tables name it.
        catalog: the catalog's paths (skill folders or tools files).
        queries: the JSONL query file.
    """

    name: str
    catalog: tuple[Path, ...]
    queries: Path


def load_sets(path: Path | str) -> list[EvalSet]:
    """Read a sets file (see the module docstring); paths are relative to its folder.

    Raises:
        ConfigError: the file cannot be read, is not the expected JSON, names a set twice,
            or names a path that does not exist (the message names the file and field).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the sets file: {exc}") from exc
    items = data.get("sets") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise ConfigError(
            f'{path}: a sets file is {{"sets": [{{"name", "catalog", "queries"}}, ...]}} '
            "with at least one set"
        )
    out: list[EvalSet] = []
    for i, item in enumerate(items):
        out.append(_one_set(path, i, item))
    names = [s.name for s in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"{path}: set name(s) {', '.join(twice)} appear twice; rename one")
    return out


def _one_set(path: Path, i: int, item: Any) -> EvalSet:
    where = f"{path}: sets[{i}]"
    if not isinstance(item, dict):
        raise ConfigError(f"{where} must be an object with name, catalog and queries")
    name, catalog, queries = item.get("name"), item.get("catalog"), item.get("queries")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{where}.name must be a non-empty string")
    catalogs = [catalog] if isinstance(catalog, str) else catalog
    if (
        not isinstance(catalogs, list)
        or not catalogs
        or not all(isinstance(c, str) for c in catalogs)
    ):
        raise ConfigError(f"{where}.catalog must be a path or a list of paths")
    if not isinstance(queries, str):
        raise ConfigError(f"{where}.queries must be the path of a JSONL query file")
    base = path.parent
    paths = [base / c for c in catalogs] + [base / queries]
    for field, p in zip(["catalog"] * len(catalogs) + ["queries"], paths, strict=True):
        if not p.exists():
            raise ConfigError(f"{where}.{field}: {p} does not exist; fix the path")
    return EvalSet(name, tuple(paths[:-1]), paths[-1])


def pair_sets(catalogs: Sequence[str], queries: Sequence[Path]) -> list[EvalSet]:
    """Sets from repeated ``--catalog``/``--queries`` options.

    One query file: every catalog path forms one catalog (one set). Several query files: the
    i-th catalog path goes with the i-th query file, and each set is named after its query
    file (its folder when the file is called ``queries.jsonl``; by its path when two names
    would be the same).

    Raises:
        ConfigError: several query files but not as many catalog paths.
    """
    if len(queries) == 1:
        return [EvalSet(_set_name(queries[0]), tuple(map(Path, catalogs)), queries[0])]
    if len(catalogs) != len(queries):
        raise ConfigError(
            f"{len(queries)} --queries files need as many --catalog paths, one each, in the "
            f"same order; got {len(catalogs)} (or use --sets FILE)"
        )
    names = [_set_name(q) for q in queries]
    if len(set(names)) < len(names):  # e.g. two ``sample/queries.jsonl``: name by path
        names = [str(q) for q in queries]
    return [EvalSet(n, (Path(c),), q) for n, c, q in zip(names, catalogs, queries, strict=True)]


def _set_name(queries: Path) -> str:
    return (
        queries.parent.name if queries.stem == "queries" and queries.parent.name else queries.stem
    )
