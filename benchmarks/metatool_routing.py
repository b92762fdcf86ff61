"""Routing accuracy of maitred's recall methods on MetaTool (arXiv 2310.03128).

What it does, in order:

1. **Prepare** the data from the MetaTool folder (``--data``, default ``../shared/data/metatool``
   relative to the repository):

   - ``tools.jsonl``: the 199 tools named in ``all_clean_data.csv``, one JSON object a line,
     ``{"name", "description", "body"}``. The description comes from ``big_tool_des.json`` (the
     47 merged tools) or ``plugin_des.json``; the body is the plugin manifests'
     ``description_for_model`` from ``plugin_info.json`` (distinct texts joined; 46 merged tools
     have none). Names match case-insensitively, as the data's README says.
   - queries: the single-tool queries of ``all_clean_data.csv`` (texts that occur twice with
     different tools are ambiguous and dropped; exact repeats are kept once) and the two-tool
     queries of ``multi_tool_query_golden.json``.
   - a split by a seeded hash of the query *text* (so a repeated text cannot sit on both sides):
     about 30% dev, 70% test. Single-tool queries are then sampled (seeded) to ``--dev-size``
     and ``--test-size`` to keep the embedding time in minutes on a small CPU; every two-tool
     query of each side is kept. Written as ``dev.jsonl``, ``test.jsonl``, plus
     ``test-single.jsonl`` and ``test-multi.jsonl`` for the breakdown.

2. **Tune on dev only**: the BM25F field weights (by ``routing_tune.py``'s grid, dev nDCG@10)
   and the dense field mix (grid search on dev MRR). The tuned values are printed beside the
   defaults in ``maitred.recall``; a difference is flagged.

3. **Report on test** with the recallers exactly as ``make_recaller`` builds them (the code
   defaults), so the figures can be reproduced with::

       maitred eval routing --skills bench-out/metatool/tools.jsonl \\
           --queries bench-out/metatool/test.jsonl --method hybrid --json

Run: ``.venv/bin/python benchmarks/metatool_routing.py [--data DIR] [--out DIR]``. It prints
markdown tables and writes ``results.json`` to the output folder.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import itertools
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from maitred.recall import (
    DEFAULT_FIELD_MIX,
    DEFAULT_FIELD_WEIGHTS,
    MiniLMEmbedder,
    Query,
    embed_fields,
    evaluate_routing,
    load_queries,
    make_recaller,
    mix_fields,
    query_metrics,
)
from maitred.recall.bm25 import DEFAULT_STEMMER
from maitred.skills.model import Catalog, Skill

REPO = Path(__file__).resolve().parents[1]
DEV_SHARE = 0.3
METRICS = ("hit_at_1", "recall_at_5", "recall_at_10", "mrr", "ndcg_at_10", "complete_at_10")


# --------------------------------------------------------------------------- preparation


def load_tools(data: Path) -> list[dict[str, str]]:
    """The 199 tools of all_clean_data.csv with description and body."""
    with (data / "all_clean_data.csv").open(encoding="utf-8") as f:
        used = list(dict.fromkeys(row["Tool"] for row in csv.DictReader(f)))
    big = {k.lower(): v for k, v in json.loads((data / "big_tool_des.json").read_text()).items()}
    plug = {k.lower(): v for k, v in json.loads((data / "plugin_des.json").read_text()).items()}
    manifests: dict[str, list[str]] = {}
    for entry in json.loads((data / "plugin_info.json").read_text()):
        texts = manifests.setdefault(entry["name_for_model"].lower(), [])
        text = (entry.get("description_for_model") or "").strip()
        if text and text not in texts:
            texts.append(text)
    tools = []
    for name in used:
        key = name.lower()
        description = big.get(key) or plug.get(key)
        if not description:
            sys.exit(f"{data}: tool {name!r} has no description in big_tool_des/plugin_des")
        body = "\n\n".join(manifests.get(key, []))
        tools.append({"name": name, "description": description.strip(), "body": body})
    return tools


def load_all_queries(data: Path, names: Sequence[str]) -> tuple[list[Query], list[Query], int]:
    """(single-tool queries, two-tool queries, ambiguous texts dropped)."""
    canonical = {n.lower(): n for n in names}
    tools_of: dict[str, list[str]] = {}
    with (data / "all_clean_data.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            text = row["Query"].strip()
            tools = tools_of.setdefault(text, [])
            if row["Tool"] not in tools:
                tools.append(row["Tool"])
    single = [
        Query(f"s{i}", text, (tools[0],))
        for i, (text, tools) in enumerate(tools_of.items())
        if len(tools) == 1
    ]
    ambiguous = sum(1 for tools in tools_of.values() if len(tools) > 1)
    multi = []
    for i, entry in enumerate(json.loads((data / "multi_tool_query_golden.json").read_text())):
        gold = tuple(dict.fromkeys(canonical[t.lower()] for t in entry["tool"]))
        multi.append(Query(f"m{i}", entry["query"].strip(), gold))
    return single, multi, ambiguous


def is_dev(query: Query, seed: int) -> bool:
    """Seeded, stable assignment by text: dev with probability DEV_SHARE."""
    digest = hashlib.sha256(f"{seed}:{query.text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < DEV_SHARE


def sample(queries: list[Query], size: int, seed: int) -> list[Query]:
    if size <= 0 or size >= len(queries):
        return queries
    picked = set(random.Random(seed).sample(range(len(queries)), size))
    return [q for i, q in enumerate(queries) if i in picked]


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


def prepare(args: argparse.Namespace) -> dict[str, Any]:
    """Write tools and query files; return counts for the report."""
    tools = load_tools(args.data)
    single, multi, ambiguous = load_all_queries(args.data, [t["name"] for t in tools])
    parts: dict[str, list[Query]] = {}
    for side, size in (("dev", args.dev_size), ("test", args.test_size)):
        want_dev = side == "dev"
        s = sample([q for q in single if is_dev(q, args.seed) == want_dev], size, args.seed)
        m = [q for q in multi if is_dev(q, args.seed) == want_dev]
        parts[f"{side}-single"], parts[f"{side}-multi"] = s, m
        parts[side] = s + m
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "tools.jsonl", tools)
    for name in ("dev", "test", "test-single", "test-multi"):
        rows = [{"id": q.id, "text": q.text, "gold": list(q.gold)} for q in parts[name]]
        write_jsonl(args.out / f"{name}.jsonl", rows)
    return {
        "tools": len(tools),
        "single_queries": len(single),
        "multi_queries": len(multi),
        "ambiguous_dropped": ambiguous,
        **{f"n_{k}": len(v) for k, v in parts.items()},
    }


def read_catalog(path: Path) -> Catalog:
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    return Catalog(
        skills=tuple(
            Skill(name=r["name"], description=r["description"], kind="tool", body=r["body"])
            for r in rows
        )
    )


# --------------------------------------------------------------------------- tuning


def mean_mrr(
    score_rows: NDArray[np.float32],
    queries: Sequence[Query],
    names: Sequence[str],
    *,
    positive_only: bool,
) -> float:
    """Mean MRR of rankings given as a [queries, skills] score matrix (ties: catalog order)."""
    total = 0.0
    for row, query in zip(score_rows, queries, strict=True):
        order = np.lexsort((np.arange(len(names)), -row))[:100]
        ranked = [names[i] for i in order if row[i] > 0 or not positive_only]
        total += query_metrics(ranked, query.gold)["mrr"]
    return total / len(queries)


def tune_bm25(catalog: Catalog, dev: Sequence[Query]) -> dict[str, Any]:
    """BM25F field weights by the grid of ``routing_tune.py`` (dev nDCG@10; stemmer kept)."""
    from routing_tune import fit_bm25f

    score, weights = fit_bm25f(catalog, dev)
    return {"ndcg_at_10": score, "stemmer": DEFAULT_STEMMER, "weights": weights}


class CachingEmbedder:
    """Wraps an embedder so that repeated texts (queries across methods) are embedded once."""

    def __init__(self, inner: MiniLMEmbedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.cache: dict[str, NDArray[np.float32]] = {}

    def encode(self, texts: Sequence[str], *, progress: Any = None) -> NDArray[np.float32]:
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            for text, vector in zip(todo, self.inner.encode(todo, progress=progress), strict=True):
                self.cache[text] = vector
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.cache[t] for t in texts])


def tune_dense(catalog: Catalog, dev: Sequence[Query], embedder: CachingEmbedder) -> dict[str, Any]:
    fields = embed_fields(catalog, embedder, ("name", "description", "body"))
    queries = embedder.encode([q.text for q in dev], progress=_progress("embed dev queries"))
    best: dict[str, Any] = {"mrr": -1.0}
    grid = (0.0, 0.25, 0.5, 0.75, 1.0)
    for wn, wb in itertools.product(grid, grid):
        mix = {"name": wn, "description": 1.0, "body": wb}
        scores = queries @ mix_fields(fields, mix).T
        mrr = mean_mrr(scores, dev, catalog.names, positive_only=False)
        if mrr > best["mrr"] + 1e-9:
            best = {"mrr": mrr, "field_mix": mix}
    return best


def _progress(label: str) -> Any:
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] > 10 or done == total:
            print(f"  {label}: {done}/{total}", file=sys.stderr, flush=True)
            last[0] = now

    return report


# --------------------------------------------------------------------------- report


def table(rows: Sequence[dict[str, Any]]) -> str:
    head = "| method | n | " + " | ".join(METRICS) + " |"
    rule = "|---|---:|" + "---:|" * len(METRICS)
    body = [
        f"| {r['method']} | {r['n_queries']} | " + " | ".join(f"{r[m]:.3f}" for m in METRICS) + " |"
        for r in rows
    ]
    return "\n".join([head, rule, *body])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO / ".." / "shared/data/metatool")
    parser.add_argument("--out", type=Path, default=REPO / "bench-out/metatool")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dev-size", type=int, default=2000, help="single-tool dev sample")
    parser.add_argument("--test-size", type=int, default=3000, help="single-tool test sample")
    parser.add_argument("--no-tune", action="store_true", help="skip the dev grid search")
    args = parser.parse_args(argv)

    counts = prepare(args)
    print(f"prepared {args.out}: {json.dumps(counts)}", file=sys.stderr)
    catalog = read_catalog(args.out / "tools.jsonl")
    dev = load_queries(args.out / "dev.jsonl")
    embedder = CachingEmbedder(MiniLMEmbedder())

    tuned: dict[str, Any] = {}
    if not args.no_tune:
        t0 = time.monotonic()
        tuned["bm25"] = tune_bm25(catalog, dev)
        tuned["dense"] = tune_dense(catalog, dev, embedder)
        tuned["seconds"] = round(time.monotonic() - t0, 1)
        print(f"tuned on dev: {json.dumps(tuned)}", file=sys.stderr)

    results: dict[str, list[dict[str, Any]]] = {}
    for split in ("test", "test-single", "test-multi"):
        queries = load_queries(args.out / f"{split}.jsonl")
        embedder.encode([q.text for q in queries], progress=_progress(f"embed {split}"))
        results[split] = [
            evaluate_routing(make_recaller(m, catalog, embedder=embedder), queries, m)
            for m in ("bm25", "dense", "hybrid")
        ]
    out = {
        "counts": counts,
        "tuned_on_dev": tuned,
        "defaults": {"bm25": dict(DEFAULT_FIELD_WEIGHTS), "dense": dict(DEFAULT_FIELD_MIX)},
        "results": results,
    }
    (args.out / "results.json").write_text(json.dumps(out, indent=1), "utf-8")

    print(
        f"## MetaTool routing (seed {args.seed}; single-tool queries sampled: dev "
        f"{counts['n_dev-single']} of ~30%, test {counts['n_test-single']} of ~70%; "
        f"all two-tool queries kept)\n"
    )
    for split, rows in results.items():
        print(f"### {split}\n\n{table(rows)}\n")
    if tuned:
        print(f"tuned on dev: bm25 {tuned['bm25']}; dense {tuned['dense']}")
        print(
            f"code defaults: bm25 {dict(DEFAULT_FIELD_WEIGHTS)}, stemmer {DEFAULT_STEMMER}; "
            f"dense {dict(DEFAULT_FIELD_MIX)}"
        )
        if stale_defaults(tuned):
            print("WARNING: the dev-tuned values differ from the code defaults reported above")


def stale_defaults(tuned: dict[str, Any]) -> bool:
    """Whether the tuned values differ from the defaults in maitred.recall."""
    bm25, dense = tuned["bm25"], tuned["dense"]
    return (
        bm25["stemmer"] != DEFAULT_STEMMER
        or any(DEFAULT_FIELD_WEIGHTS.get(f) != w for f, w in bm25["weights"].items())
        or any(DEFAULT_FIELD_MIX.get(f) != w for f, w in dense["field_mix"].items())
    )


if __name__ == "__main__":
    main()
