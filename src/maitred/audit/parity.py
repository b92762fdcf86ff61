"""The parity audit: does each skill's procedure stop exactly where the gate blocks it?

For every skill of a catalog the audit generates state fixtures (:mod:`maitred.audit.fixtures`:
a deterministic sweep of boundary values, odd values, missing and stale keys, then seeded random
states), and on each fixture's snapshot compares two verdicts:

* the **gate's** -- :meth:`~maitred.gate.executability.ExecutabilityGate.decide`, i.e. the
  decision kernel (:func:`maitred.contract.kernel.decide_exit`), the very code that hides skills
  at stage 2 and refuses their calls at stage 5: blocked when any exit predicate holds;
* the **procedure's** -- the skill's own procedure run in the sandbox
  (:mod:`maitred.audit.sandbox`): completed, exited on a predicate, or raised.

Two disagreements matter:

* a **soundness violation** -- the gate blocks but the procedure completes: the gate hid a skill
  that could have run. The procedure either never checks the predicate that fired (it skips
  ``ctx.exit_if``) or checks it inline with a different condition. Any one fails the audit.
* a **missed block** -- the gate offers but the procedure exits on a hard state condition: the
  model was shown a skill that cannot complete. Reported, not fatal.

A procedure that raises anything but :class:`~maitred.contract.procedure.SkillExit` is reported
(skill, exception, line, fixture) and counted apart; a skill without a procedure is **not
auditable** and is reported as such, never as passing.

Each kind of finding is grouped (by the predicates involved, or the exception and line) and one
fixture per group is shrunk with hypothesis (:func:`hypothesis.find` over
:meth:`~maitred.audit.fixtures.FixtureSpace.focused`) to a minimal counterexample. Everything is
seeded: the same catalog, seed and fixture count give the same report.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Literal

from hypothesis import HealthCheck, Phase, Verbosity, find, settings
from hypothesis.errors import NoSuchExample

from maitred.audit.fixtures import AUDIT_NOW, Fixture, FixtureSpace, simplify
from maitred.audit.sandbox import SandboxRun, run_sandboxed
from maitred.gate.executability import ExecutabilityGate
from maitred.skills.catalog import load_catalog, load_catalog_report
from maitred.skills.model import Catalog, Skill
from maitred.state.snapshot import Snapshot

FindingKind = Literal["soundness", "missed_block", "error"]
#: How many groups of one kind are shrunk per skill (the rest keep their first fixture).
MAX_SHRUNK_GROUPS = 4
#: Examples hypothesis may try while searching for and shrinking one counterexample.
SHRINK_EXAMPLES = 400

Progress = Callable[[str, int, int], None]
_STATUS_COUNT = {
    "completed": "procedure_completed",
    "exited": "procedure_exited",
    "error": "procedure_errors",
}


class _NoProvider:
    """The audit hands the gate ready-made snapshots; it never fetches."""

    def fetch(self, account: str, keys: Collection[str]) -> Snapshot:
        raise RuntimeError("the parity audit decides on fixture snapshots and never fetches")


@dataclass(frozen=True)
class Case:
    """One fixture, the gate's verdict and how the procedure ended."""

    fixture: Fixture
    gate_fired: tuple[str, ...]
    run: SandboxRun

    @property
    def kind(self) -> FindingKind | None:
        """Which disagreement this is, if any."""
        if self.run.status == "error":
            return "error"
        if self.gate_fired and self.run.status == "completed":
            return "soundness"
        if not self.gate_fired and self.run.status == "exited":
            return "missed_block"
        return None

    @property
    def group(self) -> tuple[Any, ...]:
        """What makes two findings "the same one": kind plus predicates, or exception+line."""
        if self.kind == "soundness":
            return ("soundness", self.gate_fired)
        if self.kind == "missed_block":
            return ("missed_block", self.run.exit_predicate, self.run.via)
        return ("error", self.run.error.split(":", 1)[0], self.run.where)


@dataclass(frozen=True)
class Finding:
    """A group of disagreeing fixtures and its minimal counterexample.

    Attributes:
        kind: ``soundness``, ``missed_block`` or ``error``.
        predicates: soundness: the predicates the gate blocked on; missed block: the one the
            procedure exited on; error: empty.
        count: fixtures in the group.
        counterexample: the (shrunk) fixture.
        shrunk: True when hypothesis found and minimised it; False: the first fixture seen.
        gate: the gate's verdict on the counterexample, for people.
        procedure: how the procedure ended on it, for people.
        unchecked: soundness: the blocking predicates the procedure never evaluated.
    """

    kind: FindingKind
    predicates: tuple[str, ...]
    count: int
    counterexample: Fixture
    shrunk: bool
    gate: str
    procedure: str
    unchecked: tuple[str, ...] = ()
    inline: tuple[str, ...] = ()

    def message(self, skill: str) -> str:
        """One line naming the skill, the predicate(s), the disagreement and the state."""
        names = ", ".join(self.predicates)
        if self.kind == "soundness":
            never = [p for p in self.unchecked if p not in self.inline]
            reasons = [f"it never checks {', '.join(never)}"] if never else []
            if self.inline:
                reasons.append(
                    f"it checks {', '.join(self.inline)} inline instead of with ctx.exit_if, "
                    "and its condition differs from the declared one"
                )
            why = "; ".join(reasons) or "it checks the predicate but does not stop"
            what = (
                f"SOUNDNESS {skill}: the gate blocks on {names} but the procedure completes ({why})"
            )
        elif self.kind == "missed_block":
            what = f"MISSED BLOCK {skill}: the gate offers it but the procedure {self.procedure}"
        else:
            what = f"PROCEDURE ERROR {skill}: the procedure {self.procedure}"
        return f"{what}; counterexample: {self.counterexample.describe()} [{self.count} fixtures]"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "predicates": list(self.predicates),
            "count": self.count,
            "counterexample": self.counterexample.to_json(),
            "shrunk": self.shrunk,
            "gate": self.gate,
            "procedure": self.procedure,
            "unchecked": list(self.unchecked),
            "inline": list(self.inline),
        }


@dataclass(frozen=True)
class PredicateStats:
    """How often one predicate decided, over a skill's fixtures.

    Attributes:
        predicate: its name.
        gate_held: fixtures on which it held (the gate blocked on it, maybe with others).
        gate_sole: fixtures on which it was the only one holding (it alone decided).
        procedure_exits: fixtures on which the procedure exited on it.
        checked: whether the procedure ever evaluated it through ``ctx.exit_if``.
    """

    predicate: str
    gate_held: int = 0
    gate_sole: int = 0
    procedure_exits: int = 0
    checked: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "predicate": self.predicate,
            "gate_held": self.gate_held,
            "gate_sole": self.gate_sole,
            "procedure_exits": self.procedure_exits,
            "checked": self.checked,
        }


@dataclass(frozen=True)
class SkillParity:
    """The audit's row for one skill (see the module doc for the counts' meaning)."""

    skill: str
    fixtures: int = 0
    gate_blocked: int = 0
    procedure_exited: int = 0
    procedure_completed: int = 0
    procedure_errors: int = 0
    soundness_violations: int = 0
    missed_blocks: int = 0
    not_auditable: bool = False
    reason: str = ""
    unchecked: tuple[str, ...] = ()
    predicates: tuple[PredicateStats, ...] = ()
    findings: tuple[Finding, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "skill": self.skill,
            "fixtures": self.fixtures,
            "gate_blocked": self.gate_blocked,
            "procedure_exited": self.procedure_exited,
            "procedure_completed": self.procedure_completed,
            "procedure_errors": self.procedure_errors,
            "soundness_violations": self.soundness_violations,
            "missed_blocks": self.missed_blocks,
            "not_auditable": self.not_auditable,
            "reason": self.reason,
            "unchecked_predicates": list(self.unchecked),
            "predicates": [p.to_json() for p in self.predicates],
            "findings": [f.to_json() for f in self.findings],
        }


_COUNTS = (
    "fixtures",
    "gate_blocked",
    "procedure_exited",
    "procedure_completed",
    "procedure_errors",
    "soundness_violations",
    "missed_blocks",
)


@dataclass(frozen=True)
class ParityReport:
    """Every skill's row, and how the fixtures were made (so the run can be repeated)."""

    skills: tuple[SkillParity, ...]
    fixtures_per_skill: int
    seed: int
    now: int

    @property
    def totals(self) -> dict[str, int]:
        """Counts summed over skills; ``not_auditable`` counts skills."""
        out = {name: sum(getattr(row, name) for row in self.skills) for name in _COUNTS}
        out["skills"] = len(self.skills)
        out["not_auditable"] = sum(1 for row in self.skills if row.not_auditable)
        return out

    @property
    def ok(self) -> bool:
        """True when no skill has a soundness violation (what gates a build)."""
        return all(row.soundness_violations == 0 for row in self.skills)

    def summary(self) -> str:
        """The report for people: a row per skill, every finding, then per-predicate counts."""
        head = ("skill", "fixtures", "blocked", "exited", "soundness", "missed", "errors")
        rows: list[tuple[str, ...]] = [head]
        for r in self.skills:
            counts = (r.gate_blocked, r.procedure_exited, r.soundness_violations, r.missed_blocks)
            cells = (
                ("not auditable", "", "", "", "", "")
                if r.not_auditable
                else (
                    str(r.fixtures),
                    *(str(c) for c in counts),
                    str(r.procedure_errors),
                )
            )
            rows.append((r.skill, *cells))
        t = self.totals
        total_keys = (*_COUNTS[:3], "soundness_violations", "missed_blocks", "procedure_errors")
        rows.append(("TOTAL", *(str(t[k]) for k in total_keys)))
        widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
        lines.append(
            f"{self.fixtures_per_skill} fixtures per skill, seed {self.seed}, now {self.now}; "
            f"{t['soundness_violations']} soundness violation(s), {t['missed_blocks']} missed "
            f"block(s), {t['procedure_errors']} procedure error(s), {t['not_auditable']} "
            "skill(s) not auditable"
        )
        for r in self.skills:
            if r.not_auditable:
                lines.append(f"NOT AUDITABLE {r.skill}: {r.reason}")
            lines += [f.message(r.skill) for f in r.findings]
            if r.unchecked:
                lines.append(
                    f"note {r.skill}: the procedure never calls ctx.exit_if on "
                    f"{', '.join(r.unchecked)}"
                )
        lines.append("deciding predicates (held / held alone / procedure exits on it):")
        for r in self.skills:
            parts = [
                f"{p.predicate} {p.gate_held}/{p.gate_sole}/{p.procedure_exits}"
                for p in r.predicates
            ]
            if parts:
                lines.append(f"  {r.skill}: {'; '.join(parts)}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "fixtures_per_skill": self.fixtures_per_skill,
            "seed": self.seed,
            "now": self.now,
            "totals": self.totals,
            "skills": [row.to_json() for row in self.skills],
        }


# -- running the audit ----------------------------------------------------------------------------


def audit_domain(
    path: str | Path,
    *,
    fixtures: int = 1000,
    seed: int = 0,
    now: int = AUDIT_NOW,
    progress: Progress | None = None,
) -> ParityReport:
    """Load the skills under ``path`` and audit them (see :func:`audit_catalog`).

    A skill folder that fails to load is reported as a not-auditable row named by its path,
    with the loader's message as the reason.

    Raises:
        EmptyCatalogError: nothing under ``path`` is a skill.
        DuplicateSkillError: two skills share a name.
    """
    catalog, loaded = load_catalog_report(path)
    if catalog is None:
        load_catalog(path)  # raises the error that left no catalog
        raise AssertionError("unreachable: load_catalog_report gave no catalog")
    broken = tuple(
        SkillParity(
            _folder_name(problem.path),
            not_auditable=True,
            reason=f"could not be loaded ({problem.where}): {problem.message}",
        )
        for problem in loaded.errors
    )
    report = audit_catalog(catalog, fixtures=fixtures, seed=seed, now=now, progress=progress)
    return ParityReport(report.skills + broken, fixtures, seed, now)


def _folder_name(path: str) -> str:
    """The skill folder's name for a loader problem at ``.../name/maitred.yaml`` (or SKILL.md)."""
    where = Path(path.split(":")[0])
    return where.parent.name if where.suffix in (".md", ".yaml") else where.name


def audit_catalog(
    catalog: Catalog,
    *,
    fixtures: int = 1000,
    seed: int = 0,
    now: int = AUDIT_NOW,
    progress: Progress | None = None,
) -> ParityReport:
    """Audit every skill of ``catalog`` on ``fixtures`` generated states each.

    Args:
        catalog: the skills (their contracts and procedures).
        fixtures: states per skill (the sweep comes first, random states fill the rest).
        seed: seeds the random states and nothing else; hypothesis shrinking is derandomised.
        now: the clock of every fixture (timestamps are generated around it).
        progress: called as ``progress(skill, done, total)`` after each skill.
    """
    if fixtures < 1:
        raise ValueError(f"fixtures must be at least 1, got {fixtures}")
    gate = ExecutabilityGate(catalog, _NoProvider(), clock=lambda: float(now))
    rows = []
    for i, skill in enumerate(catalog):
        rows.append(audit_skill(skill, gate, fixtures=fixtures, seed=seed, now=now))
        if progress is not None:
            progress(skill.name, i + 1, len(catalog))
    return ParityReport(tuple(rows), fixtures, seed, now)


def audit_skill(
    skill: Skill, gate: ExecutabilityGate, *, fixtures: int, seed: int, now: int = AUDIT_NOW
) -> SkillParity:
    """The parity row of one skill (``gate`` must hold the skill in its catalog)."""
    contract = skill.contract
    if contract.procedure is None:
        return SkillParity(
            skill.name,
            not_auditable=True,
            reason="no procedure: name one in maitred.yaml (`procedure: scripts/x.py:run`) "
            "so the audit can run it",
        )
    space = FixtureSpace.for_predicates(skill.name, contract.exit_predicates, now)
    tally = _Tally(tuple(p.name for p in contract.exit_predicates))

    def compare(fixture: Fixture) -> Case:
        snapshot = fixture.snapshot(now)
        verdict = gate.decide(skill.name, snapshot, float(now))
        fired = tuple(o.predicate for o in verdict.fired)
        return Case(fixture, fired, run_sandboxed(skill.name, contract, snapshot, float(now)))

    rng = random.Random(f"parity:{seed}:{skill.name}")
    for fixture in islice(_fixtures(space, rng), fixtures):
        tally.add(compare(fixture))
    findings = tuple(_findings(tally, space, compare))
    return tally.row(skill.name, findings)


def _fixtures(space: FixtureSpace, rng: random.Random) -> Iterator[Fixture]:
    yield from space.sweep(rng)
    while True:
        yield space.draw(rng)


@dataclass
class _Tally:
    """Counts for one skill while its fixtures run."""

    declared: tuple[str, ...]
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTS, 0))
    held: dict[str, int] = field(default_factory=dict)
    sole: dict[str, int] = field(default_factory=dict)
    exits: dict[str, int] = field(default_factory=dict)
    checked: set[str] = field(default_factory=set)
    inline: set[str] = field(default_factory=set)
    groups: dict[tuple[Any, ...], list[Any]] = field(default_factory=dict)

    def add(self, case: Case) -> None:
        c = self.counts
        c["fixtures"] += 1
        c["gate_blocked"] += bool(case.gate_fired)
        c[_STATUS_COUNT[case.run.status]] += 1
        for name in case.gate_fired:
            self.held[name] = self.held.get(name, 0) + 1
        if len(case.gate_fired) == 1:
            self.sole[case.gate_fired[0]] = self.sole.get(case.gate_fired[0], 0) + 1
        if case.run.exit_predicate is not None:
            name = case.run.exit_predicate
            self.exits[name] = self.exits.get(name, 0) + 1
            if case.run.via == "inline":
                self.inline.add(name)
        self.checked.update(case.run.checked)
        kind = case.kind
        if kind is not None:
            c["soundness_violations"] += kind == "soundness"
            c["missed_blocks"] += kind == "missed_block"
            entry = self.groups.setdefault(case.group, [0, case])
            entry[0] += 1

    def row(self, skill: str, findings: tuple[Finding, ...]) -> SkillParity:
        names = [*self.declared, *sorted(set(self.exits) - set(self.declared))]
        stats = tuple(
            PredicateStats(
                n,
                self.held.get(n, 0),
                self.sole.get(n, 0),
                self.exits.get(n, 0),
                n in self.checked,
            )
            for n in names
        )
        unchecked = tuple(n for n in self.declared if n not in self.checked)
        c = self.counts
        return SkillParity(
            skill,
            fixtures=c["fixtures"],
            gate_blocked=c["gate_blocked"],
            procedure_exited=c["procedure_exited"],
            procedure_completed=c["procedure_completed"],
            procedure_errors=c["procedure_errors"],
            soundness_violations=c["soundness_violations"],
            missed_blocks=c["missed_blocks"],
            unchecked=unchecked,
            predicates=stats,
            findings=findings,
        )


def _findings(
    tally: _Tally, space: FixtureSpace, compare: Callable[[Fixture], Case]
) -> Iterator[Finding]:
    shrunk_per_kind: dict[str, int] = {}
    for group, (count, first) in sorted(tally.groups.items(), key=lambda kv: repr(kv[0])):
        kind = str(first.kind)
        budget = shrunk_per_kind.get(kind, 0) < MAX_SHRUNK_GROUPS
        case, shrunk = _shrink(space, first, compare, group) if budget else (first, False)
        shrunk_per_kind[kind] = shrunk_per_kind.get(kind, 0) + 1
        yield _finding(case, count, shrunk, tally.inline)


def _shrink(
    space: FixtureSpace, first: Case, compare: Callable[[Fixture], Case], group: tuple[Any, ...]
) -> tuple[Case, bool]:
    """The minimal fixture that fails the same way as ``first`` (hypothesis ``find``)."""
    config = settings(
        database=None,
        derandomize=True,
        max_examples=SHRINK_EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        phases=(Phase.generate, Phase.shrink),
    )

    def same(fixture: Fixture) -> bool:
        return compare(fixture).group == group

    try:
        fixture = find(space.focused(first.fixture), same, settings=config)
    except NoSuchExample:
        fixture = first.fixture
    return compare(simplify(space, fixture, same)), True


def _finding(case: Case, count: int, shrunk: bool, inline: Collection[str]) -> Finding:
    kind = case.kind
    assert kind is not None
    gate = f"blocks on {', '.join(case.gate_fired)}" if case.gate_fired else "offers"
    if kind == "soundness":
        predicates = case.gate_fired
        unchecked = tuple(p for p in case.gate_fired if p not in case.run.checked)
    elif kind == "missed_block":
        predicates, unchecked = (str(case.run.exit_predicate),), ()
    else:
        predicates, unchecked = (), ()
    return Finding(
        kind,
        predicates,
        count,
        case.fixture,
        shrunk,
        gate,
        case.run.describe(),
        unchecked,
        tuple(p for p in unchecked if p in inline),
    )
