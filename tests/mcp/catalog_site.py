"""A gateway in ``find_tools`` mode in front of 1,000 tools, over streamable HTTP, for the
``call_tool`` agent tests (``test_call_tool_agents.py``).

``catalog_server.py`` serves the tools; the sidecar hides ``export_report`` on the free plan
(an exit predicate) and asks a scope the token does not carry for ``delete_backup``; the
bearer token is acc-1's, on the free plan, granted ``workspace`` only.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tests.mcp.conftest import Process, child_env, sha256

from maitred.log.base import open_log

SERVER = Path(__file__).with_name("catalog_server.py")
TOKEN = "tok-workspace-acc1-9c3e"
SIDECAR = """\
tools:
  export_report:
    exit_predicates:
      - name: free_plan
        expr: account.plan == "free"
        reads: [account.plan]
        message: Reports are for paid plans.
  delete_backup:
    scopes: [backup:admin]
"""


@dataclass
class CatalogSite:
    """A running gateway over the 1,000 tools: its URL, its log, what reached the upstream."""

    root: Path
    url: str
    gateway: Process
    #: what happened before this view was taken (:meth:`since_now`): left out of its answers
    calls_before: int = 0
    decisions_before: frozenset[str] = frozenset()

    def upstream_calls(self) -> list[str]:
        path = self.root / "calls.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        return [json.loads(line)["name"] for line in lines][self.calls_before :]

    def decisions(self) -> list[dict[str, Any]]:
        """The gateway's logged call decisions, oldest first."""
        with open_log(str(self.root / "gateway.sqlite"), read_only=True) as log:
            rows = sorted(log.iter_action_decisions(), key=lambda r: str(r["logged_at"]))
        return [
            json.loads(r["decision_json"])
            for r in rows
            if r["decision_id"] not in self.decisions_before
        ]

    def since_now(self) -> CatalogSite:
        """This gateway, seen from now on: earlier calls and decisions left out."""
        seen = replace(self, calls_before=0, decisions_before=frozenset())
        return replace(
            self,
            calls_before=len(seen.upstream_calls()),
            decisions_before=frozenset(d["decision_id"] for d in seen.decisions()),
        )


def serve_catalog(root: Path) -> CatalogSite:
    """Start ``maitred mcp`` over HTTP (a free loopback port) in front of the 1,000 tools."""
    (root / "accounts.json").write_text(
        json.dumps({"acc-1": {"account": {"plan": "free"}}}), encoding="utf-8"
    )
    (root / "workspace.maitred.yaml").write_text(SIDECAR, encoding="utf-8")
    env = {"CALLS_FILE": str(root / "calls.jsonl")}
    config = root / "gateway.yaml"
    config.write_text(
        "state: accounts.json\n"
        "log: gateway.sqlite\n"
        "disclosure: find_tools\n"
        "find: {method: bm25, top_k: 5}\n"
        "server: {host: 127.0.0.1, port: 0}\n"
        "tokens:\n"
        f"  - {{token_sha256: {sha256(TOKEN)}, tenant: acme, account: acc-1, "
        "scopes: [workspace]}\n"
        "upstreams:\n"
        "  - name: workspace\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(SERVER))}]\n"
        f"    env: {json.dumps(env)}\n"
        "    contracts: workspace.maitred.yaml\n",
        encoding="utf-8",
    )
    args = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
    gateway = Process(args, child_env(), r"serving (http://\S+)", timeout=300.0)
    return CatalogSite(root, gateway.match.group(1), gateway)
