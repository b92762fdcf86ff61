"""`maitred replay`: ask a model about logged turns with and without the gate."""

from __future__ import annotations

import typer

from maitred.cli._common import console, dump_json, progress_bar
from maitred.errors import ConfigError
from maitred.log import open_log
from maitred.replay import (
    COHORTS,
    Fanout,
    ModelSpec,
    RayFanout,
    ThreadFanout,
    make_model,
    replay,
)
from maitred.settings import Settings
from maitred.skills.catalog import load_catalog


def replay_cmd(
    skills: list[str] = typer.Option(..., "--skills", "-s", help="The catalog the log used."),
    log: str | None = typer.Option(None, "--log", help="Decision log (path or postgresql:// URL)."),
    cohort: str = typer.Option("risk", "--cohort", help="random or risk (see docs)."),
    n: int = typer.Option(200, "--n", help="Conversations to replay."),
    model: str = typer.Option("local", "--model", help="local, local:PATH.gguf, or a model name."),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint."),
    api_key: str = typer.Option("", "--api-key", envvar="MAITRED_API_KEY", help="Bearer token."),
    workers: int = typer.Option(1, "--workers", help="Concurrent model calls."),
    seed: int = typer.Option(0, "--seed", help="Sampling seed."),
    ray_address: str | None = typer.Option(
        None, "--ray-address", help="Fan out over a Ray cluster (e.g. auto, ray://host:10001)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """How often would the model pick a skill the gate blocked, were the gate off?"""
    if cohort not in COHORTS:
        raise ConfigError(f"unknown cohort {cohort!r}; choose one of {list(COHORTS)}")
    if n < 1 or workers < 1:
        raise ConfigError("--n and --workers must be at least 1")
    fanout: Fanout
    if ray_address:
        fanout = RayFanout(ray_address, ModelSpec(model, tuple(skills), base_url, api_key), workers)
    else:
        chooser = make_model(model, base_url=base_url, api_key=api_key)
        fanout = ThreadFanout(chooser, load_catalog(skills), workers)
    with (
        open_log(log or Settings.from_env().log) as handle,
        progress_bar("replaying", n, enabled=not as_json) as advance,
    ):
        result = replay(handle, fanout, cohort=cohort, n=n, seed=seed, progress=advance)
    data = result.to_json()
    if as_json:
        dump_json(data)
        return
    lo, hi = data["picked_blocked_ci"]
    console.print(
        f"{data['answered']} of {data['sampled']} turns answered ({data['errors']} errors); "
        f"with every candidate the model picked a gate-blocked skill in "
        f"{data['picked_blocked']} ({data['picked_blocked_rate']:.1%}, 95% CI {lo:.1%}-{hi:.1%}); "
        f"its pick changed in {data['differ']} ({data['differ_rate']:.1%}).",
        highlight=False,
    )


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add `replay` to the app."""
    app.command("replay")(replay_cmd)
