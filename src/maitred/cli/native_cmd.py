"""`maitred native ...`: layers, key-bank indexing, map training, ruling calibration, firing.

Every command imports :mod:`maitred.native` inside its body: the CLI loads for every command,
and only these need torch (the ``native`` extra).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import typer

from maitred.cli._common import SKILLS_OPT, console, dump_json, progress_bar
from maitred.cli._conventions import App
from maitred.errors import ConfigError
from maitred.skills.catalog import load_catalog

native_app = App(help="Native routing (Gavel): layers, index, train, calibrate, rollout.")

MODEL_OPT = typer.Option(None, "--model", help="A .gguf file or HF model folder (default SmolLM2).")


@native_app.command("layers")
def layers_cmd(
    skills: list[str] = SKILLS_OPT,
    model: Path | None = MODEL_OPT,
    sample: int = typer.Option(
        48, "--sample", "-n", min=1, help="How many skill texts to measure."
    ),
    png: Path | None = typer.Option(
        None, "--png", help="Write the curve as a PNG (default: no picture)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the curve as JSON."),
) -> None:
    """Hidden-state entropy per layer over skill texts; the floor is the default layer."""
    import random

    from maitred.native.backbone import Backbone
    from maitred.native.data import skill_text
    from maitred.native.layers import choose_layer, entropy_curve, plot_curve

    cat = load_catalog(skills)
    entries = list(cat)
    random.Random(0).shuffle(entries)
    backbone = Backbone.load(model, keep_layers=10_000)
    curve = entropy_curve(backbone, [skill_text(s) for s in entries[:sample]])
    chosen = choose_layer(curve)
    if png is not None:
        plot_curve(curve, chosen, png, f"{backbone.backbone_id}: entropy over {sample} skills")
    if as_json:
        dump_json({"backbone_id": backbone.backbone_id, "curve": curve, "chosen": chosen})
        return
    low, high = min(curve.values()), max(curve.values())
    for layer, value in curve.items():
        bar = "#" * (1 + round(30 * (value - low) / max(high - low, 1e-9)))
        mark = "  <- floor" if layer == chosen else ""
        console.print(f"{layer:3d} {value:7.4f} {bar}{mark}", highlight=False)


@native_app.command("index")
def index_cmd(
    skills: list[str] = SKILLS_OPT,
    maps: Path | None = typer.Option(None, "--maps", help="Maps file (default: the active one)."),
    epsilon: float | None = typer.Option(
        None,
        "--epsilon",
        min=0.0,
        help="Compress banks to this cover radius (default: keep every key).",
    ),
    cache_dir: Path = typer.Option(Path(".maitred-cache"), "--cache-dir", help="Index cache."),
) -> None:
    """Read every skill once and build its key bank (cached by catalog, backbone and layer)."""
    from maitred.native.recall import build_recaller
    from maitred.recall.store import IndexStore

    cat = load_catalog(skills)
    with progress_bar("reading skills", len(cat)) as advance:
        last = [0]

        def step(done: int, total: int) -> None:
            advance(done - last[0])
            last[0] = done

        rec = build_recaller(
            cat, maps_path=maps, store=IndexStore(cache_dir), epsilon=epsilon, progress=step
        )
    kept, total = rec.bank.sizes()
    console.print(
        f"{len(cat)} skills, {kept} of {total} keys kept ({kept / max(total, 1):.1%}); "
        f"backbone {rec.backbone.backbone_id}, layer {rec.backbone.layer}, d={rec.maps.dim}",
        highlight=False,
    )


@native_app.command("calibrate")
def calibrate_cmd(
    skills: list[str] = SKILLS_OPT,
    queries: Path = typer.Option(
        ..., "--queries", "-q", help="Validation queries (never the ones you report on)."
    ),
    cache_dir: Path = typer.Option(Path(".maitred-cache"), "--cache-dir", help="Index cache."),
) -> None:
    """Calibrate the ruling's expert weights (`native`, `native-rerank`) on validation queries."""
    from maitred.native.baselines import calibrate_ruling
    from maitred.native.gavel import ruling_weights_path
    from maitred.recall.evaluate import load_queries
    from maitred.recall.store import IndexStore

    cat = load_catalog(skills)
    labelled = load_queries(queries)
    with progress_bar("scoring validation queries", len(labelled)) as advance:
        last = [0]

        def step(done: int, total: int) -> None:
            advance(done - last[0])
            last[0] = done

        saved = calibrate_ruling(cat, labelled, store=IndexStore(cache_dir), progress=step)
    for entry in saved:
        weights = ", ".join(f"{k} {v:g}" for k, v in entry.weights.items())
        console.print(
            f"{entry.method}: {weights} (validation MRR {entry.val_mrr}, "
            f"{entry.n_queries} queries)",
            highlight=False,
        )
    console.print(f"wrote {ruling_weights_path()}")


@native_app.command("train")
def train_cmd(
    skills: list[str] = SKILLS_OPT,
    pairs: Path = typer.Option(..., "--pairs", "-p", help='Training JSONL {"id","text","gold"}.'),
    layer: int | None = typer.Option(None, "--layer", min=0, help="Read-out layer (default 80%)."),
    model: Path | None = MODEL_OPT,
    dim: int = typer.Option(256, "--dim", min=1, help="Projection size d."),
    steps: int = typer.Option(300, "--steps", min=1, help="Optimiser steps."),
    lr: float = typer.Option(1e-4, "--lr", min=0.0, help="AdamW learning rate."),
    out: Path | None = typer.Option(None, "--out", help="Maps file (default: the active one)."),
) -> None:
    """Train the query and key maps on one frozen read of the pairs and skills."""
    from maitred.lab.native.train import TrainConfig, train_maps
    from maitred.native.backbone import Backbone
    from maitred.native.data import skill_text
    from maitred.native.glance import GlanceMaps
    from maitred.native.recall import SKILL_TOKENS, active_maps_path
    from maitred.recall.evaluate import load_queries

    cat = load_catalog(skills)
    queries = [q for q in load_queries(pairs) if len(q.gold) == 1 and q.gold[0] in cat]
    used = sorted({q.gold[0] for q in queries})
    if len(used) < 2:
        raise ConfigError(f"{pairs}: fewer than two gold skills of the catalog; nothing to train")
    backbone = Backbone.load(model, layer)
    with progress_bar("reading", len(queries) + len(used)) as advance:
        skill = backbone.states([skill_text(cat[n]) for n in used], max_tokens=SKILL_TOKENS)
        advance(len(used))
        query = backbone.states([q.text for q in queries], progress=lambda d, t: advance(0))
        advance(len(queries))
    tokens = np.concatenate(skill + query)
    init = GlanceMaps.pca(tokens, dim, backbone_id=backbone.backbone_id, layer=backbone.layer)
    console.print(f"top {dim} components hold {init.meta['explained_variance']:.1%} of variance")
    index = {n: i for i, n in enumerate(used)}
    with progress_bar("training", steps) as advance:
        maps = train_maps(
            init,
            query,
            [index[q.gold[0]] for q in queries],
            skill,
            TrainConfig(steps=steps, lr=lr),
            log=lambda s, loss: advance(1),
        )
    target = out or active_maps_path()
    maps.save(target)
    console.print(f"maps for {backbone.backbone_id} layer {backbone.layer} written to {target}")


@native_app.command("rollout")
def rollout_cmd(
    skills: list[str] = SKILLS_OPT,
    trajectories: Path = typer.Option(
        ..., "--trajectories", "-t", help='JSONL {"id","text","gold","onset"} to evaluate.'
    ),
    val: Path | None = typer.Option(
        None,
        "--val",
        help="Trajectories to calibrate the threshold on (default: none; this or --threshold).",
    ),
    threshold: float | None = typer.Option(
        None, "--threshold", help="Lead to fire at (default: none; this or --val, to calibrate it)."
    ),
    half_life: float | None = typer.Option(
        None, "--half-life", help="Vote half-life in tokens (default: the library's)."
    ),
    patience: int = typer.Option(
        2, "--patience", min=1, help="Consecutive tokens a skill must lead."
    ),
    maps: Path | None = typer.Option(None, "--maps", help="Maps file (default: the active one)."),
    model: Path | None = MODEL_OPT,
    cache_dir: Path = typer.Option(Path(".maitred-cache"), "--cache-dir", help="Index cache."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Mid-rollout firing: stream each trajectory token by token and gate the glance."""
    from maitred.lab.native.trajectories import evaluate_trajectories
    from maitred.native.backbone import Backbone
    from maitred.native.glance import GlanceMaps
    from maitred.native.recall import active_maps_path, build_recaller
    from maitred.native.rollout import DEFAULT_HALF_LIFE, decay_for
    from maitred.recall.store import IndexStore

    if (val is None) == (threshold is None):
        raise ConfigError("give one of --val FILE (calibrate the threshold on it) or --threshold")
    cat = load_catalog(skills)
    path = maps or active_maps_path()
    backbone = None
    if model is not None:
        backbone = Backbone.load(model, GlanceMaps.load(path).layer if path.is_file() else None)
    rec = build_recaller(cat, maps_path=path, backbone=backbone, store=IndexStore(cache_dir))
    half_life = half_life or DEFAULT_HALF_LIFE
    found = evaluate_trajectories(
        rec.backbone,
        rec.maps,
        rec.bank,
        trajectories,
        val=val,
        threshold=threshold,
        decay=decay_for(half_life),
        patience=patience,
    )
    cal = found.calibration
    result = {
        "backbone_id": rec.backbone.backbone_id,
        "layer": rec.backbone.layer,
        "maps": "trained" if "train" in rec.maps.meta else "untrained (principal components)",
        "half_life": half_life,
        "calibration": None if cal is None else cal.report.as_dict(),
        "skipped_unknown_gold": found.skipped,
        **found.report.as_dict(),
    }
    if as_json:
        dump_json(result)
        return
    r = found.report
    source = f"calibrated on {val}" if val is not None else "given"
    latency = "-" if r.mean_latency is None else f"{r.mean_latency:.1f} tokens"
    skipped = f"\n  {found.skipped} trajectories skipped: gold not in the catalog"
    console.print(
        f"{r.n_positive} trajectories need a skill, {r.n_negative} do not\n"
        f"{result['maps']} maps, layer {rec.backbone.layer}, half-life {half_life:g} tokens, "
        f"patience {patience}\nthreshold {r.threshold:.4f} ({source})\n"
        f"  trigger rate     {r.trigger_rate:.3f}  positives with a fire\n"
        f"  correct skill    {r.correct_rate:.3f}  first fire gold, at/after the onset\n"
        f"  correct if fired {r.correct_when_fired:.3f}  the same, of positives with a fire\n"
        f"  early fires      {r.early_rate:.3f}  positives with a fire before the onset\n"
        f"  false-fire rate  {r.false_fire_rate:.3f}  negatives with a fire\n"
        f"  latency          {latency} from the onset to the correct fire"
        + (skipped if found.skipped else ""),
        highlight=False,
    )


def register(app: App, eval_app: App) -> None:
    """Add `native` (layers, index, train, rollout) to the app."""
    app.add_typer(native_app, name="native")
