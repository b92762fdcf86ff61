"""Verdict, ruling and same-backbone baselines on MetaTool's held-out tools.

Needs `benchmarks/native_prep.py` (cached layer-24 states and the val / test samples under
bench-out/native). Trains the glance maps (300 steps, the recipe of native_eval.py) when
bench-out/native/maps-L24.npz is missing. Then, with SmolLM2-135M-Instruct:

1. per val and test query: glance, dense and BM25 scores over all 199 tools, and the verdict
   (likelihood, judgment) for the union of the glance's and dense's top-N (cached in
   bench-out/native/verdict-{split}.npz, so a rerun only re-fuses);
2. progressive disclosure (every tool's name and first sentence in the system prompt, each name
   scored as the answer; exact top-10, so its MRR is MRR@10) on the first --progressive test
   queries (cached in bench-out/native/progressive-test{n}.json);
3. the verdict's cost per query: cold skill cache, warm (KV reuse), and without reuse.

Prints one markdown table (Hit@1, Recall@5, MRR on test; weights calibrated on val) and writes
bench-out/native/verdict.json. The figures reported (2026-11-30, shared 2-core CPU):

    nice .venv/bin/python benchmarks/native_verdict.py --val 60 --test 120 --progressive 15 \
        --cost-queries 5
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from maitred.lab.native.train import TrainConfig, train_maps
from maitred.native.backbone import default_gguf, file_sha256, load_causal_lm
from maitred.native.baselines import ProgressiveRecaller, menu_token_count
from maitred.native.data import sample, skill_text
from maitred.native.gavel import DEFAULT_WEIGHTS, dense_scores, fill_shortlist
from maitred.native.glance import GlanceMaps, KeyBank
from maitred.native.ruling import ablation, calibrate, fuse, mean_metrics, standardise
from maitred.native.states import load_states
from maitred.native.verdict import Verdict
from maitred.recall.bm25 import BM25Recaller
from maitred.recall.dense import DenseRecaller
from maitred.recall.evaluate import Query, load_queries, query_metrics
from maitred.recall.registry import make_recaller
from maitred.skills.catalog import load_catalog

OUT = Path("bench-out/native")
# the id Backbone.load gives the default weights, so maps trained here load in `native-glance`
BACKBONE_ID = f"{default_gguf().stem}@{file_sha256(default_gguf())[:12]}"

F32 = np.ndarray


def trained_maps(names: tuple[str, ...], tools: list[F32]) -> GlanceMaps:
    """The layer-24 maps of docs/native.md (trained here if native_eval.py has not run)."""
    path = OUT / "maps-L24.npz"
    if path.is_file():
        return GlanceMaps.load(path)
    train_q = load_queries(OUT / "metatool/train.jsonl")
    _, states = load_states(OUT / "states/metatool/train-L24.npz")
    index = {n: i for i, n in enumerate(names)}
    keep = [i for i, q in enumerate(train_q) if len(q.gold) == 1]
    used = sorted({index[train_q[i].gold[0]] for i in keep})
    pos = {j: i for i, j in enumerate(used)}
    init = GlanceMaps.pca(
        np.concatenate([tools[j] for j in used] + [states[i] for i in keep]),
        256,
        backbone_id=BACKBONE_ID,
        layer=24,
    )
    t0 = time.time()
    maps = train_maps(
        init,
        [states[i] for i in keep],
        [pos[index[train_q[i].gold[0]]] for i in keep],
        [tools[j] for j in used],
        TrainConfig(steps=300, lr=1e-4),
    )
    maps.save(path)
    print(f"trained maps in {time.time() - t0:.0f} s", flush=True)
    return maps


def read_split(
    split: str,
    queries: list[Query],
    bank: KeyBank,
    maps: GlanceMaps,
    dense: DenseRecaller,
    bm25: BM25Recaller,
    verdict: Verdict,
    texts: list[str],
    shortlist: int,
) -> list[dict[str, Any]]:
    """Per query: catalog-wide glance / dense / bm25, and the verdict on both shortlists."""
    cache = OUT / f"verdict-{split}{len(queries)}-n{shortlist}.npz"
    ids, all_states = load_states(OUT / f"states/metatool/{split}-L24.npz")
    by_id = dict(zip(ids, all_states, strict=True))
    states = [by_id[q.id] for q in queries]
    n = len(texts)
    rows = []
    for query, state in zip(queries, states, strict=True):
        glance = bank.scores(maps.queries(state), 3).astype(np.float32)
        dense_v = dense_scores(dense, query.text)
        rows.append(
            {
                "glance": glance,
                "dense": dense_v,
                "bm25": bm25.scores(query.text).astype(np.float32),
                "g_list": [int(i) for i in np.argsort(-glance, kind="stable")[:shortlist]],
                "d_list": [int(i) for i in np.argsort(-dense_v, kind="stable")[:shortlist]],
            }
        )
    if cache.is_file():
        with np.load(cache) as data:
            lik, jud = data["likelihood"], data["judgment"]
        print(f"{split}: verdict scores from {cache}", flush=True)
    else:
        lik = np.full((len(rows), n), np.nan, np.float32)
        jud = np.full((len(rows), n), np.nan, np.float32)
        t0 = time.time()
        for qi, (query, row) in enumerate(zip(queries, rows, strict=True)):
            union = list(dict.fromkeys(row["g_list"] + row["d_list"]))
            got = verdict.score(query.text, [texts[i] for i in union])
            lik[qi, union], jud[qi, union] = got.likelihood, got.judgment
            if (qi + 1) % 20 == 0:
                print(
                    f"  {split} verdict {qi + 1}/{len(rows)} {time.time() - t0:.0f} s", flush=True
                )
        np.savez(cache, likelihood=lik, judgment=jud)
        print(f"{split}: verdict on {len(rows)} queries in {time.time() - t0:.0f} s", flush=True)
    for qi, row in enumerate(rows):
        for name, table in (("likelihood", lik), ("judgment", jud)):
            row[name] = fill_shortlist(table[qi, row["g_list"]], row["g_list"], n)
            row[f"d_{name}"] = table[qi, row["d_list"]]
    return rows


def recall_at_k(scores: list[F32], gold: list[set[int]], k: int) -> float:
    pairs = zip(scores, gold, strict=True)
    return float(
        np.mean([len(set(np.argsort(-s, kind="stable")[:k]) & g) / len(g) for s, g in pairs])
    )


def rerank_scores(row: dict[str, Any], weights: dict[str, float], n: int) -> F32:
    """Dense shortlist re-scored by the verdict above the rest in dense order."""
    fused = fuse({k: row[f"d_{k}"] for k in ("likelihood", "judgment")}, weights)
    out = standardise(row["dense"]) - 1e3  # the rest: dense order, below every shortlisted one
    out[row["d_list"]] = standardise(fused) if fused.std() > 0 else 0.0
    return out


def rerank_calibrate(rows: list[dict[str, Any]], gold: list[set[int]]) -> tuple[dict, float]:
    pairs = zip(rows, gold, strict=True)
    inside = [{j for j, i in enumerate(r["d_list"]) if i in g} for r, g in pairs]
    return calibrate([{k: r[f"d_{k}"] for k in ("likelihood", "judgment")} for r in rows], inside)


def progressive(
    catalog: Any, model: Any, tokenizer: Any, queries: list[Query]
) -> tuple[dict[str, float], dict[str, Any]]:
    """Exact top-10 by the bounded search (so MRR here is MRR@10, a lower bound)."""
    rec = ProgressiveRecaller(catalog, model, tokenizer, BACKBONE_ID, device="cpu")
    cache = OUT / f"progressive-test{len(queries)}.json"
    if cache.is_file():
        saved = json.loads(cache.read_text())
        rankings, took = saved["rankings"], saved["seconds"]
    else:
        t0 = time.time()
        rankings = [[c.name for c in rec.rank(q.text, 10)] for q in queries]
        took = time.time() - t0
        cache.write_text(json.dumps({"rankings": rankings, "seconds": took}))
    per = [query_metrics(r, q.gold) for r, q in zip(rankings, queries, strict=True)]
    info = {
        "n": len(queries),
        "menu_tokens": rec.menu_tokens,
        "prompt_tokens": rec.prompt_tokens,
        "description_chars": rec.description_chars,
        "s_per_query": round(took / max(len(queries), 1), 2),
    }
    keys = ("hit_at_1", "recall_at_5", "mrr")
    return {k: float(np.mean([m[k] for m in per])) for k in keys}, info


def verdict_cost(
    verdict: Verdict, queries: list[Query], texts: list[str], rows: list[dict[str, Any]]
) -> dict[str, float]:
    """Median seconds per query for the glance shortlist: cold (empty skill cache), warm (every
    prefix cached, resumed) and without reuse (every prefix recomputed), measured back to back
    per query so that a burst of load on the shared CPU hits all three alike."""
    times: dict[str, list[float]] = {"cold": [], "warm": [], "no_reuse": []}
    for query, row in zip(queries, rows, strict=True):
        skills = [texts[i] for i in row["g_list"]]
        verdict.cache.clear()
        for label, reuse in (("cold", True), ("warm", True), ("no_reuse", False)):
            t0 = time.time()
            verdict.score(query.text, skills, reuse=reuse)
            times[label].append(time.time() - t0)
    return {k: round(float(np.median(v)), 3) for k, v in times.items()}


def fusion_table(
    rows: dict[str, list[dict[str, Any]]], gold: dict[str, list[set[int]]], n: int
) -> dict[str, dict[str, Any]]:
    """Every expert alone, rerank, the rulings and the leave-one-out ablation (test metrics,
    weights calibrated on val)."""

    def experts(split: str, pick: tuple[str, ...]) -> list[dict[str, F32]]:
        return [{k: r[k] for k in pick} for r in rows[split]]

    def ruled(pick: tuple[str, ...]) -> dict[str, Any]:
        w, v = calibrate(experts("val", pick), gold["val"])
        scores = [fuse(x, w) for x in experts("test", pick)]
        return {**mean_metrics(scores, gold["test"]), "weights": w, "val_mrr": v}

    table: dict[str, dict[str, Any]] = {}
    for label, pick in (
        ("glance", "glance"),
        ("dense", "dense"),
        ("bm25", "bm25"),
        ("verdict-likelihood (glance top-N)", "likelihood"),
        ("verdict-judgment (glance top-N)", "judgment"),
    ):
        table[label] = mean_metrics([r[pick] for r in rows["test"]], gold["test"])
    for label, alone in (("judgment", {"judgment": 1.0}), ("likelihood", {"likelihood": 1.0})):
        table[f"rerank: dense top-N, {label} alone"] = mean_metrics(
            [rerank_scores(r, alone, n) for r in rows["test"]], gold["test"]
        )
    rr_w, _ = rerank_calibrate(rows["val"], gold["val"])
    table["rerank: dense top-N, judgment + likelihood (calibrated)"] = {
        **mean_metrics([rerank_scores(r, rr_w, n) for r in rows["test"]], gold["test"]),
        "weights": rr_w,
    }
    table["ruling: glance + likelihood + judgment (paper)"] = ruled(
        ("glance", "likelihood", "judgment")
    )
    table["ruling: glance + dense + bm25 (no verdict)"] = ruled(("glance", "dense", "bm25"))
    every = ("glance", "likelihood", "judgment", "dense", "bm25")
    for row in ablation(experts("val", every), gold["val"], experts("test", every), gold["test"]):
        if row.label.endswith("alone"):
            continue
        label = "full ruling (native)" if row.label == "ruling" else f"ruling {row.label}"
        table[label] = {
            "hit_at_1": row.hit_at_1,
            "recall_at_5": row.recall_at_5,
            "mrr": row.mrr,
            "weights": dict(row.weights),
            "val_mrr": row.val_mrr,
        }
    table["ruling with DEFAULT_WEIGHTS (uncalibrated)"] = mean_metrics(
        [fuse(x, DEFAULT_WEIGHTS) for x in experts("test", every)], gold["test"]
    )
    return table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shortlist", type=int, default=10)
    parser.add_argument("--val", type=int, default=80, help="val queries (seeded sample)")
    parser.add_argument("--test", type=int, default=250, help="test queries (seeded sample)")
    parser.add_argument("--progressive", type=int, default=250, help="test queries (0: skip)")
    parser.add_argument("--cost-queries", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(2)
    t_start = time.time()
    catalog = load_catalog("bench-out/metatool/tools.jsonl")
    names, tools = load_states(OUT / "states/metatool/tools-L24.npz")
    assert tuple(names) == catalog.names
    maps = trained_maps(tuple(names), tools)
    bank = KeyBank.build(list(names), tools, maps)
    dense = make_recaller("dense", catalog)
    bm25 = make_recaller("bm25", catalog)
    assert isinstance(dense, DenseRecaller) and isinstance(bm25, BM25Recaller)
    model, tokenizer, model_id = load_causal_lm()
    verdict = Verdict(model, tokenizer, model_id, cache_skills=len(catalog), device="cpu")
    texts = [skill_text(s) for s in catalog]
    index = {name: i for i, name in enumerate(catalog.names)}
    split_q = {
        s: sample(load_queries(OUT / f"metatool/{s}.jsonl"), getattr(args, s), seed=5)
        for s in ("val", "test")
    }
    rows = {
        s: read_split(s, q, bank, maps, dense, bm25, verdict, texts, args.shortlist)
        for s, q in split_q.items()
    }
    gold = {s: [{index[g] for g in q.gold} for q in qs] for s, qs in split_q.items()}
    result: dict[str, Any] = {"sizes": {s: len(q) for s, q in split_q.items()}}

    result["shortlist_recall"] = {
        f"{e} R@{k} val": recall_at_k([r[e] for r in rows["val"]], gold["val"], k)
        for e in ("glance", "dense")
        for k in (5, 10, 20)
    }
    table = fusion_table(rows, gold, len(catalog))
    if args.progressive:
        few = split_q["test"][: args.progressive]
        metrics, info = progressive(catalog, model, tokenizer, few)
        table[f"progressive, {len(few)} test queries (MRR@10)"] = metrics
        weights = table["full ruling (native)"]["weights"]
        table[f"full ruling on the same {len(few)} queries"] = mean_metrics(
            [fuse(r, weights) for r in rows["test"][: len(few)]], gold["test"][: len(few)]
        )
        result["progressive"] = info
    result["menu_tokens_full_descriptions"] = menu_token_count(catalog, tokenizer)
    if args.cost_queries:
        k = args.cost_queries
        result["verdict_s_per_query"] = verdict_cost(
            verdict, split_q["test"][:k], texts, rows["test"][:k]
        )
    result["table"] = table
    result["seconds"] = round(time.time() - t_start)
    (OUT / "verdict.json").write_text(json.dumps(result, indent=1, default=float) + "\n")
    print("\n| method | Hit@1 | R@5 | MRR |\n| --- | --- | --- | --- |")
    for label, m in table.items():
        extra = f" {m['weights']}" if "weights" in m else ""
        print(f"| {label}{extra} | {m['hit_at_1']:.3f} | {m['recall_at_5']:.3f} | {m['mrr']:.3f} |")
    print(json.dumps({k: v for k, v in result.items() if k != "table"}, indent=1, default=float))


if __name__ == "__main__":
    main()
