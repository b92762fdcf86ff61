"""Which logged turns a counterfactual replay asks the model about.

Both cohorts pick **conversations** from the decision log, then one turn per conversation: the
conversation's matched turn with the most blocked pairs (the earliest on a tie) -- the turn at
which the gate changed the menu the most.

* ``random`` -- conversations with at least one matched turn, uniformly at random;
* ``risk`` -- conversations with at least one blocked pair, drawn without replacement with
  probability proportional to their number of blocked pairs (Efraimidis-Spirakis keys
  ``u ** (1 / weight)``), so conversations where the gate removed more are over-represented.
  Rates measured on this cohort are therefore *risk-enriched*, not population rates.

Sampling is seeded: the same log, cohort, n and seed give the same turns.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Literal

Cohort = Literal["random", "risk"]
COHORTS: tuple[Cohort, ...] = ("random", "risk")


@dataclass(frozen=True)
class ReplayTurn:
    """A logged turn to replay: its message, the conversation before it, and its candidates."""

    turn_id: str
    conversation: tuple[str, ...]
    candidates: tuple[str, ...]
    blocked: frozenset[str]
    catalog_version: str = ""

    @property
    def visible(self) -> tuple[str, ...]:
        return tuple(s for s in self.candidates if s not in self.blocked)


def _conversations(log: Any) -> dict[str, list[tuple[Any, ...]]]:
    rows = log.query(
        "SELECT conversation_id, turn_id, ts, n_candidates, n_candidates - n_visible, "
        "message_text, catalog_version FROM turns ORDER BY conversation_id, ts, turn_id"
    )
    out: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        key = row[0] or row[1]  # a turn without a conversation is its own conversation
        out.setdefault(key, []).append(row)
    return out


def sample(log: Any, cohort: Cohort, n: int, seed: int = 0) -> list[ReplayTurn]:
    """Draw up to ``n`` turns for ``cohort`` (see the module docstring)."""
    convs = {k: rows for k, rows in _conversations(log).items() if any(r[3] > 0 for r in rows)}
    rng = random.Random(seed)
    if cohort == "random":
        keys = sorted(convs)
        chosen = rng.sample(keys, min(n, len(keys)))
    else:
        weighted = [(k, sum(r[4] for r in rows)) for k, rows in sorted(convs.items())]
        scored = [(rng.random() ** (1.0 / w), k) for k, w in weighted if w > 0]
        chosen = [k for _, k in sorted(scored, reverse=True)[:n]]
    return [_turn(log, convs[k]) for k in chosen]


def _turn(log: Any, rows: list[tuple[Any, ...]]) -> ReplayTurn:
    matched = [i for i, r in enumerate(rows) if r[3] > 0]
    best = max(matched, key=lambda i: (rows[i][4], -i))
    turn_id = rows[best][1]
    history = tuple(str(r[5]) for r in rows[max(0, best - 2) : best + 1])
    pairs = log.query(
        "SELECT skill, visible FROM pairs WHERE turn_id = ? ORDER BY rank, skill", (turn_id,)
    )
    return ReplayTurn(
        turn_id=turn_id,
        conversation=history,
        candidates=tuple(p[0] for p in pairs),
        blocked=frozenset(p[0] for p in pairs if not p[1]),
        catalog_version=str(rows[best][6]),
    )
