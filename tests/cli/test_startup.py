"""A one-shot command pays at start-up only for what it uses (issue 12, item 17).

A fresh interpreter runs ``maitred route`` on a small tools file with CEL exit predicates, then
lists the heavy packages it imported. Time is never asserted (that is for
``benchmarks/oneshot_route.py``); what is imported is, since each of these costs a tenth of a
second or more of CPU on every command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import maitred

TOOLS = {
    "tools": [
        {
            "name": "connect_custom_domain",
            "description": "Connect a custom domain name to the website.",
            "inputSchema": {"type": "object", "properties": {"domain": {"type": "string"}}},
        }
    ]
}
SIDECAR = """
tools:
  connect_custom_domain:
    exit_predicates:
      - name: on_free_plan
        expr: account.plan == "free"
        reads: [account.plan]
"""
#: imported by something a route does not use: the audits' hypothesis, the CEL package's own
#: interactive shell (prompt_toolkit), the service and gateway stacks
UNUSED = ["hypothesis", "prompt_toolkit", "starlette", "uvicorn", "fastmcp", "torch"]
SCRIPT = """
import json, sys
from maitred.cli.main import app
try:
    app(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "loaded": [m for m in UNUSED if m in sys.modules]}))
"""


def test_route_imports_nothing_it_does_not_use(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    (tmp_path / "tools.maitred.yaml").write_text(SIDECAR, encoding="utf-8")
    state = tmp_path / "accounts.json"
    state.write_text(json.dumps({"acc-1": {"account": {"plan": "free"}}}), encoding="utf-8")
    tools, cache = str(tmp_path / "tools.json"), str(tmp_path / "cache")
    args = ["route", "connect my custom domain", "-a", "acc-1", "-s", tools,
            "--state", str(state), "-m", "bm25", "--cache-dir", cache, "--json"]  # fmt: skip
    src = str(Path(maitred.__file__).parents[1])  # this tree's package, from any folder
    path = os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, "MAITRED_CACHE_DIR": cache}
    out = subprocess.run(
        [sys.executable, "-c", f"UNUSED = {UNUSED!r}\n{SCRIPT}", *args],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=tmp_path,
    )
    *turn, last = out.stdout.strip().splitlines()
    result = json.loads(last)
    assert result["code"] in (0, None), out.stderr
    assert json.loads("\n".join(turn))["blocked"][0]["skill"] == "connect_custom_domain"
    assert result["loaded"] == []


def test_the_cel_binding_is_one_module_with_or_without_the_package() -> None:
    code = (
        "import sys; from maitred.contract.predicate import cel_binding; b = cel_binding(); "
        "p = b.compile('x == 1'); assert p.execute({'x': 1}) is True; "
        "shell = 'prompt_toolkit' in sys.modules; import cel; "
        "print(shell, cel.compile is b.compile)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_the_cel_binding_loads_once_under_concurrent_first_use() -> None:
    code = (
        "import threading; from maitred.contract.predicate import cel_binding; got = []; "
        "ts = [threading.Thread(target=lambda: got.append(cel_binding())) for _ in range(8)]; "
        "[t.start() for t in ts]; [t.join() for t in ts]; "
        "print(len(got), len({id(m) for m in got}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["8", "1"], out.stderr
