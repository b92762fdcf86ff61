"""The forced-invocation audit: would the skills the gate blocked really have stopped?

The parity audit checks gate and procedure against generated states; this one checks them
against **real traffic**. It draws a seeded sample of blocked (turn, skill) pairs from the
decision log, fetches the snapshot each turn's gate saw (the log keeps snapshots
content-addressed, by hash) and runs the skill's procedure on it in the sandbox
(:mod:`maitred.audit.sandbox`), with the snapshot's ``as_of`` as "now" -- the moment the gate
decided, so date rules and freshness replay as they were.

* an **exit** confirms the block; the report counts them, with a Wilson interval on the rate
  (:func:`maitred.stats.wilson_interval`) and whether the exit was on a predicate the log
  recorded as fired;
* a **completion** is a soundness finding: the gate hid a skill that could have run. Each one is
  listed (turn, skill, snapshot hash, the predicates the log says fired);
* a procedure that **raises** something other than SkillExit is listed apart;
* a pair whose skill is not in the catalog, has no procedure, or whose snapshot is not in the
  log is counted as skipped / not auditable with the reason -- never as an exit.

The catalog should be the one the log was written with; the report says whether the catalog
version matches the turns' ``catalog_version``.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from maitred.audit.sandbox import run_sandboxed
from maitred.log.base import DecisionLog
from maitred.skills.model import Catalog
from maitred.stats import wilson_interval

#: Findings of one kind listed in the text summary (``--json`` lists every one).
LISTED = 20
_LEFT_OUT = ("skipped", "not_auditable")


@dataclass(frozen=True)
class BlockedPair:
    """One blocked candidate in the log."""

    turn_id: str
    skill: str
    snapshot_hash: str | None
    catalog_version: str

    def to_json(self) -> dict[str, Any]:
        return {
            "turn_id": self.turn_id,
            "skill": self.skill,
            "snapshot_hash": self.snapshot_hash,
        }


@dataclass(frozen=True)
class ForcedFinding:
    """A sampled pair that did not end in an exit.

    Attributes:
        pair: the logged pair.
        outcome: ``completed`` (a soundness finding), ``error``, ``not_auditable`` or
            ``skipped``.
        fired: the predicates the log recorded as firing for this pair.
        detail: what happened, for people (the exception, or why it was skipped).
    """

    pair: BlockedPair
    outcome: str
    fired: tuple[str, ...] = ()
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            **self.pair.to_json(),
            "outcome": self.outcome,
            "fired": list(self.fired),
            "detail": self.detail,
        }


@dataclass(frozen=True)
class ForcedAuditReport:
    """What re-running a sample of blocked pairs showed.

    Attributes:
        population: blocked pairs in the log (in the run, if one was chosen).
        sampled: pairs drawn (``min(sample, population)``).
        audited: sampled pairs whose procedure ran (sampled less skipped / not auditable).
        exited: audited pairs whose procedure exited.
        exited_on_fired: exits on a predicate the log recorded as fired for that pair.
        ci: Wilson interval of ``exited / audited`` at ``confidence``.
        findings: every sampled pair that did not exit, with its outcome.
        exit_predicates: predicate -> exits on it.
        catalog_matches: the catalog's version equals every sampled turn's.
    """

    population: int
    sampled: int
    audited: int
    exited: int
    exited_on_fired: int
    ci: tuple[float, float]
    confidence: float
    seed: int
    catalog_matches: bool
    findings: tuple[ForcedFinding, ...] = ()
    exit_predicates: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        """``exited / audited`` (0.0 when nothing could be audited)."""
        return self.exited / self.audited if self.audited else 0.0

    def of(self, outcome: str) -> tuple[ForcedFinding, ...]:
        """The findings with one outcome (``completed``, ``error``, ...)."""
        return tuple(f for f in self.findings if f.outcome == outcome)

    @property
    def ok(self) -> bool:
        """True when no sampled blocked pair completed (no soundness finding)."""
        return not self.of("completed")

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "population": self.population,
            "sampled": self.sampled,
            "audited": self.audited,
            "exited": self.exited,
            "exited_on_fired": self.exited_on_fired,
            "rate": self.rate,
            "ci": list(self.ci),
            "confidence": self.confidence,
            "seed": self.seed,
            "catalog_matches": self.catalog_matches,
            "soundness_findings": [f.to_json() for f in self.of("completed")],
            "errors": [f.to_json() for f in self.of("error")],
            "not_auditable": [f.to_json() for f in self.of("not_auditable")],
            "skipped": [f.to_json() for f in self.of("skipped")],
            "exit_predicates": dict(sorted(self.exit_predicates.items())),
        }

    def summary(self) -> str:
        """A few lines for people."""
        low, high = self.ci
        lines = [
            f"blocked pairs in the log: {self.population}; sampled {self.sampled} "
            f"(seed {self.seed}), audited {self.audited}",
            f"procedures that exited: {self.exited}/{self.audited} = {self.rate:.4f} "
            f"({self.confidence:.0%} Wilson interval {low:.4f}-{high:.4f}); "
            f"on a predicate the log recorded: {self.exited_on_fired}",
        ]
        if not self.catalog_matches:
            lines.append(
                "warning: the catalog's version differs from the one the log was written with; "
                "predicates or procedures may have changed since"
            )
        for outcome, title in (
            ("completed", "SOUNDNESS (blocked, but the procedure completes)"),
            ("error", "PROCEDURE ERROR"),
        ):
            found = self.of(outcome)
            for finding in found[:LISTED]:
                fired = ", ".join(finding.fired) or "-"
                lines.append(
                    f"  {title}: turn {finding.pair.turn_id} skill {finding.pair.skill} "
                    f"(fired: {fired}; snapshot {finding.pair.snapshot_hash}): {finding.detail}"
                )
            if len(found) > LISTED:
                lines.append(f"  ... and {len(found) - LISTED} more (--json lists them all)")
        left_out = Counter(
            f"{f.outcome}: {f.detail}" for f in self.findings if f.outcome in _LEFT_OUT
        )
        for reason, count in sorted(left_out.items()):
            lines.append(f"  {count} pair(s) {reason}")
        return "\n".join(lines)


def blocked_pairs(log: DecisionLog, run_id: str | None = None) -> list[BlockedPair]:
    """Every blocked pair in the log (or one run), ordered by turn id then skill."""
    sql = (
        "SELECT p.turn_id, p.skill, t.snapshot_hash, t.catalog_version "
        "FROM pairs p JOIN turns t ON t.turn_id = p.turn_id WHERE p.visible = ?"
    )
    params: list[Any] = [False]
    if run_id is not None:
        sql += " AND t.run_id = ?"
        params.append(run_id)
    rows = log.query(sql + " ORDER BY p.turn_id, p.skill", params)
    return [BlockedPair(str(r[0]), str(r[1]), r[2], str(r[3])) for r in rows]


def _fired(log: DecisionLog, pair: BlockedPair) -> tuple[str, ...]:
    rows = log.query(
        "SELECT fired_json FROM pairs WHERE turn_id = ? AND skill = ?", (pair.turn_id, pair.skill)
    )
    if not rows or not rows[0][0]:
        return ()
    return tuple(str(o.get("predicate", "")) for o in json.loads(rows[0][0]))


def audit_blocked(
    log: DecisionLog,
    catalog: Catalog,
    sample: int,
    *,
    seed: int = 0,
    run_id: str | None = None,
    confidence: float = 0.95,
) -> ForcedAuditReport:
    """Re-run the procedures of ``sample`` blocked pairs drawn (seeded) from ``log``.

    Args:
        log: an open decision log (read-only is enough).
        catalog: the skills whose procedures to run (the catalog the log was written with).
        sample: how many blocked pairs to draw; all of them when there are fewer.
        seed: seeds the draw, so the same log and seed give the same sample.
        run_id: only pairs of this run.
        confidence: of the Wilson interval.

    Raises:
        ValueError: ``sample`` below 1.
    """
    if sample < 1:
        raise ValueError(f"sample must be at least 1, got {sample}")
    population = blocked_pairs(log, run_id)
    drawn = _draw(population, sample, seed)
    findings: list[ForcedFinding] = []
    exits: Counter[str] = Counter()
    audited = exited = on_fired = 0
    for pair in drawn:
        fired = _fired(log, pair)
        skill = catalog.get(pair.skill)
        snapshot = log.snapshot(pair.snapshot_hash) if pair.snapshot_hash else None
        reason = _skip_reason(pair, skill is not None, snapshot is not None)
        if reason:
            findings.append(ForcedFinding(pair, "skipped", fired, reason))
            continue
        assert skill is not None and snapshot is not None
        if not fired:  # the whole turn failed closed: nothing the skill's exits could be held to
            detail = (
                "blocked because the whole turn failed closed (state unavailable or account not "
                "found), not by a predicate"
            )
            findings.append(ForcedFinding(pair, "not_auditable", fired, detail))
            continue
        if skill.contract.procedure is None:
            detail = "the skill has no procedure to run"
            findings.append(ForcedFinding(pair, "not_auditable", fired, detail))
            continue
        audited += 1
        run = run_sandboxed(skill.name, skill.contract, snapshot, snapshot.as_of)
        if run.status == "exited":
            exited += 1
            exits[str(run.exit_predicate)] += 1
            on_fired += run.exit_predicate in fired
        elif run.status == "completed":
            tools = ", ".join(tool for tool, _ in run.calls) or "none"
            detail = f"the procedure completed (tool calls, recorded only: {tools})"
            findings.append(ForcedFinding(pair, "completed", fired, detail))
        else:
            findings.append(ForcedFinding(pair, "error", fired, run.describe()))
    return ForcedAuditReport(
        population=len(population),
        sampled=len(drawn),
        audited=audited,
        exited=exited,
        exited_on_fired=on_fired,
        ci=wilson_interval(exited, audited, confidence),
        confidence=confidence,
        seed=seed,
        catalog_matches=all(p.catalog_version == catalog.version for p in drawn),
        findings=tuple(findings),
        exit_predicates=dict(exits),
    )


def _draw(population: Sequence[BlockedPair], sample: int, seed: int) -> list[BlockedPair]:
    if sample >= len(population):
        return list(population)
    picked = random.Random(f"forced:{seed}").sample(range(len(population)), sample)
    return [population[i] for i in sorted(picked)]


def _skip_reason(pair: BlockedPair, has_skill: bool, has_snapshot: bool) -> str:
    if not has_skill:
        return f"skill {pair.skill!r} is not in the catalog given (pass the skills the log used)"
    if pair.snapshot_hash is None:
        return "the turn logged no snapshot"
    if not has_snapshot:
        return f"snapshot {pair.snapshot_hash} is not in the log (run `maitred log verify`)"
    return ""
