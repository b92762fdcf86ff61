"""A gateway in a temporary folder: accounts, contracts, config, and a recording upstream.

This folder has no ``__init__.py`` on purpose: pytest puts ``tests/`` on ``sys.path``, and a
package ``tests/mcp`` would then shadow the MCP SDK (``import mcp``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

pytest.importorskip("fastmcp", reason="the MCP gateway needs the mcp extra")

if TYPE_CHECKING:
    import httpx2

UPSTREAM = Path(__file__).with_name("upstream_server.py")
NOTES = Path(__file__).with_name("notes_server.py")
SRC = Path(__file__).resolve().parents[2] / "src"
BIN = Path(sys.executable).parent

SIDECAR = """\
tools:
  export_report:
    exit_predicates:
      - name: free_plan
        expr: account.plan == "free"
        reads: [account.plan]
  upgrade:
    mutates: true
    policies:
      - name: only_own_account
        expr: args.account != "acc-1"
        code: SHOP_OTHER_ACCOUNT
        reads: [args.account]
        fields: [account]
        message: You can only change the plan of the signed-in account
"""


@dataclass(frozen=True)
class Site:
    """The files of one gateway under test."""

    root: Path
    config: Path
    accounts: Path
    calls: Path
    log: Path

    def set_plan(self, plan: str) -> None:
        """Rewrite the accounts file (a new inode, as an editor or a sync job would)."""
        fresh = self.accounts.with_suffix(".new")
        fresh.write_text(json.dumps({"acc-1": {"account": {"plan": plan}}}), encoding="utf-8")
        fresh.replace(self.accounts)

    def upstream_calls(self) -> list[str]:
        if not self.calls.exists():
            return []
        lines = self.calls.read_text(encoding="utf-8").splitlines()
        return [json.loads(line)["name"] for line in lines]


@pytest.fixture
def site(tmp_path: Path) -> Site:
    accounts = tmp_path / "accounts.json"
    calls = tmp_path / "calls.jsonl"
    (tmp_path / "shop.maitred.yaml").write_text(SIDECAR, encoding="utf-8")
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "account: acc-1\n"
        "state: accounts.json\n"
        "log: gateway.sqlite\n"
        "upstreams:\n"
        "  - name: shop\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(UPSTREAM))}]\n"
        f"    env: {{CALLS_FILE: {json.dumps(str(calls))}, "
        f"ACCOUNTS: {json.dumps(str(accounts))}}}\n"
        "    contracts: shop.maitred.yaml\n",
        encoding="utf-8",
    )
    found = Site(tmp_path, config, accounts, calls, tmp_path / "gateway.sqlite")
    found.set_plan("free")
    return found


class Process:
    """A server run as a subprocess for a test: its output drained, waited on by pattern."""

    def __init__(
        self, args: list[str], env: dict[str, str], pattern: str, timeout: float = 90.0
    ) -> None:
        self.popen = subprocess.Popen(
            args,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()
        self.match = self._wait(re.compile(pattern), timeout)

    def _drain(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.put(line)

    def _wait(self, pattern: re.Pattern[str], timeout: float = 90.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.popen.poll() is not None:
                    break
                continue
            self.output.append(line)
            found = pattern.search(line)
            if found:
                return found
        self.stop()
        raise AssertionError(f"{pattern.pattern!r} never printed:\n{''.join(self.output)}")

    def said(self) -> str:
        """Everything the process printed so far (what a failing test shows)."""
        while not self.lines.empty():
            self.output.append(self.lines.get_nowait())
        return "".join(self.output)

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait(timeout=30)


@pytest.fixture(scope="session")
def langgraph_python() -> Path:
    """The LangGraph venv's python (``test_langgraph.py``), built by ``make frameworks-deps``
    where it is missing."""
    root = SRC.parent
    with open(root / ".venv-langgraph.lock", "w") as lock:  # pytest -n: one build at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        made = subprocess.run(
            ["make", "-s", "frameworks-deps"], cwd=root, capture_output=True, text=True
        )
    if made.returncode != 0:
        pytest.fail(f"make frameworks-deps failed:\n{made.stdout}{made.stderr}")
    return root / ".venv-langgraph" / "bin" / "python"


def child_env() -> dict[str, str]:
    """The environment for a subprocess: this tree's sources first, the venv's scripts on PATH."""
    path = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, "PYTHONPATH": str(SRC)}


def http_client(headers: dict[str, str] | None = None, **kwargs: Any) -> httpx2.AsyncClient:
    """An HTTP client for the MCP SDK's streamable HTTP transport, with the SDK's own time
    limits (30 s a request, 5 minutes a read on an event stream): httpx's default 5 s read
    limit ends an idle GET stream, and after two such ends the SDK stops listening -- a
    notification sent later (an upstream joined on a loaded machine) never arrives."""
    import httpx2  # the mcp extra's: the suite collects with the core install alone
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    return httpx2.AsyncClient(headers=headers, timeout=timeout, **kwargs)


def sha256(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
