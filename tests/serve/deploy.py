"""A small deployment for the service tests: an MCP tools file with a contract sidecar, a SQLite
state store, a SQLite decision log, two tenants, and the server config that joins them."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import yaml

TOKENS = {"acme": "acme-secret-token", "globex": "globex-secret-token"}
PLANS = {"acc-free": "free", "acc-pro": "pro", "glx-1": "pro"}
TOOLS_LIST = {
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
DOMAIN_TEXT = "connect my custom domain name to my website"


def sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def auth(tenant: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[tenant]}"}


def write_deployment(root: Path, **overrides: Any) -> Path:
    """Files of a deployment under ``root``; returns the config path."""
    (root / "tools.json").write_text(json.dumps(TOOLS_LIST), encoding="utf-8")
    (root / "tools.maitred.yaml").write_text(SIDECAR, encoding="utf-8")
    with sqlite3.connect(root / "accounts.db") as conn:
        conn.execute("CREATE TABLE accounts (account_id TEXT PRIMARY KEY, plan TEXT)")
        conn.executemany("INSERT INTO accounts VALUES (?, ?)", PLANS.items())
    conn.close()
    config: dict[str, Any] = {
        "catalogs": ["tools.json"],
        "state": f"sqlite:///{root / 'accounts.db'}",
        "tables": {"account": "accounts"},
        "state_timeout_s": 0.2,
        "options": {"method": "bm25", "top_k": 5},
        "log": "log.sqlite",
        "cache_dir": "cache",
        "tenants": {
            "acme": {"token_sha256": sha(TOKENS["acme"]), "accounts": ["acc-free", "acc-pro"]},
            "globex": {"token_sha256": sha(TOKENS["globex"]), "account_prefix": "glx-"},
        },
        "limits": {"max_body_bytes": 4096, "max_sessions": 100, "session_idle_s": 600},
        **overrides,
    }
    path = root / "serve.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def logged_turns(root: Path) -> int:
    with sqlite3.connect(root / "log.sqlite") as conn:
        n = int(conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0])
    conn.close()
    return n


def logged_decisions(root: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(root / "log.sqlite") as conn:
        rows = conn.execute("SELECT decision_id, code FROM action_decisions").fetchall()
    conn.close()
    return [(str(a), str(b)) for a, b in rows]
