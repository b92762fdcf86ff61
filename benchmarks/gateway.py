"""What the MCP gateway costs: ``maitred mcp`` against a plain FastMCP proxy to the same upstreams.

Both sides are what an MCP client launches: a subprocess over stdio that fronts the same
generated upstream (``benchmarks/_mcp_upstream.py --tools N``, itself a subprocess of each):

* **proxy**: ``benchmarks/_mcp_proxy.py``, ``fastmcp.server.create_proxy`` with no middleware;
* **gateway**: ``maitred mcp --config F``, the same proxy with maitred's gates (a logged
  listing turn over every tool's exit predicates; a call checked against schema, predicates
  and policy and flushed to the SQLite decision log before it is forwarded).

One ``fastmcp.Client`` per side measures, in the same run and interleaved operation by
operation (the side that goes first alternates), ``tools/call`` of a visible tool and
``tools/list`` (response cache bypassed), for each catalog size and each client protocol era;
it reports p50 / p99, the gateway's p50 as a multiple of the proxy's and the median of each
gateway operation over the proxy operation timed next to it (goals: call <= 1.15x, list <=
1.5x). A refused call (a tool hidden for the account, answered by the gateway without the
upstream) is timed too, for reference. The account is on the free plan, so a fifth of the
tools are hidden and the gateway's list is shorter than the proxy's: per-session filtering is
part of its cost.

**Eras** (``--eras``, default both): each size is measured with clients of each MCP protocol
era in turn, both sides' clients in the same era: ``2026-07-28`` (FastMCP's ``Client``
default, ``mode="auto"``: stateless requests, no handshake) and ``2025-11-25`` (the handshake
era, ``mode="legacy"``: an ``initialize`` and an MCP session). The era each client negotiated
is checked before it is timed. Over HTTP both servers serve both eras, and one pair of servers
serves a size's every era; over stdio a client launches its server, so each era gets its own.

**A third-party upstream** (``--third-party``): both sides front a second upstream too, a real
third-party MCP server over stdio, ``@modelcontextprotocol/server-filesystem`` (node; ``make
bench-deps`` installs it and a node >= 22 into ``.cache/bench-upstreams`` as pinned in
``benchmarks/upstreams/package-lock.json``), allowed one temporary folder that holds one small
file. The gateway's config gets it as a second ``command:`` upstream with a contracts sidecar
(every tool hidden while the account is suspended, the writing ones on the free plan too, and a
call policy on ``read_text_file`` that refuses a path with ``..``); the proxy fronts both
upstreams, tools unprefixed as the gateway serves them (see ``_mcp_proxy.py``). A ``tools/call``
of its ``read_text_file`` on that file is timed as a row of its own, next to the generated
tool's.

With ``--transport http`` both sides serve streamable HTTP on loopback instead (each a
subprocess; the proxy without auth, the gateway with a static bearer token), which is how a
team deploys a shared gateway. ``--production`` (with ``--transport http``) turns on what such
a team runs it with, and the proxy stays a plain FastMCP proxy without auth:

* ``auth:``: JWT access tokens only (no static token), checked against a JWKS file; the
  benchmark generates the issuer's RSA key and mints RS256 tokens (``iss``, ``aud``, ``sub`` =
  the account, ``org_id`` = the tenant: one per era, so each era has budgets of its own) that
  its client presents on every request;
* ``tracing: {enabled: true}``: every span exported over OTLP/HTTP (the SDK's batch
  exporter) to a collector on loopback (``benchmarks/_otlp_sink.py``, its own process), which
  counts what it received; the counts are printed at the end, against the calls served;
* ``rate_limits:`` per token, per tenant and per tool (the called tools), rates far above what
  the run sends, so they are charged on every call and never refuse one; memory storage, or
  Redis with ``--redis URL``.

Before anything is timed, each size proves the features are on: a request without a token
and one with a forged token (signed by another key) are answered 401; and in each era a second
tool with a per-tool rate of one call an hour is called twice, and the second call is
``RATE_LIMITED`` and counted in ``/metrics``. ``--production`` needs the ``mcp`` and ``otlp``
extras (joserfc, the OTLP exporter and its protobuf types). ``--no-traces`` runs the same
production gateway without its ``tracing`` block: what the traces cost, measured apart.

Bounded: ``--calls`` and ``--lists`` timed operations per side, size and era after a short
warm-up (about two minutes an era on a shared 2-core machine, a third more with
``--third-party``); loopback only.

    PYTHONPATH=src .venv/bin/python benchmarks/gateway.py
    PYTHONPATH=src .venv/bin/python benchmarks/gateway.py --sizes 10 --calls 100 --lists 20
    PYTHONPATH=src .venv/bin/python benchmarks/gateway.py --transport http
    PYTHONPATH=src .venv/bin/python benchmarks/gateway.py --transport http --production
    PYTHONPATH=src .venv/bin/python benchmarks/gateway.py --transport http --production \
        --eras 2025-11-25 --redis redis://127.0.0.1:6379/0
    make bench-deps   # once: the third-party upstream and its node
    PYTHONPATH=src .venv/bin/python benchmarks/gateway.py --transport http --production \
        --third-party --json-out bench-out/gateway.json
    PYTHONPATH=src .venv/bin/python benchmarks/gateway.py --transport http --production \
        --no-traces --sizes 10
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
from contextlib import AbstractAsyncContextManager, asynccontextmanager
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
#: the goals, gateway p50 over proxy p50 (``fs_call``: the third-party upstream's tool)
GOALS = {"call": 1.15, "fs_call": 1.15, "list": 1.5}
#: the client protocol eras, newest first, and the ``fastmcp.Client`` mode that speaks each
ERAS = {"2026-07-28": "auto", "2025-11-25": "legacy"}


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


#: ``--third-party``: where ``make bench-deps`` installs the filesystem server and its node
NODE_MODULES = HERE.parent / ".cache" / "bench-upstreams" / "node_modules"
FS_NODE = NODE_MODULES / ".bin" / "node"
FS_SCRIPT = NODE_MODULES / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
#: the filesystem server's tools (the pinned version's): those that only read ...
FS_READS = (
    "read_file", "read_text_file", "read_media_file", "read_multiple_files", "list_directory",
    "list_directory_with_sizes", "directory_tree", "search_files", "get_file_info",
    "list_allowed_directories",
)  # fmt: skip
#: ... and those that write (hidden for an account on the free plan)
FS_WRITES = ("write_file", "edit_file", "create_directory", "move_file")
#: the third-party tool timed, and what the file it reads holds
FS_TOOL = "read_text_file"
FS_TEXT = "Order 4471: two espressos, one croissant. Table 12, served at 09:14.\n" * 3


@dataclass
class ThirdParty:
    """``--third-party``: ``@modelcontextprotocol/server-filesystem`` over stdio, allowed the
    folder ``root`` (which holds the one small file its timed call reads)."""

    root: Path

    @staticmethod
    def missing() -> str:
        """Why the server cannot run here ('' when it can)."""
        if FS_NODE.exists() and FS_SCRIPT.exists():
            return ""
        return f"--third-party needs {FS_SCRIPT} and {FS_NODE}: run `make bench-deps` first"

    @property
    def file(self) -> Path:
        return self.root / "note.txt"

    @property
    def command(self) -> list[str]:
        return [str(FS_NODE), str(FS_SCRIPT), str(self.root)]

    def write(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.file.write_text(FS_TEXT, encoding="utf-8")

    @staticmethod
    def listed(gateway: bool) -> int:
        """How many of its tools a side lists (the gateway: to the free plan)."""
        return len(FS_READS) + (0 if gateway else len(FS_WRITES))

    @staticmethod
    def sidecar() -> str:
        """The contracts for its tools (YAML text): each hidden while the account is suspended,
        the writing ones on the free plan too; ``read_text_file`` refuses a path with ``..``."""
        lines = ["tools:"]
        for name in (*FS_READS, *FS_WRITES):
            lines += [
                f"  {name}:",
                "    exit_predicates:",
                "      - name: suspended",
                '        expr: account.status == "suspended"',
                "        reads: [account.status]",
            ]
            if name in FS_WRITES:
                lines += [
                    "      - name: free_plan",
                    '        expr: account.plan == "free"',
                    "        reads: [account.plan]",
                ]
            if name == FS_TOOL:
                lines += [
                    "    policies:",
                    "      - name: path_climbs",
                    '        expr: args.path.contains("..")',
                    "        code: BENCH_PATH_CLIMBS",
                    "        reads: [args.path]",
                    "        fields: [path]",
                    "        message: Paths are given without '..'",
                ]
        return "\n".join(lines) + "\n"


def _tenant() -> str:
    return f"bench-{secrets.token_hex(4)}"


@dataclass
class Production:
    """What ``--production`` gives the HTTP gateway: JWT auth, traces to a collector, rate
    limits; and what each size found (:attr:`found`, by size; its ``limits``, by era)."""

    storage: str = "memory"  # rate limits' storage: memory, or a Redis URL
    traces: bool = True  # False (--no-traces): the same gateway without its tracing block
    key: RSAKey = field(
        default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "bench-1"})
    )
    #: a tenant of this run's (and size's) own, so counts left in a shared Redis never apply
    tenant: str = field(default_factory=lambda: _tenant())
    collector: str = ""  # the collector's URL, while one runs
    found: dict[int, dict[str, Any]] = field(default_factory=dict)

    def mint(self, era: str = "", key: RSAKey | None = None) -> str:
        """An RS256 access token for acc-1 of :attr:`tenant` (``era``: of that era's own
        tenant, beside it), good for three hours (``key``: signed by another key under the
        issuer's kid, a forgery)."""
        now = int(time.time())
        claims = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "acc-1",
            "org_id": f"{self.tenant}-{era}" if era else self.tenant,
            "iat": now,
            "exp": now + 3 * 3600,
        }
        signer = key or self.key
        return jwt.encode({"alg": "RS256", "kid": "bench-1"}, claims, signer, algorithms=["RS256"])

    def forged(self) -> str:
        return self.mint(key=RSAKey.generate_key(2048, parameters={"kid": "bench-1"}))

    def served(self, root: Path, third_party: bool = False) -> str:
        """The config's ``auth``, ``tracing`` and ``rate_limits`` (and the JWKS file)."""
        jwks = {"keys": [self.key.as_dict(private=False)]}
        (root / "jwks.json").write_text(json.dumps(jwks), encoding="utf-8")
        called = [tool_name(0), *([FS_TOOL] if third_party else [])]
        per_tool = ", ".join(f"{name}: {RATES['per_tool']}" for name in called)
        return (
            "server: {host: 127.0.0.1, port: 0}\n"
            "auth:\n"
            f"  issuer: {ISSUER}\n"
            f"  audience: {AUDIENCE}\n"
            "  jwks_file: jwks.json\n"
            "  tenant_claim: org_id\n"
            + (
                f"tracing: {{enabled: true, exporter: otlp, endpoint: "
                f"{json.dumps(self.collector)}}}\n"
                if self.traces
                else ""
            )
            + "rate_limits:\n"
            f"  per_token: {RATES['per_token']}\n"
            f"  per_tenant: {RATES['per_tenant']}\n"
            f"  per_tool: {{{per_tool}, {PROBE_TOOL}: 1/hour}}\n"
            f"  storage: {json.dumps(self.storage)}\n"
        )

    def features(self) -> str:
        """What was on, in words."""
        store = "memory" if self.storage == "memory" else f"Redis at {self.storage}"
        traces = (
            "traces (OTLP over HTTP, batch exporter, to a collector on loopback)"
            if self.traces
            else "**no traces** (--no-traces)"
        )
        return (
            f"JWT auth (RS256 against a JWKS file; issuer, audience, tenant from `org_id`; no "
            f"static token), {traces}, rate limits (per token {RATES['per_token']}, per tenant "
            f"{RATES['per_tenant']}, per tool {RATES['per_tool']} on each called tool; "
            f"moving window, {store})"
        )


def write_site(
    root: Path,
    tools: int,
    *,
    http: bool = False,
    production: Production | None = None,
    third_party: ThirdParty | None = None,
) -> Path:
    """Accounts, contracts and a gateway config for ``tools`` generated tools (and the
    ``third_party`` server's, a second upstream); the config (``http``: served on a free
    loopback port, for one bearer token; ``production``: for the JWTs it mints instead, with
    traces and rate limits)."""
    (root / "accounts.json").write_text(
        json.dumps({"acc-1": {"account": {"plan": "free", "status": "active"}}}),
        encoding="utf-8",
    )
    (root / "bench.maitred.yaml").write_text(sidecar(tools), encoding="utf-8")
    config = root / "gateway.yaml"
    if production is not None:
        served = production.served(root, third_party is not None)
    elif http:
        served = (
            "server: {host: 127.0.0.1, port: 0}\n"
            "tokens:\n"
            f"  - {{token_sha256: {hashlib.sha256(TOKEN.encode()).hexdigest()}, "
            "tenant: bench, account: acc-1}\n"
        )
    else:
        served = "account: acc-1\n"
    upstreams = (
        "upstreams:\n"
        "  - name: bench\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(HERE / '_mcp_upstream.py'))}, --tools, '{tools}']\n"
        "    contracts: bench.maitred.yaml\n"
        "    required: true\n"
    )
    if third_party is not None:
        (root / "filesystem.maitred.yaml").write_text(third_party.sidecar(), encoding="utf-8")
        node, *args = third_party.command
        upstreams += (
            "  - name: filesystem\n"
            f"    command: {json.dumps(node)}\n"
            f"    args: [{', '.join(json.dumps(a) for a in args)}]\n"
            "    contracts: filesystem.maitred.yaml\n"
            "    required: true\n"
        )
    config.write_text(
        served + "state: accounts.json\nlog: gateway.sqlite\n" + upstreams, encoding="utf-8"
    )
    return config


def upstream_commands(tools: int, third_party: ThirdParty | None) -> list[str]:
    """The proxy's upstreams, as ``_mcp_proxy.py`` takes them (each after a ``--``)."""
    generated = [sys.executable, str(HERE / "_mcp_upstream.py"), "--tools", str(tools)]
    return ["--", *generated, *(["--", *third_party.command] if third_party else [])]


#: opens both sides' clients in one era (``connect(era)``), as a dict by side
Connect = Callable[[str], AbstractAsyncContextManager[dict[str, Client[Any]]]]


@asynccontextmanager
async def stdio_sides(
    root: Path, tools: int, third_party: ThirdParty | None = None
) -> AsyncIterator[Connect]:
    """Both sides over stdio, as an MCP client launches a local server: each era's clients
    launch sides of their own (stderr to a file in ``root``)."""
    config = write_site(root, tools, third_party=third_party)
    log = root / "stderr.log"
    proxy_args = [str(HERE / "_mcp_proxy.py"), *upstream_commands(tools, third_party)]
    gateway_args = ["-m", "maitred.cli.main", "mcp", "--config", str(config)]

    def launch(args: list[str]) -> StdioTransport:
        return StdioTransport(sys.executable, args, env=_env(), keep_alive=False, log_file=log)

    @asynccontextmanager
    async def connect(era: str) -> AsyncIterator[dict[str, Client[Any]]]:
        mode = ERAS[era]
        async with (
            Client(launch(proxy_args), timeout=120, mode=mode) as proxy,
            Client(launch(gateway_args), timeout=120, init_timeout=300, mode=mode) as gateway,
        ):
            yield {"proxy": proxy, "gateway": gateway}

    yield connect


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


async def _metrics(base: str) -> str:
    async with httpx2.AsyncClient(timeout=60) as http:
        return (await http.get(f"{base}/metrics")).text


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
    before = _metric(await _metrics(base), "maitred_gateway_rate_limited_total", scope="per_tool")
    first = await client.call_tool(PROBE_TOOL, {"n": 1}, raise_on_error=False)
    second = await client.call_tool(PROBE_TOOL, {"n": 2}, raise_on_error=False)
    assert not first.is_error, first
    text = getattr(second.content[0], "text", "")
    assert second.is_error and "RATE_LIMITED" in text, second
    metrics = await _metrics(base)
    counted = _metric(metrics, "maitred_gateway_rate_limited_total", scope="per_tool") - before
    assert counted == 1, metrics
    payload = json.loads(text)
    return {"limited_code": payload["code"], "retry_after_s": payload.get("retry_after_s"),
            "rate_limited_per_tool": counted}  # fmt: skip


@asynccontextmanager
async def http_sides(
    root: Path,
    tools: int,
    production: Production | None = None,
    third_party: ThirdParty | None = None,
) -> AsyncIterator[Connect]:
    """Both sides served over streamable HTTP on loopback (one pair for every era).

    With ``production``, a collector runs first and the gateway gets JWT auth, traces and
    rate limits; what the checks before, within (by era) and after the block found is left in
    ``production.found[tools]``.
    """
    log = root / "stderr.log"
    started: list[subprocess.Popen[str]] = []
    collector: subprocess.Popen[str] | None = None
    found: dict[str, Any] = {"limits": {}}
    try:
        if production is not None:
            production.tenant = _tenant()  # each size its own budgets, in a shared Redis too
            collector, production.collector = _served(
                [sys.executable, str(HERE / "_otlp_sink.py")], log
            )
            production.found[tools] = found
        config = write_site(root, tools, http=True, production=production, third_party=third_party)
        proxy_cmd = [sys.executable, str(HERE / "_mcp_proxy.py"), "--http", "0",
                     *upstream_commands(tools, third_party)]  # fmt: skip
        gateway_cmd = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
        proxy, proxy_url = _served(proxy_cmd, log)
        started.append(proxy)
        gateway, gateway_url = _served(gateway_cmd, log)
        started.append(gateway)
        base = gateway_url.rsplit("/", 1)[0]
        # the proxy launches its upstreams on its first request (the gateway at start): made
        # here, so a 1,000-tool upstream still starting cannot fail a client's era probe
        async with Client(proxy_url, timeout=600, mode="legacy") as warm:
            await warm.list_tools()
        if production is not None:
            found.update(await prove_auth(gateway_url, production))

        @asynccontextmanager
        async def connect(era: str) -> AsyncIterator[dict[str, Client[Any]]]:
            mode = ERAS[era]
            token = production.mint(era) if production is not None else TOKEN
            async with (
                Client(proxy_url, timeout=120, mode=mode) as px,
                Client(gateway_url, auth=token, timeout=120, mode=mode) as gw,
            ):
                if production is not None:
                    found["limits"][era] = await prove_limits(gw, base)
                yield {"proxy": px, "gateway": gw}

        yield connect
        if production is not None and collector is not None:
            metrics = await _metrics(base)
            found["calls_served"] = _calls_served(metrics)
            found["listings_served"] = round(_metric(metrics, "maitred_gateway_listings_total"))
            found["rate_limited_total"] = round(
                _metric(metrics, "maitred_gateway_calls_total", code="RATE_LIMITED")
            )
            found["gateway_exit"] = _stop(gateway)  # it exports what is still buffered
            sink = production.collector.rsplit("/v1/", 1)[0]
            async with httpx2.AsyncClient(timeout=60) as http:
                found.update((await http.get(f"{sink}/counts")).json())
    finally:
        for popen in started:
            _stop(popen)
        if production is not None and collector is not None:
            _stop(collector)
            production.collector = ""


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


def operations(tools: int, third_party: ThirdParty | None) -> dict[str, Op]:
    """What is timed, by name (each checks its answer): ``call`` (a visible generated tool),
    ``fs_call`` (the third-party tool, with ``third_party``), ``list``, ``refused`` (a hidden
    tool: the gateway alone)."""
    visible, refused = tool_name(0), tool_name(next(i for i in range(tools) if hidden(i)))

    async def call(client: Client[Any]) -> Any:
        result = await client.call_tool(visible, {"n": 7})
        assert result.content[0].text == f"{visible}(7) done", result

    async def listing(client: Client[Any]) -> Any:
        return await client.list_tools(cache_mode="bypass")

    async def refuse(client: Client[Any]) -> Any:
        result = await client.call_tool(refused, {"n": 7}, raise_on_error=False)
        assert result.is_error and "TOOL_NOT_OFFERED" in result.content[0].text, result

    found: dict[str, Op] = {"call": call}
    if third_party is not None:
        path = str(third_party.file)

        async def read(client: Client[Any]) -> Any:
            result = await client.call_tool(FS_TOOL, {"path": path})
            assert result.content[0].text == FS_TEXT, result

        found["fs_call"] = read
    return {**found, "list": listing, "refused": refuse}


def listed(tools: int, third_party: ThirdParty | None) -> dict[str, int]:
    """How many tools each side lists (the gateway: to the free plan)."""
    gateway = tools - sum(hidden(i) for i in range(tools))
    if third_party is None:
        return {"proxy": tools, "gateway": gateway}
    return {
        "proxy": tools + third_party.listed(False),
        "gateway": gateway + third_party.listed(True),
    }


async def measure_era(
    clients: dict[str, Client[Any]],
    era: str,
    ops: dict[str, Op],
    want: dict[str, int],
    counts: dict[str, int],
    warmup: int,
    max_seconds: float,
) -> dict[str, Any]:
    """Time every op of ``ops`` on both sides' clients of one era: samples and CPU per op."""
    spoken = {side: client.protocol_version for side, client in clients.items()}
    assert spoken == {"proxy": era, "gateway": era}, (era, spoken)
    shown = {k: len(await ops["list"](c)) for k, c in clients.items()}
    assert shown == want, (shown, want)
    samples: dict[str, dict[str, list[float]]] = {"proxy": {}, "gateway": {}}
    cpu: dict[str, dict[str, float]] = {"proxy": {}, "gateway": {}}
    for what, op in ops.items():
        on = {"gateway": clients["gateway"]} if what == "refused" else clients
        warm = warmup if what != "list" else min(warmup, 2)  # a 1,000-tool list is ~1 s
        got, used = await phase(on, op, counts[what], warm, max_seconds)
        for side in on:
            samples[side][what], cpu[side][what] = got[side], used.get(side, math.nan)
    return {"shown": shown, "samples": samples, "cpu": cpu}


async def measure(
    tools: int,
    calls: int,
    lists: int,
    warmup: int,
    max_seconds: float,
    transport: str = "stdio",
    production: Production | None = None,
    eras: tuple[str, ...] = tuple(ERAS),
    third_party: bool = False,
) -> dict[str, Any]:
    """Time both sides over one catalog size, in each client era: samples (seconds) and CPU
    per op, by era and side."""
    counts = {"call": calls, "fs_call": calls, "list": lists, "refused": calls}
    by_era: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="maitred-gwbench-") as tmp:
        root = Path(tmp)
        third = ThirdParty(root / "files") if third_party else None
        if third is not None:
            third.write()
        ops, want = operations(tools, third), listed(tools, third)
        started = time.perf_counter()
        sides = (
            http_sides(root, tools, production, third)
            if transport == "http"
            else stdio_sides(root, tools, third)
        )
        async with sides as connect:
            for era in eras:
                async with connect(era) as clients:
                    up = time.perf_counter() - started
                    print(f"  {tools:,} tools, {era}: both sides up in {up:.1f}s",
                          file=sys.stderr, flush=True)  # fmt: skip
                    by_era[era] = await measure_era(
                        clients, era, ops, want, counts, warmup, max_seconds
                    )
                started = time.perf_counter()
    found = production.found.get(tools) if production is not None else None
    return {
        "tools": tools, "transport": transport, "third_party": third_party, "eras": by_era,
        "production": found,
    }  # fmt: skip


def rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The table rows of one catalog size: by era, each op timed on both sides, then the
    refused call."""
    found = []
    for era, measured in result["eras"].items():
        s, shown = measured["samples"], measured["shown"]
        size = {"tools": result["tools"], "era": era,
                "proxy_listed": shown["proxy"], "gateway_listed": shown["gateway"]}  # fmt: skip
        for what in (w for w in s["proxy"] if w in GOALS):
            px, gw = s["proxy"][what], s["gateway"][what]
            ratio = _pct(gw, 0.5) / _pct(px, 0.5)
            found.append(
                {
                    **size,
                    "op": what,
                    "n": len(gw),
                    "proxy_p50_ms": _pct(px, 0.5) * 1e3,
                    "proxy_p99_ms": _pct(px, 0.99) * 1e3,
                    "gateway_p50_ms": _pct(gw, 0.5) * 1e3,
                    "gateway_p99_ms": _pct(gw, 0.99) * 1e3,
                    "ratio_p50": ratio,
                    "ratio_p99": _pct(gw, 0.99) / _pct(px, 0.99),
                    # each gateway op over the proxy op timed next to it (same load): steadier
                    "ratio_paired": statistics.median(g / p for g, p in zip(gw, px, strict=True)),
                    "goal": GOALS[what],
                    "met": ratio <= GOALS[what],
                    "proxy_cpu_ms": measured["cpu"]["proxy"][what] * 1e3,
                    "gateway_cpu_ms": measured["cpu"]["gateway"][what] * 1e3,
                }
            )
        refused = s["gateway"]["refused"]
        found.append(
            {
                **size,
                "op": "refused",
                "n": len(refused),
                "gateway_p50_ms": _pct(refused, 0.5) * 1e3,
                "gateway_p99_ms": _pct(refused, 0.99) * 1e3,
            }
        )
    return found


#: how the table names each op
OP_NAMES = {
    "call": "`tools/call`, allowed (generated tool)",
    "fs_call": f"`tools/call`, allowed (third-party: filesystem `{FS_TOOL}`)",
    "list": "`tools/list`",
    "refused": "`tools/call`, hidden tool refused",
}


def table(all_rows: list[dict[str, Any]]) -> str:
    head = (
        "| tools (listed: proxy / gateway) | client era | operation | n | proxy p50 / p99 ms "
        "| gateway p50 / p99 ms | gateway / proxy: p50 (p99; paired median) | goal "
        "| front process CPU ms per op, proxy / gateway |\n"
        "|---|---|---|---:|---:|---:|---:|---|---:|"
    )
    lines = [head]
    for r in all_rows:
        label = f"{r['tools']:,} ({r['proxy_listed']:,} / {r['gateway_listed']:,})"
        cells = f"| {label} | {r['era']} | {OP_NAMES[r['op']]} | {r['n']} |"
        gw = f"{r['gateway_p50_ms']:.2f} / {r['gateway_p99_ms']:.2f}"
        if r["op"] == "refused":
            lines.append(f"{cells} | {gw} | | | |")
            continue
        px = f"{r['proxy_p50_ms']:.2f} / {r['proxy_p99_ms']:.2f}"
        ratio = f"**{r['ratio_p50']:.2f}x** ({r['ratio_p99']:.2f}x; {r['ratio_paired']:.2f}x)"
        verdict = f"<= {r['goal']}x: {'met' if r['met'] else 'not met'}"
        cpu = f"{r['proxy_cpu_ms']:.2f} / {r['gateway_cpu_ms']:.2f}"
        lines.append(f"{cells} {px} | {gw} | {ratio} | {verdict} | {cpu} |")
    return "\n".join(lines)


def production_report(production: Production) -> str:
    """What was on in the gateway, and what each size (and era) showed of it."""
    lines = [f"Gateway features on: {production.features()}. The proxy: plain, no auth."]
    for tools, f in sorted(production.found.items()):
        spans = f.get("spans", {})
        calls = spans.get("maitred.call", 0)
        exported = (
            "no traces asked for"
            if not production.traces
            else "every call's span arrived"
            if calls == f["calls_served"]
            else f"**{f['calls_served'] - calls} call spans missing**"
        )
        by_name = ", ".join(f"{k} {v:,}" for k, v in sorted(spans.items()))
        limits = "; ".join(
            f"{era}: {PROBE_TOOL} (1/hour) twice -> {lim['limited_code']} (retry_after_s "
            f"{lim['retry_after_s']}), rate_limited_total{{scope=per_tool}} "
            f"+{lim['rate_limited_per_tool']:.0f}"
            for era, lim in f["limits"].items()
        )
        lines.append(
            f"- {tools:,} tools: no token -> {f['no_token']}, forged token -> "
            f"{f['forged_token']} ({f['forged_why']}); {limits}; "
            f"calls served {f['calls_served']:,} (RATE_LIMITED {f['rate_limited_total']}), "
            f"listings {f['listings_served']:,}; spans received by the collector "
            f"{sum(spans.values()):,} in {f['exports']} exports ({by_name}): {exported}; "
            f"gateway exit status {f['gateway_exit']}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,1000", help="upstream tool counts, comma-separated")
    parser.add_argument(
        "--eras",
        default=",".join(ERAS),
        help=f"client protocol eras, comma-separated (of {', '.join(ERAS)})",
    )
    parser.add_argument("--calls", type=int, default=300, help="timed tools/call per side")
    parser.add_argument("--lists", type=int, default=60, help="timed tools/list per side")
    parser.add_argument("--warmup", type=int, default=10, help="untimed calls first (lists: 2)")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=60.0,
        help="stop a phase (one size, era and operation) after this",
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
    parser.add_argument(
        "--no-traces",
        action="store_true",
        help="with --production: the same gateway without its tracing block (what traces cost)",
    )
    parser.add_argument(
        "--third-party",
        action="store_true",
        help="a second upstream behind both sides: @modelcontextprotocol/server-filesystem "
        "over stdio (make bench-deps installs it), its read_text_file timed too",
    )
    parser.add_argument("--json-out", type=Path, help="also write the rows and samples here")
    args = parser.parse_args()
    if args.production and args.transport != "http":
        parser.error("--production needs --transport http (auth and /metrics are HTTP's)")
    if args.redis and not args.production:
        parser.error("--redis needs --production (it is where the rate limits count)")
    eras = tuple(e.strip() for e in args.eras.split(",") if e.strip())
    if not eras or any(e not in ERAS for e in eras):
        parser.error(f"--eras takes {', '.join(ERAS)} (comma-separated), not {args.eras!r}")
    if args.third_party and ThirdParty.missing():
        parser.error(ThirdParty.missing())
    if args.no_traces and not args.production:
        parser.error("--no-traces needs --production (without it there are no traces)")
    production = (
        Production(storage=args.redis or "memory", traces=not args.no_traces)
        if args.production
        else None
    )
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
                eras,
                args.third_party,
            )
        )
    all_rows = [row for result in results for row in rows(result)]
    shown = table(all_rows)
    shown += f"\n\nLoad average (1 min) at the start / end: {load:.1f} / {os.getloadavg()[0]:.1f}"
    shown += f" on {os.cpu_count()} CPUs."
    if args.third_party:
        shown += (
            f"\n\nSecond upstream on both sides: @modelcontextprotocol/server-filesystem "
            f"({FS_SCRIPT.relative_to(HERE.parent)}) over stdio, on node "
            f"{FS_NODE.relative_to(HERE.parent)}; `{FS_TOOL}` of a {len(FS_TEXT)}-byte file."
        )
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
