"""Trajectories where a skill's need appears partway: the file, teacher-forced traces, metrics.

A trajectory file is JSONL, one trajectory a line::

    {"id": "p1", "text": "how's your day going? Find me a flight to Rome.",
     "gold": ["FlightFinder"], "onset": 22}
    {"id": "n1", "text": "how's your day going? sorry, wrong window", "gold": []}

``gold`` names the skill(s) the text comes to need and ``onset`` is the character offset where
that need begins (a positive needs both); a negative has an empty ``gold`` and no onset.

**Teacher forcing.** A trajectory's text is read once by the backbone as a user message
(:meth:`Backbone.states`: each token's state is causal, the same a token-by-token read gives)
and streamed into a :class:`~maitred.native.rollout.RollingGlance` one token at a time; the
resulting *trace* (the rolling scores after every token) can then be fired on at any threshold
without reading the text again.

**Judging.** A fire is *correct* when it names a gold skill and comes at or after the onset
token; every other fire is *false* (before the onset, a wrong skill, or any fire on a
negative). Per set (:class:`FiringReport`): the trigger rate (positives with a fire), the
correct rate (positives whose *first* fire is correct) and the same among triggered positives,
the early rate (positives with a fire before the onset), the false-fire rate (negatives with a
fire) and the latency (tokens read since the onset when the correct fire came, its own
included).

**Calibration.** :func:`calibrate_threshold` tries thresholds at quantiles of the validation
traces' leads (:func:`~maitred.native.rollout.leads`) and keeps the one with most *correct
minus false* fires: the net number of useful loads, a correct load weighed as much as a false
one costs (a wrong skill's body in the context misleads the agent about as much as the right
one helps). Unlike F1 it stays a sum over trajectories, so it is not bent by the share of
positives, and "never fire" (net 0) is always a candidate. Ties go to the middle of the tied
thresholds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray
from transformers import PreTrainedTokenizerBase

from maitred.errors import ConfigError, InputError
from maitred.jsonl import parse_object, read_labelled
from maitred.native.backbone import Backbone, Progress
from maitred.native.glance import DEFAULT_TOP_K, GlanceMaps, KeyBank
from maitred.native.rollout import DEFAULT_PATIENCE, Fire, FiringRule, RollingGlance, leads

F32 = NDArray[np.float32]

TRAJECTORY_TOKENS: Final = 512
"""Tokens of a trajectory read at most (they are a few sentences)."""

CANDIDATES: Final = 200
"""Thresholds tried by :func:`calibrate_threshold` (quantiles of the leads)."""


@dataclass(frozen=True)
class Trajectory:
    """One labelled trajectory.

    Attributes:
        id: unique within its file.
        text: what the agent reads (and, in the teacher-forced evaluation, streams).
        gold: the skills the text comes to need; empty for a negative.
        onset: character offset where the need begins (``None`` for a negative).
    """

    id: str
    text: str
    gold: tuple[str, ...]
    onset: int | None

    @property
    def positive(self) -> bool:
        """Whether a skill is needed."""
        return bool(self.gold)


def _parse_line(raw: str, seen: set[str]) -> Trajectory:
    """One JSONL line -> Trajectory; raises ValueError with what is wrong."""
    obj = parse_object(raw, ("id", "text", "gold"))
    tid, text, gold, onset = obj["id"], obj["text"], obj["gold"], obj.get("onset")
    if not isinstance(tid, (str, int)) or isinstance(tid, bool) or str(tid) in seen:
        raise ValueError(f"field 'id' must be a new string or integer, got {tid!r}")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("field 'text' must be a non-empty string")
    if isinstance(gold, str):
        gold = [gold] if gold else []
    if not isinstance(gold, list) or not all(isinstance(g, str) and g for g in gold):
        raise ValueError("field 'gold' must be a list of skill names ([] for a negative)")
    if gold and not (isinstance(onset, int) and 0 <= onset < len(text)):
        raise ValueError(f"a positive needs 'onset', a character offset in its text: {onset!r}")
    if not gold and onset is not None:
        raise ValueError("a negative (empty 'gold') has no 'onset'")
    return Trajectory(str(tid), text, tuple(dict.fromkeys(gold)), onset if gold else None)


def load_trajectories(path: Path | str) -> list[Trajectory]:
    """Read a trajectory file; bad lines are reported (logged with ``file:line``) and skipped.

    Raises:
        InputError: the file itself cannot be read.
    """
    return read_labelled(path, _parse_line, what="trajectory")


def onset_token(tokenizer: PreTrainedTokenizerBase, text: str, onset: int) -> int:
    """Index of the token holding character ``onset`` of ``text`` (tokenised as the backbone
    does: no special tokens)."""
    if getattr(tokenizer, "is_fast", False):
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        for i, (_, end) in enumerate(enc["offset_mapping"]):
            if end > onset:
                return i
        return len(enc["offset_mapping"])
    return len(tokenizer(text[:onset].rstrip(), add_special_tokens=False)["input_ids"])


@dataclass(frozen=True)
class Trace:
    """A trajectory's rolling scores after each of its tokens.

    Attributes:
        trajectory: what was read.
        onset_token: index of the first token of the need (``None`` for a negative).
        scores: ``[tokens, skills]``.
    """

    trajectory: Trajectory
    onset_token: int | None
    scores: F32


def score_trace(
    maps: GlanceMaps,
    bank: KeyBank,
    states: F32,
    *,
    decay: float,
    top_k: int | None = DEFAULT_TOP_K,
) -> F32:
    """Rolling scores after each token of ``states`` (``[T, hidden]``), streamed one by one."""
    glance = RollingGlance(maps, bank, decay=decay, top_k=top_k)
    if len(states) == 0:
        return np.zeros((0, len(bank.names)), np.float32)
    return np.stack([glance.push(row) for row in states])


def read_traces(
    backbone: Backbone,
    maps: GlanceMaps,
    bank: KeyBank,
    trajectories: Sequence[Trajectory],
    *,
    decay: float,
    top_k: int | None = DEFAULT_TOP_K,
    progress: Progress | None = None,
) -> list[Trace]:
    """Teacher-force every trajectory through ``backbone`` and stream its states."""
    states = backbone.states(
        [t.text for t in trajectories], max_tokens=TRAJECTORY_TOKENS, progress=progress
    )
    return [
        Trace(
            t,
            None if t.onset is None else onset_token(backbone.tokenizer, t.text, t.onset),
            score_trace(maps, bank, s, decay=decay, top_k=top_k),
        )
        for t, s in zip(trajectories, states, strict=True)
    ]


def replay(
    trace: Trace, names: tuple[str, ...], threshold: float, patience: int = DEFAULT_PATIENCE
) -> tuple[Fire, ...]:
    """The fires of the firing rule over a trace (each token one step)."""
    rule = FiringRule(names, threshold, patience)
    for i, row in enumerate(trace.scores):
        rule.step(row, i)
    return rule.fired


def _correct(trace: Trace, fire: Fire) -> bool:
    onset = trace.onset_token
    return onset is not None and fire.skill in trace.trajectory.gold and fire.token_index >= onset


@dataclass(frozen=True)
class FiringReport:
    """Firing on a set of trajectories at one threshold (rates in [0, 1]).

    Attributes:
        threshold, patience: the firing rule.
        n_positive, n_negative: trajectories of each kind.
        trigger_rate: positives with at least one fire.
        correct_rate: positives whose first fire is a gold skill at or after the onset.
        correct_when_fired: the same, among positives with a fire.
        early_rate: positives with a fire before the onset.
        false_fire_rate: negatives with a fire.
        mean_latency: tokens read from the onset to the correct fire, its own included
            (``None`` without a correct fire).
        correct_fires, false_fires: fires of each kind over the whole set.
    """

    threshold: float
    patience: int
    n_positive: int
    n_negative: int
    trigger_rate: float
    correct_rate: float
    correct_when_fired: float
    early_rate: float
    false_fire_rate: float
    mean_latency: float | None
    correct_fires: int
    false_fires: int

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values."""
        return asdict(self)


def evaluate_firing(
    traces: Sequence[Trace],
    names: tuple[str, ...],
    *,
    threshold: float,
    patience: int = DEFAULT_PATIENCE,
) -> FiringReport:
    """Fire on every trace at ``threshold`` and judge the fires (see the module docstring)."""
    pos = neg = triggered = first_ok = early = neg_fired = good = bad = 0
    latencies: list[int] = []
    for trace in traces:
        fires = replay(trace, names, threshold, patience)
        ok = [_correct(trace, f) for f in fires]
        good, bad = good + sum(ok), bad + len(ok) - sum(ok)
        if not trace.trajectory.positive:
            neg += 1
            neg_fired += bool(fires)
            continue
        pos += 1
        triggered += bool(fires)
        onset = trace.onset_token
        assert onset is not None
        early += any(f.token_index < onset for f in fires)
        if fires and ok[0]:
            first_ok += 1
            latencies.append(fires[0].token_index - onset + 1)
    return FiringReport(
        threshold,
        patience,
        pos,
        neg,
        triggered / max(pos, 1),
        first_ok / max(pos, 1),
        first_ok / max(triggered, 1),
        early / max(pos, 1),
        neg_fired / max(neg, 1),
        float(np.mean(latencies)) if latencies else None,
        good,
        bad,
    )


@dataclass(frozen=True)
class Calibration:
    """The chosen threshold and how it did on the validation traces."""

    threshold: float
    net: int
    report: FiringReport


def calibrate_threshold(
    traces: Sequence[Trace],
    names: tuple[str, ...],
    *,
    patience: int = DEFAULT_PATIENCE,
    candidates: int = CANDIDATES,
) -> Calibration:
    """The threshold with most correct minus false fires on validation ``traces``.

    Raises:
        InputError: no trace has a token.
    """
    per_trace = [leads(t.scores) for t in traces if len(t.scores)]
    if not per_trace:
        raise InputError("<validation trajectories>", 0, "no tokens to calibrate a threshold on")
    grid = np.unique(np.quantile(np.concatenate(per_trace), np.linspace(0.0, 1.0, candidates)))
    nets = []
    for threshold in grid:  # at the largest lead nothing fires: net 0 is always there
        report = evaluate_firing(traces, names, threshold=float(threshold), patience=patience)
        nets.append(report.correct_fires - report.false_fires)
    best = [float(c) for c, n in zip(grid, nets, strict=True) if n == max(nets)]
    chosen = best[len(best) // 2]
    report = evaluate_firing(traces, names, threshold=chosen, patience=patience)
    return Calibration(chosen, report.correct_fires - report.false_fires, report)


@dataclass(frozen=True)
class FiringEvaluation:
    """What :func:`evaluate_trajectories` found.

    Attributes:
        report: firing on the evaluated trajectories.
        calibration: how the threshold was chosen (``None`` when it was given).
        skipped: trajectories left out because a gold skill is not in the bank.
    """

    report: FiringReport
    calibration: Calibration | None
    skipped: int


def evaluate_trajectories(
    backbone: Backbone,
    maps: GlanceMaps,
    bank: KeyBank,
    path: Path,
    *,
    val: Path | None = None,
    threshold: float | None = None,
    decay: float,
    patience: int = DEFAULT_PATIENCE,
) -> FiringEvaluation:
    """Teacher-force the trajectories of ``path`` and report firing, at ``threshold`` or at
    the threshold calibrated on the trajectories of ``val`` (exactly one of the two).

    Raises:
        ConfigError: both or neither of ``val`` and ``threshold``.
    """
    if (val is None) == (threshold is None):
        raise ConfigError("give one of val (trajectories to calibrate on) or threshold")
    skipped = 0

    def traces(file: Path) -> list[Trace]:
        nonlocal skipped
        trajs = load_trajectories(file)
        known = [t for t in trajs if all(g in bank.names for g in t.gold)]
        skipped += len(trajs) - len(known)
        return read_traces(backbone, maps, bank, known, decay=decay)

    calibration = None
    if val is not None:
        calibration = calibrate_threshold(traces(val), bank.names, patience=patience)
        threshold = calibration.threshold
    assert threshold is not None
    report = evaluate_firing(traces(path), bank.names, threshold=threshold, patience=patience)
    return FiringEvaluation(report, calibration, skipped)
