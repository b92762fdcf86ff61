"""Ablation: the backbone's own attention projections instead of the trained glance maps.

The states read at layer ``L`` (the output of decoder block ``L``) are what block ``L + 1``'s
attention reads. Its query and key projections, with the input RMSNorm's gain folded in (the
norm's per-token scale vanishes once vectors are unit-normalised), are a pair of *untrained*
maps the model already has: ``q = W_q diag(g) h`` and ``k = W_k diag(g) h``, each key head
repeated for the query heads that share it (grouped-query attention), heads concatenated, no
rotary position (the glance compares tokens across texts, where positions mean nothing). Scored
with the glance's token voting (top 3) on the cached MetaTool held-out-tool states of
``benchmarks/native_prep.py``, next to raw cosine and the PCA-initialised maps.

Run: ``.venv/bin/python benchmarks/native_attention.py`` (after ``native_prep.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from maitred.native.backbone import default_gguf, file_sha256, load_causal_lm
from maitred.native.glance import GlanceMaps, KeyBank
from maitred.native.states import load_states
from maitred.recall.evaluate import load_queries, query_metrics

OUT = Path("bench-out/native")
BACKBONE_ID = f"{default_gguf().stem}@{file_sha256(default_gguf())[:12]}"
METRICS = ("hit_at_1", "recall_at_5", "mrr")


def attention_maps(model: object, layer: int) -> GlanceMaps:
    """The query/key projections of block ``layer + 1`` as glance maps (see the docstring)."""
    config = model.config  # type: ignore[attr-defined]
    block = model.model.layers[layer]  # type: ignore[attr-defined]
    gain = block.input_layernorm.weight.detach().float().numpy()
    wq = block.self_attn.q_proj.weight.detach().float().numpy() * gain[None, :]
    wk = block.self_attn.k_proj.weight.detach().float().numpy() * gain[None, :]
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    head_dim = wq.shape[0] // heads
    group = heads // kv_heads
    wk_rep = np.concatenate(
        [wk[(h // group) * head_dim : (h // group + 1) * head_dim] for h in range(heads)]
    )
    hidden = wq.shape[1]
    return GlanceMaps(
        np.zeros(hidden, np.float32),
        np.ones(hidden, np.float32),
        np.ascontiguousarray(wq, np.float32),
        np.ascontiguousarray(wk_rep, np.float32),
        BACKBONE_ID,
        layer,
        {"init": f"attention projections of block {layer + 1}"},
    )


def score(maps: GlanceMaps, layer: int) -> dict[str, float]:
    """Hit@1 / Recall@5 / MRR of top-3 voting on the held-out-tool test queries."""
    names, tools = load_states(OUT / f"states/metatool/tools-L{layer}.npz")
    _, queries_states = load_states(OUT / f"states/metatool/test-L{layer}.npz")
    queries = load_queries(OUT / "metatool/test.jsonl")
    bank = KeyBank.build(names, tools, maps)
    totals = dict.fromkeys(METRICS, 0.0)
    for states, query in zip(queries_states, queries, strict=True):
        order = np.argsort(-bank.scores(maps.queries(states), 3), kind="stable")
        got = query_metrics([names[i] for i in order], query.gold)
        for m in METRICS:
            totals[m] += got[m]
    return {m: round(v / len(queries), 4) for m, v in totals.items()}


def main() -> None:
    model, _, _ = load_causal_lm()
    results = {}
    for layer in (12, 18, 24):
        _, tools = load_states(OUT / f"states/metatool/tools-L{layer}.npz")
        raw = GlanceMaps.pca(
            np.concatenate(tools),
            tools[0].shape[1],
            backbone_id=BACKBONE_ID,
            layer=layer,
            standardise=False,
        )
        results[layer] = {
            "attention keys": score(attention_maps(model, layer), layer),
            "raw cosine": score(raw, layer),
        }
        print(layer, json.dumps(results[layer]), flush=True)
    (OUT / "attention.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
