"""What varies per request travels with the call (:class:`maitred.CallContext`): one engine,
shared by many threads, routes each turn under that turn's run and menu format and within its
scope, and nothing of one request shows in another's record (ARCHITECTURE.md, "Concurrency")."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from maitred import CallContext, Maitred, PipelineOptions
from maitred.log import open_log

TOOLS = {
    "tools": [
        {
            "name": f"tool_{i}",
            "description": f"Manage the {word} settings of the website.",
            "inputSchema": {"type": "object", "properties": {}},
        }
        for i, word in enumerate(["domain", "mail", "billing", "theme", "backup", "login"])
    ]
}


def _engine(tmp_path: Path) -> Maitred:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS), encoding="utf-8")
    accounts = tmp_path / "accounts.json"
    accounts.write_text(json.dumps({"a": {}}), encoding="utf-8")
    options = PipelineOptions(method="bm25", top_k=6, min_score=-1.0)
    return Maitred.open([tools], str(accounts), options, log=str(tmp_path / "log.sqlite"))


def test_concurrent_turns_keep_their_own_run_format_and_scope(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    for run in ("run-a", "run-b"):
        engine.pipeline.begin_run(run, current=False)
    plan = {
        "run-a": CallContext(run_id="run-a", menu_format="anthropic"),
        "run-b": CallContext(run_id="run-b", menu_format="mcp", scope=frozenset({"tool_1"})),
    }
    got: list[tuple[str, str, tuple[str, ...], str]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def work(context: CallContext) -> None:
        try:
            start.wait()
            for i in range(40):
                turn = engine.turn(
                    "change the website settings",
                    account="a",
                    id=f"{context.run_id}-{i}",
                    context=context,
                )
                got.append((context.run_id, turn.record.run_id, turn.exposed, turn.menu.format))
        except BaseException as exc:  # surfaced below, with the thread's own traceback
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(c,)) for c in plan.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    engine.close()
    assert not errors
    assert len(got) == 80
    for asked, logged, exposed, fmt in got:
        assert logged == asked
        assert fmt == plan[asked].menu_format
        if asked == "run-b":
            assert exposed == ("tool_1",)
        else:
            assert len(exposed) == 6
    assert engine.pipeline.run_id == ""  # no request changed the engine's own run
    with open_log(str(tmp_path / "log.sqlite"), read_only=True) as log:
        runs = {t["turn_id"]: t["run_id"] for t in log.iter_turns()}
    assert sorted(set(runs.values())) == ["run-a", "run-b"]
    assert all(turn_id.startswith(run) for turn_id, run in runs.items())


def test_a_scoped_turn_ranks_only_its_scope_and_renumbers(tmp_path: Path) -> None:
    with _engine(tmp_path) as engine:
        scope = CallContext.scoped(["tool_4", "tool_2"])
        turn = engine.turn("change the website settings", account="a", context=scope)
        assert sorted(turn.exposed) == ["tool_2", "tool_4"]
        assert sorted(p.rank for p in turn.record.pairs) == [1, 2]
        assert CallContext.scoped(None).scope is None
