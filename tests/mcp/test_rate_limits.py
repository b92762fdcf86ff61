"""Rate limits through the gateway: a real ``fastmcp.Client``, the recording upstream as a real
stdio process, and real Redis servers for the shared budget.

In memory (one session for the launch account) for the per-token and per-tool limits and the
store outage; over HTTP (``maitred mcp`` subprocesses, bearer tokens) for the tenant budget and
for two gateways sharing one budget through Redis. Every refusal is checked in the decision
log as well as in what the client got, and the upstream's own record proves that a limited call
never reached it.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fastmcp import Client
from tests.mcp.conftest import UPSTREAM, Process, Site, child_env, sha256

from maitred.errors import ConfigError
from maitred.gateway import load_config, parse_config
from maitred.gateway.build import gate_of, open_gateway
from maitred.gateway.surfaces import DECISION_ID_META
from maitred.log.base import open_log
from maitred.log.verify import verify

Scenario = Callable[[Client[Any]], Awaitable[None]]
PLAN = {"account": "acc-1"}


def _limit(site: Site, block: str) -> None:
    """Give ``site``'s gateway config a ``rate_limits`` block."""
    text = site.config.read_text(encoding="utf-8")
    site.config.write_text(text + f"rate_limits: {block}\n", encoding="utf-8")


def _run(site: Site, scenario: Scenario) -> str:
    """Run ``scenario`` against ``site``'s gateway in memory; its /metrics text after."""

    async def main() -> str:
        server, engines = await open_gateway(load_config(site.config))
        try:
            async with Client(server) as client:
                await scenario(client)
            return gate_of(server).metrics.render().decode("utf-8")
        finally:
            engines.close()

    return anyio.run(main)


def _payload(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    found: dict[str, Any] = json.loads(result.content[0].text)
    return found


def _decisions(log_path: Path) -> list[dict[str, Any]]:
    with open_log(str(log_path), read_only=True) as log:
        rows = sorted(log.iter_action_decisions(), key=lambda r: r["logged_at"])
        assert verify(log).ok
    return [json.loads(r["decision_json"]) for r in rows]


def _count(metrics: str, series: str) -> float:
    """The value of one series of the Prometheus text (0 when absent)."""
    for line in metrics.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def _until_refused(client: Client[Any], tool: str, args: dict[str, Any]) -> Any:
    """Call ``tool`` until the gateway refuses it (a limit of a few calls is reached within
    a handful of calls however slow the machine: each call is counted)."""
    for _ in range(50):
        result = await client.call_tool(tool, args, raise_on_error=False)
        if result.is_error:
            return result
    raise AssertionError(f"{tool} was never refused")


def test_a_token_past_its_rate_is_refused_with_a_retry_after_and_served_once_it_passed(
    site: Site,
) -> None:
    _limit(site, "{per_token: 2/second}")
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any]) -> None:
        refused = await _until_refused(client, "get_plan", PLAN)
        got["refused"], got["meta"] = _payload(refused), refused.meta
        await anyio.sleep(got["refused"]["retry_after_s"])  # the window has passed
        again = await client.call_tool("get_plan", PLAN, raise_on_error=False)
        got["again"] = (again.is_error, again.content[0].text)

    metrics = _run(site, scenario)
    refused = got["refused"]
    assert refused["code"] == "RATE_LIMITED" and refused["executed"] is False
    assert refused["retry_after_s"] == 1  # a one-second window: at most a second to wait
    assert "this token" in refused["message"] and "get_plan" not in refused["message"]
    assert got["meta"][DECISION_ID_META] == refused["decision_id"] != ""
    assert got["again"] == (False, "free")
    # only the calls that were let through reached the upstream
    decisions = _decisions(site.log)
    codes = [d["code"] for d in decisions]
    assert codes.count("RATE_LIMITED") == 1 and codes[-1] == "OK"
    assert len(site.upstream_calls()) == codes.count("OK")
    limited = next(d for d in decisions if d["code"] == "RATE_LIMITED")
    assert limited["decision_id"] == refused["decision_id"]
    assert limited["retry_after_s"] == 1 and "per_token 2/second" in limited["message"]
    assert _count(metrics, 'maitred_gateway_calls_total{code="RATE_LIMITED"}') == 1
    assert _count(metrics, 'maitred_gateway_rate_limited_total{scope="per_token"}') == 1


def test_calls_with_arguments_the_log_cannot_store_are_charged_too(site: Site) -> None:
    """Their refusal is a log write like any other, so they count against the caller's rate:
    a client cannot make the gateway write without limit by sending a NUL."""
    _limit(site, "{per_token: 2/hour}")
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any]) -> None:
        bad = {"account": "acc-\x001"}
        got["bad"] = [
            _payload(await client.call_tool("get_plan", bad, raise_on_error=False))
            for _ in range(3)
        ]
        got["good"] = _payload(await client.call_tool("get_plan", PLAN, raise_on_error=False))

    metrics = _run(site, scenario)
    codes = [p["code"] for p in got["bad"]]
    assert codes == ["ARGS_INVALID", "ARGS_INVALID", "RATE_LIMITED"]
    assert got["good"]["code"] == "RATE_LIMITED"  # the budget the bad calls spent is gone
    assert site.upstream_calls() == []
    logged = [d["code"] for d in _decisions(site.log)]
    assert logged == ["ARGS_INVALID", "ARGS_INVALID", "RATE_LIMITED", "RATE_LIMITED"]
    limited = _decisions(site.log)[2]
    assert limited["call"]["arguments"] == {}  # withheld, like the fault's own record
    assert _count(metrics, 'maitred_gateway_rate_limited_total{scope="per_token"}') == 2


def test_a_tool_rate_refuses_that_tool_only(site: Site) -> None:
    site.set_plan("pro")  # export_report is visible
    _limit(site, "{per_tool: {export_report: 1/minute}}")
    got: dict[str, Any] = {}

    async def scenario(client: Client[Any]) -> None:
        first = await client.call_tool("export_report", {"year": 2025}, raise_on_error=False)
        got["first"] = first.content[0].text
        got["second"] = _payload(
            await client.call_tool("export_report", {"year": 2026}, raise_on_error=False)
        )
        reads = [await client.call_tool("get_plan", PLAN) for _ in range(3)]
        got["reads"] = [r.content[0].text for r in reads]

    metrics = _run(site, scenario)
    assert got["first"] == "report 2025"
    assert got["second"]["code"] == "RATE_LIMITED"
    assert 1 <= got["second"]["retry_after_s"] <= 60  # until the first call leaves the minute
    assert "this tool" in got["second"]["message"]
    assert got["reads"] == ["pro", "pro", "pro"]  # another tool's calls are not limited
    assert site.upstream_calls() == ["export_report", "get_plan", "get_plan", "get_plan"]
    assert _count(metrics, 'maitred_gateway_rate_limited_total{scope="per_tool"}') == 1
    assert _count(metrics, 'maitred_gateway_rate_limited_total{scope="per_token"}') == 0


def test_a_limited_call_reads_no_state_and_says_nothing_of_a_hidden_tool(site: Site) -> None:
    _limit(site, "{per_token: 1/minute}")
    got: dict[str, Any] = {}

    async def one_call(client: Client[Any]) -> None:
        await client.call_tool("get_plan", PLAN)

    async def scenario(client: Client[Any]) -> None:
        await one_call(client)
        hidden = await client.call_tool("export_report", {"year": 2025}, raise_on_error=False)
        unknown = await client.call_tool("drop_tables", {}, raise_on_error=False)
        got["hidden"], got["unknown"] = _payload(hidden), _payload(unknown)

    _run(site, one_call)  # a gateway of its own (an in-memory budget of its own)
    alone = _turns(site.log)
    metrics = _run(site, scenario)
    # the hidden tool gets the limit's words, which name no tool and no predicate
    assert got["hidden"]["code"] == "RATE_LIMITED"
    assert "export_report" not in got["hidden"]["message"]
    assert "free" not in got["hidden"]["message"]
    assert got["unknown"]["code"] == "TOOL_UNKNOWN"  # a name no upstream lists stays unknown
    # each call counted under the code it got: one RATE_LIMITED, one TOOL_UNKNOWN
    assert _count(metrics, 'maitred_gateway_rate_limited_total{scope="per_token"}') == 1
    assert _count(metrics, 'maitred_gateway_calls_total{code="TOOL_UNKNOWN"}') == 1
    assert site.upstream_calls() == ["get_plan", "get_plan"]
    # a call to a tool the session's listing did not show is normally decided alone on fresh
    # state first, and listed afresh (a logged turn) when it would be shown; a limited one is not
    assert _turns(site.log) == 2 * alone


def _turns(log_path: Path) -> int:
    with open_log(str(log_path), read_only=True) as log:
        return len(list(log.iter_turns()))


def test_a_rate_limit_config_that_cannot_work_is_refused_naming_the_field(
    site: Site, tmp_path: Path
) -> None:
    base = {
        "account": "acc-1",
        "state": "accounts.json",
        "upstreams": [{"name": "shop", "command": "true"}],
    }
    cases = {
        "rate_limits.per_token": ({"per_token": "60/minit"}, "'60/minute'"),
        "rate_limits.per_tool.upgrade": ({"per_tool": {"upgrade": "0/second"}}, "at least 1"),
        "rate_limits.strategy": ({"strategy": "leaky-bucket"}, "'moving-window'"),
        "rate_limits.storage": ({"storage": "memcached://x:1"}, "redis://"),
        "rate_limits.storage_timeout_s": ({"storage_timeout_s": 0}, "positive"),
        "rate_limits.per_tenent": ({"per_tenent": "1/second"}, "per_tenant"),
    }
    for field, (block, hint) in cases.items():
        with pytest.raises(ConfigError) as caught:
            parse_config({**base, "rate_limits": block}, "gateway.yaml", base=tmp_path)
        assert f"field '{field}'" in str(caught.value) and hint in str(caught.value), caught
    # a tool no upstream lists is found once the upstreams have listed theirs
    _limit(site, "{per_tool: {export_reports: 1/second}}")
    with pytest.raises(ConfigError) as unknown:
        _run(site, lambda client: anyio.sleep(0))
    assert "field 'rate_limits.per_tool.export_reports' names a tool" in str(unknown.value)


# -- shared budgets and a store that goes down ------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class RedisServer:
    """A private ``redis-server`` on a free loopback port (nothing persisted), stoppable."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed (apt-get install redis-server)")
        self.binary, self.port = binary, _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        import redis

        args = ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.proc = subprocess.Popen(
            [self.binary, *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port)
        for _ in range(200):
            try:
                if client.ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise AssertionError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=30)
            self.proc = None


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    server = RedisServer()
    try:
        yield server
    finally:
        server.stop()


def test_a_store_outage_refuses_writes_limits_reads_locally_and_recovers(
    site: Site, private_redis: RedisServer, capfd: pytest.CaptureFixture[str]
) -> None:
    _limit(site, f"{{per_token: 3/minute, storage: '{private_redis.url}'}}")
    got: dict[str, Any] = {}
    upgrade = {"account": "acc-1", "plan": "pro"}

    async def scenario(client: Client[Any]) -> None:
        got["up"] = (await client.call_tool("get_plan", PLAN)).content[0].text  # shared: 1
        private_redis.stop()
        got["write"] = _payload(await client.call_tool("upgrade", upgrade, raise_on_error=False))
        reads = [await client.call_tool("get_plan", PLAN, raise_on_error=False) for _ in range(4)]
        got["reads"] = [_payload(r)["code"] if r.is_error else "ok" for r in reads]
        private_redis.start()  # an empty store: the budget starts afresh
        done = await client.call_tool("upgrade", upgrade, raise_on_error=False)
        got["after"] = (done.is_error, done.content[0].text)

    metrics = _run(site, scenario)
    assert got["up"] == "free"
    write = got["write"]
    assert write["code"] == "RATE_LIMIT_UNAVAILABLE" and write["executed"] is False
    assert "retry_after_s" not in write and private_redis.url not in write["message"]
    # read-only calls go on, held to the same rate by this process alone
    assert got["reads"] == ["ok", "ok", "ok", "RATE_LIMITED"]
    assert got["after"] == (False, "acc-1 is on pro")
    assert site.upstream_calls() == ["get_plan", "get_plan", "get_plan", "get_plan", "upgrade"]
    unavailable = [d for d in _decisions(site.log) if d["code"] == "RATE_LIMIT_UNAVAILABLE"]
    assert len(unavailable) == 1 and "fails closed" in unavailable[0]["message"]
    assert _count(metrics, "maitred_gateway_rate_limit_store_errors_total") == 5
    assert _count(metrics, 'maitred_gateway_calls_total{code="RATE_LIMIT_UNAVAILABLE"}') == 1
    err = capfd.readouterr().err  # the outage and the recovery, said once each
    assert err.count("cannot be asked") == 1 and err.count("answers again") == 1


# -- over HTTP: tokens, tenants, and two gateways on one Redis --------------------------------


def _serve(site: Site, tokens: dict[str, str], limits: str, name: str = "gateway") -> Process:
    """``maitred mcp`` over HTTP in front of ``site``'s upstream, with ``tokens`` (token ->
    tenant, all for acc-1) and ``limits`` as its ``rate_limits`` block."""
    config = site.root / f"{name}.yaml"
    env = {"CALLS_FILE": str(site.calls), "ACCOUNTS": str(site.accounts)}
    listed = "".join(
        f"  - {{token_sha256: {sha256(t)}, tenant: {tenant}, account: acc-1}}\n"
        for t, tenant in tokens.items()
    )
    config.write_text(
        "state: accounts.json\n"
        f"log: {name}.sqlite\n"
        "server: {host: 127.0.0.1, port: 0}\n"
        f"tokens:\n{listed}"
        f"rate_limits: {limits}\n"
        "upstreams:\n"
        "  - name: shop\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(UPSTREAM))}]\n"
        f"    env: {json.dumps(env)}\n"
        "    contracts: shop.maitred.yaml\n",
        encoding="utf-8",
    )
    args = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
    return Process(args, child_env(), r"serving (http://\S+)")


async def _call(url: str, token: str) -> dict[str, Any]:
    """One ``get_plan`` through the gateway at ``url`` with ``token``: ``{"code": ...}``."""
    async with Client(url, auth=token) as client:
        result = await client.call_tool("get_plan", PLAN, raise_on_error=False)
    return _payload(result) if result.is_error else {"code": "OK"}


@pytest.mark.slow
def test_tokens_and_tenants_have_budgets_of_their_own(site: Site) -> None:
    a, b, c = "tok-a-3e1f", "tok-b-90c2", "tok-c-77d1"  # a and b: tenant shop; c: tenant other
    limits = "{per_token: 2/minute, per_tenant: 3/minute}"
    gateway = _serve(site, {a: "shop", b: "shop", c: "other"}, limits)
    try:
        url = gateway.match.group(1)

        async def main() -> list[str]:
            codes = []
            for token in (a, a, a, b, b, c):
                codes.append((await _call(url, token))["code"])
            return codes

        codes = anyio.run(main)
        metrics = httpx2.get(url.rsplit("/", 1)[0] + "/metrics").text
    finally:
        gateway.stop()
    # a's third call exceeds a's own rate (and is not charged to the tenant); b's first is the
    # tenant's third; b's second exceeds the tenant's; c is another tenant
    assert codes == ["OK", "OK", "RATE_LIMITED", "OK", "RATE_LIMITED", "OK"]
    limited = [d for d in _decisions(site.root / "gateway.sqlite") if d["code"] == "RATE_LIMITED"]
    assert ["per_token" in d["message"] for d in limited] == [True, False]
    assert ["per_tenant" in d["message"] for d in limited] == [False, True]
    assert _count(metrics, 'maitred_gateway_rate_limited_total{scope="per_token"}') == 1
    assert _count(metrics, 'maitred_gateway_rate_limited_total{scope="per_tenant"}') == 1
    assert _count(metrics, 'maitred_gateway_calls_total{code="RATE_LIMITED"}') == 2
    assert _count(metrics, 'maitred_gateway_calls_total{code="OK"}') == 4
    assert len(site.upstream_calls()) == 4


@pytest.mark.slow
def test_two_gateways_on_one_redis_share_one_budget(site: Site) -> None:
    import redis

    try:
        redis.Redis(socket_connect_timeout=2).ping()
    except redis.ConnectionError:
        pytest.skip("no Redis server answers at 127.0.0.1:6379")
    token = f"tok-{uuid.uuid4().hex}"  # a budget no earlier run has touched
    limits = "{per_token: 3/minute, storage: 'redis://127.0.0.1:6379/0'}"
    first = _serve(site, {token: "shop"}, limits, "first")
    try:
        second = _serve(site, {token: "shop"}, limits, "second")
    except BaseException:
        first.stop()
        raise
    try:
        urls = [first.match.group(1), second.match.group(1)]

        async def main() -> list[tuple[int, str]]:
            out = []
            for i in (0, 1, 0, 1, 0):
                out.append((i, (await _call(urls[i], token))["code"]))
            return out

        codes = anyio.run(main)
    finally:
        first.stop()
        second.stop()
    # the second gateway refuses its own second call: the budget is the two gateways' together
    assert codes == [(0, "OK"), (1, "OK"), (0, "OK"), (1, "RATE_LIMITED"), (0, "RATE_LIMITED")]
    assert len(site.upstream_calls()) == 3
