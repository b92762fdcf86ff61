"""The tasks extension through the gateway: decided before the task exists, owned by its creator.

The upstream is a real MCP server over streamable HTTP (``tasks_server.py``) that offers the
extension and makes a task of ``render_report`` when the request declares it; it writes a line
per request it serves, which is how these tests show that a refused call made no task. The
clients are real ``fastmcp.Client`` objects on 2026-07-28 connections that declare the
extension (a ``ClientExtension`` claiming ``resultType: "task"``, the SDK's own mechanism):
in memory against the gateway object, and over HTTP against ``maitred mcp`` with two bearer
tokens (two principals), restarted in between.
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

    def set_plan(self, plan: str) -> None:
        body = {
            "acc-1": {"account": {"plan": plan}},
            "acc-2": {"account": {"plan": "pro"}},
        }
        (self.root / "accounts.json").write_text(json.dumps(body), encoding="utf-8")

    def config(self, head: str) -> Path:
        (self.root / "reports.maitred.yaml").write_text(SIDECAR, encoding="utf-8")
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
