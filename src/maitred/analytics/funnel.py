"""The funnel: how many skills, and how many description tokens, survive each stage.

For a run (or the whole log) the funnel counts, from the decision log alone::

    messages ─► matched messages (recall found >= 1 candidate)
    candidate pairs (after recall) ─► blocked by the gate ─► visible pairs ─► exposed pairs
    tokens: all skills x messages ─► after recall ─► after gate ─► exposed

and reports the reductions: ``token_reduction = 1 - after_gate / all``,
``recall_token_reduction = 1 - after_recall / all`` and ``gate_token_reduction =
1 - after_gate / after_recall`` (the share of the recalled tokens the gate removed), plus, per
skill, how often it was a candidate and blocked and the tokens its blocks saved, and which
predicates blocked the most pairs (from ``pairs.fired_json``). A ratio over an empty
denominator is 0.0.

Turns that **failed closed as a whole** are counted apart, per cause (``state_unavailable``:
the state store failed; ``account_not_found``: it has no record of the account): how many
turns, and how many of the blocked pairs were blocked for that cause rather than by a
predicate. The cause is read from the prefix of ``turns.provider_error`` (see
:mod:`maitred.records`); an error text without a known prefix, from a log written before
causes existed, counts as ``state_unavailable``. These pairs are part of ``blocked_pairs``
(they were withheld) but never of ``top_predicates`` (no predicate fired on them).

Invariants (tested): ``blocked <= candidates`` and ``tokens_after_gate <= tokens_after_recall``;
``tokens_after_recall <= tokens_all_skills`` holds whenever each turn's candidates are distinct
catalog skills.

Analytics only reads the log: the log is opened read-only (the database refuses writes) and
everything is aggregated by SQL in the log's own engine (SQLite or PostgreSQL), so the funnel
needs no extra dependency. The queries are plain aggregate SQL; ``maitred report``
(:mod:`maitred.analytics.report`) runs its own in DuckDB over the same log.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table

from maitred.errors import ConfigError
from maitred.log import DecisionLog, open_log
from maitred.log.storable import text_fault
from maitred.records import CAUSES

_PAIR_TOTALS = """
SELECT p.skill,
       COUNT(*),
       SUM(CASE WHEN p.visible THEN 0 ELSE 1 END),
       SUM(CASE WHEN p.visible THEN 1 ELSE 0 END),
       SUM(CASE WHEN p.exposed THEN 1 ELSE 0 END),
       SUM(p.desc_tokens),
       SUM(CASE WHEN p.visible THEN p.desc_tokens ELSE 0 END),
       SUM(CASE WHEN p.exposed THEN p.desc_tokens ELSE 0 END)
FROM pairs p {join} {where}
GROUP BY p.skill
"""

_TURN_TOTALS = """
SELECT COUNT(*),
       SUM(CASE WHEN t.n_candidates > 0 THEN 1 ELSE 0 END),
       SUM(r.tokens_all_skills),
       SUM(t.menu_tokens)
FROM turns t JOIN runs r ON r.run_id = t.run_id {where}
"""

# One row per (blocked pair, predicate that fired on it); JSON is unpacked by the engine.
_FIRED = {
    "sqlite": (
        "json_each(p.fired_json) AS f",
        "json_extract(f.value, '$.predicate')",
    ),
    "postgres": (
        "jsonb_array_elements(p.fired_json::jsonb) AS f(value)",
        "f.value ->> 'predicate'",
    ),
}
_TOP_PREDICATES = """
SELECT {name} AS predicate, COUNT(*) AS n
FROM pairs p {join} CROSS JOIN {unpack}
WHERE NOT p.visible AND p.fired_json <> '[]' {and_run}
GROUP BY {name}
ORDER BY n DESC, predicate
"""


def cause_sql(column: str = "t.provider_error") -> str:
    """SQL for the cause of a turn whose ``provider_error`` (``column``) is not empty.

    The arms are generated from :data:`maitred.records.CAUSES`; text without a known prefix
    is ``state_unavailable``. Plain ``substr`` and ``CASE``: SQLite, PostgreSQL and DuckDB.
    """
    arms = " ".join(
        f"WHEN substr({column}, 1, {len(cause) + 1}) = '{cause}:' THEN '{cause}'"
        for cause in CAUSES
        if cause != "state_unavailable"
    )
    return f"CASE {arms} ELSE 'state_unavailable' END"


# (cause, turns with it, blocked pairs of those turns)
_CAUSES = """
SELECT {cause} AS cause,
       COUNT(DISTINCT t.turn_id),
       SUM(CASE WHEN p.turn_id IS NOT NULL AND NOT p.visible THEN 1 ELSE 0 END)
FROM turns t LEFT JOIN pairs p ON p.turn_id = t.turn_id
WHERE t.provider_error <> '' {and_run}
GROUP BY 1
"""


def _ratio(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


@dataclass(frozen=True)
class SkillFunnel:
    """One skill's row of the funnel.

    Attributes:
        skill: the skill.
        candidates: pairs in which recall proposed it.
        blocked: of those, pairs the gate blocked.
        visible: pairs that passed the gate.
        exposed: pairs the depth rule exposed.
        tokens: description tokens over all its candidate pairs.
        tokens_saved: description tokens of its blocked pairs (what the gate kept off menus).
        tokens_exposed: description tokens of its exposed pairs.
    """

    skill: str
    candidates: int
    blocked: int
    visible: int
    exposed: int
    tokens: int
    tokens_saved: int
    tokens_exposed: int

    @property
    def block_rate(self) -> float:
        """blocked / candidates."""
        return _ratio(self.blocked, self.candidates)

    def to_json(self) -> dict[str, Any]:
        """The row as JSON (``block_rate`` included)."""
        return {
            "candidates": self.candidates,
            "blocked": self.blocked,
            "block_rate": self.block_rate,
            "visible": self.visible,
            "exposed": self.exposed,
            "tokens": self.tokens,
            "tokens_saved": self.tokens_saved,
            "tokens_exposed": self.tokens_exposed,
        }


@dataclass(frozen=True)
class Funnel:
    """Counts and token sums at each stage, for one run or the whole log.

    Attributes:
        run_id: the run, or None for every run in the log.
        messages: turns logged (one per routed message).
        matched_messages: turns with at least one candidate.
        candidate_pairs: (turn, candidate) pairs recall produced.
        blocked_pairs: pairs the executability gate blocked.
        visible_pairs: pairs that passed the gate.
        exposed_pairs: pairs the depth rule put on the menu.
        tokens_all_skills: sum over messages of the run's whole-catalog description tokens.
        tokens_after_recall: description tokens of every candidate pair.
        tokens_after_gate: description tokens of the visible pairs.
        tokens_exposed: description tokens of the exposed pairs.
        menu_tokens: rendered menu tokens, as counted by the menu stage.
        per_skill: one row per skill, most candidates first.
        top_predicates: (predicate, blocked pairs it fired on), most first.
        state_unavailable_turns: turns that failed closed because the state store failed.
        state_unavailable_pairs: blocked pairs of those turns (withheld, no predicate asked).
        account_not_found_turns: turns for an account the state store has no record of.
        account_not_found_pairs: blocked pairs of those turns.
    """

    run_id: str | None
    messages: int
    matched_messages: int
    candidate_pairs: int
    blocked_pairs: int
    visible_pairs: int
    exposed_pairs: int
    tokens_all_skills: int
    tokens_after_recall: int
    tokens_after_gate: int
    tokens_exposed: int
    menu_tokens: int
    per_skill: tuple[SkillFunnel, ...]
    top_predicates: tuple[tuple[str, int], ...]
    state_unavailable_turns: int = 0
    state_unavailable_pairs: int = 0
    account_not_found_turns: int = 0
    account_not_found_pairs: int = 0

    @property
    def fail_closed_turns(self) -> int:
        """Turns that failed closed as a whole, whatever the cause."""
        return self.state_unavailable_turns + self.account_not_found_turns

    @property
    def predicate_blocked_pairs(self) -> int:
        """Blocked pairs that a predicate blocked (not a whole-turn cause)."""
        return self.blocked_pairs - self.state_unavailable_pairs - self.account_not_found_pairs

    @property
    def blocked_pair_share(self) -> float:
        """blocked_pairs / candidate_pairs."""
        return _ratio(self.blocked_pairs, self.candidate_pairs)

    @property
    def token_reduction(self) -> float:
        """1 - tokens_after_gate / tokens_all_skills."""
        if not self.tokens_all_skills:
            return 0.0
        return 1.0 - self.tokens_after_gate / self.tokens_all_skills

    @property
    def recall_token_reduction(self) -> float:
        """1 - tokens_after_recall / tokens_all_skills."""
        if not self.tokens_all_skills:
            return 0.0
        return 1.0 - self.tokens_after_recall / self.tokens_all_skills

    @property
    def gate_token_reduction(self) -> float:
        """Share of the recalled tokens the gate removed: 1 - after_gate / after_recall."""
        if not self.tokens_after_recall:
            return 0.0
        return 1.0 - self.tokens_after_gate / self.tokens_after_recall

    def to_json(self) -> dict[str, Any]:
        """Every count, token sum and ratio, ``per_skill`` and ``top_predicates`` as objects."""
        return {
            "run_id": self.run_id,
            "messages": self.messages,
            "matched_messages": self.matched_messages,
            "candidate_pairs": self.candidate_pairs,
            "blocked_pairs": self.blocked_pairs,
            "blocked_pair_share": self.blocked_pair_share,
            "visible_pairs": self.visible_pairs,
            "exposed_pairs": self.exposed_pairs,
            "tokens_all_skills": self.tokens_all_skills,
            "tokens_after_recall": self.tokens_after_recall,
            "tokens_after_gate": self.tokens_after_gate,
            "tokens_exposed": self.tokens_exposed,
            "menu_tokens": self.menu_tokens,
            "token_reduction": self.token_reduction,
            "recall_token_reduction": self.recall_token_reduction,
            "gate_token_reduction": self.gate_token_reduction,
            "per_skill": {s.skill: s.to_json() for s in self.per_skill},
            "top_predicates": dict(self.top_predicates),
            "predicate_blocked_pairs": self.predicate_blocked_pairs,
            "fail_closed": {
                "state_unavailable": {
                    "turns": self.state_unavailable_turns,
                    "pairs": self.state_unavailable_pairs,
                },
                "account_not_found": {
                    "turns": self.account_not_found_turns,
                    "pairs": self.account_not_found_pairs,
                },
            },
        }


def funnel(
    log: DecisionLog | str | os.PathLike[str],
    run_id: str | None = None,
    *,
    tenant: str | None = None,
) -> Funnel:
    """Compute the funnel of one run (or of the whole log) by SQL over the decision log.

    Args:
        log: a path or URL (opened read-only and closed again), or an open log.
        run_id: the run to count; None counts every run.
        tenant: count ``run_id`` only if the log records it as this tenant's run (compared
            exactly: ``acme`` is not ``acme-eu``); the error then names no other run.

    Returns:
        The funnel.

    Raises:
        ConfigError: ``run_id`` is not in the log.
        LogError: the log cannot be opened or read.
    """
    if not isinstance(log, DecisionLog):
        with open_log(log, read_only=True) as opened:
            return funnel(opened, run_id, tenant=tenant)
    params: Sequence[Any] = ()
    if tenant is not None and run_id is None:
        raise ConfigError("funnel(tenant=...) counts one run of that tenant: pass its run_id")
    if run_id is not None:
        _check_run(log, run_id, tenant)
        params = (run_id,)
    skills = _per_skill(log, run_id, params)
    where = "WHERE t.run_id = ?" if run_id is not None else ""
    n_turns, matched, tokens_all, menu = log.query(_TURN_TOTALS.format(where=where), params)[0]
    recalled = sum(s.tokens for s in skills)
    causes = _causes(log, run_id, params)
    return Funnel(
        run_id=run_id,
        messages=int(n_turns),
        matched_messages=int(matched or 0),
        candidate_pairs=sum(s.candidates for s in skills),
        blocked_pairs=sum(s.blocked for s in skills),
        visible_pairs=sum(s.visible for s in skills),
        exposed_pairs=sum(s.exposed for s in skills),
        tokens_all_skills=int(tokens_all or 0),
        tokens_after_recall=recalled,
        tokens_after_gate=recalled - sum(s.tokens_saved for s in skills),
        tokens_exposed=sum(s.tokens_exposed for s in skills),
        menu_tokens=int(menu or 0),
        per_skill=skills,
        top_predicates=_top_predicates(log, run_id, params),
        state_unavailable_turns=causes["state_unavailable"][0],
        state_unavailable_pairs=causes["state_unavailable"][1],
        account_not_found_turns=causes["account_not_found"][0],
        account_not_found_pairs=causes["account_not_found"][1],
    )


def _causes(
    log: DecisionLog, run_id: str | None, params: Sequence[Any]
) -> dict[str, tuple[int, int]]:
    """cause -> (turns, blocked pairs), every cause present (zeros when none)."""
    and_run = "AND t.run_id = ?" if run_id is not None else ""
    sql = _CAUSES.format(cause=cause_sql(), and_run=and_run)
    found = {str(c): (int(n), int(pairs or 0)) for c, n, pairs in log.query(sql, params)}
    return {cause: found.get(cause, (0, 0)) for cause in CAUSES}


def _check_run(log: DecisionLog, run_id: str, tenant: str | None = None) -> None:
    fault = text_fault(run_id)
    if fault:  # no stored id holds one, and PostgreSQL cannot even be asked about it
        raise ConfigError(
            f"run {run_id!r} is not in the decision log at {log.location}: the id {fault}, "
            "so no run has it"
        )
    if tenant is not None:
        if log.query("SELECT 1 FROM runs WHERE run_id = ? AND tenant = ?", (run_id, tenant)):
            return
        raise ConfigError(
            f"run {run_id!r} is not in the decision log at {log.location} as a run of tenant "
            f"{tenant!r}"
        )
    if log.query("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)):
        return
    known = [r[0] for r in log.query("SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 10")]
    raise ConfigError(
        f"run {run_id!r} is not in the decision log at {log.location}; the latest runs there "
        f"are {known} (omit the run id to count every run)"
    )


def _per_skill(
    log: DecisionLog, run_id: str | None, params: Sequence[Any]
) -> tuple[SkillFunnel, ...]:
    if run_id is None:
        sql = _PAIR_TOTALS.format(join="", where="")
    else:
        sql = _PAIR_TOTALS.format(
            join="JOIN turns t ON t.turn_id = p.turn_id", where="WHERE t.run_id = ?"
        )
    rows = [
        SkillFunnel(
            skill=str(skill),
            candidates=int(n),
            blocked=int(blocked),
            visible=int(visible),
            exposed=int(exposed),
            tokens=int(tokens),
            tokens_saved=int(tokens) - int(tokens_visible),
            tokens_exposed=int(tokens_exposed),
        )
        for skill, n, blocked, visible, exposed, tokens, tokens_visible, tokens_exposed in (
            log.query(sql, params)
        )
    ]
    rows.sort(key=lambda s: (-s.candidates, s.skill))
    return tuple(rows)


def _top_predicates(
    log: DecisionLog, run_id: str | None, params: Sequence[Any]
) -> tuple[tuple[str, int], ...]:
    unpack, name = _FIRED[log.dialect]
    join, and_run = "", ""
    if run_id is not None:
        join, and_run = "JOIN turns t ON t.turn_id = p.turn_id", "AND t.run_id = ?"
    sql = _TOP_PREDICATES.format(name=name, unpack=unpack, join=join, and_run=and_run)
    return tuple((str(pred), int(n)) for pred, n in log.query(sql, params))


def _pct(value: float) -> str:
    return f"{value:.1%}"


def render_table(f: Funnel) -> Table:
    """The funnel as a rich table: one row per stage, with counts, tokens and reductions."""
    title = f"Funnel, run {f.run_id}" if f.run_id else "Funnel, all runs"
    table = Table(title=title)
    table.add_column("stage")
    table.add_column("count", justify="right")
    table.add_column("tokens", justify="right")
    table.add_column("note")
    table.add_row("messages", f"{f.messages:,}", f"{f.tokens_all_skills:,}", "whole catalog each")
    table.add_row(
        "matched messages",
        f"{f.matched_messages:,}",
        "",
        f"{_pct(_ratio(f.matched_messages, f.messages))} of messages",
    )
    table.add_row(
        "candidate pairs (recall)",
        f"{f.candidate_pairs:,}",
        f"{f.tokens_after_recall:,}",
        f"-{_pct(f.recall_token_reduction)} tokens vs all skills",
    )
    table.add_row(
        "blocked pairs (gate)",
        f"{f.blocked_pairs:,}",
        f"{f.tokens_after_recall - f.tokens_after_gate:,}",
        f"{_pct(f.blocked_pair_share)} of pairs, "
        f"-{_pct(f.gate_token_reduction)} of recalled tokens",
    )
    table.add_row(
        "visible pairs",
        f"{f.visible_pairs:,}",
        f"{f.tokens_after_gate:,}",
        f"-{_pct(f.token_reduction)} tokens vs all skills",
    )
    table.add_row("exposed pairs (depth)", f"{f.exposed_pairs:,}", f"{f.tokens_exposed:,}", "")
    for cause, turns, pairs in (
        ("state unavailable", f.state_unavailable_turns, f.state_unavailable_pairs),
        ("account not found", f.account_not_found_turns, f.account_not_found_pairs),
    ):
        style = "bold red" if turns else ""
        table.add_row(
            f"fail-closed: {cause}",
            f"{turns:,} turns",
            "",
            f"{pairs:,} of the blocked pairs (no predicate asked)",
            style=style,
        )
    return table


def render_skills_table(f: Funnel, limit: int = 20) -> Table:
    """Per-skill rows (most candidates first, at most ``limit``) as a rich table."""
    table = Table(title=f"Per skill (top {min(limit, len(f.per_skill))} of {len(f.per_skill)})")
    table.add_column("skill")
    for name in ("candidates", "blocked", "block rate", "tokens saved"):
        table.add_column(name, justify="right")
    for s in f.per_skill[:limit]:
        table.add_row(
            s.skill,
            f"{s.candidates:,}",
            f"{s.blocked:,}",
            _pct(s.block_rate),
            f"{s.tokens_saved:,}",
        )
    return table
