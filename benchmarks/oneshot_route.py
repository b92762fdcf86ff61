"""Start-up cost of a one-shot `maitred route` on the sitecare skills (issue 12, item 17).

Each run is a fresh process, as a user at a shell would start it: imports, catalog load, index
load from the cache, state read, menu, JSON out. Runs of the trees compared are interleaved,
so machine load hits them alike. Reported per tree and method: the median wall time, the median
CPU time of the process (user + system; it moves less with load than wall time does) and the
median menu-stage time from the turn's own ``timings_us``. The first run of each tree (it
builds indexes and caches) is not counted.

    python benchmarks/oneshot_route.py --runs 7 --methods bm25 dense
    python benchmarks/oneshot_route.py --base /tmp/base/src   # compare with another source tree
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SKILLS = REPO / "src" / "maitred" / "lab" / "domains" / "sitecare" / "skills"
MESSAGE = "I'd like my site to show at my own domain"


def _demo(out: Path, src: Path) -> None:
    """The sitecare accounts and tables the route reads (``maitred demo``), made once."""
    if (out / "accounts.sqlite").is_file():
        return
    code = "from maitred.cli.main import main; main()"
    args = [sys.executable, "-c", code, "demo", "--messages", "200", "--out", str(out)]
    subprocess.run(args, env={**os.environ, "PYTHONPATH": str(src)}, check=True)


def _route(src: Path, method: str, demo: Path, cache: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, menu ms) of one `maitred route --json` in a new process."""
    code = "from maitred.cli.main import main; main()"
    args = [sys.executable, "-c", code, "route", MESSAGE, "--account", "acc-000001"]
    args += ["--skills", str(SKILLS), "--state", f"sqlite:///{demo / 'accounts.sqlite'}"]
    args += ["--tables", str(demo / "tables.json"), "--method", method, "--family"]
    args += ["--min-score", "0.35", "--cache-dir", str(cache), "--json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        args, env={**os.environ, "PYTHONPATH": str(src)}, capture_output=True, check=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    menu_ms = json.loads(done.stdout)["timings_us"]["menu"] / 1000
    return wall, cpu, menu_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--methods", nargs="+", default=["bm25", "dense"])
    parser.add_argument("--base", type=Path, help="another `src` folder to compare with")
    parser.add_argument("--demo", type=Path, help="sitecare demo output (made when missing)")
    args = parser.parse_args()
    trees = {"this tree": REPO / "src"}
    if args.base is not None:
        trees = {"base": args.base.resolve(), **trees}
    with tempfile.TemporaryDirectory(prefix="oneshot-") as tmp:
        demo = args.demo or Path(tmp) / "demo"
        _demo(demo, REPO / "src")
        print(f"load average at the start: {os.getloadavg()[0]:.2f}")
        print("| method | tree | wall (median) | CPU (median) | menu stage (median) |")
        print("|---|---|---:|---:|---:|")
        for method in args.methods:
            results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in trees}
            caches = {name: Path(tmp) / f"cache-{i}" for i, name in enumerate(trees)}
            for name, src in trees.items():  # first run: builds the index and the caches
                _route(src, method, demo, caches[name])
            for _ in range(args.runs):
                for name, src in trees.items():
                    results[name].append(_route(src, method, demo, caches[name]))
            for name, rows in results.items():
                wall, cpu, menu = (statistics.median(col) for col in zip(*rows, strict=True))
                print(f"| {method} | {name} | {wall:.2f} s | {cpu:.2f} s | {menu:.1f} ms |")
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
