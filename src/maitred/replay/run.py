"""Counterfactual replay: would the model have picked a skill the gate blocked?

For each sampled turn (:mod:`maitred.replay.cohort`) the model is asked twice, with the same
conversation: (a) with the **gated** menu -- the skills that were visible -- and (b) with
**every candidate**, blocked ones included. The replay reports how often (b) picks a blocked
skill (with a Wilson interval) and how often (a) and (b) differ. Each answer is written to the
log's ``replays`` table, tied to the turn it replayed; a model error is recorded for that turn
and the replay carries on. Turns are asked concurrently on a thread pool (``workers``).

No figure from nothing. A replay refuses, before any row is written, when

* the catalog it was given is not the one the sampled turns were routed with (their
  ``catalog_version`` in the log): the menus rebuilt from it would not be the menus the gate
  decided on, so a "blocked" pick would mean nothing (:class:`~maitred.errors.ConfigError`,
  naming both versions);
* the log holds no turn the cohort can replay, or every model call failed: the rate is then
  unknown, not zero (:class:`~maitred.errors.ReplayError`, naming the first error).

A replay where only some calls failed reports the others, with the failures counted
(``errors``); ``maitred replay`` then exits 1, as for any input with bad records.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from maitred.errors import ConfigError, ReplayError
from maitred.replay.cohort import Cohort, ReplayTurn, sample
from maitred.replay.models import ChoiceModel
from maitred.replay.prompt import MenuItem
from maitred.skills.model import Catalog
from maitred.stats import wilson_interval


@dataclass(frozen=True)
class ReplayOutcome:
    """The model's two answers for one turn."""

    turn_id: str
    pick_gated: str | None
    pick_all: str | None
    picked_blocked: bool
    error: str = ""


@dataclass
class ReplayReport:
    """Totals of a replay (``to_json`` is what ``maitred replay --json`` prints)."""

    replay_id: str
    cohort: str
    model: str
    outcomes: list[ReplayOutcome] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        ok = [o for o in self.outcomes if not o.error]
        blocked = sum(o.picked_blocked for o in ok)
        differ = sum(o.pick_gated != o.pick_all for o in ok)
        return {
            "replay_id": self.replay_id,
            "cohort": self.cohort,
            "model": self.model,
            "sampled": len(self.outcomes),
            "answered": len(ok),
            "errors": len(self.outcomes) - len(ok),
            "picked_blocked": blocked,
            "picked_blocked_rate": blocked / len(ok) if ok else 0.0,
            "picked_blocked_ci": list(wilson_interval(blocked, len(ok))),
            "differ": differ,
            "differ_rate": differ / len(ok) if ok else 0.0,
            "differ_ci": list(wilson_interval(differ, len(ok))),
        }


def _menu(catalog: Catalog, names: tuple[str, ...]) -> list[MenuItem]:
    # in name order, not recall order: both menus then differ only by the blocked skills (no
    # position effect), and the shared prompt prefix lets a local model reuse its cache
    return [MenuItem(n, catalog[n].description) for n in sorted(names) if n in catalog]


def ask(model: ChoiceModel, catalog: Catalog, turn: ReplayTurn) -> ReplayOutcome:
    """Ask the model about one turn, with and without the gate; errors become data."""
    try:
        gated = model.choose(turn.conversation, _menu(catalog, turn.visible))
        everything = model.choose(turn.conversation, _menu(catalog, turn.candidates))
    except Exception as exc:  # an endpoint or model failure is recorded, not fatal
        return ReplayOutcome(turn.turn_id, None, None, False, f"{type(exc).__name__}: {exc}")
    return ReplayOutcome(turn.turn_id, gated, everything, everything in turn.blocked)


def replay(
    log: Any,
    fanout: Fanout,
    *,
    cohort: Cohort,
    n: int,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> ReplayReport:
    """Sample ``n`` turns of ``cohort`` from ``log``, ask them through ``fanout`` (a local
    :class:`~maitred.replay.fanout.ThreadFanout` or a
    :class:`~maitred.replay.fanout.RayFanout`), log the answers and return the totals."""
    turns = sample(log, cohort, n, seed)
    if not turns:
        raise ReplayError(
            f"the decision log holds no turn the {cohort!r} cohort can replay (it needs turns "
            "with candidates" + (", some of them blocked" if cohort == "risk" else "") + "); "
            "route messages with this log first, or choose another cohort"
        )
    _check_catalog(turns, fanout.catalog_version)
    report = ReplayReport(uuid.uuid4().hex[:12], cohort, fanout.model_name)
    for outcome in fanout.map(turns):
        report.outcomes.append(outcome)
        if progress is not None:
            progress(1)
    if all(o.error for o in report.outcomes):
        first = report.outcomes[0].error
        raise ReplayError(
            f"every one of the {len(report.outcomes)} model calls failed (first: {first}); "
            "nothing was stored: check the model (--model, --base-url, the API key) and "
            "run the replay again"
        )
    now = time.time()
    log.write_replays(
        [
            (
                report.replay_id,
                o.turn_id,
                cohort,
                fanout.model_name,
                o.pick_gated,
                o.pick_all,
                o.picked_blocked,
                o.error,
                now,
            )
            for o in report.outcomes
        ]
    )
    return report


def _check_catalog(turns: Sequence[ReplayTurn], version: str) -> None:
    """Refuse a catalog other than the one the sampled turns were routed with."""
    logged = sorted({t.catalog_version for t in turns})
    if logged == [version]:
        return
    shown = ", ".join(v[:19] for v in logged)
    raise ConfigError(
        f"the catalog given (version {version[:19]}) is not the one the sampled turns were "
        f"routed with (version {shown}); pass --skills with the catalog the log was "
        "written with, or replay a log routed with this catalog"
    )


class Fanout(Protocol):
    """Asks every turn and yields the outcomes in the turns' order."""

    @property
    def model_name(self) -> str: ...

    @property
    def catalog_version(self) -> str:
        """The version of the catalog the menus are rebuilt from."""
        ...

    def map(self, turns: Sequence[ReplayTurn]) -> Iterator[ReplayOutcome]: ...
