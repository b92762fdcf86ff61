"""TurnRecords built directly from the dataclasses, for the log tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from maitred.contract.evaluate import PredicateOutcome
from maitred.log import DecisionLog
from maitred.records import Message, PairRecord, RunInfo, TurnRecord
from maitred.state.snapshot import Snapshot

Opener = Callable[..., DecisionLog]


def make_run(run_id: str = "run-1", tokens_all_skills: int = 1000) -> RunInfo:
    return RunInfo(run_id, 1_700_000_000.0, "c1:cat", 5, tokens_all_skills, {"k": 10, "x": [1]})


def make_snapshot(account: str = "acct-1", plan: str = "free") -> Snapshot:
    return Snapshot(
        account,
        {"account.plan": plan, "site.count": 3, "flags": {"beta": True}},
        1_700_000_000.5,
        key_as_of={"account.plan": 1_699_999_000.25},
        missing=frozenset({"billing.card"}),
        version="etag-7",
    )


def fired(name: str = "on_free_plan", value: Any = "free") -> PredicateOutcome:
    return PredicateOutcome(name, "c1:abc", True, "ok", {"account.plan": value})


def make_turn(
    n: int = 0,
    *,
    run_id: str = "run-1",
    snapshot: Snapshot | None = None,
    pairs: tuple[PairRecord, ...] | None = None,
) -> TurnRecord:
    if pairs is None:
        pairs = (
            PairRecord("deploy-site", 1, 0.91, True, True, 120, {"bm25": 7.25, "dense": 0.5}),
            PairRecord(
                "upgrade-plan",
                2,
                0.7,
                False,
                False,
                80,
                {"bm25": 3.0},
                fired=(fired(),),
                soft=(PredicateOutcome("stale_ok", "c1:def", False, "stale", {}, "old"),),
            ),
            PairRecord("add-domain", 3, 0.33, True, False, 60),
        )
    return TurnRecord(
        turn_id=f"{run_id}/m{n}",
        run_id=run_id,
        message=Message(f"m{n}", f"deploy my site ☃ #{n}", "acct-1", "conv-1", 1_700_000_100.0 + n),
        catalog_version="c1:cat",
        recall_method="bm25",
        depth_rule="fixed-k",
        pairs=pairs,
        snapshot=snapshot if snapshot is not None else make_snapshot(),
        timings_us={"recall": 900, "gate": 120, "depth": 15, "menu": 60},
        ts=1_700_000_200.0 + n,
        provider_error="",
        menu_tokens=150,
    )
