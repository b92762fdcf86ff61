"""Run the gated-agent evaluation: each task K times with gates on and K times with gates off.

A trial: a fresh copy of the task's database, the simulator's tools over it, a session (with the
task's context), and the agent working through a registry -- the pack's gate in front (``on``),
or the tools called directly (``off``). The trial **passes** when the final database hashes to
the task's expected final state. A gate **fired** in a task when any gated trial of it had a
rejection; the report is stratified by that (the effect should sit where gates fire).

Per arm: pass^k for k = 1..K (unbiased, :func:`~.stats.pass_hat_k`); differences on - off for
pass^1 and pass^K with paired-bootstrap intervals over tasks, overall and per stratum.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from maitred.actions.gate import ActionGate
from maitred.actions.model import OK, Decision, ToolCall
from maitred.actions.session import Session
from maitred.actions.sink import DecisionSink
from maitred.actions.wrap import GatedRegistry, Outcome
from maitred.lab.agents.agents import Agent
from maitred.lab.agents.domains import Domain, EvalTask
from maitred.lab.agents.stats import Interval, paired_bootstrap, pass_hat_k

Arm = Literal["on", "off"]


class UngatedRegistry(GatedRegistry):
    """The "gates off" arm: the same registry interface, every call runs (and is recorded)."""

    def call(self, name: str, arguments: Mapping[str, Any], call_id: str = "") -> Outcome:
        tc = ToolCall(name, dict(arguments), call_id)
        tool = self.gate.rulebook.tools.get(name)
        decision = Decision(tc, "allow", OK, "gates off", mutates=tool is None or tool.mutates)
        self.decisions.append(decision)
        fn = self.tools.get(name)
        if fn is None:
            return Outcome(decision, error=f"there is no tool named {name!r}")
        try:
            result = fn(**tc.arguments)
        except Exception as exc:
            return Outcome(decision, error=f"{type(exc).__name__}: {exc}")
        self.session.record(tc, result, self.gate.rulebook.tracking)
        return Outcome(decision, result)


@dataclass(frozen=True)
class TaskResult:
    """One task's trials in both arms."""

    task_id: str
    kind: str
    passed_on: tuple[bool, ...]
    passed_off: tuple[bool, ...]
    rejections: int
    codes: tuple[str, ...]

    @property
    def fired(self) -> bool:
        return self.rejections > 0

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task_id,
            "kind": self.kind,
            "passed_on": list(self.passed_on),
            "passed_off": list(self.passed_off),
            "rejections": self.rejections,
            "codes": list(self.codes),
        }


def run_trial(
    domain: Domain,
    gate: ActionGate,
    task: EvalTask,
    agent: Agent,
    arm: Arm,
    rng: random.Random,
    log: DecisionSink | None = None,
    session_id: str = "",
) -> tuple[bool, list[Decision]]:
    """One trial of one arm: (passed, the decisions made)."""
    db = copy.deepcopy(task.db)
    tools = domain.make_tools(db)
    session = Session(id=session_id, context=dict(task.task.context))
    registry: GatedRegistry
    if arm == "on":
        registry = GatedRegistry(tools, gate, lambda: db, session, log=log)
    else:
        registry = UngatedRegistry(tools, gate, lambda: db, session)
    agent.run(task, registry, rng)
    return domain.final_state(db) == task.task.expected_state, registry.decisions


def run_task(
    domain: Domain,
    gate: ActionGate,
    task: EvalTask,
    agent: Agent,
    trials: int,
    seed: int,
    log: DecisionSink | None = None,
) -> TaskResult:
    """``trials`` paired trials of ``task`` (the same per-trial seed in both arms)."""
    on: list[bool] = []
    off: list[bool] = []
    codes: list[str] = []
    for t in range(trials):
        key = f"{seed}:{task.id}:{t}"
        ok, decisions = run_trial(
            domain, gate, task, agent, "on", random.Random(key), log, f"{task.id}/{t}/on"
        )
        on.append(ok)
        codes += [d.code for d in decisions if d.reject]
        off.append(run_trial(domain, gate, task, agent, "off", random.Random(key))[0])
    return TaskResult(task.id, task.task.kind, tuple(on), tuple(off), len(codes), tuple(codes))


def _stratum(results: Sequence[TaskResult], k: int, seed: int, rounds: int) -> dict[str, Any]:
    def score(arm: Arm, kk: int) -> list[float]:
        out = []
        for r in results:
            passed = r.passed_on if arm == "on" else r.passed_off
            out.append(pass_hat_k(sum(passed), len(passed), kk))
        return out

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else 0.0

    figures: dict[str, Any] = {"n_tasks": len(results)}
    if not results:  # no figures for an empty stratum (not zeros)
        return figures
    for kk in (1, k):
        on, off = score("on", kk), score("off", kk)
        ci: Interval = paired_bootstrap(on, off, rounds=rounds, seed=seed)
        figures[f"pass^{kk}"] = {"on": mean(on), "off": mean(off), **ci.to_json()}
    figures["pass^k_on"] = [mean(score("on", kk)) for kk in range(1, k + 1)]
    figures["pass^k_off"] = [mean(score("off", kk)) for kk in range(1, k + 1)]
    return figures


@dataclass(frozen=True)
class EvalReport:
    """Every task's trials and the figures (see the module docstring)."""

    pack: str
    agent: str
    trials: int
    seed: int
    results: tuple[TaskResult, ...]
    rounds: int = 2000

    def interval(self, k: int = 1, stratum: str = "all") -> Interval:
        """Paired-bootstrap interval of pass^k (on - off): ``all``, ``fired`` or ``not_fired``."""
        picked = self._pick(stratum)
        on = [pass_hat_k(sum(r.passed_on), self.trials, k) for r in picked]
        off = [pass_hat_k(sum(r.passed_off), self.trials, k) for r in picked]
        return paired_bootstrap(on, off, rounds=self.rounds, seed=self.seed)

    def _pick(self, stratum: str) -> list[TaskResult]:
        if stratum == "all":
            return list(self.results)
        want = stratum == "fired"
        return [r for r in self.results if r.fired == want]

    def to_json(self) -> dict[str, Any]:
        k = self.trials
        return {
            "pack": self.pack,
            "agent": self.agent,
            "trials": k,
            "seed": self.seed,
            "rejections": sum(r.rejections for r in self.results),
            "strata": {
                s: _stratum(self._pick(s), k, self.seed, self.rounds)
                for s in ("all", "fired", "not_fired")
            },
            "tasks": [r.to_json() for r in self.results],
        }


def evaluate_agent(
    domain: Domain,
    agent: Agent,
    *,
    n_tasks: int,
    trials: int,
    seed: int = 0,
    log: DecisionSink | None = None,
) -> EvalReport:
    """Run ``n_tasks`` tasks of ``domain``, ``trials`` times per arm; gated decisions go to
    ``log`` when given."""
    if trials < 1:
        raise ValueError(f"trials must be at least 1, got {trials}")
    gate = domain.make_gate()
    tasks = domain.tasks(n_tasks, seed)
    results = tuple(run_task(domain, gate, t, agent, trials, seed, log) for t in tasks)
    return EvalReport(domain.pack, agent.name, trials, seed, results)
