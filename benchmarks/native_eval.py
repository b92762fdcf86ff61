"""Native-glance ablations on cached backbone states, with bm25 / dense on the same queries.

Run `benchmarks/native_prep.py` first (it caches SmolLM2 states under bench-out/native).
Writes bench-out/native/results.json.
"""

import json
import time
from pathlib import Path

import numpy as np
import torch

from maitred.lab.native.train import TrainConfig, train_maps
from maitred.native.backbone import default_gguf, file_sha256
from maitred.native.glance import GlanceMaps, KeyBank
from maitred.native.states import load_states
from maitred.recall.evaluate import evaluate_routing, load_queries, query_metrics
from maitred.recall.registry import make_recaller
from maitred.skills.catalog import load_catalog

torch.set_num_threads(2)
OUT = Path("bench-out/native")
# the id Backbone.load gives the default weights, so maps trained here load in `native-glance`
BACKBONE_ID = f"{default_gguf().stem}@{file_sha256(default_gguf())[:12]}"

S = OUT / "states"
M = ("hit_at_1", "recall_at_5", "mrr")


def st(name, la):
    return load_states(S / f"{name}-L{la}.npz")


def metrics(rankings, queries):
    tot = {k: 0.0 for k in M}
    for r, q in zip(rankings, queries, strict=False):
        m = query_metrics(r, q.gold)
        for k in M:
            tot[k] += m[k]
    return {k: round(v / len(queries), 4) for k, v in tot.items()}


def glance(maps, names, skill_states, qstates, queries, top_k, eps=None):
    bank = KeyBank.build(names, skill_states, maps, epsilon=eps)
    ranks = []
    for s in qstates:
        sc = bank.scores(maps.queries(s), top_k)
        ranks.append([names[i] for i in np.argsort(-sc, kind="stable")])
    return metrics(ranks, queries), bank.sizes()


def train(la, steps, names, tools, dim=256, lr=1e-4):
    tq = load_queries(OUT / "metatool/train.jsonl")
    _, trs = st("metatool/train", la)
    idx = {n: i for i, n in enumerate(names)}
    used = sorted({idx[q.gold[0]] for q in tq if len(q.gold) == 1})
    pos = {j: i for i, j in enumerate(used)}
    keep = [i for i, q in enumerate(tq) if len(q.gold) == 1]
    init = GlanceMaps.pca(
        np.concatenate([tools[j] for j in used] + [trs[i] for i in keep]),
        dim,
        backbone_id=BACKBONE_ID,
        layer=la,
    )
    if steps == 0:
        return init
    return train_maps(
        init,
        [trs[i] for i in keep],
        [pos[idx[tq[i].gold[0]]] for i in keep],
        [tools[j] for j in used],
        TrainConfig(steps=steps, lr=lr),
    )


res = {}
cat = load_catalog("bench-out/metatool/tools.jsonl")
names, _ = st("metatool/tools", 24)
assert tuple(names) == cat.names
val = load_queries(OUT / "metatool/val.jsonl")
test = load_queries(OUT / "metatool/test.jsonl")
for la in (12, 18, 24):
    _, tools = st("metatool/tools", la)
    _, vs = st("metatool/val", la)
    _, ts = st("metatool/test", la)
    raw = GlanceMaps.pca(
        np.concatenate(tools),
        tools[0].shape[1],
        backbone_id=BACKBONE_ID,
        layer=la,
        standardise=False,
    )
    for tk in (3, None):
        res[f"L{la} raw-cosine top_k={tk} test"] = glance(raw, names, tools, ts, test, tk)[0]
    for steps in (0, 300) if la == 24 else (0,):
        t0 = time.time()
        maps = train(la, steps, names, tools)
        for tk in (1, 3, None):
            res[f"L{la} steps={steps} top_k={tk} val"] = glance(maps, names, tools, vs, val, tk)[0]
            res[f"L{la} steps={steps} top_k={tk} test"] = glance(maps, names, tools, ts, test, tk)[
                0
            ]
        if la == 24 and steps == 300:
            maps.save(OUT / "maps-L24.npz")
            for eps in (0.2, 0.4, 0.6, 0.8, 1.0):
                m, (kept, total) = glance(maps, names, tools, ts, test, 3, eps)
                res[f"L24 steps=300 top_k=3 eps={eps} test"] = {**m, "kept": kept, "total": total}
        print(
            la,
            steps,
            round(time.time() - t0, 1),
            res[f"L{la} steps={steps} top_k=3 val"],
            res[f"L{la} steps={steps} top_k=3 test"],
            flush=True,
        )
for method in ("bm25", "dense"):
    r = make_recaller(method, cat)
    res[f"{method} metatool test"] = {
        k: round(v, 4) for k, v in evaluate_routing(r, test, method).items() if k in M
    }
    res[f"{method} metatool val"] = {
        k: round(v, 4) for k, v in evaluate_routing(r, val, method).items() if k in M
    }
# sitecare: maps trained on MetaTool (transfer) and untrained PCA on sitecare skill tokens
sc = load_catalog("src/maitred/lab/domains/sitecare/skills")
sq = load_queries(OUT / "sitecare/queries.jsonl")
for la in (18, 24):
    sn, sk = st("sitecare/skills", la)
    _, sqs = st("sitecare/queries", la)
    _, tools = st("metatool/tools", la)
    trained = [("metatool-trained", GlanceMaps.load(OUT / "maps-L24.npz"))] if la == 24 else []
    for label, maps in (
        *trained,
        (
            "pca-on-sitecare-skills",
            GlanceMaps.pca(
                np.concatenate(sk),
                min(256, len(np.concatenate(sk))),
                backbone_id=BACKBONE_ID,
                layer=la,
            ),
        ),
        (
            "raw-cosine",
            GlanceMaps.pca(
                np.concatenate(sk),
                sk[0].shape[1],
                backbone_id=BACKBONE_ID,
                layer=la,
                standardise=False,
            ),
        ),
    ):
        for tk in (1, 3, None):
            res[f"sitecare L{la} {label} top_k={tk}"] = glance(maps, list(sn), sk, sqs, sq, tk)[0]
for method in ("bm25", "dense"):
    r = make_recaller(method, sc)
    res[f"{method} sitecare"] = {
        k: round(v, 4) for k, v in evaluate_routing(r, sq, method).items() if k in M
    }
(OUT / "results.json").write_text(json.dumps(res, indent=1))
for k, v in res.items():
    print(k, v)
