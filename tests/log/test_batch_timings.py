"""Issue 12 item 9: in batch mode a turn's recall time is a share of its batch, marked as such."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import maitred.pipeline
from maitred.contract import Contract
from maitred.log import decode_turn, open_log
from maitred.pipeline import Pipeline
from maitred.recall.registry import make_recaller
from maitred.records import Message
from maitred.skills.model import Catalog, Skill
from maitred.state.memory import MemoryStateProvider

NOW = 1_700_000_000.0
BATCH_NS = 3_000_000  # what the whole batch's recall takes on the fake clock


class _Clock:
    """``perf_counter_ns`` that moves only when recall says so."""

    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns


class _BatchRecaller:
    """A real BM25 recaller with ``rank_batch``, whose batch takes BATCH_NS on the clock."""

    def __init__(self, catalog: Catalog, clock: _Clock) -> None:
        self.inner = make_recaller("bm25", catalog)
        self.name = "bm25"
        self.clock = clock

    def rank(self, text: str, k: int) -> Any:
        return self.inner.rank(text, k)

    def rank_batch(self, texts: list[str], k: int) -> list[Any]:
        self.clock.ns += BATCH_NS
        return [self.inner.rank(t, k) for t in texts]


def test_batch_recall_is_a_marked_share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(maitred.pipeline.time, "perf_counter_ns", clock)
    catalog = Catalog(
        tuple(
            Skill(name=n, description=d, family="f", contract=Contract())
            for n, d in [("connect-domain", "Connect a domain name"), ("bake", "Bake bread")]
        )
    )
    provider = MemoryStateProvider({"a": {}}, clock=lambda: NOW)
    path = tmp_path / "log.db"
    with open_log(path) as log:
        pipe = Pipeline(
            catalog, _BatchRecaller(catalog, clock), provider, log=log, clock=lambda: NOW
        )  # type: ignore[arg-type]
        pipe.begin_run("r")
        messages = [Message(f"m{i}", "connect my domain", "a") for i in range(3)]
        turns = list(pipe.route_many(messages, batch=3))
        pipe.route(Message("one", "bake bread", "a"))  # one message: its own recall time
    assert [t.record.timings_us["recall"] for t in turns] == [1000, 1000, 1000]
    assert sum(t.record.timings_us["recall"] for t in turns) == BATCH_NS // 1000
    assert [t.record.timings_us["recall_batch"] for t in turns] == [3, 3, 3]
    with open_log(path, read_only=True) as log:
        rows = {r["message_id"]: r for r in log.iter_turns()}
        assert [rows[f"m{i}"]["recall_batch"] for i in range(3)] == [3, 3, 3]
        assert rows["one"]["recall_batch"] is None
        back = decode_turn(rows["m0"], log.snapshot(rows["m0"]["snapshot_hash"]))
    assert back.timings_us == turns[0].record.timings_us
