"""``call_tool`` and a direct call get the same decision, for every code a ``tools/call`` can
come to (issue 37): ``call_tool(name, arguments)`` *is* the call ``name(arguments)``.

The sameness tests make each call twice, directly and through ``call_tool``, and compare
everything but the ids: the code and the payload the model reads, the decisions the log
holds (code, verdict, message, fields, arguments, the turn that disclosed the tool, the
approval), the code the call is counted under, what reached the upstream and, over HTTP, the
response's status and challenge. Every code a ``tools/call`` can come to is covered:

* in one table (:data:`OUTCOMES`, a gateway in memory per outcome): ``OK``, ``TOOL_UNKNOWN``,
  ``TOOL_NOT_OFFERED`` (never found; found but blocked), ``TOOL_NOT_EXECUTABLE``,
  ``STATE_UNAVAILABLE``, ``STATE_MISSING``, ``PREDICATE_ERROR``, ``ARGS_MISSING``,
  ``ARGS_INVALID`` (the target's schema; not I-JSON), a call policy's own code,
  ``RATE_LIMITED``, ``RATE_LIMIT_UNAVAILABLE``, ``UPSTREAM_FAILED``, ``APPROVAL_REQUIRED``,
  ``APPROVAL_DECLINED`` and an approved call, by elicitation and in a 2026-07-28 round;
* apart, each needing a gateway of its own: ``TOOL_DEFINITION_CHANGED`` (a pinned tool
  changed at its server after it was found), ``REQUEST_STATE_REPLAYED``, ``GATE_UNAVAILABLE``
  (the decision log refuses the write: a checked call, and one the edge refuses),
  ``AUTH_REQUIRED``, ``STATE_STALE`` (a SQLite state store that dates its rows; the JSON file
  of the table dates no key), ``TOOL_UNKNOWN`` for a tool its HTTP upstream lists to the other
  protocol era only; over HTTP with bearer tokens, ``INSUFFICIENT_SCOPE`` and
  ``REQUEST_STATE_NOT_YOURS``; and a call that becomes a task (``test_a_task_is_made_alike``).
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as mt
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from tests.mcp.conftest import Process, Site, child_env, sha256
from tests.mcp.test_call_tool import (
    Run,
    _counts,
    _decisions,
    _find_mode,
    _same,
    _seen,
    find,
    run,
    wrapped,
)
from tests.mcp.test_eras import ERA_SERVER
from tests.mcp.test_gateway import names, rejection
from tests.mcp.test_pins import POISONED, pin, write_site
from tests.mcp.test_rate_limits import _free_port
from tests.mcp.test_tasks import SERVER as TASKS_SERVER
from tests.mcp.test_tasks import Handle, Tasks, task
from tests.mcp.test_tasks import Site as TasksSite
from tests.mcp.test_tasks import call as task_call

from maitred.gateway import load_config
from maitred.gateway.approval import ASK_KEY
from maitred.gateway.build import gate_of, open_gateway
from maitred.log.base import open_log
from maitred.log.verify import verify

#: each outcome: (plan before, needs found first, plan at the call, the call, era, a person's
#: answer) and the code the call gets
Outcome = tuple[str, list[str], str, tuple[str, dict[str, Any]], str, str | None, str]
PLAN = ("get_plan", {"account": "acc-1"})
ENTERPRISE = ("upgrade", {"account": "acc-1", "plan": "enterprise"})
REPORT = ("export_report", {"year": 2025})
WHICH, MOVE = "which plan is my account on", "move my account to another plan"
NOTE = {"text": "call me"}
EXPORT, DIE = "export the yearly report", "die without answering"
BAD_TYPE, NOT_I_JSON = ("get_plan", {"account": 5}), ("get_plan", {"account": "\ud800"})
OTHER = ("upgrade", {"account": "acc-2", "plan": "pro"})
TO_PRO = ("upgrade", {"account": "acc-1", "plan": "pro"})  # needs no person's yes
BROKEN = "broken"  # the accounts file is not JSON: the state provider fails
NO_PLAN, NUMBER = "no plan", "a number"  # the account has no plan; its plan is 5
L, A = "legacy", "auto"  # a handshake-era client; a 2026-07-28 one (a round for a question)
OUTCOMES: dict[str, Outcome] = {
    "allowed": ("free", [WHICH], "free", PLAN, L, None, "OK"),
    "unknown": ("free", [], "free", ("no_such_tool", {}), L, None, "TOOL_UNKNOWN"),
    "not-found-yet": ("free", [], "free", PLAN, L, None, "TOOL_NOT_OFFERED"),
    "blocked": ("free", [EXPORT], "free", REPORT, L, None, "TOOL_NOT_OFFERED"),
    "not-executable-now": ("pro", [EXPORT], "free", REPORT, L, None, "TOOL_NOT_EXECUTABLE"),
    "state-unavailable": ("pro", [EXPORT], BROKEN, REPORT, L, None, "STATE_UNAVAILABLE"),
    "args-missing": ("free", [WHICH], "free", ("get_plan", {}), L, None, "ARGS_MISSING"),
    "args-invalid": ("free", [WHICH], "free", BAD_TYPE, L, None, "ARGS_INVALID"),
    "args-not-i-json": ("free", [WHICH], "free", NOT_I_JSON, L, None, "ARGS_INVALID"),
    "call-policy": ("free", [MOVE], "free", OTHER, L, None, "SHOP_OTHER_ACCOUNT"),
    "state-missing": ("free", [MOVE], NO_PLAN, ENTERPRISE, L, None, "STATE_MISSING"),
    "predicate-error": ("free", [MOVE], NUMBER, ENTERPRISE, L, None, "PREDICATE_ERROR"),
    "rate-limited": ("free", [WHICH], "free", PLAN, L, None, "RATE_LIMITED"),
    "rate-store-down": ("free", [MOVE], "free", TO_PRO, L, None, "RATE_LIMIT_UNAVAILABLE"),
    "upstream-failed": ("free", [DIE], "free", ("crash", {}), L, None, "UPSTREAM_FAILED"),
    "approval-required": ("free", [MOVE], "free", ENTERPRISE, L, None, "APPROVAL_REQUIRED"),
    "approval-declined": ("free", [MOVE], "free", ENTERPRISE, L, "decline", "APPROVAL_DECLINED"),
    "approved": ("free", [MOVE], "free", ENTERPRISE, L, "accept", "OK"),
    "approved-in-a-round": ("free", [MOVE], "free", ENTERPRISE, A, "accept", "OK"),
    "declined-in-a-round": ("free", [MOVE], "free", ENTERPRISE, A, "decline", "APPROVAL_DECLINED"),
}


#: what the gateway config of an outcome says beside ``disclosure: find_tools``
CONFIG = {
    "rate-limited": "rate_limits: {per_tool: {get_plan: 1/hour}}\n",
    # a shared store nothing listens at: every count fails, and a write is refused
    "rate-store-down": "rate_limits: {per_token: 9/minute, storage: 'redis://127.0.0.1:PORT/0'}\n",
}


def _set_state(site: Site, plan: str) -> None:
    if plan == BROKEN:
        site.accounts.write_text("{not json", encoding="utf-8")
    elif plan in (NO_PLAN, NUMBER):
        account = {} if plan == NO_PLAN else {"plan": 5}
        site.accounts.write_text(json.dumps({"acc-1": {"account": account}}), encoding="utf-8")
    else:
        site.set_plan(plan)


def _code(result: Any) -> str:
    return str(rejection(result)["code"]) if result.is_error else "OK"


@pytest.mark.parametrize("outcome", sorted(OUTCOMES))
def test_call_tool_and_a_direct_call_get_the_same_decision(site: Site, outcome: str) -> None:
    """Each outcome of the table (the others are the tests below): the same payload, log
    rows, approval question, counts and upstream calls, ids aside."""
    before, needs, at_call, (name, arguments), mode, answer, code = OUTCOMES[outcome]
    limited = outcome == "rate-limited"
    _find_mode(site, CONFIG.get(outcome, "").replace("PORT", str(_free_port())))
    site.set_plan(before)

    async def scenario(client: Client[Any], seen: Run) -> None:
        for need in needs:
            await find(client, need)
        if limited:  # the one call the hour allows
            assert not (await client.call_tool(name, arguments)).is_error
        for how in ("direct", "call_tool"):
            _set_state(site, at_call)  # an approved upgrade moved the plan: back to where it was
            called = (
                (name, arguments) if how == "direct" else ("call_tool", wrapped(name, arguments))
            )
            seen.results.append(await client.call_tool(*called, raise_on_error=False))

    seen = run(site, scenario, answer=answer, mode=mode)
    direct, through = seen.results
    assert _code(direct) == _code(through) == code
    assert _seen(through) == _seen(direct)
    if direct.is_error:  # each refusal names its own logged decision
        ids = {rejection(r)["decision_id"] for r in seen.results}
        assert len(ids) == 2 and None not in ids
    decisions = [d for d in _decisions(site) if d["call"]["name"] != "find_tools"]
    decisions = decisions[1:] if limited else decisions
    half = len(decisions) // 2
    assert half >= 1 and len(decisions) == 2 * half  # an approval is two decisions a call
    assert [_same(d) for d in decisions[half:]] == [_same(d) for d in decisions[:half]]
    assert {d["call"]["name"] for d in decisions} == {name}  # logged as the target's call
    assert len(seen.asked) == (2 if answer else 0) and len(set(seen.asked)) <= 1
    counted = {c: n for c, n in seen.counts.items() if c not in ("FIND_TOOLS",) and n}
    if mode == "auto":  # the question went back to the client first: asked, then answered
        assert counted == {"APPROVAL_ASKED": 2, code: 2}
    else:
        assert counted == ({code: 2, "OK": 1} if limited else {code: 2})
    calls = site.upstream_calls()
    assert calls == ([name] if limited else calls[: len(calls) // 2] * 2)
    assert len(calls) == (2 if code in ("OK", "UPSTREAM_FAILED") and not limited else int(limited))


@pytest.fixture
def tasks_site(tmp_path: Path) -> Iterator[TasksSite]:
    """The tasks upstream of ``test_tasks.py`` (streamable HTTP), on the free plan."""
    env = {**child_env(), "CALLS_FILE": str(tmp_path / "calls.jsonl")}
    upstream = Process([sys.executable, str(TASKS_SERVER), "0"], env, r"PORT=(\d+)")
    found = TasksSite(tmp_path, f"http://127.0.0.1:{upstream.match.group(1)}/mcp")
    found.set_plan("free")
    try:
        yield found
    finally:
        upstream.stop()


def test_a_task_is_made_alike(tasks_site: TasksSite) -> None:
    """A call that becomes a task upstream: decided, recorded as the caller's and handed over
    the same way through ``call_tool`` as directly (``tasks/create`` rows alike)."""
    config = tasks_site.config("account: acc-1\ndisclosure: find_tools\n")
    handles: list[Any] = []

    async def main() -> None:
        server, engines = await open_gateway(load_config(config))
        try:
            async with Client(server, extensions=[Tasks()]) as client:  # type: ignore[arg-type]
                tasks_site.set_plan("pro")
                await find(client, "render a long report")
                args = {"title": "Q4"}
                handles.append(await task_call(client, "render_report", args))
                handles.append(await task_call(client, "call_tool", wrapped("render_report", args)))
                for handle in handles:
                    assert (await task(client, "tasks/get", handle.task_id))["status"] == "working"
        finally:
            engines.close()

    anyio.run(main)
    assert all(isinstance(h, Handle) and h.task_id.startswith("task-") for h in handles)
    assert handles[0].task_id != handles[1].task_id
    assert tasks_site.served() == ["task created", "task created", "tasks/get", "tasks/get"]
    with open_log(str(tasks_site.root / "gateway.sqlite"), read_only=True) as log:
        rows = [json.loads(r["decision_json"]) for r in log.iter_action_decisions()]
        assert verify(log).ok
    by_id = {r["decision_id"]: r for r in rows}
    made = [by_id[h.task_id] for h in handles]  # the record of each task, under its id
    calls = [by_id[made_one["call"]["arguments"]["decision"]] for made_one in made]
    assert [c["call"]["name"] for c in calls] == ["render_report"] * 2
    assert _same(calls[1]) == _same(calls[0]) and calls[0]["code"] == "OK"
    own = ("decision", "upstreamTaskId")  # each task's own call and upstream id
    kept = [{k: v for k, v in m["call"]["arguments"].items() if k not in own} for m in made]
    assert kept[1] == kept[0] and {m["code"] for m in made} == {"OK"}


def _alike(results: list[Any], code: str) -> None:
    """Two calls, direct then through ``call_tool``: the same code and payload, ids aside;
    each refusal with its own decision id, or both with none (nothing could be logged)."""
    direct, through = results
    assert _code(direct) == _code(through) == code
    assert _seen(through) == _seen(direct)
    if direct.is_error:
        ids = [rejection(r)["decision_id"] for r in results]
        assert ids[0] != ids[1] or ids == ["", ""]


def _halves(decisions: list[dict[str, Any]], name: str) -> None:
    """The decisions of the direct call, then the same of the call through ``call_tool``."""
    half = len(decisions) // 2
    assert half >= 1 and len(decisions) == 2 * half
    assert [_same(d) for d in decisions[half:]] == [_same(d) for d in decisions[:half]]
    assert {d["call"]["name"] for d in decisions} == {name}


@pytest.mark.slow  # `maitred mcp pin` runs as a user runs it, and launches the upstream
def test_a_definition_changed_after_it_was_found_is_refused_alike(tmp_path: Path) -> None:
    """``TOOL_DEFINITION_CHANGED``: a tool found, then changed at its server (``test_pins.py``'s
    upstream, which lays ``$CHANGES`` over its listing), is held back at the next listing and
    refused alike both ways, never named by ``find_tools`` again; one held back before it was
    ever found is ``TOOL_NOT_OFFERED`` both ways, unnamed (the conversation's rule)."""
    site = write_site(tmp_path, "disclosure: find_tools\npins: gateway.pins.json\n")
    assert pin(site).returncode == 0
    site.change({"add_note": {"description": POISONED}})  # changed before the start
    seen, early = Run(), Run()
    need = "add a note to the notebook"

    async def both(client: Client[Any], into: Run) -> None:
        for called in (("add_note", NOTE), ("call_tool", wrapped("add_note", NOTE))):
            into.results.append(await client.call_tool(*called, raise_on_error=False))
        assert "add_note" not in json.dumps(await find(client, need))  # hidden from discovery

    async def main() -> None:
        server, engines = await open_gateway(load_config(site.config))
        try:
            async with Client(server) as client:
                await both(client, early)
                site.change(None)  # back to the reviewed definition: served again, and found
                assert names(await client.list_tools()) == ["find_tools", "call_tool"]
                assert "add_note" in [t["name"] for t in (await find(client, need))["tools"]]
                site.change({"add_note": {"description": POISONED}})
                await client.list_tools()  # the next listing catches it
                await both(client, seen)
            seen.counts = _counts(gate_of(server).metrics.render().decode("utf-8"))
        finally:
            engines.close()

    anyio.run(main)
    _alike(early.results, "TOOL_NOT_OFFERED")
    assert "add_note" not in rejection(early.results[0])["message"]
    _alike(seen.results, "TOOL_DEFINITION_CHANGED")
    assert "IMPORTANT" not in json.dumps(_seen(seen.results[0]))  # never what it now says
    decisions = [d for d in _decisions(site) if d["call"]["name"] != "find_tools"]
    assert [d["code"] for d in decisions] == [
        *["TOOL_NOT_OFFERED"] * 2,
        *["TOOL_DEFINITION_CHANGED"] * 2,
    ]
    _halves(decisions[:2], "add_note")
    _halves(decisions[2:], "add_note")
    counted = {c: n for c, n in seen.counts.items() if c != "FIND_TOOLS" and n}
    assert counted == {"TOOL_NOT_OFFERED": 2, "TOOL_DEFINITION_CHANGED": 2}
    assert site.upstream_calls() == []


def test_a_replayed_request_state_is_refused_alike(site: Site) -> None:
    """``REQUEST_STATE_REPLAYED``: a 2026-07-28 client's approval round, asked, answered yes
    (the call runs once) and the same yes with the same state sent again, directly and through
    ``call_tool``: the replay refused alike, logged alike, the upstream not called again.
    (A state is bound to the request it answers, so each way brings back its own.)"""
    _find_mode(site)
    yes = {ASK_KEY: mt.ElicitResult(action="accept", content={"value": True})}

    async def scenario(client: Client[Any], seen: Run) -> None:
        await find(client, MOVE)
        for called in (ENTERPRISE, ("call_tool", wrapped(*ENTERPRISE))):
            site.set_plan("free")
            asked = await client.session.call_tool(*called, allow_input_required=True)
            assert isinstance(asked, mt.InputRequiredResult) and asked.request_state
            answer = {"input_responses": yes, "request_state": asked.request_state}
            ran = await client.session.call_tool(*called, **answer, allow_input_required=True)
            assert isinstance(ran, mt.CallToolResult) and not ran.is_error
            again = await client.session.call_tool(*called, **answer, allow_input_required=True)
            assert isinstance(again, mt.CallToolResult)
            seen.results.append(again)

    seen = run(site, scenario, answer="accept", mode="auto")
    _alike(seen.results, "REQUEST_STATE_REPLAYED")
    decisions = [d for d in _decisions(site) if d["call"]["name"] != "find_tools"]
    assert [d["code"] for d in decisions] == [
        "APPROVAL_REQUIRED",
        "OK",
        "REQUEST_STATE_REPLAYED",
    ] * 2
    _halves(decisions, "upgrade")
    counted = {c: n for c, n in seen.counts.items() if c != "FIND_TOOLS" and n}
    assert counted == {"APPROVAL_ASKED": 2, "OK": 2, "REQUEST_STATE_REPLAYED": 2}
    assert site.upstream_calls() == ["upgrade", "upgrade"]  # each ran once


#: a decision log that refuses every decision written to it, as a full disk would
REFUSE_DECISIONS = (
    "CREATE TRIGGER IF NOT EXISTS refuse_decisions BEFORE INSERT ON action_decisions "
    "BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END"
)


def _log_refuses(site: Site, refuses: bool) -> None:
    with closing(sqlite3.connect(site.log)) as db:
        db.execute(REFUSE_DECISIONS if refuses else "DROP TRIGGER IF EXISTS refuse_decisions")


@pytest.mark.parametrize("call", [PLAN, NOT_I_JSON], ids=["checked", "refused-at-the-edge"])
def test_a_gate_that_cannot_log_fails_closed_alike(
    site: Site, call: tuple[str, dict[str, Any]]
) -> None:
    """``GATE_UNAVAILABLE``: the decision log refuses the write (a real SQLite error, raised
    by a trigger the test adds once the tool was found): both ways the call is refused with
    no decision id, nothing logged, nothing sent upstream, the same payload."""
    _find_mode(site)
    name, arguments = call

    async def scenario(client: Client[Any], seen: Run) -> None:
        await find(client, WHICH)
        _log_refuses(site, True)
        for called in ((name, arguments), ("call_tool", wrapped(name, arguments))):
            seen.results.append(await client.call_tool(*called, raise_on_error=False))
        _log_refuses(site, False)
        seen.results.append(await client.call_tool(*PLAN))  # the gate decides again

    seen = run(site, scenario)
    *refused, after = seen.results
    _alike(refused, "GATE_UNAVAILABLE")
    assert rejection(refused[0])["decision_id"] == "" and not after.is_error
    assert "disk I/O error" in rejection(refused[0])["message"]
    decisions = [d for d in _decisions(site) if d["call"]["name"] != "find_tools"]
    assert [(d["call"]["name"], d["code"]) for d in decisions] == [("get_plan", "OK")]
    counted = {c: n for c, n in seen.counts.items() if c != "FIND_TOOLS" and n}
    assert counted == {"GATE_UNAVAILABLE": 2, "OK": 1}
    assert site.upstream_calls() == ["get_plan"]  # only the call decided after


READER = "tok-reader-acc-1"  # a bearer token of acc-1 that grants shop:read only
WRITER = "tok-writer-acc-1"  # one that grants shop:read and shop:write
WIDER = "tok-wider-acc-1"  # the same account and tenant, another grant of scopes
TOKENS = {
    READER: "[shop:read]",
    WRITER: "[shop:read, shop:write]",
    WIDER: "[shop:read, shop:write, shop:admin]",
}


def test_a_call_with_nobody_asking_is_refused_alike(site: Site) -> None:
    """``AUTH_REQUIRED``: an HTTP gateway (each session's account comes from its token)
    reached by a request that carries no identity (in memory here: the transport's 401 never
    ran) refuses a direct call, a ``call_tool`` call, and a ``call_tool`` call that names no
    call alike -- who asks comes before what is asked -- with nothing logged (there is no
    conversation to log it under) and nothing sent upstream."""
    _find_mode(site)
    config = site.config.read_text(encoding="utf-8").replace("account: acc-1\n", "")
    token = f"{{token_sha256: {sha256(READER)}, tenant: acme, account: acc-1}}"
    site.config.write_text(f"tokens:\n  - {token}\n" + config, encoding="utf-8")
    results: list[Any] = []
    counts: dict[str, int] = {}

    async def main() -> None:
        server, engines = await open_gateway(load_config(site.config), http=True)
        try:
            async with Client(server) as client:
                for called in (PLAN, ("call_tool", wrapped(*PLAN)), ("call_tool", {})):
                    results.append(await client.call_tool(*called, raise_on_error=False))
            counts.update(_counts(gate_of(server).metrics.render().decode("utf-8")))
        finally:
            engines.close()

    anyio.run(main)
    _alike(results[:2], "AUTH_REQUIRED")
    _alike(results[1:], "AUTH_REQUIRED")  # the wrapper is not read before who asks is known
    assert {c: n for c, n in counts.items() if n} == {"AUTH_REQUIRED": 3}
    assert _decisions(site) == [] and site.upstream_calls() == []


def test_state_too_old_is_refused_alike(site: Site) -> None:
    """``STATE_STALE``: the account's row in a SQLite state store says it last changed at
    the epoch, older than the ``max_age_s`` a call policy of ``upgrade`` allows (the JSON file
    of the other tests dates no key, so it is never stale): the write fails closed alike both
    ways, logged alike, never run."""
    _find_mode(site)
    with closing(sqlite3.connect(site.root / "state.db")) as db, db:
        db.execute("CREATE TABLE accounts (account_id TEXT, plan TEXT, updated_at INTEGER)")
        db.execute("INSERT INTO accounts VALUES ('acc-1', 'free', 0)")
    dated = (
        "state: sqlite:///state.db\n"
        "tables: {account: {table: accounts, updated_column: updated_at}}\n"
    )
    config = site.config.read_text(encoding="utf-8").replace("state: accounts.json\n", dated)
    site.config.write_text(config, encoding="utf-8")

    async def scenario(client: Client[Any], seen: Run) -> None:
        await find(client, MOVE)
        for called in (TO_PRO, ("call_tool", wrapped(*TO_PRO))):
            seen.results.append(await client.call_tool(*called, raise_on_error=False))

    seen = run(site, scenario)
    _alike(seen.results, "STATE_STALE")
    decisions = [d for d in _decisions(site) if d["call"]["name"] != "find_tools"]
    _halves(decisions, "upgrade")
    assert [d["code"] for d in decisions] == ["STATE_STALE"] * 2
    assert {c: n for c, n in seen.counts.items() if c != "FIND_TOOLS" and n} == {"STATE_STALE": 2}
    assert site.upstream_calls() == []


@pytest.mark.slow  # the upstream runs as a subprocess, over streamable HTTP
@pytest.mark.parametrize(("mode", "other"), [(L, "new_era_only"), (A, "handshake_only")])
def test_a_tool_listed_to_the_other_era_only_is_unknown_alike(
    tmp_path: Path, mode: str, other: str
) -> None:
    """``TOOL_UNKNOWN`` held at the edge: ``test_eras.py``'s upstream lists a tool to one
    protocol era only, so a client of the other era that names it -- directly or through
    ``call_tool`` -- is refused as that upstream would answer it, logged alike, never
    forwarded; a tool its era is listed runs alike."""
    (tmp_path / "accounts.json").write_text('{"acc-1": {"account": {}}}', encoding="utf-8")
    era = Process([sys.executable, str(ERA_SERVER)], child_env(), r"era server: (http://\S+)")
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "account: acc-1\nstate: accounts.json\nlog: gateway.sqlite\ndisclosure: find_tools\n"
        f"upstreams: [{{name: eras, url: {json.dumps(era.match.group(1))}}}]\n",
        encoding="utf-8",
    )
    results: list[Any] = []

    async def main() -> None:
        server, engines = await open_gateway(load_config(config))
        try:
            async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
                await find(client, "run the tool of either era")
                for name in (other, "either_era"):
                    for called in ((name, {}), ("call_tool", wrapped(name, {}))):
                        results.append(await client.call_tool(*called, raise_on_error=False))
        finally:
            engines.close()

    try:
        anyio.run(main)
    finally:
        era.stop()
    _alike(results[:2], "TOOL_UNKNOWN")
    assert other not in rejection(results[0])["message"]
    _alike(results[2:], "OK")
    with open_log(str(tmp_path / "gateway.sqlite"), read_only=True) as log:
        rows = sorted(log.iter_action_decisions(), key=lambda r: r["logged_at"])
    decisions = [json.loads(r["decision_json"]) for r in rows]
    decisions = [d for d in decisions if d["call"]["name"] != "find_tools"]
    _halves(decisions[:2], other)
    _halves(decisions[2:], "either_era")


def _named(answer: Any) -> set[str]:
    """Every tool a ``find_tools`` answer names: found, blocked, listed above, under any need."""
    if isinstance(answer, list):
        return {n for item in answer for n in _named(item)}
    if not isinstance(answer, dict):
        return set()
    own = {answer["name"]} if isinstance(answer.get("name"), str) else set()
    above = set(answer.get("listed_above") or ())
    return own | above | {n for v in answer.values() for n in _named(v)}


@pytest.fixture
def http_site(site: Site) -> Iterator[str]:
    """``maitred mcp`` over streamable HTTP in find_tools mode, in front of the shop: its
    ``upgrade`` needs the scope ``shop:write``, which :data:`READER` does not grant (and a
    person's yes for a plan above pro)."""
    _find_mode(site)
    sidecar = site.root / "shop.maitred.yaml"
    text = sidecar.read_text(encoding="utf-8")
    scoped = text.replace("    mutates: true\n", "    mutates: true\n    scopes: [shop:write]\n")
    sidecar.write_text(scoped, encoding="utf-8")
    config = site.config.read_text(encoding="utf-8").replace("account: acc-1\n", "")
    tokens = "".join(
        f"  - {{token_sha256: {sha256(t)}, tenant: acme, account: acc-1, scopes: {scopes}}}\n"
        for t, scopes in TOKENS.items()
    )
    server = "server: {host: 127.0.0.1, port: 0}\n"
    site.config.write_text(f"{server}tokens:\n{tokens}{config}", encoding="utf-8")
    args = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(site.config)]
    gateway = Process(args, child_env(), r"serving (http://\S+)")
    try:
        yield gateway.match.group(1)
    finally:
        gateway.stop()


@pytest.mark.slow  # the gateway (HTTP) and its upstream run as subprocesses
@pytest.mark.parametrize("mode", [L, A])
def test_a_tool_out_of_the_tokens_scopes_is_refused_alike_over_http(
    site: Site, http_site: str, mode: str
) -> None:
    """``INSUFFICIENT_SCOPE``: a tool whose contract needs a scope the bearer token does not
    grant is named in no ``find_tools`` answer, and a call to it -- directly or through
    ``call_tool`` -- is the same tool-level refusal, logged, in an HTTP 200 with no
    ``WWW-Authenticate`` challenge. The transport's 403 (``insufficient_scope``) is for a token
    without ``auth.required_scopes``, which is refused before any call is read (docs: the
    gateway's auth page), so neither way gets one: the session is served, one tool is not."""
    wire: list[tuple[str, int, str | None]] = []

    def recording(**kwargs: Any) -> httpx2.AsyncClient:
        async def note(response: httpx2.Response) -> None:
            sent = json.loads(response.request.content or b"{}")
            if sent.get("method") == "tools/call":
                challenge = response.headers.get("www-authenticate")
                wire.append((sent["params"]["name"], response.status_code, challenge))

        return httpx2.AsyncClient(**kwargs, event_hooks={"response": [note]})

    results: list[Any] = []

    async def main() -> None:
        transport = StreamableHttpTransport(http_site, auth=READER, httpx_client_factory=recording)
        async with Client(transport, mode=mode) as client:  # type: ignore[arg-type]
            assert names(await client.list_tools()) == ["find_tools", "call_tool"]
            for need in (MOVE, "upgrade the plan of my account"):
                assert "upgrade" not in _named(await find(client, need))
            several = await client.call_tool("find_tools", {"needs": [WHICH, MOVE]})
            assert "upgrade" not in _named(several.structured_content)
            for called in (OTHER, ("call_tool", wrapped(*OTHER))):
                results.append(await client.call_tool(*called, raise_on_error=False))

    anyio.run(main)
    _alike(results, "INSUFFICIENT_SCOPE")
    refused = rejection(results[0])
    assert "shop:write" in refused["message"] and "upgrade" not in refused["message"]
    assert wire == [
        *[("find_tools", 200, None)] * 3,
        ("upgrade", 200, None),
        ("call_tool", 200, None),
    ]
    decisions = [d for d in _decisions(site) if d["call"]["name"] != "find_tools"]
    assert [d["decision_id"] for d in decisions] == [rejection(r)["decision_id"] for r in results]
    _halves(decisions, "upgrade")
    assert decisions[0]["outcomes"][0]["predicate"] == "scopes"  # decided before any policy
    metrics = httpx2.get(http_site.rsplit("/", 1)[0] + "/metrics", timeout=30).text
    counted = {c: n for c, n in _counts(metrics).items() if c != "FIND_TOOLS" and n}
    assert counted == {"INSUFFICIENT_SCOPE": 2}
    assert site.upstream_calls() == []


@pytest.mark.slow  # the gateway (HTTP) and its upstream run as subprocesses
def test_a_request_state_brought_back_by_another_principal_is_refused_alike(
    site: Site, http_site: str
) -> None:
    """``REQUEST_STATE_NOT_YOURS``: an approval round asked of one token (2026-07-28, over
    HTTP) and answered yes with its state by another token of the same account with another
    grant of scopes, directly and through ``call_tool``: refused alike, logged alike, never
    run."""
    yes = {ASK_KEY: mt.ElicitResult(action="accept", content={"value": True})}
    results: list[Any] = []

    async def unused(*_: Any) -> Any:
        raise AssertionError("the rounds are answered by hand")

    def client(token: str) -> Client[Any]:
        transport = StreamableHttpTransport(http_site, auth=token)
        return Client(transport, elicitation_handler=unused, mode=A)  # type: ignore[arg-type]

    async def main() -> None:
        async with client(WRITER) as writer, client(WIDER) as other:
            await find(writer, MOVE)
            for called in (ENTERPRISE, ("call_tool", wrapped(*ENTERPRISE))):
                asked = await writer.session.call_tool(*called, allow_input_required=True)
                assert isinstance(asked, mt.InputRequiredResult) and asked.request_state
                brought = await other.session.call_tool(
                    *called,
                    input_responses=yes,
                    request_state=asked.request_state,
                    allow_input_required=True,
                )
                results.append(brought)

    anyio.run(main)
    _alike(results, "REQUEST_STATE_NOT_YOURS")
    decisions = [d for d in _decisions(site) if d["call"]["name"] != "find_tools"]
    assert [d["code"] for d in decisions] == ["APPROVAL_REQUIRED", "REQUEST_STATE_NOT_YOURS"] * 2
    _halves(decisions, "upgrade")
    metrics = httpx2.get(http_site.rsplit("/", 1)[0] + "/metrics", timeout=30).text
    counted = {c: n for c, n in _counts(metrics).items() if c != "FIND_TOOLS" and n}
    assert counted == {"APPROVAL_ASKED": 2, "REQUEST_STATE_NOT_YOURS": 2}
    assert site.upstream_calls() == []
