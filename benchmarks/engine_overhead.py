"""What the entry object costs: import time, and turn()/check() against the parts they wrap.

Three figures, each a ratio measured in one run (these machines are shared and noisy):

* ``import``: wall time of ``python -c "import maitred"`` and of
  ``python -c "from maitred import Maitred"``, each over a bare ``python -c pass``
  (median of ``--runs`` fresh interpreters; ``import maitred`` is lazy and should cost ~nothing);
* ``turn``: :meth:`Maitred.turn` (with a session, no log) over :meth:`Pipeline.route` on the same
  messages (the session bookkeeping; goal: ~1.0);
* ``check``: :meth:`Maitred.check` (state fetched from the provider) over
  :meth:`ActionGate.check` on an already-fetched snapshot, for one mutating tool with an exit
  predicate, a schema and a CEL call policy.

    .venv/bin/python benchmarks/engine_overhead.py
    .venv/bin/python benchmarks/engine_overhead.py --src /path/to/other/checkout/src  # import only
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
      - {name: on_free_plan, expr: 'account.plan == "free"', reads: [account.plan]}
    policies:
      - name: domain_too_long
        expr: size(args.domain) > 63
        code: DOMAIN_TOO_LONG
        reads: [args.domain]
        message: too long
"""


def _interpreter(code: str, runs: int, src: str | None) -> float:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def import_times(runs: int, src: str | None) -> dict[str, Any]:
    bare = _interpreter("pass", runs, src)
    light = _interpreter("import maitred", runs, src)
    out = {
        "bare_s": round(bare, 4),
        "import_maitred_s": round(light, 4),
        "import_maitred_over_bare": round(light / bare, 2),
    }
    if not src:  # another checkout may predate the entry object
        engine = _interpreter("from maitred import Maitred", runs, src)
        out["import_engine_s"] = round(engine, 4)
        out["import_engine_over_bare"] = round(engine / bare, 2)
    return out


def call_overhead(n: int) -> dict[str, Any]:
    from maitred import Maitred, MemoryStateProvider, PipelineOptions, ToolCall
    from maitred.actions.document import SnapshotState
    from maitred.records import Message

    folder = Path(tempfile.mkdtemp())
    (folder / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    (folder / "tools.maitred.yaml").write_text(SIDECAR, encoding="utf-8")
    state = MemoryStateProvider({"acc": {"account": {"plan": "pro"}}})
    engine = Maitred.open([folder / "tools.json"], state, PipelineOptions(method="bm25"))
    texts = ["connect my custom domain", "list my domains", "hello there"] * (n // 3 + 1)
    session = engine.session("acc")
    for text in texts[:50]:  # warm both paths (token counting and index set-up happen once)
        engine.turn(text, session=session)
    route_s = turn_s = 0.0
    for block in range(0, n, 100):  # interleaved blocks, fair under drifting load
        t0 = time.perf_counter()
        for i, text in enumerate(texts[block : block + 100]):
            engine.pipeline.route(Message(f"p{block}-{i}", text, "acc"))
        route_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        for text in texts[block : block + 100]:
            engine.turn(text, session=session)
        turn_s += time.perf_counter() - t0
    engine.turn("connect my custom domain", session=session)
    call = ToolCall("connect_custom_domain", {"domain": "example.com"})
    snap = SnapshotState(state.fetch("acc", ["account.plan"]))
    gate_s = check_s = 0.0
    for _ in range(0, n, 100):
        t0 = time.perf_counter()
        for _ in range(100):
            engine.action_gate.check(call, snap, session, offered=session.offered)
        gate_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(100):
            decision = engine.check(call, session=session)
        check_s += time.perf_counter() - t0
    assert decision.allow, decision.message
    return {
        "n": n,
        "route_us": round(route_s / n * 1e6, 1),
        "turn_us": round(turn_s / n * 1e6, 1),
        "turn_over_route": round(turn_s / route_s, 2),
        "gate_check_us": round(gate_s / n * 1e6, 1),
        "engine_check_us": round(check_s / n * 1e6, 1),
        "check_over_gate": round(check_s / gate_s, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh interpreters per import case")
    parser.add_argument("--calls", type=int, default=2000, help="turns and checks timed")
    parser.add_argument("--src", help="time the import of another checkout's src/ instead")
    args = parser.parse_args()
    out: dict[str, Any] = {"import": import_times(args.runs, args.src)}
    if not args.src:
        out["calls"] = call_overhead(args.calls)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
