"""Throughput of `maitred mcp` replicas behind a real load balancer: 2 replicas vs 1.

Each side is a deployment as a team runs one: ``N`` ``maitred mcp`` processes over streamable
HTTP with one config -- one PostgreSQL decision log (a fresh schema per side), rate limits
per token and per tool shared through Redis (rates far above what the run sends, so every
call is charged and none refused), a generated upstream (``benchmarks/_mcp_upstream.py``,
over stdio, one per replica) -- behind Debian's HAProxy (``make lb-deps``) balancing each
HTTP request round-robin. Client processes (``--client-procs``, each with ``--clients``
concurrent 2026-07-28 ``fastmcp.Client`` connections, sessionless, so any replica may answer
any request) call a visible tool through HAProxy for ``--seconds``; every answer must carry a
decision id. The sides alternate (1, 2, 1, 2, ... ``--rounds`` times each) and the script
prints calls per second per side and the ratio of their medians, measured in this one run.

The machine shares its cores with the clients, HAProxy, PostgreSQL and Redis, so the ratio is
what this machine gives, not what separate hosts would: on 2 cores a second replica can add at
most what the first leaves idle.

    make lb-deps   # Debian's haproxy, once
    PYTHONPATH=src .venv/bin/python benchmarks/replicas.py
    PYTHONPATH=src .venv/bin/python benchmarks/replicas.py --seconds 20 --rounds 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(HERE))
from _mcp_upstream import hidden, sidecar, tool_name  # noqa: E402

TOKEN = "bench-replicas-token"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def write_site(root: Path, tools: int, log: str, redis: str) -> Path:
    """Accounts, contracts and the replicas' one config."""
    (root / "accounts.json").write_text(
        json.dumps({"acc-1": {"account": {"plan": "free", "status": "active"}}}), encoding="utf-8"
    )
    (root / "bench.maitred.yaml").write_text(sidecar(tools), encoding="utf-8")
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    config = root / "gateway.yaml"
    config.write_text(
        "server: {host: 127.0.0.1, port: 0}\n"
        f"tokens:\n  - {{token_sha256: {digest}, tenant: bench, account: acc-1}}\n"
        "state: accounts.json\n"
        f"log: '{log}'\n"
        f"rate_limits: {{storage: '{redis}', per_token: 100000/second, "
        f"per_tool: {{{tool_name(0)}: 100000/second}}}}\n"
        "upstreams:\n"
        "  - name: bench\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(HERE / '_mcp_upstream.py'))}, --tools, '{tools}']\n"
        "    contracts: bench.maitred.yaml\n",
        encoding="utf-8",
    )
    return config


def start_replica(config: Path, log: Path) -> tuple[subprocess.Popen[str], int]:
    """One ``maitred mcp`` over HTTP; its port once it says it serves."""
    args = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
    proc = subprocess.Popen(args, env=_env(), stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    with log.open("a", encoding="utf-8") as out:
        for line in proc.stderr:
            out.write(line)
            found = re.search(r"serving http://127\.0\.0\.1:(\d+)", line)
            if found:
                return proc, int(found.group(1))
    tail = "".join(log.read_text(encoding="utf-8").splitlines(keepends=True)[-5:])
    raise SystemExit(f"a replica did not start (exit {proc.wait()}):\n{tail}")


def start_haproxy(root: Path, ports: list[int]) -> tuple[subprocess.Popen[bytes], int]:
    """HAProxy in HTTP mode, each request to the next replica in turn."""
    front = _free_port()
    servers = "\n".join(f"    server r{i} 127.0.0.1:{p}" for i, p in enumerate(ports))
    cfg = root / f"haproxy-{len(ports)}.cfg"
    cfg.write_text(
        "global\n    maxconn 4096\n"
        "defaults\n    mode http\n    timeout connect 5s\n    timeout client 60s\n"
        "    timeout server 60s\n    option http-keep-alive\n    http-reuse always\n"
        f"frontend mcp\n    bind 127.0.0.1:{front}\n    default_backend replicas\n"
        f"backend replicas\n    balance roundrobin\n{servers}\n",
        encoding="utf-8",
    )
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    proc = subprocess.Popen([haproxy, "-f", str(cfg), "-db"], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", front), timeout=0.5).close()
            return proc, front
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("haproxy did not listen")


def client_proc(
    url: str, args: argparse.Namespace, tool: str, ready: Any, go: Any, out: Any
) -> None:
    """One client process: ``args.clients`` connections calling ``tool`` for
    ``args.seconds`` once ``go`` is set; puts (calls, seconds) on ``out``."""
    import anyio
    from fastmcp import Client

    async def one(client: Any, deadline: float, counts: list[int]) -> None:
        while time.monotonic() < deadline:
            result = await client.call_tool(tool, {"n": 1})
            if not (result.meta or {}).get("maitred/decision_id"):
                raise AssertionError(f"an answer without a decision id: {result}")
            counts[0] += 1

    async def run() -> tuple[int, float]:
        clients = [Client(url, auth=TOKEN, timeout=60) for _ in range(args.clients)]
        for client in clients:
            await client.__aenter__()
            await client.call_tool(tool, {"n": 1})  # connected and warm
        ready.set()
        await anyio.to_thread.run_sync(go.wait)
        counts = [0]
        started = time.monotonic()
        async with anyio.create_task_group() as tasks:
            for client in clients:
                tasks.start_soon(one, client, started + args.seconds, counts)
        elapsed = time.monotonic() - started
        for client in clients:
            await client.__aexit__(None, None, None)
        return counts[0], elapsed

    out.put(anyio.run(run))


def measure(url: str, args: argparse.Namespace) -> float:
    """Calls per second through ``url`` by every client process together, timed from when
    every connection is open and warm."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    go = ctx.Event()
    tool = next(tool_name(i) for i in range(args.tools) if not hidden(i))
    readies = [ctx.Event() for _ in range(args.client_procs)]
    procs = [ctx.Process(target=client_proc, args=(url, args, tool, r, go, out)) for r in readies]
    for p in procs:
        p.start()
    for r in readies:
        if not r.wait(timeout=300):
            raise SystemExit("a client process did not connect")
    go.set()
    results = [out.get(timeout=args.seconds + 300) for _ in procs]
    for p in procs:
        p.join()
    return sum(n for n, _ in results) / max(t for _, t in results)


def side(root: Path, replicas: int, args: argparse.Namespace) -> float:
    """Start ``replicas`` replicas and HAProxy, warm up, measure, stop everything."""
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    where = root / f"r{replicas}-{schema}"
    where.mkdir()
    config = write_site(where, args.tools, f"{args.pg}?schema={schema}", args.redis)
    running: list[subprocess.Popen[Any]] = []
    try:
        ports = []
        for _ in range(replicas):
            proc, port = start_replica(config, where / "stderr.log")
            running.append(proc)
            ports.append(port)
        lb, front = start_haproxy(where, ports)
        running.append(lb)
        return measure(f"http://127.0.0.1:{front}/mcp", args)
    finally:
        for proc in reversed(running):
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        _drop_schema(args.pg, schema)


def _drop_schema(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=10)
    parser.add_argument("--clients", type=int, default=8, help="connections per client process")
    parser.add_argument("--client-procs", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rounds", type=int, default=2, help="measurements per side")
    parser.add_argument("--pg", default="postgresql://root@127.0.0.1:5432/test")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args()
    if shutil.which("haproxy") is None and not Path("/usr/sbin/haproxy").exists():
        raise SystemExit("haproxy is not installed: make lb-deps")
    rates: dict[int, list[float]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory(prefix="maitred-replicas-") as tmp:
        for _ in range(args.rounds):
            for replicas in (1, 2):
                rate = side(Path(tmp), replicas, args)
                rates[replicas].append(rate)
                print(f"{replicas} replica(s): {rate:7.1f} calls/s", flush=True)
    one, two = statistics.median(rates[1]), statistics.median(rates[2])
    print(
        f"\nmedian calls/s: 1 replica {one:.1f}, 2 replicas {two:.1f}; ratio 2/1 = {two / one:.2f}x"
        f" ({args.client_procs} client processes x {args.clients} connections, {args.tools} "
        f"tools, {args.seconds:g} s per measurement, {os.cpu_count()} CPUs shared with clients, "
        "HAProxy, PostgreSQL and Redis)"
    )


if __name__ == "__main__":
    main()
