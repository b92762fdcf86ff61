"""What the MCP gateway costs: ``maitred mcp`` against a plain FastMCP proxy to the same upstream.

Both sides are what an MCP client launches: a subprocess over stdio that fronts the same
generated upstream (``benchmarks/_mcp_upstream.py --tools N``, itself a subprocess of each):

* **proxy**: ``benchmarks/_mcp_proxy.py``, ``fastmcp.server.create_proxy`` with no middleware;
* **gateway**: ``maitred mcp --config F``, the same proxy with maitred's gates (a logged
  listing turn over every tool's exit predicates; a call checked against schema, predicates
  and policy and flushed to the SQLite decision log before it is forwarded).

One ``fastmcp.Client`` per side measures, in the same run and interleaved operation by
operation (the side that goes first alternates), ``tools/call`` of a visible tool and
``tools/list`` (response cache bypassed), for each catalog size; it reports p50 / p99 and the
gateway's p50 as a multiple of the proxy's (goals: call <= 1.25x, list <= 1.5x). A refused
call (a tool hidden for the account, answered by the gateway without the upstream) is timed
too, for reference. The account is on the free plan, so a fifth of the tools are hidden and
the gateway's list is shorter than the proxy's: per-session filtering is part of its cost.

With ``--transport http`` both sides serve streamable HTTP on loopback instead (each a
subprocess; the proxy without auth, the gateway with a static bearer token), which is how a
team deploys a shared gateway. ``--production`` (with ``--transport http``) turns on what such
a team runs it with, and the proxy stays a plain FastMCP proxy without auth:

* ``auth:``: JWT access tokens only (no static token), checked against a JWKS file; the
  benchmark generates the issuer's RSA key and mints one RS256 token (``iss``, ``aud``,
  ``sub`` = the account, ``org_id`` = the tenant) that its client presents on every request;
* ``tracing: {enabled: true}``: every span exported over OTLP/HTTP (the SDK's batch
  exporter) to a collector on loopback (``benchmarks/_otlp_sink.py``, its own process), which
  counts what it received; the counts are printed at the end, against the calls served;
* ``rate_limits:`` per token, per tenant and per tool (the called tool), rates far above what
  the run sends, so they are charged on every call and never refuse one; memory storage, or
  Redis with ``--redis URL``.

Before anything is timed, each size proves the features are on: a request without a token
and one with a forged token (signed by another key) are answered 401; a second tool with a
per-tool rate of one call an hour is called twice, and the second call is ``RATE_LIMITED`` and
counted in ``/metrics``. ``--production`` needs the ``mcp`` and ``otlp`` extras (joserfc, the
OTLP exporter and its protobuf types).

Bounded: ``--calls`` and ``--lists`` timed operations per side and size after a short warm-up
(about two minutes on a shared 2-core machine); loopback only.

    PYTHONPATH=src .venv/bin/python benchmarks/gateway.py
    PYTHONPATH=src .venv/bin/python benchmarks/gateway.py --sizes 10 --calls 100 --lists 20
    PYTHONPATH=src .venv/bin/python benchmarks/gateway.py --transport http
    PYTHONPATH=src .venv/bin/python benchmarks/gateway.py --transport http --production
    PYTHONPATH=src .venv/bin/python benchmarks/gateway.py --transport http --production \
        --redis redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import re
import secrets
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from joserfc import jwt
from joserfc.jwk import RSAKey

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mcp_upstream import hidden, sidecar, tool_name

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
GOALS = {"call": 1.25, "list": 1.5}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(SRC)}


#: the bearer token the HTTP gateway's client presents (only its hash is in the config)
TOKEN = "bench-token-3f9a1c"


#: ``--production``: the issuer and audience of the JWTs the gateway accepts
ISSUER = "https://id.bench.example"
AUDIENCE = "https://mcp.bench.example/mcp"
#: ``--production``: rates far above what a run sends (a phase sends at most a few thousand
#: calls), so every call is charged to each and none is refused
RATES = {"per_token": "20000/minute", "per_tenant": "50000/minute", "per_tool": "20000/minute"}
#: ``--production``: a tool with a rate of one call an hour, called twice before the timing to
#: show the limits are enforced (its second call is RATE_LIMITED)
PROBE_TOOL = tool_name(1)


def _tenant() -> str:
    return f"bench-{secrets.token_hex(4)}"


@dataclass
class Production:
    """What ``--production`` gives the HTTP gateway: JWT auth, traces to a collector, rate
    limits; and what each size found (:attr:`found`, by size)."""

    storage: str = "memory"  # rate limits' storage: memory, or a Redis URL
    key: RSAKey = field(
        default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "bench-1"})
    )
    #: a tenant of this run's (and size's) own, so counts left in a shared Redis never apply
    tenant: str = field(default_factory=lambda: _tenant())
    collector: str = ""  # the collector's URL, while one runs
    found: dict[int, dict[str, Any]] = field(default_factory=dict)

    def mint(self, key: RSAKey | None = None) -> str:
        """An RS256 access token for acc-1 of :attr:`tenant`, good for three hours (``key``:
        signed by another key under the issuer's kid, a forgery)."""
        now = int(time.time())
        claims = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "acc-1",
            "org_id": self.tenant,
            "iat": now,
            "exp": now + 3 * 3600,
        }
        signer = key or self.key
        return jwt.encode({"alg": "RS256", "kid": "bench-1"}, claims, signer, algorithms=["RS256"])

    def forged(self) -> str:
        return self.mint(RSAKey.generate_key(2048, parameters={"kid": "bench-1"}))

    def served(self, root: Path) -> str:
        """The config's ``auth``, ``tracing`` and ``rate_limits`` (and the JWKS file)."""
        jwks = {"keys": [self.key.as_dict(private=False)]}
        (root / "jwks.json").write_text(json.dumps(jwks), encoding="utf-8")
        called = tool_name(0)
        return (
            "server: {host: 127.0.0.1, port: 0}\n"
            "auth:\n"
            f"  issuer: {ISSUER}\n"
            f"  audience: {AUDIENCE}\n"
            "  jwks_file: jwks.json\n"
            "  tenant_claim: org_id\n"
            f"tracing: {{enabled: true, exporter: otlp, endpoint: {json.dumps(self.collector)}}}\n"
            "rate_limits:\n"
            f"  per_token: {RATES['per_token']}\n"
            f"  per_tenant: {RATES['per_tenant']}\n"
            f"  per_tool: {{{called}: {RATES['per_tool']}, {PROBE_TOOL}: 1/hour}}\n"
            f"  storage: {json.dumps(self.storage)}\n"
        )

    def features(self) -> str:
        """What was on, in words."""
        store = "memory" if self.storage == "memory" else f"Redis at {self.storage}"
        return (
            f"JWT auth (RS256 against a JWKS file; issuer, audience, tenant from `org_id`; no "
            f"static token), traces (OTLP over HTTP, batch exporter, to a collector on "
            f"loopback), rate limits (per token {RATES['per_token']}, per tenant "
            f"{RATES['per_tenant']}, per tool {RATES['per_tool']} on the called tool; "
            f"moving window, {store})"
        )


def write_site(
    root: Path, tools: int, *, http: bool = False, production: Production | None = None
) -> Path:
    """Accounts, contracts and a gateway config for ``tools`` generated tools; the config
    (``http``: served on a free loopback port, for one bearer token; ``production``: for the
    JWTs it mints instead, with traces and rate limits)."""
    (root / "accounts.json").write_text(
        json.dumps({"acc-1": {"account": {"plan": "free", "status": "active"}}}),
        encoding="utf-8",
    )
    (root / "bench.maitred.yaml").write_text(sidecar(tools), encoding="utf-8")
    config = root / "gateway.yaml"
    if production is not None:
        served = production.served(root)
    elif http:
        served = (
            "server: {host: 127.0.0.1, port: 0}\n"
            "tokens:\n"
            f"  - {{token_sha256: {hashlib.sha256(TOKEN.encode()).hexdigest()}, "
            "tenant: bench, account: acc-1}\n"
        )
    else:
        served = "account: acc-1\n"
    config.write_text(
        served + "state: accounts.json\n"
        "log: gateway.sqlite\n"
        "upstreams:\n"
        "  - name: bench\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(HERE / '_mcp_upstream.py'))}, --tools, '{tools}']\n"
        "    contracts: bench.maitred.yaml\n",
        encoding="utf-8",
    )
    return config


def transports(root: Path, tools: int) -> dict[str, StdioTransport]:
    """The two sides, as an MCP client would launch them (stderr to a file in ``root``)."""
    config = write_site(root, tools)
    log = root / "stderr.log"
    upstream = [sys.executable, str(HERE / "_mcp_upstream.py"), "--tools", str(tools)]
    return {
        "proxy": StdioTransport(
            sys.executable,
            [str(HERE / "_mcp_proxy.py"), "--", *upstream],
            env=_env(),
            keep_alive=False,
            log_file=log,
        ),
        "gateway": StdioTransport(
            sys.executable,
            ["-m", "maitred.cli.main", "mcp", "--config", str(config)],
            env=_env(),
            keep_alive=False,
            log_file=log,
        ),
    }


def _served(args: list[str], log: Path) -> tuple[subprocess.Popen[str], str]:
    """Start one HTTP side (``args``) and wait for the address it prints on stderr; what it
    writes on stderr after that goes on to ``log`` (a full pipe would stall it)."""
    with log.open("a", encoding="utf-8") as sink:
        popen = subprocess.Popen(
            args, env=_env(), stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
    assert popen.stderr is not None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        line = popen.stderr.readline()
        if not line:
            raise RuntimeError(f"{args[1]} exited before serving (see {log})")
        found = re.search(r"serving (http://\S+)", line)
        if found:
            threading.Thread(target=_drain, args=(popen.stderr, log), daemon=True).start()
            return popen, found.group(1)
    raise RuntimeError(f"{args[1]} did not serve within 300 s")


def _drain(stream: Any, log: Path) -> None:
    with log.open("a", encoding="utf-8") as sink:
        for line in stream:
            sink.write(line)
            sink.flush()


def _stop(popen: subprocess.Popen[str]) -> int:
    """Terminate ``popen`` (SIGTERM: a server shuts down gracefully) and wait; its status."""
    if popen.poll() is None:
        popen.terminate()
    return popen.wait(timeout=60)


def _metric(text: str, name: str, **labels: str) -> float:
    """The value of one Prometheus series in ``text`` (0 when absent)."""
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    series = f"{name}{{{want}}}" if labels else name
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return 0.0


def _calls_served(text: str) -> int:
    """Every ``tools/call`` the gateway answered, whatever its code (``/metrics``)."""
    return round(
        sum(float(line.split()[-1]) for line in text.splitlines()
            if line.startswith("maitred_gateway_calls_total{"))
    )  # fmt: skip


async def prove_auth(url: str, production: Production) -> dict[str, Any]:
    """A ``tools/list`` without a token and one with a forged token: both must be 401s."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=60) as http:
        bare = await http.post(url, json=body, headers=headers)
        forged = await http.post(
            url, json=body, headers={**headers, "Authorization": f"Bearer {production.forged()}"}
        )
    challenge = forged.headers.get("www-authenticate", "")
    assert bare.status_code == 401, (bare.status_code, bare.text)
    assert forged.status_code == 401 and 'error="invalid_token"' in challenge, challenge
    why = re.search(r'error_description="([^"]*)"', challenge)
    return {
        "no_token": bare.status_code,
        "forged_token": forged.status_code,
        "forged_why": why.group(1) if why else "",
    }


async def prove_limits(client: Client[Any], base: str) -> dict[str, Any]:
    """:data:`PROBE_TOOL` (one call an hour) twice: the second is RATE_LIMITED, and counted."""
    first = await client.call_tool(PROBE_TOOL, {"n": 1}, raise_on_error=False)
    second = await client.call_tool(PROBE_TOOL, {"n": 2}, raise_on_error=False)
    assert not first.is_error, first
    text = getattr(second.content[0], "text", "")
    assert second.is_error and "RATE_LIMITED" in text, second
    async with httpx2.AsyncClient(timeout=60) as http:
        metrics = (await http.get(f"{base}/metrics")).text
    counted = _metric(metrics, "maitred_gateway_rate_limited_total", scope="per_tool")
    assert counted == 1, metrics
    payload = json.loads(text)
    return {"limited_code": payload["code"], "retry_after_s": payload.get("retry_after_s"),
            "rate_limited_per_tool": counted}  # fmt: skip


@asynccontextmanager
async def http_clients(
    root: Path, tools: int, production: Production | None = None
) -> AsyncIterator[dict[str, Client[Any]]]:
    """Both sides served over streamable HTTP on loopback, and a client of each.

    With ``production``, a collector runs first and the gateway gets JWT auth, traces and
    rate limits; what the checks before and after the block found is left in
    ``production.found[tools]``.
    """
    log = root / "stderr.log"
    started: list[subprocess.Popen[str]] = []
    collector: subprocess.Popen[str] | None = None
    try:
        if production is not None:
            production.tenant = _tenant()  # each size its own budgets, in a shared Redis too
            collector, production.collector = _served(
                [sys.executable, str(HERE / "_otlp_sink.py")], log
            )
        config = write_site(root, tools, http=True, production=production)
        upstream = [sys.executable, str(HERE / "_mcp_upstream.py"), "--tools", str(tools)]
        proxy_cmd = [sys.executable, str(HERE / "_mcp_proxy.py"), "--http", "0", "--", *upstream]
        gateway_cmd = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
        proxy, proxy_url = _served(proxy_cmd, log)
        started.append(proxy)
        gateway, gateway_url = _served(gateway_cmd, log)
        started.append(gateway)
        token = production.mint() if production is not None else TOKEN
        base = gateway_url.rsplit("/", 1)[0]
        found: dict[str, Any] = {}
        if production is not None:
            found.update(await prove_auth(gateway_url, production))
        async with (
            Client(proxy_url, timeout=120) as px,
            Client(gateway_url, auth=token, timeout=120) as gw,
        ):
            if production is not None:
                found.update(await prove_limits(gw, base))
            yield {"proxy": px, "gateway": gw}
        if production is not None and collector is not None:
            async with httpx2.AsyncClient(timeout=60) as http:
                metrics = (await http.get(f"{base}/metrics")).text
            found["calls_served"] = _calls_served(metrics)
            found["listings_served"] = round(_metric(metrics, "maitred_gateway_listings_total"))
            found["rate_limited_total"] = round(
                _metric(metrics, "maitred_gateway_calls_total", code="RATE_LIMITED")
            )
            found["gateway_exit"] = _stop(gateway)  # it exports what is still buffered
            sink = production.collector.rsplit("/v1/", 1)[0]
            async with httpx2.AsyncClient(timeout=60) as http:
                found.update((await http.get(f"{sink}/counts")).json())
            production.found[tools] = found
    finally:
        for popen in started:
            _stop(popen)
        if production is not None and collector is not None:
            _stop(collector)
            production.collector = ""


@asynccontextmanager
async def stdio_clients(root: Path, tools: int) -> AsyncIterator[dict[str, Client[Any]]]:
    """Both sides launched over stdio, as an MCP client launches a local server."""
    sides = transports(root, tools)
    async with (
        Client(sides["proxy"], timeout=120) as proxy,
        Client(sides["gateway"], timeout=120, init_timeout=300) as gateway,
    ):
        yield {"proxy": proxy, "gateway": gateway}


Op = Callable[[Client[Any]], Awaitable[Any]]


def front_pids() -> dict[str, int]:
    """The pids of the two front processes (children of this one), by side; {} off Linux."""
    found: dict[str, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(fields[1]) != os.getpid():
            continue
        if any(a.endswith(b"_mcp_proxy.py") for a in cmdline):
            found["proxy"] = int(stat.parent.name)
        elif b"maitred.cli.main" in cmdline:
            found["gateway"] = int(stat.parent.name)
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _timed(client: Client[Any], op: Op) -> float:
    start = time.perf_counter()
    await op(client)
    return time.perf_counter() - start


async def phase(
    clients: dict[str, Client[Any]], op: Op, count: int, warmup: int, max_seconds: float
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """``op`` on every side, interleaved; the timed samples and CPU seconds per op, by side.

    The side that goes first alternates; the phase stops after ``max_seconds`` of timed work.
    """
    for _ in range(warmup):
        for side in clients.values():
            await op(side)
    pids = {k: p for k, p in front_pids().items() if k in clients}
    before = {k: cpu_seconds(p) for k, p in pids.items()}
    samples: dict[str, list[float]] = {k: [] for k in clients}
    start = time.perf_counter()
    for i in range(count):
        for side in sorted(clients, reverse=i % 2 == 1):  # gateway, proxy; then proxy, gateway
            samples[side].append(await _timed(clients[side], op))
        if time.perf_counter() - start > max_seconds:
            break  # bounded: the table says how many were timed
    cpu = {k: (cpu_seconds(p) - before[k]) / len(samples[k]) for k, p in pids.items()}
    return samples, cpu


async def measure(
    tools: int,
    calls: int,
    lists: int,
    warmup: int,
    max_seconds: float,
    transport: str = "stdio",
    production: Production | None = None,
) -> dict[str, Any]:
    """Time both sides over one catalog size: samples (seconds) and CPU per op, by side."""
    visible, refused = tool_name(0), tool_name(next(i for i in range(tools) if hidden(i)))

    async def call(client: Client[Any]) -> Any:
        result = await client.call_tool(visible, {"n": 7})
        assert result.content[0].text == f"{visible}(7) done", result

    async def listing(client: Client[Any]) -> Any:
        return await client.list_tools(cache_mode="bypass")

    async def refuse(client: Client[Any]) -> Any:
        result = await client.call_tool(refused, {"n": 7}, raise_on_error=False)
        assert result.is_error and "TOOL_NOT_OFFERED" in result.content[0].text, result

    samples: dict[str, dict[str, list[float]]] = {"proxy": {}, "gateway": {}}
    cpu: dict[str, dict[str, float]] = {"proxy": {}, "gateway": {}}
    with tempfile.TemporaryDirectory(prefix="maitred-gwbench-") as tmp:
        started = time.perf_counter()
        served = (
            http_clients(Path(tmp), tools, production)
            if transport == "http"
            else stdio_clients(Path(tmp), tools)
        )
        async with served as clients:
            gateway = clients["gateway"]
            print(f"  {tools:,} tools: both sides up in {time.perf_counter() - started:.1f}s",
                  file=sys.stderr, flush=True)  # fmt: skip
            shown = {k: len(await listing(c)) for k, c in clients.items()}
            expected = tools - sum(hidden(i) for i in range(tools))
            assert shown == {"proxy": tools, "gateway": expected}, shown
            for what, op, count, on in [
                ("call", call, calls, clients),
                ("list", listing, lists, clients),
                ("refused", refuse, calls, {"gateway": gateway}),
            ]:
                warm = warmup if what != "list" else min(warmup, 2)  # a 1,000-tool list is ~1 s
                got, used = await phase(on, op, count, warm, max_seconds)
                for side in on:
                    samples[side][what], cpu[side][what] = got[side], used.get(side, math.nan)
    found = production.found.get(tools) if production is not None else None
    return {
        "tools": tools, "transport": transport, "shown": shown, "samples": samples, "cpu": cpu,
        "production": found,
    }  # fmt: skip


def rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The table rows of one catalog size."""
    found = []
    s = result["samples"]
    for what in ("call", "list"):
        px, gw = s["proxy"][what], s["gateway"][what]
        ratio = _pct(gw, 0.5) / _pct(px, 0.5)
        found.append(
            {
                "tools": result["tools"],
                "op": what,
                "n": len(gw),
                "proxy_p50_ms": _pct(px, 0.5) * 1e3,
                "proxy_p99_ms": _pct(px, 0.99) * 1e3,
                "gateway_p50_ms": _pct(gw, 0.5) * 1e3,
                "gateway_p99_ms": _pct(gw, 0.99) * 1e3,
                "ratio_p50": ratio,
                "ratio_p99": _pct(gw, 0.99) / _pct(px, 0.99),
                # each gateway op over the proxy op timed next to it (same load): a steadier view
                "ratio_paired": statistics.median(g / p for g, p in zip(gw, px, strict=True)),
                "goal": GOALS[what],
                "met": ratio <= GOALS[what],
                "proxy_cpu_ms": result["cpu"]["proxy"][what] * 1e3,
                "gateway_cpu_ms": result["cpu"]["gateway"][what] * 1e3,
            }
        )
    refused = s["gateway"]["refused"]
    found.append(
        {
            "tools": result["tools"],
            "op": "refused",
            "n": len(refused),
            "gateway_p50_ms": _pct(refused, 0.5) * 1e3,
            "gateway_p99_ms": _pct(refused, 0.99) * 1e3,
        }
    )
    return found


def table(all_rows: list[dict[str, Any]], shown: dict[int, dict[str, int]]) -> str:
    head = (
        "| tools (listed: proxy / gateway) | operation | n | proxy p50 / p99 ms "
        "| gateway p50 / p99 ms | gateway / proxy: p50 (p99; paired median) | goal "
        "| front process CPU ms per op, proxy / gateway |\n"
        "|---|---|---:|---:|---:|---:|---|---:|"
    )
    lines = [head]
    names = {
        "call": "`tools/call`, allowed",
        "list": "`tools/list`",
        "refused": "`tools/call`, hidden tool refused",
    }
    for r in all_rows:
        sizes = shown[r["tools"]]
        label = f"{r['tools']:,} ({sizes['proxy']:,} / {sizes['gateway']:,})"
        gw = f"{r['gateway_p50_ms']:.2f} / {r['gateway_p99_ms']:.2f}"
        if r["op"] == "refused":
            lines.append(f"| {label} | {names['refused']} | {r['n']} | | {gw} | | | |")
            continue
        px = f"{r['proxy_p50_ms']:.2f} / {r['proxy_p99_ms']:.2f}"
        ratio = f"**{r['ratio_p50']:.2f}x** ({r['ratio_p99']:.2f}x; {r['ratio_paired']:.2f}x)"
        verdict = f"<= {r['goal']}x: {'met' if r['met'] else 'not met'}"
        cpu = f"{r['proxy_cpu_ms']:.2f} / {r['gateway_cpu_ms']:.2f}"
        lines.append(
            f"| {label} | {names[r['op']]} | {r['n']} | {px} | {gw} | {ratio} | {verdict} | {cpu} |"
        )
    return "\n".join(lines)


def production_report(production: Production) -> str:
    """What was on in the gateway, and what each size showed of it."""
    lines = [f"Gateway features on: {production.features()}. The proxy: plain, no auth."]
    for tools, f in sorted(production.found.items()):
        spans = f.get("spans", {})
        calls = spans.get("maitred.call", 0)
        exported = (
            "every call's span arrived"
            if calls == f["calls_served"]
            else f"**{f['calls_served'] - calls} call spans missing**"
        )
        by_name = ", ".join(f"{k} {v:,}" for k, v in sorted(spans.items()))
        lines.append(
            f"- {tools:,} tools: no token -> {f['no_token']}, forged token -> "
            f"{f['forged_token']} ({f['forged_why']}); {PROBE_TOOL} (1/hour) twice -> "
            f"{f['limited_code']} (retry_after_s {f['retry_after_s']}), "
            f"rate_limited_total{{scope=per_tool}} = {f['rate_limited_per_tool']:.0f}; "
            f"calls served {f['calls_served']:,} (RATE_LIMITED {f['rate_limited_total']}), "
            f"listings {f['listings_served']:,}; spans received by the collector "
            f"{sum(spans.values()):,} in {f['exports']} exports ({by_name}): {exported}; "
            f"gateway exit status {f['gateway_exit']}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,1000", help="upstream tool counts, comma-separated")
    parser.add_argument("--calls", type=int, default=300, help="timed tools/call per side")
    parser.add_argument("--lists", type=int, default=60, help="timed tools/list per side")
    parser.add_argument("--warmup", type=int, default=10, help="untimed calls first (lists: 2)")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=60.0,
        help="stop a phase (one size, one operation) after this",
    )
    parser.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="how both sides are served (http: loopback streamable HTTP, gateway with a token)",
    )
    parser.add_argument(
        "--production",
        action="store_true",
        help="with --transport http: the gateway with JWT auth, OTLP traces to a loopback "
        "collector and rate limits (the proxy stays plain)",
    )
    parser.add_argument(
        "--redis",
        metavar="URL",
        help="with --production: the rate limits' counts in this Redis (default: memory)",
    )
    parser.add_argument("--json-out", type=Path, help="also write the rows and samples here")
    args = parser.parse_args()
    if args.production and args.transport != "http":
        parser.error("--production needs --transport http (auth and /metrics are HTTP's)")
    if args.redis and not args.production:
        parser.error("--redis needs --production (it is where the rate limits count)")
    production = Production(storage=args.redis or "memory") if args.production else None
    results = []
    load = os.getloadavg()[0]
    for tools in (int(s) for s in args.sizes.split(",")):
        results.append(
            anyio.run(
                measure,
                tools,
                args.calls,
                args.lists,
                args.warmup,
                args.max_seconds,
                args.transport,
                production,
            )
        )
    all_rows = [row for result in results for row in rows(result)]
    shown = table(all_rows, {r["tools"]: r["shown"] for r in results})
    shown += f"\n\nLoad average (1 min) at the start / end: {load:.1f} / {os.getloadavg()[0]:.1f}"
    shown += f" on {os.cpu_count()} CPUs."
    if production is not None:
        shown += "\n\n" + production_report(production)
    else:
        on = "a static bearer token" if args.transport == "http" else "the launch account"
        shown += f"\n\nGateway features on: {on}; no auth block, traces or rate limits."
    print(shown)
    if args.json_out:
        command = "python benchmarks/gateway.py " + shlex.join(sys.argv[1:])
        date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        found = {"command": command.strip(), "date": date, "table": shown, "rows": all_rows}
        args.json_out.write_text(json.dumps({**found, "runs": results}, indent=1))


if __name__ == "__main__":
    main()
