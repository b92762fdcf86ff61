"""Mid-rollout firing on trajectories where a skill's need appears partway (issue #6, item 8).

What it does, in order:

1. **Builds trajectories** (``bench-out/native/rollout/*.jsonl``, the format of
   :mod:`maitred.lab.native.trajectories`). A positive is an unrelated opening (one or two chit-chat
   sentences from sitecare's phrase banks) followed by a labelled request, so the need appears
   after k tokens; a negative is the same kind of opening continued without a request.

   - MetaTool: requests from the split *by tool* (:func:`maitred.native.data.split_by_tool`):
     validation tools calibrate, held-out test tools are evaluated; the catalog is all 199
     tools. Negatives continue with more chit-chat, thanks or follow-ups.
   - sitecare: requests and negatives from ``generate_messages`` (two seeds for val and test).
     Its negatives are real off-topic customer messages (design, SEO, near misses such as
     "how do I reset my password"), so they are hard.

2. **Reads every trajectory once** with SmolLM2 at layer 24 (teacher forcing: causal states
   equal generation's for the same text), cached in float32 (``states32-*.npz``), so every
   figure is exactly what ``maitred native rollout`` gets from a fresh read.

3. **Firing rules.** For each catalog, with untrained maps (top principal components of the
   catalog's own skill tokens, what ``native-glance`` does without trained maps) and with
   trained maps (``--maps``): calibrates the threshold on val (most correct minus false fires)
   and reports val and test rates. With the trained maps also for each half-life (4 .. 32
   tokens, and no decay) and two ablations at the default half-life: firing on the top
   evidence instead of the lead (``evidence``), and the glance's own score, raw top-k votes
   averaged, fired on its top value (``glance-average``). Last, the written-task mode that
   ``generate_with_skills`` uses for the prompt: each whole test text read as one block
   (uniform weights) and fired on once (``prompt-block``).

4. **Generates** with ``generate_with_skills`` (the full SmolLM2, greedy) on a few prompts at the
   calibrated sitecare threshold, printing the transcripts.

Trained maps (``bench-out/native/rollout/maps-L24.npz``) come from::

    maitred native train --skills bench-out/metatool/tools.jsonl --layer 24 --steps 300 \\
        --pairs bench-out/native/metatool/train.jsonl --out bench-out/native/rollout/maps-L24.npz

(the 500 training queries of ``benchmarks/native_prep.py``). Without that file only the
untrained rows are run.

Run: ``nice .venv/bin/python benchmarks/native_rollout.py`` (after
``benchmarks/metatool_routing.py`` has written ``bench-out/metatool``). Writes
``bench-out/native/rollout/results.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from maitred.lab.domains.sitecare._phrases_chat import FOLLOW_UPS, GREETINGS, OFF_TOPIC, THANKS
from maitred.lab.domains.sitecare.generate import generate_messages
from maitred.lab.native.trajectories import (
    TRAJECTORY_TOKENS,
    Trace,
    Trajectory,
    calibrate_threshold,
    evaluate_firing,
    load_trajectories,
    onset_token,
    score_trace,
)
from maitred.native.backbone import Backbone, load_causal_lm
from maitred.native.data import sample, split_by_tool
from maitred.native.glance import DEFAULT_TOP_K, GlanceMaps, KeyBank
from maitred.native.recall import DEFAULT_DIM, skill_states
from maitred.native.rollout import (
    DEFAULT_HALF_LIFE,
    SkillTrigger,
    decay_for,
    generate_with_skills,
)
from maitred.recall.evaluate import load_queries
from maitred.recall.store import IndexStore
from maitred.skills.catalog import load_catalog

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench-out/native/rollout"
HALF_LIVES = (4.0, 8.0, 16.0, 32.0, math.inf)
CATALOGS = (
    ("metatool", "bench-out/metatool/tools.jsonl"),
    ("sitecare", "src/maitred/lab/domains/sitecare/skills"),
)
F32 = NDArray[np.float32]
CHAT = [s for s in OFF_TOPIC["chit-chat"] + GREETINGS if "{" not in s]
AFTER = [s for s in OFF_TOPIC["chit-chat"] + THANKS + FOLLOW_UPS if "{" not in s]
GENERATE = (
    "hey, how's your day going? I need my site to use my own domain name, how do I do that?",
    "sorry for all the questions. can you give me my money back for last month",
    "haha ok. where do I add a favicon",
)


def opening(rng: random.Random) -> str:
    return " ".join(rng.sample(CHAT, rng.choice((1, 2))))


def trajectory(tid: str, head: str, request: str, gold: str | None) -> dict[str, Any]:
    text = f"{head} {request}"
    row: dict[str, Any] = {"id": tid, "text": text, "gold": [gold] if gold else []}
    if gold:
        row["onset"] = len(head) + 1
    return row


def metatool_sets(n_val: int, n_test: int) -> dict[str, list[dict[str, Any]]]:
    cat = load_catalog(REPO / "bench-out/metatool/tools.jsonl")
    queries = load_queries(REPO / "bench-out/metatool/dev.jsonl") + load_queries(
        REPO / "bench-out/metatool/test.jsonl"
    )
    sides = split_by_tool([q for q in queries if len(q.gold) == 1], cat.names)
    out = {}
    for side, n, seed in (("val", n_val, 5), ("test", n_test, 6)):
        rng = random.Random(seed)
        rows = [
            trajectory(f"p{q.id}", opening(rng), q.text, q.gold[0])
            for q in sample(sides[side], n, seed=seed)
        ]
        rows += [
            trajectory(f"n{i}", opening(rng), " ".join(rng.sample(AFTER, rng.choice((1, 2)))), None)
            for i in range(n)
        ]
        out[side] = rows
    return out


def sitecare_sets(n_val: int, n_test: int) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for side, n, seed in (("val", n_val, 11), ("test", n_test, 12)):
        rng = random.Random(seed)
        pos: dict[str, str] = {}
        neg: list[str] = []
        for m in generate_messages(4000, 50, seed=seed):
            if m["gold"] and m["text"] not in pos:
                pos[m["text"]] = m["gold"]
            elif not m["gold"] and m["text"] not in neg:
                neg.append(m["text"])
        picked = rng.sample(sorted(pos), n)
        rows = [trajectory(f"p{i}", opening(rng), t, pos[t]) for i, t in enumerate(picked)]
        rows += [
            trajectory(f"n{i}", opening(rng), t, None) for i, t in enumerate(rng.sample(neg, n))
        ]
        out[side] = rows
    return out


def write_sets(name: str, sets: dict[str, list[dict[str, Any]]]) -> None:
    for side, rows in sets.items():
        path = OUT / f"{name}-{side}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def cached_states(backbone: Backbone, name: str, trajs: list[Trajectory]) -> list[F32]:
    """Trajectory states at the backbone's layer, cached in float32 (so the figures are exactly
    what `maitred native rollout` gets from a fresh read)."""
    path = OUT / f"states32-{name}.npz"
    tag = f"{backbone.backbone_id}@{backbone.layer}"
    ids = [t.id for t in trajs]
    if path.is_file():
        with np.load(path) as data:
            if str(data["tag"]) == tag and list(data["ids"]) == ids:
                return [data[f"s{i}"] for i in range(len(ids))]
    t0 = time.time()
    arrays = backbone.states([t.text for t in trajs], max_tokens=TRAJECTORY_TOKENS)
    np.savez(
        path, tag=np.array(tag), ids=np.array(ids), **{f"s{i}": a for i, a in enumerate(arrays)}
    )
    n = sum(len(a) for a in arrays)
    print(f"  read {name}: {len(trajs)} texts, {n} tokens, {time.time() - t0:.0f}s", flush=True)
    return arrays


def glance_average(maps: GlanceMaps, bank: KeyBank, states: F32, decay: float) -> F32:
    """Ablation: the glance's own score (raw top-k votes) as a recency-weighted average."""
    out, total, mass = [], np.zeros(len(bank.names)), 0.0
    for row in states:
        votes = bank.scores(maps.queries(row[None, :]), DEFAULT_TOP_K, np.ones(1, np.float32))
        total, mass = decay * total + votes, decay * mass + 1.0
        out.append(total / mass)
    return np.asarray(out, np.float32).reshape(len(states), len(bank.names))


def top_only(scores: F32) -> F32:
    """Rows whose lead is their top score (others zeroed): fires on the top value itself."""
    out = np.zeros_like(scores)
    rows = np.arange(len(scores))
    top = scores.argmax(axis=1)
    out[rows, top] = scores[rows, top]
    return out


@dataclass(frozen=True)
class Setup:
    name: str
    maps: GlanceMaps
    bank: KeyBank
    tokenizer: Any
    sets: dict[str, list[Trajectory]]
    states: dict[str, list[F32]]


def traces(setup: Setup, side: str, decay: float, variant: str = "lead") -> list[Trace]:
    out = []
    for t, s in zip(setup.sets[side], setup.states[side], strict=True):
        if variant == "glance-average":
            scores = top_only(glance_average(setup.maps, setup.bank, s, decay))
        else:
            scores = score_trace(setup.maps, setup.bank, s, decay=decay)
            scores = top_only(scores) if variant == "evidence" else scores
        onset = None if t.onset is None else onset_token(setup.tokenizer, t.text, t.onset)
        out.append(Trace(t, onset, scores))
    return out


def run(setup: Setup, label: str, half_life: float, variant: str = "lead") -> dict[str, Any]:
    decay, names = decay_for(half_life), setup.bank.names
    cal = calibrate_threshold(traces(setup, "val", decay, variant), names)
    r = evaluate_firing(traces(setup, "test", decay, variant), names, threshold=cal.threshold)
    lat = "-" if r.mean_latency is None else f"{r.mean_latency:.1f}"
    print(
        f"| {setup.name} | {label} | {variant} | {half_life:g} | {cal.net} | {r.trigger_rate:.2f} "
        f"| {r.correct_rate:.2f} | {r.correct_when_fired:.2f} | {r.early_rate:.2f} "
        f"| {r.false_fire_rate:.2f} | {lat} |",
        flush=True,
    )
    return {
        "set": setup.name,
        "maps": label,
        "variant": variant,
        "half_life": half_life,
        "val": cal.report.as_dict(),
        "test": r.as_dict(),
    }


def prompt_block(setup: Setup, label: str, half_life: float) -> dict[str, Any]:
    """The written-task mode of generate_with_skills: each whole test text as one block (uniform
    weights), fired on once at the threshold calibrated on streamed val trajectories."""
    decay, names = decay_for(half_life), setup.bank.names
    threshold = calibrate_threshold(traces(setup, "val", decay), names).threshold
    counts = {"pos": 0, "neg": 0, "fired": 0, "correct": 0, "false": 0}
    for t, s in zip(setup.sets["test"], setup.states["test"], strict=True):
        trigger = SkillTrigger(setup.maps, setup.bank, threshold=threshold, decay=decay)
        fire = trigger.observe(s)
        counts["pos" if t.positive else "neg"] += 1
        if fire is not None:
            counts["fired" if t.positive else "false"] += 1
            counts["correct"] += fire.skill in t.gold
    pos, neg = max(counts["pos"], 1), max(counts["neg"], 1)
    out = {
        "trigger_rate": counts["fired"] / pos,
        "correct_rate": counts["correct"] / pos,
        "false_fire_rate": counts["false"] / neg,
    }
    print(
        f"| {setup.name} | {label} | prompt-block | {half_life:g} | | {out['trigger_rate']:.2f} "
        f"| {out['correct_rate']:.2f} | | | {out['false_fire_rate']:.2f} | |",
        flush=True,
    )
    return {"set": setup.name, "maps": label, "variant": "prompt-block", "test": out}


def setups(backbone: Backbone, maps_path: Path, store: IndexStore) -> list[tuple[str, Setup]]:
    out = []
    for name, folder in CATALOGS:
        cat = load_catalog(REPO / folder)
        skill = skill_states(cat, backbone, store=store)
        sets = {s: load_trajectories(OUT / f"{name}-{s}.jsonl") for s in ("val", "test")}
        states = {s: cached_states(backbone, f"{name}-{s}", sets[s]) for s in sets}
        tokens = np.concatenate(skill)
        dim = min(DEFAULT_DIM, backbone.hidden_size, len(tokens))
        pca = GlanceMaps.pca(tokens, dim, backbone_id=backbone.backbone_id, layer=backbone.layer)
        choices = [("untrained", pca)]
        if maps_path.is_file():
            choices.append(("trained", GlanceMaps.load(maps_path, layer=backbone.layer)))
        for label, maps in choices:
            bank = KeyBank.build(cat.names, skill, maps)
            out.append((label, Setup(name, maps, bank, backbone.tokenizer, sets, states)))
    return out


def generate(setup: Setup, catalog: Any, threshold: float, n_tokens: int) -> list[dict[str, Any]]:
    model, tokenizer, _ = load_causal_lm()
    trigger = SkillTrigger(setup.maps, setup.bank, threshold=threshold)
    out = []
    for prompt in GENERATE:
        t0 = time.time()
        roll = generate_with_skills(
            model, tokenizer, trigger, catalog, prompt, max_new_tokens=n_tokens
        )
        loads = [(x.fire.skill, x.after_token, round(x.fire.lead, 3)) for x in roll.loads]
        print(f"\n>>> {prompt}\n{roll.text}\n(loads {loads}, {time.time() - t0:.0f}s)", flush=True)
        out.append({"prompt": prompt, "text": roll.text, "loads": loads, "stop": roll.stop})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-val", type=int, default=100, help="positives (and negatives) for val")
    parser.add_argument("--n-test", type=int, default=100, help="positives (and negatives)")
    parser.add_argument("--maps", type=Path, default=OUT / "maps-L24.npz", help="trained maps")
    parser.add_argument("--generate-tokens", type=int, default=40)
    args = parser.parse_args()
    write_sets("metatool", metatool_sets(args.n_val, args.n_test))
    write_sets("sitecare", sitecare_sets(args.n_val, args.n_test))
    backbone = Backbone.load(layer=24)
    all_setups = setups(backbone, args.maps, IndexStore(REPO / ".maitred-cache"))
    print(
        "| set | maps | rule | half-life | val net | trigger | correct | correct/fired | early "
        "| false-fire | latency |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
        "| --- |"
    )
    rows = []
    best = "trained" if args.maps.is_file() else "untrained"
    for label, setup in all_setups:
        if label == best:
            rows += [run(setup, label, h) for h in HALF_LIVES]
            rows += [
                run(setup, label, DEFAULT_HALF_LIFE, v) for v in ("evidence", "glance-average")
            ]
        else:
            rows.append(run(setup, label, DEFAULT_HALF_LIFE))
    results: dict[str, Any] = {"rows": rows}
    sitecare = next(s for label, s in all_setups if label == best and s.name == "sitecare")
    names = sitecare.bank.names
    cal = calibrate_threshold(traces(sitecare, "val", decay_for(DEFAULT_HALF_LIFE)), names)
    catalog = load_catalog(REPO / dict(CATALOGS)["sitecare"])
    results["generate"] = generate(sitecare, catalog, cal.threshold, args.generate_tokens)
    (OUT / "results.json").write_text(json.dumps(results, indent=1, default=str), "utf-8")


if __name__ == "__main__":
    main()
