"""A session id no row can hold (a NUL, a lone surrogate) is looked up as what it is -- the id
of no session -- on both backends, and refused where a row would hold it.

Found by the soundness machines (issue 27): a call check in a session whose id held a NUL was
a database error on PostgreSQL (``text`` cannot hold a NUL, so even asking failed), and with a
lone surrogate a bare ``UnicodeEncodeError`` (not a maitred error at all) on SQLite, before
the decision's row was ever refused as :class:`~maitred.errors.UnstorableError`.
"""

from __future__ import annotations

import dataclasses

import pytest

from maitred.errors import UnstorableError

from .builders import Opener, make_run, make_turn

BAD_IDS = ["conv-\x00", "conv-\ud800", "\udfff"]


@pytest.mark.parametrize("bad", BAD_IDS, ids=["nul", "high-surrogate", "low-surrogate"])
def test_a_session_id_no_row_can_hold_has_no_turns(opener: Opener, bad: str) -> None:
    with opener() as log:
        log.begin_run(make_run())
        log.write(make_turn(0))
        log.flush()
        assert log.committed_turn("", bad) is None
        assert log.committed_offer("", bad) is None
        assert log.disclosed("", bad, "acct-1") == {}
        assert not log.has_turn(f"run-1/{bad}")
        turn = make_turn(1)
        bad_turn = dataclasses.replace(
            turn, message=dataclasses.replace(turn.message, conversation=bad)
        )
        with pytest.raises(UnstorableError, match="conversation_id"):
            log.write(bad_turn)
        log.flush()
        assert log.committed_offer("", "conv-1") is not None  # the good session is untouched
        assert [t["turn_id"] for t in log.iter_turns()] == ["run-1/m0"]
