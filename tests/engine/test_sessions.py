"""A session's offer is its last *committed* turn (issue 16, item 3).

With a log: the offer is read from the log (a second engine on the same log, with a fresh
``Session`` of the same id, decides alike; a newer turn made elsewhere replaces a cached menu);
a turn whose commit failed is not the offer. Without a log: the session's memory, and a turn
that raised never becomes the offer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maitred import Maitred, PipelineOptions, ToolCall
from maitred.errors import LogError
from maitred.log.verify import verify
from maitred.pipeline import Turn

from .test_engine import SIDECAR, TOOLS_LIST, _accounts

CONNECT = ToolCall("connect_custom_domain", {"domain": "example.com"})
DOMAIN_TEXT = "connect my custom domain name to my website"
LIST_TEXT = "list"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS_LIST), encoding="utf-8")
    (tmp_path / "tools.maitred.yaml").write_text(SIDECAR, encoding="utf-8")
    accounts = tmp_path / "accounts.json"
    _accounts(accounts, "pro")
    return {"tools": tools, "accounts": accounts, "log": tmp_path / "log.sqlite"}


def _engine(files: dict[str, Path], *, log: bool = True) -> Maitred:
    options = PipelineOptions(method="bm25", top_k=5)
    where = str(files["log"]) if log else None
    return Maitred.open([files["tools"]], str(files["accounts"]), options, log=where)


def test_a_second_engine_on_the_log_decides_against_the_committed_turn(
    files: dict[str, Path],
) -> None:
    with _engine(files) as first, _engine(files) as second:
        mine = first.session("acc-1", id="s-1")  # the runs of these engines have no tenant
        listed = first.turn(LIST_TEXT, session=mine)
        assert listed.exposed == ("list_domains",)
        theirs = second.session("acc-1", id="s-1")  # nothing in memory
        refused = second.check(CONNECT, session=theirs)
        assert (refused.code, refused.turn_id) == ("TOOL_NOT_OFFERED", listed.turn_id)
        offered = second.turn(DOMAIN_TEXT, session=theirs)
        allowed = first.check(CONNECT, session=mine)  # its cached menu is no longer the latest
        assert allowed.allow and allowed.turn_id == offered.turn_id
        other_tenant = first.session("acc-1", id="s-1", tenant="t")  # same id, not its session
        assert first.check(CONNECT, session=other_tenant).code == "TOOL_NOT_OFFERED"


def test_a_turn_whose_commit_fails_is_not_the_offer(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with _engine(files) as engine:
        session = engine.session("acc-1", id="s-1")
        listed = engine.turn(LIST_TEXT, session=session)
        log = engine.log
        assert log is not None

        def fail() -> None:
            raise LogError("the disk is full")

        monkeypatch.setattr(log, "flush", fail)
        with pytest.raises(LogError):
            engine.turn(DOMAIN_TEXT, session=session)
        monkeypatch.undo()
        assert (session.offered, session.turn_id) == (frozenset({"list_domains"}), listed.turn_id)
        decision = engine.check(CONNECT, session=session)
        assert (decision.code, decision.turn_id) == ("TOOL_NOT_OFFERED", listed.turn_id)


def test_without_a_log_a_turn_that_raised_never_becomes_the_offer(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with _engine(files, log=False) as engine:
        session = engine.session("acc-1")
        engine.turn(LIST_TEXT, session=session)
        route = engine.pipeline.route

        def broken(message: object, context: object = None) -> Turn:
            route(message)  # type: ignore[arg-type]
            raise RuntimeError("the menu could not be rendered")

        monkeypatch.setattr(engine.pipeline, "route", broken)
        with pytest.raises(RuntimeError):
            engine.turn(DOMAIN_TEXT, session=session)
        monkeypatch.undo()
        assert session.offered == frozenset({"list_domains"})
        assert engine.check(CONNECT, session=session).code == "TOOL_NOT_OFFERED"
        offered = engine.turn(DOMAIN_TEXT, session=session)
        assert engine.check(CONNECT, session=session).turn_id == offered.turn_id


def test_a_turn_is_logged_under_its_session(files: dict[str, Path]) -> None:
    with _engine(files) as engine:
        session = engine.session("acc-1", id="conv-9")
        turn = engine.turn(LIST_TEXT, session=session)
        assert turn.record.message.conversation == "conv-9"
        log = engine.log
        assert log is not None
        assert log.committed_turn("", "conv-9") == turn.turn_id


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_last_turn_written_is_the_offer_when_the_clock_stands_still(
    files: dict[str, Path], backend: str, request: pytest.FixtureRequest
) -> None:
    """Two turns of one session in one clock tick (a business clock that stands still, a fast
    client): the offer is the turn written last, never the one whose id sorts last. Found by
    tests/soundness' state machine, where turns ordered by ``(ts, turn_id)`` picked at random."""
    if backend == "postgres":
        server, schema = request.getfixturevalue("pg_schema")
        log: str = f"{server}?schema={schema}"
    else:
        log = str(files["log"])
    options = PipelineOptions(method="bm25", top_k=5)
    with Maitred.open(
        [files["tools"]], str(files["accounts"]), options, log=log, clock=lambda: 1_000.0
    ) as engine:
        for _ in range(6):  # each round: the domain turn, then the listing turn, same tick
            session = engine.session("acc-1")
            offered = engine.turn(DOMAIN_TEXT, session=session)
            assert "connect_custom_domain" in offered.exposed
            listed = engine.turn(LIST_TEXT, session=session)
            assert listed.exposed == ("list_domains",)
            fresh = engine.session("acc-1", id=session.id)  # nothing cached: read the log
            refused = engine.check(CONNECT, session=fresh)
            assert (refused.code, refused.turn_id) == ("TOOL_NOT_OFFERED", listed.turn_id)


def test_a_session_whose_turns_disclose_is_offered_all_they_exposed_on_any_engine(
    files: dict[str, Path],
) -> None:
    """``accumulates``: each committed turn discloses what it exposed (the gateway's
    find_tools); a later turn adds to the offer and never takes back, read from the log by
    another engine, and only for the session's own account and tenant."""
    with _engine(files) as first, _engine(files) as second:
        mine = first.session("acc-1", id="p-1", accumulates=True)
        listed = first.turn(LIST_TEXT, session=mine)
        found = first.turn(DOMAIN_TEXT, session=mine)
        assert "connect_custom_domain" in found.exposed
        again = first.turn(LIST_TEXT, session=mine)  # its menu lacks the domain tool
        assert "connect_custom_domain" not in again.exposed
        theirs = second.session("acc-1", id="p-1", accumulates=True)  # nothing in memory
        offered = second.offered(theirs)
        assert offered == set(listed.exposed) | set(found.exposed)
        decision = second.check(CONNECT, session=theirs)  # linked to the turn that disclosed it
        assert decision.allow and decision.turn_id == found.turn_id
        latest_only = second.session("acc-1", id="p-1")  # the same turns, read as menus
        assert second.check(CONNECT, session=latest_only).code == "TOOL_NOT_OFFERED"
        other_account = second.session("acc-2", id="p-1", accumulates=True)
        assert second.offered(other_account) == frozenset()
        other_tenant = second.session("acc-1", id="p-1", tenant="t", accumulates=True)
        assert second.check(CONNECT, session=other_tenant).code == "TOOL_NOT_OFFERED"
    report = verify(files["log"])
    assert report.ok, report.summary()  # every allowed call names a turn that exposed its tool


def test_without_a_log_a_session_whose_turns_disclose_keeps_them_in_memory(
    files: dict[str, Path],
) -> None:
    with _engine(files, log=False) as engine:
        session = engine.session("acc-1", accumulates=True)
        found = engine.turn(DOMAIN_TEXT, session=session)
        engine.turn(LIST_TEXT, session=session)
        assert set(found.exposed) <= engine.offered(session)
        assert engine.check(CONNECT, session=session).allow
