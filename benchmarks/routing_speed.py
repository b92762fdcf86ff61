"""Per-query recall time of every method at 1,000 skills, as ratios to ``dense`` in one run.

The catalog is ``_catalogs.make_catalog(1000)`` (the 199 MetaTool tools and seeded variants),
the messages 300 MetaTool queries. Each method's index is built (dense: loaded from the cache
after the first run) before timing; then every method ranks every message once as a warm-up
and the methods are timed *interleaved*, message by message, so that a slow moment of the
shared machine costs them all alike. Query embeddings are not cached between methods: each
method gets its own recaller and its own (cold) query cache, and no message repeats.

Run: ``.venv/bin/python benchmarks/routing_speed.py [--skills 1000] [--messages 300]``. It
prints the median and mean milliseconds per query of each method and its ratio to ``dense``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import _catalogs as wl  # noqa: E402

from maitred.recall import MiniLMEmbedder, make_recaller  # noqa: E402
from maitred.recall.base import Recaller  # noqa: E402

METHODS = ("dense", "bm25-plain", "bm25", "hybrid", "fused")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--cache", type=Path, default=REPO / "bench-out" / "cache")
    args = parser.parse_args(argv)
    catalog = wl.make_catalog(args.skills)
    texts = list(dict.fromkeys(wl.load_queries(args.messages * 3)))
    warm, timed = texts[: args.messages], texts[args.messages : 2 * args.messages]
    builder = wl.DistinctTextEmbedder(MiniLMEmbedder())
    make_recaller("dense", catalog, cache_dir=args.cache, embedder=builder)  # build once
    recallers: dict[str, Recaller] = {
        m: make_recaller(m, catalog, cache_dir=args.cache) for m in METHODS
    }
    for recaller in recallers.values():
        for text in warm:
            recaller.rank(text, 10)
    times: dict[str, list[float]] = {m: [] for m in METHODS}
    for text in timed:
        for method, recaller in recallers.items():
            start = time.perf_counter()
            recaller.rank(text, 10)
            times[method].append(1000.0 * (time.perf_counter() - start))
    base = statistics.median(times["dense"])
    print(f"{args.skills} skills, {len(timed)} messages, top 10, one process, interleaved")
    print("| method | median ms/query | mean ms/query | median / dense |")
    print("|---|---:|---:|---:|")
    for method, values in times.items():
        med = statistics.median(values)
        print(f"| {method} | {med:.2f} | {statistics.mean(values):.2f} | {med / base:.2f}x |")


if __name__ == "__main__":
    main()
