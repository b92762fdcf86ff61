"""The ``site`` of ``conftest.py`` served over streamable HTTP, for the agent-framework tests.

The same recording upstream, contracts and accounts file as the stdio tests, behind
``maitred mcp --config F`` with a ``server:`` block and one bearer token for ``acc-1``: a
deployment as an application reaches it (by URL and token) while the test can still change
the account's state under it and read what reached the upstream and what was logged.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

from tests.mcp.conftest import UPSTREAM, Process, Site, child_env, sha256

from maitred.log.base import open_log

TOKEN = "tok-shop-acc1-4be0"


@dataclass
class HttpSite:
    """A running HTTP gateway in front of ``site``'s upstream."""

    site: Site
    url: str
    gateway: Process

    def decisions(self) -> list[dict[str, Any]]:
        """The gateway's logged call decisions, oldest first."""
        with open_log(str(self.site.log)) as log:
            return sorted(log.iter_action_decisions(), key=lambda r: str(r["decided_at"]))


def serve_http(site: Site) -> HttpSite:
    """Start ``maitred mcp`` over HTTP (a free loopback port) for ``site``; stop it when done."""
    config = site.root / "gateway-http.yaml"
    env = {"CALLS_FILE": str(site.calls), "ACCOUNTS": str(site.accounts)}
    config.write_text(
        "state: accounts.json\n"
        "log: gateway.sqlite\n"
        "server: {host: 127.0.0.1, port: 0}\n"
        "tokens:\n"
        f"  - {{token_sha256: {sha256(TOKEN)}, tenant: shop, account: acc-1}}\n"
        "upstreams:\n"
        "  - name: shop\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(UPSTREAM))}]\n"
        f"    env: {json.dumps(env)}\n"
        "    contracts: shop.maitred.yaml\n",
        encoding="utf-8",
    )
    args = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
    gateway = Process(args, child_env(), r"serving (http://\S+)")
    return HttpSite(site, gateway.match.group(1), gateway)
