"""Single-use request states in the log (``0013_spent_states``): the first spend of a key wins
on every connection sharing the log, the row is append-only, and ``verify`` checks its guards
(both backends)."""

from __future__ import annotations

import threading

import pytest

from maitred.errors import LogError
from maitred.log.base import DecisionLog
from maitred.log.verify import verify

from .builders import Opener


def test_a_key_is_spent_once_across_two_connections(opener: Opener) -> None:
    with opener() as one, opener() as two:
        assert one.spend("state:n1", tenant="t", session_id="s", expires_at=9e9)
        assert not two.spend("state:n1", tenant="t", session_id="s", expires_at=9e9)
        assert not one.spend("state:n1", tenant="t", session_id="s", expires_at=9e9)
        assert two.spend("state:n2", tenant="t", session_id="s", expires_at=9e9)
        rows = one.query("SELECT state_key, tenant, session_id FROM spent_states ORDER BY 1")
        report = verify(one)
    assert [tuple(r) for r in rows] == [("state:n1", "t", "s"), ("state:n2", "t", "s")]
    assert report.ok, report.mismatches


def test_of_many_threads_spending_one_key_exactly_one_wins(opener: Opener) -> None:
    """Two logs (two processes' connections), four threads each, one key: one True."""
    won: list[bool] = []
    with opener() as one, opener() as two:
        start = threading.Barrier(8)

        def spend(log: DecisionLog) -> None:
            start.wait()
            won.append(log.spend("approval:d1", tenant="", session_id="s", expires_at=1.0))

        threads = [threading.Thread(target=spend, args=(log,)) for log in [one, two] * 4]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(won) == [False] * 7 + [True]


def test_a_spent_state_cannot_be_unspent(opener: Opener) -> None:
    with opener() as log:
        assert log.spend("state:n1", tenant="t", session_id="s", expires_at=9e9)
        for statement in ("DELETE FROM spent_states", "UPDATE spent_states SET claim = 'x'"):
            with pytest.raises(LogError, match="append-only"):
                log.execute(statement)  # type: ignore[attr-defined]
    with opener(read_only=True) as log, pytest.raises(LogError, match="read-only"):
        log.spend("state:n3", tenant="t", session_id="s", expires_at=9e9)
