"""What the HTTP layer costs: ``POST /v1/turns`` against ``Maitred.turn()`` in process.

The workload is the sitecare demo domain (11 Agent Skills, a seeded SQLite accounts store, its
seeded customer messages; a message's conversation is its session). Both sides use the same
engine configuration and a SQLite decision log committed before every answer, so the
difference is the HTTP layer: parsing, authentication, the session map, the worker-thread hop,
loopback TCP and the response's JSON.

1. **one client, in process**: ``engine.turn(message, session=...)`` per message, p50 / p99
   and CPU time per turn;
2. **1, 4 and 16 concurrent clients over HTTP**: ``maitred serve`` started as a subprocess on
   a free loopback port; the clients run in **a separate process** (one asyncio event loop,
   one keep-alive HTTP/1.1 connection per client, requests written as bytes), so the client's
   own parsing neither shares the benchmark's interpreter nor dominates what is measured.
   Reported: messages/s, p50, p99, p99/p50, the server's own mean time per request (from its
   ``/metrics``: middleware to response, without the client and the TCP hop), the server
   process's CPU time per request (``/proc``; robust to a loaded machine, unlike wall time),
   p50 as a multiple of the in-process p50, and messages/s as a multiple of the best
   throughput over all client counts (1.00x at 16 clients means no collapse).

The legs are **interleaved**: the messages of each leg are split into ``--rounds`` rounds, and
every round runs in-process, then HTTP at 1, 4 and 16 clients, so on a shared machine all legs
sample the same stretches of load (a leg measured alone can land in a quiet or a busy minute);
each figure pools a leg's rounds.

Bounded: ``--messages`` requests per leg (after ``--warmup``), each HTTP round stopped at
``--max-seconds``; loopback only. The engine serialises turns (one lock); commits of the
decision log are outside that lock and shared by concurrent requests (group commit).

    PYTHONPATH=src .venv/bin/python benchmarks/serve_http.py                 # bm25
    PYTHONPATH=src .venv/bin/python benchmarks/serve_http.py --methods bm25,dense
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from maitred import Maitred
from maitred.actions.session import Session
from maitred.lab.domains import sitecare
from maitred.records import Message
from maitred.serve import load_config, open_engine

TOKEN = "bench-token"
N_ACCOUNTS = 200


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds a process has used so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _summary(latencies_s: list[float], wall_s: float) -> dict[str, float]:
    return {
        "n": len(latencies_s),
        "per_s": len(latencies_s) / wall_s if wall_s > 0 else 0.0,
        "p50_ms": statistics.median(latencies_s) * 1e3,
        "p99_ms": _pct(latencies_s, 0.99) * 1e3,
    }


def _workspace(root: Path, method: str, n_messages: int) -> tuple[Path, list[dict[str, Any]]]:
    """Accounts, messages and a server config under ``root``."""
    db = root / "accounts.sqlite"
    if not db.exists():
        sitecare.write_accounts(db, N_ACCOUNTS, seed=11)
    messages = list(sitecare.generate_messages(n_messages, N_ACCOUNTS, seed=11))
    config = {
        "catalogs": [str(sitecare.skills_dir())],
        "state": f"sqlite:///{db}",
        "tables": sitecare.TABLES,
        "state_timeout_s": 1.0,
        "options": {"method": method, "top_k": 5},
        "log": f"log-{method}.sqlite",
        "cache_dir": "cache",
        "tenants": {
            "bench": {
                "token_sha256": hashlib.sha256(TOKEN.encode()).hexdigest(),
                "account_prefix": "acc-",
            }
        },
        "limits": {"max_sessions": 100_000},
    }
    path = root / f"serve-{method}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path, messages


class InProcess:
    """``engine.turn()`` per message at one client (log committed per turn, as the server does)."""

    def __init__(self, config: Path) -> None:
        self.engine: Maitred = open_engine(load_config(config))
        self.sessions: dict[str, Session] = {}
        self.n = 0

    def run(self, messages: list[dict[str, Any]]) -> tuple[list[float], float, float]:
        """(latencies, wall seconds, CPU seconds) of routing ``messages``."""
        latencies: list[float] = []
        start, cpu = time.perf_counter(), time.process_time()
        for m in messages:
            session = self.sessions.get(m["conversation"])
            if session is None:
                session = self.engine.session(m["account"], id=m["conversation"])
                self.sessions[m["conversation"]] = session
            self.n += 1
            msg = Message(f"ip{self.n}", m["text"], m["account"], conversation=session.id)
            t0 = time.perf_counter()
            self.engine.turn(msg, session=session)
            latencies.append(time.perf_counter() - t0)
        return latencies, time.perf_counter() - start, time.process_time() - cpu

    def close(self) -> None:
        self.engine.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_server(config: Path, port: int) -> subprocess.Popen[bytes]:
    src = Path(__file__).resolve().parents[1] / "src"
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-m", "maitred.cli.main", "serve", "-c", str(config)]
    proc = subprocess.Popen([*cmd, "--port", str(port)], env=env)
    deadline = time.monotonic() + 300  # a first dense index build takes a while
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not become ready")


def over_http(
    base: str, messages: list[dict[str, Any]], clients: int, max_s: float
) -> tuple[list[float], float]:
    """``clients`` connections sending the messages (each taken once) until done or ``max_s``.

    The clients run in a separate process (:func:`client_main`), so they do not share the
    server's cores' time with the benchmark's own Python, nor a GIL with each other's parsing.
    """
    with tempfile.TemporaryDirectory() as tmp:
        feed = Path(tmp) / "messages.json"
        feed.write_text(json.dumps(messages), encoding="utf-8")
        cmd = [sys.executable, __file__, "--client", base, str(feed), str(clients), str(max_s)]
        done = subprocess.run(cmd, capture_output=True, timeout=max_s + 120, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the client process failed: {done.stderr.decode()[-2000:]}")
    result = json.loads(done.stdout)
    return result["latencies"], float(result["wall_s"])


async def _one_client(
    host: str, port: int, bodies: list[bytes], queue: list[int], stop_at: float
) -> list[float]:
    """One keep-alive HTTP/1.1 connection: take the next message, POST it, read the answer."""
    reader, writer = await asyncio.open_connection(host, port)
    head = (
        f"POST /v1/turns HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
    ).encode()
    took: list[float] = []
    try:
        while queue and time.monotonic() < stop_at:
            body = bodies[queue.pop()]
            t0 = time.perf_counter()
            writer.write(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            status_line = await reader.readline()
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            answer = await reader.readexactly(length)
            took.append(time.perf_counter() - t0)
            if b" 200 " not in status_line or b'"turn_id"' not in answer:
                raise SystemExit(f"not a turn: {status_line!r} {answer[:300]!r}")
    finally:
        writer.close()
    return took


def client_main(base: str, feed: Path, clients: int, max_s: float) -> None:
    """The client process: ``clients`` connections on one event loop; prints the latencies."""
    messages = json.loads(feed.read_text(encoding="utf-8"))
    bodies = [
        json.dumps(
            {"text": m["text"], "account": m["account"], "session_id": m["conversation"]}
        ).encode()
        for m in messages
    ]
    queue = list(reversed(range(len(bodies))))  # pop() takes them in order
    host, port = base.removeprefix("http://").split(":")

    async def run() -> tuple[list[float], float]:
        stop_at = time.monotonic() + max_s
        start = time.perf_counter()
        parts = await asyncio.gather(
            *(_one_client(host, int(port), bodies, queue, stop_at) for _ in range(clients))
        )
        return [x for part in parts for x in part], time.perf_counter() - start

    latencies, wall = asyncio.run(run())
    print(json.dumps({"latencies": latencies, "wall_s": wall}))


def _server_seconds(base: str) -> tuple[float, float]:
    """(sum, count) of ``maitred_http_request_seconds`` for ``/v1/turns``: the server's side."""
    total = count = 0.0
    for line in httpx.get(f"{base}/metrics", timeout=10).text.splitlines():
        if line.startswith('maitred_http_request_seconds_sum{route="/v1/turns"}'):
            total = float(line.split()[-1])
        elif line.startswith('maitred_http_request_seconds_count{route="/v1/turns"}'):
            count = float(line.split()[-1])
    return total, count


def bench_method(root: Path, method: str, args: argparse.Namespace) -> dict[str, Any]:
    """In-process and HTTP legs interleaved round by round, so both see the same machine."""
    legs = ["in_process", *(str(c) for c in args.clients)]
    per_round = max(1, args.messages // args.rounds)
    total = 2 * args.warmup + per_round * args.rounds * len(legs)
    config, messages = _workspace(root, method, total)
    stream = iter(messages)

    def take(n: int) -> list[dict[str, Any]]:
        return [m for _, m in zip(range(n), stream, strict=False)]

    local = InProcess(config)
    port = _free_port()
    proc = _start_server(config, port)
    base = f"http://127.0.0.1:{port}"
    pooled: dict[str, dict[str, Any]] = {
        leg: {"lat": [], "wall": 0.0, "cpu": 0.0, "served": 0.0, "server_s": 0.0} for leg in legs
    }
    try:
        local.run(take(args.warmup))
        over_http(base, take(args.warmup), 1, args.max_seconds)  # warm the server
        for r in range(args.rounds):
            print(f"[{method}] round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
            lat, wall, cpu = local.run(take(per_round))
            leg = pooled["in_process"]
            leg["lat"] += lat
            leg["wall"] += wall
            leg["cpu"] += cpu
            for c in args.clients:
                before, cpu0 = _server_seconds(base), _cpu_s(proc.pid)
                lat, wall = over_http(base, take(per_round), c, args.max_seconds)
                cpu = _cpu_s(proc.pid) - cpu0
                after = _server_seconds(base)
                leg = pooled[str(c)]
                leg["lat"] += lat
                leg["wall"] += wall
                leg["cpu"] += cpu
                leg["served"] += after[1] - before[1]
                leg["server_s"] += after[0] - before[0]
    finally:
        local.close()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
    ip = pooled["in_process"]
    inproc = _summary(ip["lat"], ip["wall"])
    inproc["cpu_ms"] = ip["cpu"] / max(1, len(ip["lat"])) * 1e3
    out: dict[str, Any] = {"method": method, "in_process": inproc, "http": {}}
    for c in args.clients:
        leg = pooled[str(c)]
        result = _summary(leg["lat"], leg["wall"])
        served = max(1.0, leg["served"])
        result["server_mean_ms"] = leg["server_s"] / served * 1e3
        result["cpu_ms"] = leg["cpu"] / served * 1e3
        out["http"][str(c)] = result
    one = out["http"][str(args.clients[0])]
    out["http_over_in_process_p50"] = one["p50_ms"] / inproc["p50_ms"]
    return out


def render(results: list[dict[str, Any]], clients: list[int]) -> str:
    lines = [
        "| recall | clients | messages/s | p50 ms | p99 ms | p99/p50 | server mean ms "
        "| CPU ms/turn | p50 vs in-process | messages/s vs best of 1-16 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for res in results:
        ip = res["in_process"]
        lines.append(
            f"| {res['method']} | in process, 1 | {ip['per_s']:,.0f} | {ip['p50_ms']:.2f} | "
            f"{ip['p99_ms']:.2f} | {ip['p99_ms'] / ip['p50_ms']:.1f} | | {ip['cpu_ms']:.2f} "
            "| 1.00x | |"
        )
        best = max(res["http"][str(c)]["per_s"] for c in clients)
        for c in clients:
            h = res["http"][str(c)]
            lines.append(
                f"| {res['method']} | HTTP, {c} | {h['per_s']:,.0f} | {h['p50_ms']:.2f} | "
                f"{h['p99_ms']:.2f} | {h['p99_ms'] / h['p50_ms']:.1f} | "
                f"{h['server_mean_ms']:.2f} | {h['cpu_ms']:.2f} | "
                f"{h['p50_ms'] / ip['p50_ms']:.2f}x | {h['per_s'] / best:.2f}x |"
            )
    return "\n".join(lines)


def main() -> None:
    if sys.argv[1:2] == ["--client"]:  # the client process of over_http()
        base, feed, clients, max_s = sys.argv[2:6]
        client_main(base, Path(feed), int(clients), float(max_s))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", default="bm25", help="comma-separated recall methods")
    parser.add_argument(
        "--messages", type=int, default=300, help="requests per leg (in process, each client count)"
    )
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument(
        "--rounds", type=int, default=5, help="interleaved rounds the messages are split into"
    )
    parser.add_argument("--clients", default="1,4,16", help="concurrency levels")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="cap per measurement")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    parser.add_argument("--workdir", type=Path, default=None, help="keep files here")
    args = parser.parse_args()
    args.clients = [int(c) for c in args.clients.split(",")]
    if args.clients[0] != 1:
        parser.error("--clients must start with 1 (the one-client latency the ratios use)")
    with tempfile.TemporaryDirectory() as tmp:
        root = args.workdir or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        results = [bench_method(root, m, args) for m in args.methods.split(",")]
    if args.out:
        args.out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(render(results, args.clients))


if __name__ == "__main__":
    main()
