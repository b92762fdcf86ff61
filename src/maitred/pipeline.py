"""The one entry object: message -> recall -> executability gate -> depth -> menu -> log.

:class:`Pipeline` is what the library, the CLI and the service all call. It holds the catalog,
a recaller, a state provider, a cut-off, a depth rule, a menu renderer and (optionally) a
decision log, and for each message returns a :class:`Turn`: the menu to hand the model, the
gate's verdicts and the :class:`~maitred.records.TurnRecord` it logged.

Invariants the code keeps:

* recall sees only the message text (it is handed nothing else);
* the gate sees only candidate names, the account and the provider, and fetches state once;
* a candidate's description tokens are counted whether or not it is shown, so the funnel can
  say what each stage saved;
* everything but the model's own choice is a function of (catalog, predicates, snapshot);
* what varies per request (run, menu format, scope) arrives as a
  :class:`~maitred.context.CallContext` with the call and is never set on the pipeline, so one
  pipeline serves many threads at once (see ARCHITECTURE.md, "Concurrency").
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from maitred.context import DEFAULT, CallContext
from maitred.contract.kernel import SCOPES
from maitred.depth.rules import DepthRule, ExposeAll, Ranked
from maitred.gate.executability import ExecutabilityGate, GateResult
from maitred.log.base import DecisionLog
from maitred.menu.render import Menu, MenuRenderer
from maitred.recall.base import Candidate, Cutoff, Recaller, method_label
from maitred.recall.steps import rank_steps
from maitred.records import Message, PairRecord, RunInfo, TurnRecord
from maitred.skills.model import Catalog
from maitred.state.answer import DEFAULT_CLOCK_SKEW_S
from maitred.state.snapshot import StateProvider, now


@dataclass(frozen=True)
class Turn:
    """The result of routing one message.

    Attributes:
        record: what the decision log stores (ranking, verdicts, snapshot, timings).
        menu: what to hand the model.
        gate: the executability gate's result (``None`` when nothing was recalled).
        catalog: the catalog the turn was routed over (for predicate messages).
    """

    record: TurnRecord
    menu: Menu
    gate: GateResult | None
    catalog: Catalog | None = field(default=None, compare=False, repr=False)

    @property
    def exposed(self) -> tuple[str, ...]:
        return self.menu.skills

    @property
    def turn_id(self) -> str:
        """The turn's id in the decision log (calls checked after it link to it)."""
        return self.record.turn_id

    def to_json(self) -> dict[str, Any]:
        """The turn as JSON: what ``maitred route --json`` prints and the service returns.

        ``blocked`` lists each blocked candidate with the predicates that fired, the state
        values they read and each predicate's message for people (a candidate hidden because
        the caller lacks a scope: the one ``scopes`` outcome, its message naming them), or the
        ``cause`` when the whole turn failed closed (``state_unavailable``,
        ``account_not_found``).
        """
        rec = self.record
        blocked = []
        for pair in rec.blocked:
            skill = self.catalog.get(pair.skill) if self.catalog is not None else None
            predicates = skill.contract.predicates_by_name if skill is not None else {}
            blocked.append(
                {
                    "skill": pair.skill,
                    "rank": pair.rank,
                    "predicates": [
                        {
                            **o.to_json(),
                            "message": o.detail
                            if o.predicate == SCOPES
                            else getattr(predicates.get(o.predicate), "message", ""),
                        }
                        for o in pair.fired
                    ],
                    "cause": None if pair.fired else rec.cause,
                }
            )
        return {
            "turn_id": rec.turn_id,
            "message": rec.message.text,
            "account": rec.message.account,
            "matched": rec.matched,
            "candidates": [
                {
                    "skill": p.skill,
                    "rank": p.rank,
                    "score": p.score,
                    "components": dict(p.components),
                }
                for p in rec.pairs
            ],
            "visible": list(rec.visible),
            "exposed": list(rec.exposed),
            "blocked": blocked,
            "menu_format": self.menu.format,
            "menu_tokens": self.menu.tokens,
            "menu": self.menu.payload(),
            "snapshot_hash": rec.snapshot.hash if rec.snapshot else None,
            "provider_error": rec.provider_error or None,
            "cause": rec.cause,
            "catalog_version": rec.catalog_version,
            "timings_us": dict(rec.timings_us),
        }


@dataclass
class RunStats:
    """Counts kept while a batch runs (the funnel proper is computed from the log)."""

    messages: int = 0
    matched: int = 0
    pairs: int = 0
    blocked: int = 0
    bad_lines: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


class Pipeline:
    """Routes messages through recall, the executability gate, depth and the menu."""

    def __init__(
        self,
        catalog: Catalog,
        recaller: Recaller,
        provider: StateProvider,
        *,
        cutoff: Cutoff | None = None,
        family_mode: bool = False,
        depth: DepthRule | None = None,
        renderer: MenuRenderer | None = None,
        log: DecisionLog | None = None,
        clock: Callable[[], float] = now,
        config: dict[str, Any] | None = None,
        clock_skew_s: float = DEFAULT_CLOCK_SKEW_S,
    ) -> None:
        self.catalog = catalog
        self.recaller = recaller
        self.cutoff = cutoff or Cutoff()
        self.family_mode = family_mode
        self.depth = depth or ExposeAll()
        self.renderer = renderer or MenuRenderer(catalog)
        self.executability_gate = ExecutabilityGate(catalog, provider, clock, clock_skew_s)
        self.log = log
        self.clock = clock
        self.config = dict(config or {})
        self.run_id = ""
        self._renderers: dict[str, MenuRenderer] = {self.renderer.format: self.renderer}
        self._lock = threading.Lock()  # the lazy run start and the renderers per format

    # -- one message -------------------------------------------------------------------------

    def route(self, message: Message, context: CallContext = DEFAULT) -> Turn:
        """Route one message (recall included); logged when the pipeline has a log.

        ``context`` says what is particular to this request: the run it is logged under, the
        menu format, the tools it may consider (see :class:`~maitred.context.CallContext`).
        """
        if self.log is not None and not context.run_id and not self.run_id:
            with self._lock:
                if not self.run_id:
                    self.begin_run()
        t0 = time.perf_counter_ns()
        ranked = self.recaller.rank(message.text, self._depth_of_ranking())
        return self._finish(message, ranked, time.perf_counter_ns() - t0, context=context)

    def route_steps(
        self, messages: Sequence[Message], context: CallContext = DEFAULT
    ) -> list[Turn]:
        """Route the needs of one task (recall ranks them together, then each is a turn of
        its own, logged like :meth:`route`'s).

        Recall is :func:`~maitred.recall.steps.rank_steps` over this pipeline's recaller and
        catalog with the cut-off's ``top_k``: the task's MCP servers weigh in and each need's
        candidates are tools the earlier needs did not bring. Each turn records its share of
        the joint recall's time (``timings_us["recall"]``) and the number of needs
        (``recall_batch``), as :meth:`route_many` does.
        """
        if not messages:
            return []
        if self.log is not None and not context.run_id and not self.run_id:
            with self._lock:
                if not self.run_id:
                    self.begin_run()
        t0 = time.perf_counter_ns()
        rankings = rank_steps(
            self.recaller, [m.text for m in messages], self.cutoff.top_k, catalog=self.catalog
        )
        each = (time.perf_counter_ns() - t0) // len(messages)
        return [
            self._finish(m, ranked, each, len(messages), context=context)
            for m, ranked in zip(messages, rankings, strict=True)
        ]

    def renderer_for(self, fmt: str | None) -> MenuRenderer:
        """The renderer of menu format ``fmt`` over this catalog (``None``: the pipeline's),
        built on first use and kept, so its entries and token counts are cached once."""
        if fmt is None:
            return self.renderer
        found = self._renderers.get(fmt)
        if found is None:
            with self._lock:
                found = self._renderers.get(fmt)
                if found is None:
                    found = MenuRenderer(self.catalog, fmt)
                    self._renderers[fmt] = found
        return found

    def _depth_of_ranking(self) -> int:
        return self.cutoff.top_k

    def candidates(self, ranked: list[Candidate]) -> list[Candidate]:
        """C(m): the cut-off applied to a ranking, expanded to whole families in family mode."""
        kept = self.cutoff.apply(ranked)
        if self.family_mode and kept:
            from maitred.recall.family import expand_families

            return expand_families(kept, self.catalog)
        return kept

    def _finish(
        self,
        message: Message,
        ranked: list[Candidate],
        recall_ns: int,
        recall_batch: int = 0,
        *,
        context: CallContext = DEFAULT,
    ) -> Turn:
        if context.scope is not None:
            ranked = [
                Candidate(c.name, i + 1, c.score, c.components)
                for i, c in enumerate(c for c in ranked if c.name in context.scope)
            ]
        renderer = self.renderer_for(context.menu_format)
        run_id = context.run_id or self.run_id
        candidates = self.candidates(ranked)
        names = [c.name for c in candidates]
        t1 = time.perf_counter_ns()
        gate = (
            self.executability_gate.check(message.account, names, context.granted)
            if names
            else None
        )
        t2 = time.perf_counter_ns()
        outcomes = {o.skill: o for o in gate.outcomes} if gate else {}
        visible = [
            Ranked(c.name, c.score, self.catalog[c.name].contract.cost)
            for c in candidates
            if outcomes[c.name].visible
        ]
        exposed = {r.name for r in visible[: self.depth.choose(visible)]}
        estimate = getattr(self.depth, "prefix_probabilities", None)
        depth_probs = tuple(float(p) for p in estimate(visible)) if estimate and visible else ()
        t3 = time.perf_counter_ns()
        menu = renderer.render([r.name for r in visible if r.name in exposed])
        pairs = tuple(
            PairRecord(
                skill=c.name,
                rank=c.rank,
                score=c.score,
                visible=outcomes[c.name].visible,
                exposed=c.name in exposed,
                desc_tokens=renderer.tokens(c.name),
                components=dict(c.components),
                fired=outcomes[c.name].fired,
                soft=outcomes[c.name].soft,
            )
            for c in candidates
        )
        t4 = time.perf_counter_ns()
        record = TurnRecord(
            turn_id=f"{run_id or 'adhoc'}/{message.id}",
            run_id=run_id,
            message=message,
            catalog_version=self.catalog.version,
            recall_method=method_label(self.recaller, "+family" if self.family_mode else ""),
            depth_rule=self.depth.name,
            pairs=pairs,
            snapshot=gate.snapshot if gate else None,
            timings_us={
                "recall": recall_ns // 1000,
                "gate": (t2 - t1) // 1000,
                "depth": (t3 - t2) // 1000,
                "menu": (t4 - t3) // 1000,
                # batch mode: "recall" is this turn's share of a batch of that many messages
                **({"recall_batch": recall_batch} if recall_batch else {}),
            },
            ts=self.clock(),
            provider_error=gate.provider_error if gate else "",
            menu_tokens=menu.tokens,
            depth_probs=depth_probs,
        )
        if self.log is not None:
            self.log.write(record)
        return Turn(record, menu, gate, self.catalog)

    # -- many messages -----------------------------------------------------------------------

    def begin_run(
        self, run_id: str | None = None, *, tenant: str = "", current: bool = True
    ) -> RunInfo:
        """Start a run: a fresh run id, recorded in the log with the configuration (and the
        tenant its turns are for, stamped on each of them by the log).

        With ``current`` (the default) it becomes the run of every turn routed without a
        ``run_id`` in its context; ``current=False`` only records it, for callers that name
        the run with each turn (the service's run per tenant).
        """
        info = RunInfo(
            run_id=run_id or uuid.uuid4().hex[:12],
            started_at=self.clock(),
            catalog_version=self.catalog.version,
            n_skills=len(self.catalog),
            tokens_all_skills=self.renderer.total_tokens(),
            config=self.config,
            tenant=tenant,
        )
        if self.log is not None:
            self.log.begin_run(info)
        if current:
            self.run_id = info.run_id
        return info

    def route_many(self, messages: Iterable[Message], batch: int = 256) -> Iterator[Turn]:
        """Route messages in batches (a recaller with ``rank_batch`` encodes a batch at once).

        A batch's recall is timed as a whole; each turn records its share (the total divided by
        the batch's size) as ``timings_us["recall"]`` and the size as
        ``timings_us["recall_batch"]``, so a share is never read as a turn's own time.
        """
        rank_batch = getattr(self.recaller, "rank_batch", None)
        for chunk in _chunks(messages, batch):
            k = self._depth_of_ranking()
            t0 = time.perf_counter_ns()
            if rank_batch is not None:
                rankings = rank_batch([m.text for m in chunk], k)
            else:
                rankings = [self.recaller.rank(m.text, k) for m in chunk]
            each = (time.perf_counter_ns() - t0) // max(1, len(chunk))
            for message, ranked in zip(chunk, rankings, strict=True):
                yield self._finish(message, ranked, each, len(chunk))

    def run(
        self,
        messages: Iterable[Message],
        *,
        progress: Callable[[int], None] | None = None,
        run_id: str | None = None,
        batch: int = 256,
    ) -> RunStats:
        """Route every message, log every turn, and return counts.

        ``batch`` messages are recalled together (see :meth:`route_many`); give 1 for a live
        stream, so that each message is routed (and logged) as soon as it arrives.
        """
        if not self.run_id or run_id:
            self.begin_run(run_id)
        stats = RunStats()
        start = time.perf_counter()
        for turn in self.route_many(messages, batch):
            rec = turn.record
            stats.messages += 1
            stats.matched += rec.matched
            stats.pairs += len(rec.pairs)
            stats.blocked += len(rec.blocked)
            if progress is not None:
                progress(1)
        if self.log is not None:
            self.log.flush()
        stats.seconds = time.perf_counter() - start
        return stats


def _chunks(items: Iterable[Message], size: int) -> Iterator[Sequence[Message]]:
    chunk: list[Message] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
