"""The tasks extension through the gateway: decided before the task exists, owned by its creator.

The upstream is a real MCP server over streamable HTTP (``tasks_server.py``) that offers the
extension and makes a task of ``render_report`` when the request declares it; it writes a line
per request it serves, which is how these tests show that a refused call made no task, and
that a refused task request never reached it. The clients are real ``fastmcp.Client`` objects
on 2026-07-28 connections that declare the extension (a ``ClientExtension`` claiming
``resultType: "task"``, the SDK's own mechanism): in memory against the gateway object, and
over HTTP against ``maitred mcp`` with bearer tokens -- two accounts' (two principals,
restarted in between), and, on one account, a static token with the tool's scope, one without
it, and two JWTs of two subjects.

A task belongs to the principal that created it *and could make its call now*, decided again
on every access: the tests change the state (the tool's exit predicate, a call policy) under a
task and back, and ask for it with each credential.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import anyio
import mcp_types as mt
import pytest
from fastmcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict, Field
from tests.mcp.conftest import Process, child_env, sha256
from tests.mcp.jwt_issuer import AUDIENCE, ISSUER, Issuer

from maitred.gateway import load_config
from maitred.gateway.build import open_gateway
from maitred.log.base import open_log
from maitred.log.verify import verify

SERVER = Path(__file__).with_name("tasks_server.py")
SIDECAR = """\
tools:
  render_report:
    exit_predicates:
      - name: free_plan
        expr: account.plan == "free"
        reads: [account.plan]
        message: Reports are for paid plans.
  purge_reports:
    mutates: true
"""
ALICE, BOB = "tok-tasks-alice-3f1a", "tok-tasks-bob-77c2"


class Handle(mt.Result):
    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str = Field(alias="taskId")


class Params(mt.RequestParams):
    model_config = ConfigDict(extra="allow")
    task_id: str = Field(alias="taskId")


class TaskRequest(mt.Request[Params, str]):
    name_param: ClassVar[str | None] = "taskId"
    method: str
    params: Params


class State(mt.Result):
    model_config = ConfigDict(extra="allow")
    result_type: str | None = "complete"


async def _keep(result: Handle, context: ClaimContext) -> mt.CallToolResult:
    raise AssertionError("the test polls its tasks itself")


class Tasks(ClientExtension):
    identifier = "io.modelcontextprotocol/tasks"

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return (ResultClaim(result_type="task", model=Handle, resolve=_keep),)


async def call(client: Client[Any], name: str, args: dict[str, Any]) -> Any:
    return await client.session.call_tool(name, args, allow_claimed=True)


async def task(client: Client[Any], method: str, task_id: str) -> dict[str, Any]:
    request = TaskRequest(method=method, params=Params(taskId=task_id))
    answer = await client.session.send_request(request, State)
    return answer.model_dump(by_alias=True, exclude_none=True)


async def refused(request: Any) -> dict[str, Any]:
    with pytest.raises(MCPError) as raised:
        await request
    assert raised.value.error.code == mt.INVALID_PARAMS
    data = raised.value.error.data
    assert isinstance(data, dict)
    return {**data, "text": raised.value.error.message}


@dataclass(frozen=True)
class Site:
    root: Path
    url: str

    def served(self) -> list[str]:
        path = self.root / "calls.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        return [json.loads(line)["name"] for line in lines]

    def set_plan(self, plan: str, *, frozen: bool = False) -> None:
        body = {
            "acc-1": {"account": {"plan": plan, "frozen": frozen}},
            "acc-2": {"account": {"plan": "pro", "frozen": False}},
        }
        fresh = self.root / "accounts.new"
        fresh.write_text(json.dumps(body), encoding="utf-8")
        fresh.replace(self.root / "accounts.json")

    def config(self, head: str, sidecar: str = SIDECAR) -> Path:
        (self.root / "reports.maitred.yaml").write_text(sidecar, encoding="utf-8")
        path = self.root / "gateway.yaml"
        path.write_text(
            head + "state: accounts.json\nlog: gateway.sqlite\nupstreams:\n"
            f"  - {{name: reports, url: '{self.url}', contracts: reports.maitred.yaml}}\n",
            encoding="utf-8",
        )
        return path


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    env = {**child_env(), "CALLS_FILE": str(tmp_path / "calls.jsonl")}
    upstream = Process([sys.executable, str(SERVER), "0"], env, r"PORT=(\d+)")
    found = Site(tmp_path, f"http://127.0.0.1:{upstream.match.group(1)}/mcp")
    found.set_plan("free")
    try:
        yield found
    finally:
        upstream.stop()


def test_a_call_the_gate_refuses_makes_no_task_and_an_allowed_one_hands_over_its_task(
    site: Site,
) -> None:
    got: dict[str, Any] = {}

    async def main() -> None:
        server, engines = await open_gateway(load_config(site.config("account: acc-1\n")))
        try:
            async with Client(server, extensions=[Tasks()]) as client:  # type: ignore[arg-type]
                got["refused"] = await call(client, "render_report", {"title": "Q4"})
                site.set_plan("pro")  # the next call reads the state afresh
                got["handle"] = await call(client, "render_report", {"title": "Q4"})
                task_id = got["handle"].task_id
                got["first"] = await task(client, "tasks/get", task_id)
                got["second"] = await task(client, "tasks/get", task_id)
                got["unknown"] = await refused(task(client, "tasks/get", "t1"))
            async with Client(server) as plain:  # declares no tasks: the result itself
                got["plain"] = await call(plain, "render_report", {"title": "Q1"})
        finally:
            engines.close()

    anyio.run(main)
    assert got["refused"].is_error  # decided before any task could exist
    assert "TOOL_NOT_OFFERED" in got["refused"].content[0].text
    handle = got["handle"]
    assert isinstance(handle, Handle) and handle.task_id.startswith("task-")
    call_decision = (handle.meta or {})["maitred/decision_id"]
    assert (got["first"]["status"], got["second"]["status"]) == ("working", "completed")
    assert got["first"]["taskId"] == got["second"]["taskId"] == handle.task_id  # never t1
    result = got["second"]["result"]["content"][0]["text"]
    assert result == "report 'Q4': 42 pages"
    assert got["unknown"]["code"] == "TASK_NOT_FOUND"  # the upstream's own id means nothing
    assert isinstance(got["plain"], mt.CallToolResult)
    assert site.served() == ["task created", "tasks/get", "tasks/get", "render_report"]
    with open_log(str(site.root / "gateway.sqlite")) as log:
        rows = {
            r["decision_id"]: json.loads(r["decision_json"]) for r in log.iter_action_decisions()
        }
        assert verify(log).ok
    made = rows[handle.task_id]  # the record's decision id is the task's id
    assert made["call"]["name"] == "tasks/create"
    assert made["call"]["arguments"]["upstreamTaskId"] == "t1"
    assert made["call"]["arguments"]["decision"] == call_decision
    assert rows[call_decision]["verdict"] == "allow"
    gets = [r for r in rows.values() if r["call"]["name"] == "tasks/get"]
    assert sorted(r["code"] for r in gets) == ["OK", "OK", "TASK_NOT_FOUND"]


@pytest.mark.slow
def test_another_principals_task_is_not_found_before_and_after_a_restart(site: Site) -> None:
    tokens = (
        f"tokens: [{{token_sha256: {sha256(ALICE)}, tenant: acme, account: acc-1}},"
        f" {{token_sha256: {sha256(BOB)}, tenant: acme, account: acc-2}}]\n"
    )
    config = site.config("server: {host: 127.0.0.1, port: 0}\n" + tokens)
    site.set_plan("pro")
    got: dict[str, Any] = {}

    def gateway() -> tuple[Process, str]:
        process = Process(
            [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)],
            child_env(),
            r"serving (http://\S+)",
        )
        return process, process.match.group(1)

    async def first(url: str) -> None:
        async with Client(url, auth=ALICE, extensions=[Tasks()]) as alice:
            got["handle"] = await call(alice, "render_report", {"title": "Q4"})
        task_id = got["handle"].task_id
        async with Client(url, auth=BOB, extensions=[Tasks()]) as bob:
            got["bob_get"] = await refused(task(bob, "tasks/get", task_id))
            got["bob_cancel"] = await refused(task(bob, "tasks/cancel", task_id))
            got["bob_unknown"] = await refused(task(bob, "tasks/get", "task-" + "0" * 32))

    async def after_restart(url: str) -> None:
        task_id = got["handle"].task_id
        async with Client(url, auth=BOB, extensions=[Tasks()]) as bob:
            got["bob_again"] = await refused(task(bob, "tasks/get", task_id))
        async with Client(url, auth=ALICE, extensions=[Tasks()]) as alice:
            got["alice"] = await task(alice, "tasks/get", task_id)
            got["cancel"] = await task(alice, "tasks/cancel", task_id)

    process, url = gateway()
    try:
        anyio.run(first, url)
    finally:
        process.stop()
    process, url = gateway()  # a fresh process: only the log remembers whose task it is
    try:
        anyio.run(after_restart, url)
    finally:
        process.stop()
    for key in ("bob_get", "bob_cancel", "bob_again"):
        assert got[key]["code"] == "TASK_NOT_FOUND"
        assert got[key]["text"] == got["bob_unknown"]["text"]  # the same as no task at all
        assert got["handle"].task_id not in got[key]["text"]
    assert got["alice"]["status"] == "working" and got["alice"]["taskId"] == got["handle"].task_id
    assert site.served() == ["task created", "tasks/get", "tasks/cancel"]  # Bob's never arrived


SCOPED_SIDECAR = """\
tools:
  render_report:
    scopes: [reports:read]
    exit_predicates:
      - name: free_plan
        expr: account.plan == "free"
        reads: [account.plan]
        message: Reports are for paid plans.
    policies:
      - name: frozen_account
        expr: state.account.frozen == true
        reads: [state.account.frozen]
        code: ACCOUNT_FROZEN
        message: The account is frozen.
  purge_reports:
    mutates: true
"""


def _rows(site: Site) -> dict[str, dict[str, Any]]:
    with open_log(str(site.root / "gateway.sqlite")) as log:
        return {
            r["decision_id"]: json.loads(r["decision_json"]) for r in log.iter_action_decisions()
        }


def test_a_task_is_not_found_while_its_creator_could_not_make_its_call_and_found_again_after(
    site: Site,
) -> None:
    """The creator's own access is decided again on every request, on fresh state: while the
    tool's exit predicate holds, or a call policy refuses the call, the task is
    ``TASK_NOT_FOUND`` -- get and cancel alike, in the words of a made-up id, logged with the
    predicate that decided it, never forwarded -- and found again once the state allows it."""
    got: dict[str, Any] = {}
    site.set_plan("pro")

    async def main() -> None:
        config = site.config("account: acc-1\n", SCOPED_SIDECAR)
        server, engines = await open_gateway(load_config(config))
        try:
            async with Client(server, extensions=[Tasks()]) as client:  # type: ignore[arg-type]
                await client.list_tools()
                handle = await call(client, "render_report", {"title": "Q4"})
                got["handle"] = handle
                task_id = handle.task_id
                got["unknown"] = await refused(task(client, "tasks/get", "task-" + "0" * 32))
                site.set_plan("free")  # the tool's exit predicate holds now
                got["free_get"] = await refused(task(client, "tasks/get", task_id))
                got["free_cancel"] = await refused(task(client, "tasks/cancel", task_id))
                site.set_plan("pro", frozen=True)  # a call policy refuses the call now
                got["frozen_get"] = await refused(task(client, "tasks/get", task_id))
                site.set_plan("pro")
                got["again"] = await task(client, "tasks/get", task_id)
        finally:
            engines.close()

    anyio.run(main)
    task_id = got["handle"].task_id
    for key in ("free_get", "free_cancel", "frozen_get"):
        assert got[key]["code"] == "TASK_NOT_FOUND"
        assert got[key]["text"] == got["unknown"]["text"]  # as for an id that never existed
    assert got["again"]["taskId"] == task_id and got["again"]["status"] == "working"
    assert site.served() == ["task created", "tasks/get"]  # the refused ones never arrived
    rows = _rows(site)
    for key, predicate in (("free_get", "free_plan"), ("frozen_get", "frozen_account")):
        row = rows[got[key]["decision_id"]]
        assert (row["verdict"], row["call"]["arguments"]) == ("reject", {"taskId": task_id})
        assert "its creator may not make its call render_report now" in row["message"]
        assert predicate in [o["predicate"] for o in row["outcomes"] if o["holds"]]
    made = rows[task_id]["call"]["arguments"]
    assert made["arguments"] == {"title": "Q4"} and made["subject"] == ""


SCOPED, UNSCOPED = "tok-tasks-scoped-51e0", "tok-tasks-unscoped-a4d9"


@pytest.mark.slow
def test_another_credential_of_the_same_account_never_reaches_a_task_it_could_not_make(
    site: Site,
) -> None:
    """One account (acme's acc-1), four credentials: a static token granted the tool's scope
    creates a task; a static token of the same account without that scope (refused
    ``INSUFFICIENT_SCOPE`` for the tool) and a JWT of another subject with the scope neither
    read nor cancel it -- ``TASK_NOT_FOUND``, worded as a made-up id, logged, never forwarded
    -- while the creator still can, and a JWT's own task is its subject's alone, and hers only
    while her grant reaches the tool (the same subject with the scope taken away: refused)."""
    issuer = Issuer()
    (site.root / "jwks.json").write_text(json.dumps(issuer.jwks()), encoding="utf-8")
    tokens = (
        "tokens:\n"
        f"  - {{token_sha256: {sha256(SCOPED)}, tenant: acme, account: acc-1, "
        "scopes: [reports:read]}\n"
        f"  - {{token_sha256: {sha256(UNSCOPED)}, tenant: acme, account: acc-1, scopes: []}}\n"
        f"auth: {{issuer: {ISSUER}, audience: {AUDIENCE}, jwks_file: jwks.json, "
        "tenant_claim: org_id, account_claim: acct}\n"
    )
    config = site.config("server: {host: 127.0.0.1, port: 0}\n" + tokens, SCOPED_SIDECAR)
    site.set_plan("pro")
    ann, dan = (issuer.mint(sub=who, acct="acc-1", scope="reports:read") for who in ("ann", "dan"))
    ann_bare = issuer.mint(sub="ann", acct="acc-1", scope="")  # ann, her grant narrowed since
    got: dict[str, Any] = {}

    async def main(url: str) -> None:
        async with Client(url, auth=SCOPED, extensions=[Tasks()]) as scoped:
            await scoped.list_tools()
            task_id = (await call(scoped, "render_report", {"title": "Q4"})).task_id
            got["task"] = task_id
        async with Client(url, auth=UNSCOPED, extensions=[Tasks()]) as unscoped:
            await unscoped.list_tools()
            got["call"] = await call(unscoped, "render_report", {"title": "Q4"})
            got["unknown"] = await refused(task(unscoped, "tasks/get", "task-" + "0" * 32))
            got["unscoped_get"] = await refused(task(unscoped, "tasks/get", task_id))
            got["unscoped_cancel"] = await refused(task(unscoped, "tasks/cancel", task_id))
        async with Client(url, auth=dan, extensions=[Tasks()]) as other:
            await other.list_tools()
            got["dan_get"] = await refused(task(other, "tasks/get", task_id))
        async with Client(url, auth=ann, extensions=[Tasks()]) as jwt_client:
            await jwt_client.list_tools()
            got["ann_task"] = (await call(jwt_client, "render_report", {"title": "Q1"})).task_id
        async with Client(url, auth=dan, extensions=[Tasks()]) as other:
            got["dan_ann"] = await refused(task(other, "tasks/get", got["ann_task"]))
        async with Client(url, auth=ann_bare, extensions=[Tasks()]) as bare:
            got["ann_bare"] = await refused(task(bare, "tasks/get", got["ann_task"]))
        async with Client(url, auth=ann, extensions=[Tasks()]) as jwt_client:
            got["ann_get"] = await task(jwt_client, "tasks/get", got["ann_task"])
        async with Client(url, auth=SCOPED, extensions=[Tasks()]) as scoped:
            got["scoped_get"] = await task(scoped, "tasks/get", task_id)
            got["scoped_cancel"] = await task(scoped, "tasks/cancel", task_id)

    gateway = Process(
        [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)],
        child_env(),
        r"serving (http://\S+)",
    )
    try:
        anyio.run(main, gateway.match.group(1))
    finally:
        gateway.stop()
    assert got["call"].is_error and "INSUFFICIENT_SCOPE" in got["call"].content[0].text
    for key in ("unscoped_get", "unscoped_cancel", "dan_get", "dan_ann", "ann_bare"):
        assert got[key]["code"] == "TASK_NOT_FOUND", key
        assert got[key]["text"] == got["unknown"]["text"], key  # the words of a made-up id
    assert got["scoped_get"]["taskId"] == got["task"] and got["scoped_get"]["status"] == "working"
    assert got["ann_get"]["taskId"] == got["ann_task"]
    # what reached the upstream: the two tasks made, and their creators' own requests only
    assert site.served() == [
        "task created",
        "task created",
        "tasks/get",
        "tasks/get",
        "tasks/cancel",
    ]
    rows = _rows(site)
    for key, why in (
        ("unscoped_get", "another principal's task"),  # another token is another principal
        ("dan_get", "another principal's task"),
        ("ann_bare", "INSUFFICIENT_SCOPE"),  # the creator, who could not make the call now
    ):
        row = rows[got[key]["decision_id"]]
        assert (row["verdict"], row["tenant"]) == ("reject", "acme")
        assert why in row["message"], row["message"]
    assert rows[got["ann_task"]]["call"]["arguments"]["subject"] == "ann"
