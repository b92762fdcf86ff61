"""What reading sessions from the decision log costs a call check (issue 16, item 3).

Goal: ``check`` with the session's offer read from the log at most 1.1x the in-memory session at
p50, in process and over HTTP (``POST /v1/calls/check``). Both sides in one run, interleaved
in rounds so a shared machine loads them alike; ratios printed.

**In process** (``Maitred.check``, the decision committed before it returns, as always):

* ``memory`` -- the offer from the session's memory alone: a session offered a tool list
  (no logged turn), which is exactly the path every check took before sessions lived in the
  log;
* ``log, cached`` -- a session whose offer is its committed turn: each check reads that
  session's latest committed turn id (one probe of the ``turns_session_order`` index, on the log's
  reader connection) and, as it is still the cached turn, decides against the cached menu;
* ``log, cold`` -- a fresh ``Session`` object per check (a restart, or another replica's turn):
  the probe, then the turn's menu read from the log. Shown, not a goal.

**Over HTTP**: two ``maitred serve`` processes on loopback, each with its own SQLite log and
the same deployment: ``before`` runs the code of ``--baseline`` (a git revision, sessions in
memory), ``now`` the working tree (sessions in the log). One keep-alive client sends the same
checks to each in turn.

The deployment is two MCP tools with a contract sidecar over a SQLite accounts store (the
mutating one reads ``account.plan``), so a check fetches state, runs the exit predicates and
commits its decision -- what a real check costs.

    PYTHONPATH=src .venv/bin/python benchmarks/session_check.py
    PYTHONPATH=src .venv/bin/python benchmarks/session_check.py --checks 600 --out s.json
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml

from maitred import Maitred, ToolCall
from maitred.actions.session import Session
from maitred.serve import load_config, open_engine

REPO = Path(__file__).resolve().parents[1]
TOKEN = "bench-token"
SESSIONS = 20
TOOLS = {
    "tools": [
        {
            "name": "connect_custom_domain",
            "description": "Connect a custom domain name to the website.",
            "inputSchema": {
                "type": "object",
                "properties": {"domain": {"type": "string"}},
                "required": ["domain"],
            },
        },
        {
            "name": "list_domains",
            "description": "List the domain names connected to the website.",
            "inputSchema": {"type": "object", "properties": {}},
        },
    ]
}
SIDECAR = """
tools:
  connect_custom_domain:
    mutates: true
    exit_predicates:
      - name: on_free_plan
        expr: account.plan == "free"
        reads: [account.plan]
        message: Custom domains need a paid plan.
  list_domains: {}
"""
TEXT = "connect my custom domain name to my website"
CALL = {"name": "connect_custom_domain", "arguments": {"domain": "example.com"}}


def deployment(root: Path, log: str = "log.sqlite") -> Path:
    """Tools, sidecar, accounts store and a server config under ``root`` (``log``: its log)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    (root / "tools.maitred.yaml").write_text(SIDECAR, encoding="utf-8")
    with sqlite3.connect(root / "accounts.db") as conn:
        conn.execute("CREATE TABLE accounts (account_id TEXT PRIMARY KEY, plan TEXT)")
        conn.executemany(
            "INSERT INTO accounts VALUES (?, ?)", [(f"acc-{i}", "pro") for i in range(SESSIONS)]
        )
    conn.close()
    config = {
        "catalogs": ["tools.json"],
        "state": f"sqlite:///{root / 'accounts.db'}",
        "tables": {"account": "accounts"},
        "options": {"method": "bm25", "top_k": 5},
        "log": log,
        "cache_dir": "cache",
        "tenants": {
            "bench": {
                "token_sha256": hashlib.sha256(TOKEN.encode()).hexdigest(),
                "account_prefix": "acc-",
            }
        },
        "limits": {"max_sessions": 10_000},
    }
    path = root / "serve.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _p50_us(values: list[float]) -> float:
    return statistics.median(values) * 1e6


def _timed(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def in_process(root: Path, checks: int, rounds: int, log: str) -> dict[str, Any]:
    """The three in-process legs (see the module docstring), interleaved."""
    engine: Maitred = open_engine(load_config(deployment(root, log)))
    call = ToolCall(CALL["name"], dict(CALL["arguments"]))
    logged: list[Session] = []
    memory: list[Session] = []
    for i in range(SESSIONS):
        s = engine.session(f"acc-{i}", id=f"s-{i}")
        turn = engine.turn(TEXT, session=s)
        assert call.name in turn.exposed, turn.exposed
        logged.append(s)
        m = engine.session(f"acc-{i}", id=f"m-{i}")
        m.offer(turn.exposed)  # a tool list: no logged turn, the offer is the memory
        memory.append(m)
    legs: dict[str, list[float]] = {"memory": [], "log, cached": [], "log, cold": []}
    per = max(1, checks // rounds)
    k = [0]

    def pick(pool: list[Session]) -> Session:
        k[0] += 1
        return pool[k[0] % SESSIONS]

    def cold() -> None:
        s = logged[k[0] % SESSIONS]
        k[0] += 1
        fresh = engine.session(s.account, id=s.id)
        assert engine.check(call, session=fresh).allow

    for _ in range(rounds):
        legs["memory"] += _timed(lambda: engine.check(call, session=pick(memory)), per)
        legs["log, cached"] += _timed(lambda: engine.check(call, session=pick(logged)), per)
        legs["log, cold"] += _timed(cold, per)
    assert all(engine.check(call, session=s).allow for s in logged + memory)
    engine.close()
    return {name: {"n": len(v), "p50_us": _p50_us(v)} for name, v in legs.items()}


def _baseline_src(rev: str, into: Path) -> Path:
    """The ``src`` tree of git revision ``rev``, unpacked under ``into``."""
    blob = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "src"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(into, filter="data")
    _entry_points_of(rev, into / "src")
    return into / "src"


def _entry_points_of(rev: str, src: Path) -> None:
    """Give an unpacked revision the entry points its ``pyproject.toml`` declared.

    Revisions before the built-ins were listed in code (``maitred.plugins.BUILTINS``) found
    even their own state providers and log backends through installed metadata; a
    ``.dist-info`` folder beside the unpacked package is where ``importlib.metadata`` finds
    them for that tree alone.
    """
    text = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{rev}:pyproject.toml"],
        capture_output=True,
        check=True,
        text=True,
    ).stdout
    groups = tomllib.loads(text)["project"].get("entry-points", {})
    if not groups:
        return
    info = src / "maitred_baseline-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: maitred-baseline\nVersion: 0.0\n", encoding="utf-8"
    )
    lines = [
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items())
        for group, entries in groups.items()
    ]
    (info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(config: Path, src: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, "-m", "maitred.cli.main", "serve", "-c", str(config)]
    proc = subprocess.Popen(
        [*cmd, "--port", str(port)], env=env, stderr=subprocess.DEVNULL, cwd=config.parent
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server ({src}) exited with {proc.returncode}")
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not become ready")


def over_http(root: Path, baseline: str, checks: int, rounds: int) -> dict[str, Any]:
    """``POST /v1/calls/check`` against the baseline server and the working tree's."""
    srcs = {"before": _baseline_src(baseline, root / "baseline"), "now": REPO / "src"}
    servers = {name: _serve(deployment(root / name), src) for name, src in srcs.items()}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    took: dict[str, list[float]] = {name: [] for name in servers}
    try:
        clients = {
            name: httpx.Client(base_url=base, headers=headers)
            for name, (_, base) in servers.items()
        }
        for client in clients.values():
            for i in range(SESSIONS):
                body = {"text": TEXT, "account": f"acc-{i}", "session_id": f"s-{i}"}
                client.post("/v1/turns", json=body).raise_for_status()
        per = max(1, checks // rounds)
        for r in range(rounds):
            for name, client in clients.items():
                for j in range(per):
                    body = {"session_id": f"s-{(r * per + j) % SESSIONS}", "call": CALL}
                    t0 = time.perf_counter()
                    answer = client.post("/v1/calls/check", json=body)
                    took[name].append(time.perf_counter() - t0)
                    if not answer.json().get("allow"):
                        raise SystemExit(f"{name}: the check was not allowed: {answer.text}")
        for client in clients.values():
            client.close()
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(timeout=30)
    return {name: {"n": len(v), "p50_us": _p50_us(v)} for name, v in took.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checks", type=int, default=3000, help="checks per leg")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--baseline", default="d991ec8", help="git revision of 'before'")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    parser.add_argument(
        "--log",
        default="log.sqlite",
        help="the in-process legs' decision log (e.g. postgresql://host/db?schema=bench_x, "
        "a fresh schema); the HTTP legs use SQLite",
    )
    parser.add_argument("--no-http", action="store_true", help="the in-process legs only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        engine = in_process(Path(tmp) / "engine", args.checks, args.rounds, args.log)
        http = (
            {"before": {"n": 0, "p50_us": float("nan")}, "now": {"n": 0, "p50_us": float("nan")}}
            if args.no_http
            else over_http(Path(tmp) / "http", args.baseline, args.checks, args.rounds)
        )
    ratio_cached = engine["log, cached"]["p50_us"] / engine["memory"]["p50_us"]
    ratio_cold = engine["log, cold"]["p50_us"] / engine["memory"]["p50_us"]
    ratio_http = http["now"]["p50_us"] / http["before"]["p50_us"]
    print(f"{'leg':<28}{'n':>7}{'p50 us':>10}")
    for name, row in engine.items():
        print(f"{'check, ' + name:<28}{row['n']:>7}{row['p50_us']:>10.1f}")
    for name, row in http.items():
        print(f"{'HTTP check, ' + name:<28}{row['n']:>7}{row['p50_us']:>10.1f}")
    print(f"check p50, log (cached) / memory: {ratio_cached:.3f}x (goal <= 1.1x)")
    print(f"check p50, log (cold) / memory:   {ratio_cold:.3f}x (no goal)")
    print(f"HTTP check p50, now / before:     {ratio_http:.3f}x (goal <= 1.1x)")
    if args.out is not None:
        result = {
            "engine": engine,
            "http": http,
            "baseline": args.baseline,
            "ratios": {"cached": ratio_cached, "cold": ratio_cold, "http": ratio_http},
        }
        args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
