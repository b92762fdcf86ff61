"""What one pass of the gateway's state watch costs, against re-listing every session.

In process, no MCP transport: the gateway's own :class:`~maitred.gateway.GatewayEngines` over the
generated tools of ``benchmarks/_mcp_upstream.py`` (every tool has an exit predicate, every
fifth one is paid-plan only), a JSON state file of ``--accounts`` accounts on the free plan,
a SQLite decision log, and ``--sessions`` gatekeepers spread over the accounts, each of which
has listed once. Three ways to run one watch pass, timed in the same run:

* **watch, state unchanged**: :meth:`GatewayEngines.recheck` (one state read per account, each tool
  decided once per account in memory, nothing logged);
* **naive re-list**: what a watch without the in-memory probe would do, a logged listing turn
  (:meth:`Gatekeeper.visible`) for every session on every pass;
* **watch, every account changed**: the plan of every account flips before each pass, so every
  session is re-listed (the probe, then the logged turn): the watch's worst case.

Bounded: ``--passes`` timed passes per way and size after one warm-up pass.

    PYTHONPATH=src .venv/bin/python benchmarks/gateway_watch.py
    PYTHONPATH=src .venv/bin/python benchmarks/gateway_watch.py --sizes 10 --passes 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _mcp_upstream import sidecar, tool_name

from maitred.gateway import Gatekeeper, GatewayEngines, parse_config


def _tools(n: int) -> list[dict[str, Any]]:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    return [
        {"name": tool_name(i), "description": f"Run step {i} on item n.", "inputSchema": schema}
        for i in range(n)
    ]


def _write_accounts(path: Path, accounts: int, plan: str) -> None:
    data = {f"acc-{a}": {"account": {"plan": plan, "status": "active"}} for a in range(accounts)}
    fresh = path.with_suffix(".new")
    fresh.write_text(json.dumps(data), encoding="utf-8")
    fresh.replace(path)


def _timed(passes: int, before: Callable[[int], None], run: Callable[[], Any]) -> list[float]:
    """Milliseconds per pass (``before(i)`` runs untimed ahead of pass ``i``)."""
    out = []
    for i in range(passes):
        before(i)
        t0 = time.perf_counter()
        run()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def measure(root: Path, tools: int, sessions: int, accounts: int, passes: int) -> dict[str, Any]:
    (root / "bench.maitred.yaml").write_text(sidecar(tools), encoding="utf-8")
    state = root / "accounts.json"
    _write_accounts(state, accounts, "free")
    config = parse_config(
        {
            "account": "acc-0",
            "state": str(state),
            "log": str(root / "watch.sqlite"),
            "upstreams": [{"name": "bench", "command": "x", "contracts": "bench.maitred.yaml"}],
        },
        "bench",
        base=root,
    )
    gates = GatewayEngines.open(config, {"bench": _tools(tools)})
    try:
        keepers: list[Gatekeeper] = [gates.keeper(f"acc-{s % accounts}") for s in range(sessions)]
        for keeper in keepers:
            keeper.visible()
        plans = ["pro", "free"]

        def same(i: int) -> None:
            return None

        def flip(i: int) -> None:
            _write_accounts(state, accounts, plans[i % 2])

        gates.recheck(keepers)  # warm-up
        quiet = _timed(passes, same, lambda: gates.recheck(keepers))
        naive = _timed(passes, same, lambda: [k.visible() for k in keepers])
        changed: list[int] = []
        busy = _timed(passes, flip, lambda: changed.append(len(gates.recheck(keepers))))
        assert all(c == sessions for c in changed), changed  # every session was re-listed
    finally:
        gates.close()
    return {"tools": tools, "quiet": quiet, "naive": naive, "busy": busy}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,1000", help="tool counts, comma-separated")
    parser.add_argument("--sessions", type=int, default=50, help="listed sessions")
    parser.add_argument("--accounts", type=int, default=10, help="accounts they belong to")
    parser.add_argument("--passes", type=int, default=5, help="timed passes per way and size")
    opts = parser.parse_args()
    print(
        f"{opts.sessions} listed sessions over {opts.accounts} accounts; {opts.passes} passes; "
        "median ms per pass (min-max)"
    )
    print("| tools | watch, state unchanged | naive re-list of every session | ratio naive / watch "
          "| watch, every account changed |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in opts.sizes.split(",")):
        with tempfile.TemporaryDirectory() as folder:
            got = measure(Path(folder), size, opts.sessions, opts.accounts, opts.passes)

        def cell(values: list[float]) -> str:
            return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"

        ratio = statistics.median(got["naive"]) / statistics.median(got["quiet"])
        print(
            f"| {size:,} | {cell(got['quiet'])} | {cell(got['naive'])} | {ratio:.1f}x "
            f"| {cell(got['busy'])} |"
        )


if __name__ == "__main__":
    main()
