"""The values a turn produces, as the decision log stores them.

A :class:`TurnRecord` is everything one pass of the pipeline decided for one message: the
recall ranking, the gate's verdict on each candidate with the predicates that fired, which
skills were exposed, what they cost in tokens, the snapshot the gate read and the time each stage
took. It is immutable and JSON-serialisable, so it can be logged, replayed and diffed.

A turn whose state could not be trusted has a :attr:`TurnRecord.cause` (``state_unavailable``,
``account_not_found``): the gate then blocked every candidate that reads state without asking
its predicates. The cause is carried by ``provider_error``, whose text starts with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from maitred.contract.evaluate import PredicateOutcome
from maitred.state.snapshot import Snapshot

Cause = Literal["state_unavailable", "account_not_found"]
"""Why a whole turn failed closed before any predicate was asked (see
:mod:`maitred.gate.executability`): the state store failed, or has no record of the account."""

CAUSES: tuple[Cause, ...] = get_args(Cause)


def cause_text(cause: Cause, detail: str) -> str:
    """The ``provider_error`` text of a turn with ``cause``: ``"<cause>: <detail>"``."""
    return f"{cause}: {detail}"


def cause_of_text(provider_error: str) -> Cause | None:
    """The cause a turn's ``provider_error`` text records.

    Text without a known prefix (logs written before causes existed) is a provider failure,
    so any non-empty text is at least ``state_unavailable``.
    """
    if not provider_error:
        return None
    head = provider_error.partition(":")[0]
    for cause in CAUSES:
        if head == cause:
            return cause
    return "state_unavailable"


@dataclass(frozen=True)
class Message:
    """One user message to route.

    A text that is not valid Unicode (lone surrogates, e.g. undecodable command-line bytes) is
    stored with each such code point replaced by U+FFFD, as message files are read: no tokenizer,
    JSON document or decision log could hold it, and one bad byte must not lose the message.

    Attributes:
        id: unique message id.
        text: what the user said.
        account: whose state the gate reads.
        conversation: conversation id (messages of one conversation share it).
        ts: when it was sent (unix seconds), if known.
    """

    id: str
    text: str
    account: str
    conversation: str = ""
    ts: float | None = None

    def __post_init__(self) -> None:
        try:
            self.text.encode("utf-8")
        except UnicodeEncodeError:
            try:  # U+DC80..U+DCFF stand for undecodable bytes: one U+FFFD each
                raw = self.text.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # another lone surrogate (e.g. U+D800)
                raw = self.text.encode("utf-8", "surrogatepass")
            object.__setattr__(self, "text", raw.decode("utf-8", "replace"))


@dataclass(frozen=True)
class PairRecord:
    """One (turn, candidate) pair."""

    skill: str
    rank: int
    score: float
    visible: bool
    exposed: bool
    desc_tokens: int
    components: Mapping[str, float] = field(default_factory=dict)
    fired: tuple[PredicateOutcome, ...] = ()
    soft: tuple[PredicateOutcome, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "skill": self.skill,
            "rank": self.rank,
            "score": self.score,
            "components": dict(self.components),
            "visible": self.visible,
            "exposed": self.exposed,
            "desc_tokens": self.desc_tokens,
            "fired": [o.to_json() for o in self.fired],
            "soft": [o.to_json() for o in self.soft],
        }


@dataclass(frozen=True)
class TurnRecord:
    """Everything the pipeline decided for one message."""

    turn_id: str
    run_id: str
    message: Message
    catalog_version: str
    recall_method: str
    depth_rule: str
    pairs: tuple[PairRecord, ...]
    snapshot: Snapshot | None
    timings_us: Mapping[str, int]
    ts: float
    provider_error: str = ""
    menu_tokens: int = 0
    #: what the depth rule estimated at each prefix of the visible list (a stop probability
    #: for CAM-DF, a sufficiency estimate for predict-then-threshold); empty for rules without
    depth_probs: tuple[float, ...] = ()

    @property
    def matched(self) -> bool:
        return bool(self.pairs)

    @property
    def visible(self) -> tuple[str, ...]:
        return tuple(p.skill for p in self.pairs if p.visible)

    @property
    def exposed(self) -> tuple[str, ...]:
        return tuple(p.skill for p in self.pairs if p.exposed)

    @property
    def blocked(self) -> tuple[PairRecord, ...]:
        return tuple(p for p in self.pairs if not p.visible)

    @property
    def cause(self) -> Cause | None:
        """Why the whole turn failed closed (read from ``provider_error``), or None."""
        return cause_of_text(self.provider_error)

    def to_json(self) -> dict[str, Any]:
        return {
            "turn_id": self.turn_id,
            "run_id": self.run_id,
            "message": {
                "id": self.message.id,
                "text": self.message.text,
                "account": self.message.account,
                "conversation": self.message.conversation,
                "ts": self.message.ts,
            },
            "catalog_version": self.catalog_version,
            "recall_method": self.recall_method,
            "depth_rule": self.depth_rule,
            "pairs": [p.to_json() for p in self.pairs],
            "snapshot": self.snapshot.to_json() if self.snapshot else None,
            "timings_us": dict(self.timings_us),
            "ts": self.ts,
            "provider_error": self.provider_error,
            "cause": self.cause,
            "menu_tokens": self.menu_tokens,
            "depth_probs": list(self.depth_probs),
        }


@dataclass(frozen=True)
class RunInfo:
    """One batch of turns written under the same configuration.

    Attributes:
        run_id: unique id.
        started_at: unix seconds.
        catalog_version: the catalog every turn of the run used.
        n_skills: skills in the catalog.
        tokens_all_skills: description tokens of the whole catalog (the "expose everything"
            baseline per message).
        config: the pipeline configuration, as JSON.
        tenant: who the run's turns are for (the service's tenant; ``""``: none). An identity,
            matched exactly by every read that filters on it -- never a prefix of the run id.
    """

    run_id: str
    started_at: float
    catalog_version: str
    n_skills: int
    tokens_all_skills: int
    config: Mapping[str, Any] = field(default_factory=dict)
    tenant: str = ""
