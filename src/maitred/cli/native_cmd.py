"""`maitred native ...`: layer choice, key-bank indexing and map training for native routing.

Every command imports :mod:`maitred.native` inside its body: the CLI loads for every command,
and only these need torch (the ``native`` extra).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import typer

from maitred.cli._common import console, dump_json, progress_bar
from maitred.errors import ConfigError
from maitred.skills.catalog import load_catalog

native_app = typer.Typer(help="Native routing (Gavel): layers, index, train.", no_args_is_help=True)

MODEL_OPT = typer.Option(None, "--model", help="A .gguf file or HF model folder (default SmolLM2).")


@native_app.command("layers")
def layers_cmd(
    catalog: list[str] = typer.Option(..., "--catalog", "-c", help="Skills dir or tools JSONL."),
    model: Path | None = MODEL_OPT,
    sample: int = typer.Option(48, "--sample", help="Skill texts measured."),
    png: Path | None = typer.Option(None, "--png", help="Write the curve as a PNG."),
    as_json: bool = typer.Option(False, "--json", help="Print the curve as JSON."),
) -> None:
    """Hidden-state entropy per layer over skill texts; the floor is the default layer."""
    import random

    from maitred.native.backbone import Backbone
    from maitred.native.data import skill_text
    from maitred.native.layers import choose_layer, entropy_curve, plot_curve

    cat = load_catalog(catalog)
    skills = list(cat)
    random.Random(0).shuffle(skills)
    backbone = Backbone.load(model, keep_layers=10_000)
    curve = entropy_curve(backbone, [skill_text(s) for s in skills[:sample]])
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
    catalog: list[str] = typer.Option(..., "--catalog", "-c", help="Skills dir or tools JSONL."),
    maps: Path | None = typer.Option(None, "--maps", help="Maps file (default: the active one)."),
    epsilon: float | None = typer.Option(None, "--epsilon", help="Compress banks (cover radius)."),
    cache_dir: Path = typer.Option(Path(".maitred-cache"), "--cache-dir", help="Index cache."),
) -> None:
    """Read every skill once and build its key bank (cached by catalog, backbone and layer)."""
    from maitred.native.recall import build_recaller
    from maitred.recall.store import IndexStore

    cat = load_catalog(catalog)
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


@native_app.command("train")
def train_cmd(
    catalog: list[str] = typer.Option(..., "--catalog", "-c", help="Skills dir or tools JSONL."),
    pairs: Path = typer.Option(..., "--pairs", "-p", help='Training JSONL {"id","text","gold"}.'),
    layer: int | None = typer.Option(None, "--layer", help="Read-out layer (default 80%)."),
    model: Path | None = MODEL_OPT,
    dim: int = typer.Option(256, "--dim", help="Projection size d."),
    steps: int = typer.Option(300, "--steps", help="Optimiser steps."),
    lr: float = typer.Option(1e-4, "--lr", help="AdamW learning rate."),
    out: Path | None = typer.Option(None, "--out", help="Maps file (default: the active one)."),
) -> None:
    """Train the query and key maps on one frozen read of the pairs and skills."""
    from maitred.native.backbone import Backbone
    from maitred.native.data import skill_text
    from maitred.native.glance import GlanceMaps
    from maitred.native.recall import SKILL_TOKENS, active_maps_path
    from maitred.native.train import TrainConfig, train_maps
    from maitred.recall.evaluate import load_queries

    cat = load_catalog(catalog)
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


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add `native` (layers, index, train) to the app."""
    app.add_typer(native_app, name="native")
