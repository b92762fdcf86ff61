"""Writing and reading turns back, on both backends; the write-path contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maitred._canonical import canonical_json, content_hash
from maitred.errors import ConfigError, LogError
from maitred.log import decode_turn, open_log, row_hash_payload, verify
from maitred.log.rows import (
    PAIR_COLUMNS,
    TURN_COLUMNS,
    _canonical_fast,
    _content_hash_fast,
    encode_turn,
)
from maitred.records import Message, PairRecord, TurnRecord

from .builders import Opener, make_run, make_snapshot, make_turn


def _read_back(log_opener: Opener, run_id: str = "run-1") -> list[TurnRecord]:
    with log_opener(read_only=True) as log:
        return [
            decode_turn(row, log.snapshot(row["snapshot_hash"]) if row["snapshot_hash"] else None)
            for row in log.iter_turns(run_id)
        ]


def test_turns_round_trip(opener: Opener) -> None:
    turns = [make_turn(i) for i in range(7)]
    no_snapshot = TurnRecord(
        "run-1/x", "run-1", Message("x", "hi", "acct-2"), "c1:cat", "bm25", "fixed-k", (), None,
        {"recall": 3}, 1_700_000_900.0, provider_error="timeout",
    )  # fmt: skip
    with opener() as log:
        log.begin_run(make_run())
        for t in [*turns, no_snapshot]:
            log.write(t)
    assert _read_back(opener) == [*turns, no_snapshot]


def test_runs_round_trip(opener: Opener) -> None:
    with opener() as log:
        log.begin_run(make_run("b"))
        log.begin_run(make_run("a"))
    with opener(read_only=True) as log:
        assert log.runs() == [make_run("a"), make_run("b")]


def test_batches_land_and_reads_see_buffered_turns(opener: Opener) -> None:
    with opener(batch_pairs=4) as log:
        log.begin_run(make_run())
        for i in range(5):
            log.write(make_turn(i))
        # the same (writable) log flushes before reading
        assert [t["turn_id"] for t in log.iter_turns()] == [f"run-1/m{i}" for i in range(5)]


def test_iter_turns_pages_through_many_turns(tmp_path: Path) -> None:
    with open_log(tmp_path / "log.db") as log:
        log.begin_run(make_run())
        for i in range(1203):
            log.write(make_turn(i, pairs=()))
        ids = [t["turn_id"] for t in log.iter_turns("run-1")]
    assert len(ids) == len(set(ids)) == 1203


def test_snapshots_are_stored_once_per_hash(opener: Opener) -> None:
    with opener(batch_pairs=5) as log:
        log.begin_run(make_run())
        for i in range(6):
            log.write(make_turn(i, snapshot=make_snapshot(plan="free" if i % 2 else "pro")))
    with opener(read_only=True) as log:
        rows = list(log.iter_snapshots())
        assert len(rows) == 2
        for row in rows:
            snap = log.snapshot(row["hash"])
            assert snap is not None and snap.compute_hash() == row["hash"]
        assert log.snapshot("c1:nope") is None


def test_a_turn_of_an_unbegun_run_is_refused(opener: Opener) -> None:
    with opener() as log, pytest.raises(LogError, match=r"never begun.*begin_run"):
        log.write(make_turn(0, run_id="ghost"))


def test_run_ids_are_unique(opener: Opener) -> None:
    with opener() as log:
        log.begin_run(make_run())
        with pytest.raises(LogError, match="already in the decision log"):
            log.begin_run(make_run())


def test_a_repeated_turn_id_fails_alone_with_a_clear_error(opener: Opener) -> None:
    with opener() as log:
        log.begin_run(make_run())
        log.write(make_turn(0))
        log.flush()
        log.write(make_turn(0))
        with pytest.raises(LogError, match=r"turn 'run-1/m0' could not be written.*not logged"):
            log.flush()
        log.write(make_turn(1))  # the log stays usable
    assert [t.turn_id for t in _read_back(opener)] == ["run-1/m0", "run-1/m1"]


def test_non_finite_values_are_refused_at_write(opener: Opener) -> None:
    bad = make_turn(0, pairs=(PairRecord("s", 1, float("nan"), True, True, 1),))
    with opener() as log:
        log.begin_run(make_run())
        with pytest.raises(LogError, match="finite JSON"):
            log.write(bad)


def test_read_only_log_refuses_writes(opener: Opener) -> None:
    with opener() as log:
        log.begin_run(make_run())
    with opener(read_only=True) as log:
        with pytest.raises(LogError, match="read-only"):
            log.write(make_turn(0))
        with pytest.raises(LogError, match="read-only"):
            log.begin_run(make_run("other"))
        with pytest.raises(LogError):  # the database itself refuses, not only the wrapper
            log.query("INSERT INTO runs VALUES ('r', 0, 'c', 0, 0, '{}')")


def test_missing_sqlite_file_is_not_created_read_only(tmp_path: Path) -> None:
    with pytest.raises(LogError, match="does not exist"):
        open_log(tmp_path / "nope.db", read_only=True)
    assert not (tmp_path / "nope.db").exists()


def test_open_log_reports_unknown_schemes_and_options(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"choose one of \['postgres', 'postgresql', 'sqlite'\]"):
        open_log("mysql://x/y")
    with pytest.raises(ConfigError, match="PostgreSQL option"):
        open_log(tmp_path / "a.db", schema="s")
    with open_log(f"sqlite://{tmp_path / 'b.db'}") as log:
        assert log.dialect == "sqlite"


def test_row_hash_is_the_content_hash_of_the_documented_payload() -> None:
    enc = encode_turn(make_turn(3))
    turn = dict(zip(TURN_COLUMNS, enc.turn, strict=True))
    pairs = [dict(zip(PAIR_COLUMNS, p, strict=True)) for p in reversed(enc.pairs)]
    payload = row_hash_payload(turn, pairs)
    assert turn["row_hash"] == content_hash(payload)
    assert list(payload) == ["v", "turn", "pairs", "depth"]
    assert (payload["v"], payload["turn"]["chain_seq"], payload["turn"]["prev_hash"]) == (2, 1, "")
    assert "row_hash" not in payload["turn"]
    assert [p[1] for p in payload["pairs"]] == [1, 2, 3]  # sorted by rank, turn_id left out
    assert json.loads(payload["pairs"][1][7])[0]["predicate"] == "on_free_plan"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)  # fmt: skip


@given(json_values)
def test_the_fast_encoder_is_canonical_json(value: object) -> None:
    assert _canonical_fast(value) == canonical_json(value)
    assert _content_hash_fast(value) == content_hash(value)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {"k": float("-inf")}, object()])
def test_the_fast_encoder_refuses_what_canonical_json_refuses(bad: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        canonical_json(bad)
    with pytest.raises((ValueError, TypeError)):
        _canonical_fast(bad)


def test_values_are_pinned_to_their_column_types_before_hashing(opener: Opener) -> None:
    loose = TurnRecord(
        "run-1/n", "run-1", Message(7, "hi", "acct", ts=5), "c1:cat", "bm25", "k",  # type: ignore[arg-type]
        (PairRecord("s", 1, 2, True, True, 3),), None, {"gate": 4}, 1_700_000_000,
    )  # fmt: skip
    with opener() as log:
        log.begin_run(make_run())
        log.write(loose)
    with opener(read_only=True) as log:
        assert verify(log).ok
        (row,) = log.iter_turns()
        assert (row["message_id"], row["message_ts"], row["ts"]) == ("7", 5.0, 1_700_000_000.0)


def test_batch_size_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="batch_pairs must be at least 1"):
        open_log(tmp_path / "log.db", batch_pairs=0)


@given(
    st.dictionaries(
        st.text(min_size=0, max_size=8),
        st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers()),
        max_size=4,
    )
)
def test_components_fast_path_is_canonical(components: dict[str, float]) -> None:
    from maitred.log.rows import _components_json

    assert _components_json(components) == canonical_json(components)
