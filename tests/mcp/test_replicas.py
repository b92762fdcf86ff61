"""Stateless replicas, proven (issue 26, item 4).

Two `maitred mcp` processes over HTTP with one config: one PostgreSQL decision log (a schema
of the test server), rate limits shared through a private Redis, the notes server as their
upstream, and a round-robin forwarder in front (:mod:`tests.mcp.forwarder`; every step below
opens a connection of its own, so consecutive steps land on alternate replicas). A client's
list / ``find_tools`` / call sequence spread over them gets the same decisions as from one
process; what was disclosed on one replica is admitted on the other, what was never disclosed
is refused on both. Then one replica is killed (SIGKILL) under load: every call that was
answered with a decision id is in the log.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from tests.mcp.conftest import NOTES, Process, child_env, sha256
from tests.mcp.forwarder import Forwarder
from tests.mcp.test_http import ACME, GLOBEX, NOTES_SIDECAR
from tests.mcp.test_rate_limits import RedisServer

from maitred.gateway.surfaces import DECISION_ID_META
from maitred.log.base import open_log
from maitred.log.verify import verify

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

EXPORT = "export my notes as a pdf archive"
WRITE = "write down a note"


def _config(root: Path, log: str, redis: str, notes_port: int) -> Path:
    (root / "notes.maitred.yaml").write_text(NOTES_SIDECAR, encoding="utf-8")
    plans = {"acc-free": {"account": {"plan": "free"}}, "acc-pro": {"account": {"plan": "pro"}}}
    (root / "accounts.json").write_text(json.dumps(plans), encoding="utf-8")
    config = root / "gateway.yaml"
    config.write_text(
        "disclosure: find_tools\n"
        "find: {top_k: 1}\n"  # one tool per need: the others stay undisclosed
        "state: accounts.json\n"
        f"log: '{log}'\n"
        "server: {host: 127.0.0.1, port: 0}\n"
        f"rate_limits: {{storage: '{redis}', per_tool: {{add_note: 3/minute}}}}\n"
        "tokens:\n"
        f"  - {{token_sha256: {sha256(ACME)}, tenant: acme, account: acc-pro}}\n"
        f"  - {{token_sha256: {sha256(GLOBEX)}, tenant: globex, account: acc-free}}\n"
        "upstreams:\n"
        f"  - {{name: notes, url: 'http://127.0.0.1:{notes_port}/mcp', "
        "contracts: notes.maitred.yaml}\n",
        encoding="utf-8",
    )
    return config


def _replica(config: Path) -> Process:
    args = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
    return Process(args, child_env(), r"serving http://127\.0\.0\.1:(\d+)")


async def _code(url: str, token: str, name: str, arguments: dict[str, Any]) -> str:
    async with Client(url, auth=token) as client:
        result = await client.call_tool(name, arguments, raise_on_error=False)
    if not result.is_error:
        return "OK"
    return str(json.loads(result.content[0].text)["code"])


async def _sequence(url: str) -> list[Any]:
    """One client's steps, each over a new connection; what each was answered."""
    out: list[Any] = []
    async with Client(url, auth=ACME) as client:
        out.append([t.name for t in await client.list_tools()])
    async with Client(url, auth=ACME) as client:
        found = await client.call_tool("find_tools", {"need": EXPORT})
        out.append(sorted(t["name"] for t in found.structured_content["tools"]))
    for token, name, arguments in (
        (ACME, "export_notes", {"fmt": "pdf"}),  # disclosed on the other replica
        (ACME, "add_note", {"text": "x"}),  # never disclosed: refused on both
        (GLOBEX, "export_notes", {"fmt": "pdf"}),  # acme's disclosure is not globex's
    ):
        out.append(await _code(url, token, name, arguments))
    async with Client(url, auth=ACME) as client:
        found = await client.call_tool("find_tools", {"need": WRITE})
        out.append(sorted(t["name"] for t in found.structured_content["tools"]))
    for _ in range(4):  # 3/minute, counted in Redis across the replicas: the refused call
        # above was charged too (a call is charged before it is decided), so two pass
        out.append(await _code(url, ACME, "add_note", {"text": "x"}))
    async with Client(url, auth=ACME) as client:
        out.append([t.name for t in await client.list_tools()])
    return out


async def _through(forwarder: Forwarder) -> list[Any]:
    await forwarder.start()
    try:
        return await _sequence(f"http://127.0.0.1:{forwarder.port}/mcp")
    finally:
        await forwarder.close()


def _drop(url: str, schemas: list[str]) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for schema in schemas:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _serve(config: Path, replicas: int) -> list[Process]:
    started: list[Process] = []
    try:
        for _ in range(replicas):
            started.append(_replica(config))
    except BaseException:
        for process in started:
            process.stop()
        raise
    return started


@pytest.mark.slow
def test_a_sequence_spread_over_two_replicas_is_decided_as_by_one_process(
    tmp_path: Path, pg_schema: tuple[str, str]
) -> None:
    url, schema = pg_schema
    env = {**child_env(), "CALLS_FILE": str(tmp_path / "calls.jsonl")}
    notes = Process([sys.executable, str(NOTES), "0"], env, r"PORT=(\d+)")
    redis = RedisServer()
    got: dict[str, Any] = {}
    try:
        for label, replicas in (("one", 1), ("two", 2)):
            root = tmp_path / label
            root.mkdir()
            log = f"{url}?schema={schema}_{label}"
            config = _config(root, log, redis.url, int(notes.match.group(1)))
            processes = _serve(config, replicas)
            forwarder = Forwarder([("127.0.0.1", int(p.match.group(1))) for p in processes])

            try:
                got[label] = anyio.run(_through, forwarder)
            finally:
                for process in processes:
                    process.stop()
            got[f"{label}_served"] = dict(forwarder.served)
            redis.stop()  # a fresh budget for the next deployment
            redis.start()
    finally:
        redis.stop()
        notes.stop()
        _drop(url, [f"{schema}_one", f"{schema}_two"])
    one, two = got["one"], got["two"]
    assert one == two
    assert one[0] == one[-1] == ["find_tools", "call_tool"]
    assert one[1] == ["export_notes"]
    assert one[2:5] == ["OK", "TOOL_NOT_OFFERED", "TOOL_NOT_OFFERED"]
    assert one[5] == ["add_note"] and one[6:10] == ["OK", "OK", "RATE_LIMITED", "RATE_LIMITED"]
    assert len(got["two_served"]) == 2 and min(got["two_served"].values()) >= 5


@pytest.mark.slow
def test_killing_a_replica_under_load_loses_no_acknowledged_call(
    tmp_path: Path, pg_schema: tuple[str, str]
) -> None:
    url, schema = pg_schema
    env = {**child_env(), "CALLS_FILE": str(tmp_path / "calls.jsonl")}
    notes = Process([sys.executable, str(NOTES), "0"], env, r"PORT=(\d+)")
    redis = RedisServer()
    log = f"{url}?schema={schema}"
    config = _config(tmp_path, log, redis.url, int(notes.match.group(1)))
    processes = _serve(config, 2)
    forwarder = Forwarder([("127.0.0.1", int(p.match.group(1))) for p in processes])
    acknowledged: list[str] = []
    failed: list[str] = []
    after_kill: list[str] = []

    async def worker(endpoint: str, calls: int, dead: anyio.Event) -> None:
        for _ in range(calls):
            try:
                async with Client(endpoint, auth=ACME, timeout=30) as client:
                    result = await client.call_tool("export_notes", {"fmt": "pdf"})
            except Exception as exc:  # the replica died under this call: not acknowledged
                failed.append(type(exc).__name__)
                continue
            decision = (result.meta or {}).get(DECISION_ID_META)
            assert decision, result
            acknowledged.append(decision)
            if dead.is_set():
                after_kill.append(decision)

    async def main() -> None:
        await forwarder.start()
        endpoint = f"http://127.0.0.1:{forwarder.port}/mcp"
        try:
            async with Client(endpoint, auth=ACME) as client:
                await client.call_tool("find_tools", {"need": EXPORT})
            dead = anyio.Event()
            async with anyio.create_task_group() as tasks:
                for _ in range(6):
                    tasks.start_soon(worker, endpoint, 25, dead)
                while len(acknowledged) < 30:  # under load: then one replica dies
                    await anyio.sleep(0.05)
                processes[0].popen.kill()
                dead.set()
        finally:
            await forwarder.close()

    try:
        anyio.run(main)
    finally:
        for process in processes:
            process.stop()
        redis.stop()
        notes.stop()
    assert after_kill, "the surviving replica answered nothing after the kill"
    with open_log(log) as stored:
        logged = {r["decision_id"]: r for r in stored.iter_action_decisions()}
    missing = [d for d in acknowledged if d not in logged]
    assert missing == [], f"{len(missing)} of {len(acknowledged)} acknowledged calls not logged"
    assert all(logged[d]["code"] == "OK" for d in acknowledged)
    assert len(acknowledged) + len(failed) == 6 * 25
    report = verify(log)  # both replicas' runs, chained; each call names its disclosing turn
    assert report.ok, report.summary()
