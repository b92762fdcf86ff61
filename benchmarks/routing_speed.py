"""Per-query recall time of every method at 1,000 skills, as ratios to ``dense`` in one run.

The catalog is ``_catalogs.make_catalog(1000)`` (the 199 MetaTool tools and seeded variants),
the messages 300 MetaTool queries. Each method's index is built (dense: loaded from the cache
after the first run) before timing; then every method ranks every message once as a warm-up
and the methods are timed *interleaved*, message by message, so that a slow moment of the
shared machine costs them all alike. Query embeddings are not cached between methods: each
method gets its own recaller and its own (cold) query cache, and no message repeats.

Run: ``.venv/bin/python benchmarks/routing_speed.py [--skills 1000] [--messages 300]``. It
prints the median and mean milliseconds per query of each method and its ratio to ``dense``.

``--default-ab`` times instead the default recaller (``adaptive``, analyzer ``scripts``,
embedder ``auto``) against today's (``adaptive`` with the ``words`` analyzer every index used
before and ``minilm``), the same way: both built before timing, interleaved, the side that
goes first alternating message by message; it prints their ratio, and the time ``auto`` spends
once per catalog detecting its languages.
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
from maitred.recall.languages import catalog_languages  # noqa: E402
from maitred.skills.model import Catalog  # noqa: E402

METHODS = ("dense", "bm25-plain", "bm25", "hybrid", "fused")


def default_ab(catalog: Catalog, warm: Sequence[str], timed: Sequence[str], cache: Path) -> None:
    """The default recaller against today's, interleaved (see the module docstring)."""
    start = time.perf_counter()
    languages = catalog_languages(catalog)
    detect_ms = 1000.0 * (time.perf_counter() - start)
    sides: dict[str, Recaller] = {
        "today (words, minilm)": make_recaller(
            "adaptive", catalog, cache_dir=cache, analyzer="words", embedder="minilm"
        ),
        "default (scripts, auto)": make_recaller("adaptive", catalog, cache_dir=cache),
    }
    for recaller in sides.values():
        for text in warm:
            recaller.rank(text, 10)
    times: dict[str, list[float]] = {name: [] for name in sides}
    for i, text in enumerate(timed):
        for name in list(sides) if i % 2 == 0 else list(reversed(sides)):
            start = time.perf_counter()
            sides[name].rank(text, 10)
            times[name].append(1000.0 * (time.perf_counter() - start))
    today, now = (statistics.median(v) for v in times.values())
    print(f"{len(catalog)} skills ({languages}), {len(timed)} messages, top 10, interleaved")
    for name, values in times.items():
        print(f"{name}: median {statistics.median(values):.2f} ms/query")
    print(f"default / today: {now / today:.3f}x; language detection once: {detect_ms:.1f} ms")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--cache", type=Path, default=REPO / "bench-out" / "cache")
    parser.add_argument("--default-ab", action="store_true", help="see the module docstring")
    parser.add_argument("--metatool", type=Path, default=wl.DATA, help="MetaTool's data folder")
    args = parser.parse_args(argv)
    catalog = wl.make_catalog(args.skills, data=args.metatool)
    texts = list(dict.fromkeys(wl.load_queries(args.messages * 3, data=args.metatool)))
    warm, timed = texts[: args.messages], texts[args.messages : 2 * args.messages]
    builder = wl.DistinctTextEmbedder(MiniLMEmbedder())
    make_recaller("dense", catalog, cache_dir=args.cache, embedder=builder)  # build once
    if args.default_ab:
        default_ab(catalog, warm, timed, args.cache)
        return
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
