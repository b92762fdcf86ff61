"""The harness can fail: the ledger notices what a log lacks, and refused commits are real."""

from __future__ import annotations

from pathlib import Path

import pytest

from maitred import Maitred
from maitred.errors import MaitredError

from . import spec
from .harness import Ledger, Store, Told, refusing_commits
from .machine import OPTIONS

CATALOG = spec.CatalogSpec((spec.ToolSpec("export_ledger", False, ()),))


def _engine(tmp: Path) -> Maitred:
    world = spec.World()
    world.roots["acc-a"] = {"account"}
    tools = spec.write_catalog(tmp / "catalog", CATALOG)
    return Maitred.open(
        [str(tools)], Store(world), OPTIONS, log=str(tmp / "log.sqlite"), cache_dir=tmp / "cache"
    )


def test_the_ledger_reports_decisions_and_turns_the_log_lacks(tmp_path: Path) -> None:
    with _engine(tmp_path) as engine:
        session = engine.session("acc-a")
        turn = engine.turn(spec.message_for(CATALOG), session=session)
        ok = engine.check({"name": "export_ledger", "arguments": {"n": 0}}, session=session)
        assert ok.allow
        ledger = Ledger()
        ledger.turns.add(turn.turn_id)
        ledger.told.append(Told(ok.decision_id, session.id, turn.turn_id, "export_ledger", True))
        assert engine.log is not None
        assert ledger.problems(engine.log) == []
        ledger.turns.add("run/never-logged")
        ledger.told.append(Told("0" * 32, session.id, turn.turn_id, "export_ledger", False))
        ledger.told.append(Told(ok.decision_id, session.id, "other", "export_ledger", True))
        problems = "\n".join(ledger.problems(engine.log))
        assert "turn run/never-logged was answered but is not in the log" in problems
        assert f"decision {'0' * 32} (export_ledger) is not in the log" in problems
        assert "names turn 'other', which is not in the log or did not offer it" in problems


def test_a_refused_commit_raises_and_leaves_nothing_in_the_log(tmp_path: Path) -> None:
    with _engine(tmp_path) as engine:
        session = engine.session("acc-a")
        with refusing_commits(tmp_path / "log.sqlite"), pytest.raises(MaitredError):
            engine.turn(spec.message_for(CATALOG), session=session)
        assert engine.log is not None
        assert list(engine.log.iter_turns()) == []
        engine.turn(spec.message_for(CATALOG), session=session)  # the triggers are gone again
        assert len(list(engine.log.iter_turns())) == 1
