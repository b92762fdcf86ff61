"""Pages of decisions (:mod:`maitred.log.browse`) on SQLite and PostgreSQL: every kind told
apart, and pages that follow their cursor through rows of the same clock in both tables
without a gap or a repeat."""

from __future__ import annotations

import dataclasses

import pytest
from tests.log.builders import Opener, make_run, make_turn

from maitred.actions.model import Decision, ToolCall
from maitred.errors import ConfigError
from maitred.log.browse import Cursor, PageFilter, action_kind, decision_page

TOOLS = ("deploy", "resources/read", "find_tools", "tasks/get", "prompts/get", "tasks_x")


def _fill(opener: Opener) -> set[str]:
    """Six turns and six action decisions, two of each clock, two accounts."""
    ids = set()
    with opener() as log:
        log.begin_run(dataclasses.replace(make_run("run-1"), tenant="acme"))
        for n in range(6):
            turn = make_turn(n)
            at = 1_700_000_000.0 + n // 2  # two turns per clock
            message = dataclasses.replace(turn.message, account=f"acct-{n % 2}")
            turn = dataclasses.replace(turn, ts=at, message=message)
            log.write(turn)
            ids.add(turn.turn_id)
        decisions = [
            Decision(ToolCall(tool, {}), "allow", "OK", now=1_700_000_000.0 + i // 2,
                     session_id="conv-1", tenant="acme", account=f"acct-{i % 2}")
            for i, tool in enumerate(TOOLS)
        ]  # fmt: skip
        log.write_decisions(decisions)
        ids |= {d.decision_id for d in decisions}
    return ids


def test_kinds() -> None:
    assert [action_kind(t) for t in TOOLS] == ["call", "read", "find", "task", "read", "call"]


@pytest.mark.parametrize("limit", [1, 2, 5])
def test_pages_through_equal_clocks_without_gaps(opener: Opener, limit: int) -> None:
    every = _fill(opener)
    with opener(read_only=True) as log:
        seen: list[str] = []
        where = PageFilter(limit=limit)
        while True:
            page = decision_page(log, where)
            seen += [d.decision_id for d in page.decisions]
            if page.next is None:
                break
            where = dataclasses.replace(where, after=Cursor.parse(page.next.token()))
        assert sorted(seen) == sorted(every) and len(seen) == len(every)
        order = [(d.at, d.decision_id) for d in decision_page(log, PageFilter(limit=50)).decisions]
        assert order == sorted(order, reverse=True)
        by_kind = {
            k: {d.about for d in decision_page(log, PageFilter(kind=k)).decisions}
            for k in ("call", "read", "find", "task")
        }
        assert by_kind == {
            "call": {"deploy", "tasks_x"},
            "read": {"resources/read", "prompts/get"},
            "find": {"find_tools"},
            "task": {"tasks/get"},
        }
        turns = decision_page(log, PageFilter(kind="turn", account="acct-1")).decisions
        assert len(turns) == 3 and {d.kind for d in turns} == {"turn"}
        mine = decision_page(log, PageFilter(account="acct-0", tool="deploy")).decisions
        assert [d.about for d in mine] == ["deploy"]


def test_a_bad_cursor_or_range_is_refused() -> None:
    with pytest.raises(ConfigError, match="cursor"):
        Cursor.parse("12~")
    with pytest.raises(ConfigError, match="empty"):
        PageFilter(since=2.0, until=1.0)
    with pytest.raises(ConfigError, match="limit"):
        PageFilter(limit=0)
    assert Cursor.parse(Cursor(1.5, "run/a~b").token()) == Cursor(1.5, "run/a~b")
