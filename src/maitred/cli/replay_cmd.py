"""`maitred replay`: ask a model about logged turns with and without the gate."""

from __future__ import annotations

import os
from typing import Any

import typer

from maitred.cli._common import (
    API_KEY_ENV_HELP,
    LOG_OPT,
    console,
    dump_json,
    err_console,
    progress_bar,
)
from maitred.cli._conventions import App
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
    skills: list[str] = typer.Option(
        ..., "--skills", "-s", help="The catalog the log was written with; repeatable."
    ),
    log: str | None = LOG_OPT,
    cohort: str = typer.Option("risk", "--cohort", help="random or risk (see docs)."),
    n: int = typer.Option(
        200, "--conversations", "-n", min=1, help="How many conversations to replay."
    ),
    model: str = typer.Option("local", "--model", help="local, local:PATH.gguf, or a model name."),
    base_url: str | None = typer.Option(
        None, "--base-url", help="OpenAI-compatible endpoint (default: none, for local models)."
    ),
    api_key_env: str = typer.Option(
        "MAITRED_API_KEY", "--api-key-env", metavar="NAME", help=API_KEY_ENV_HELP
    ),
    api_key: str = typer.Option(
        "", "--api-key", hidden=True, help="Old: the key itself; use --api-key-env."
    ),
    workers: int = typer.Option(1, "--workers", min=1, help="How many model calls run at once."),
    seed: int = typer.Option(0, "--seed", help="Sampling seed."),
    ray_address: str | None = typer.Option(
        None,
        "--ray-address",
        help="Fan out over a Ray cluster, e.g. auto or ray://host:10001 (default: threads here).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """How often would the model pick a skill the gate blocked, were the gate off?

    Exit status 2, with nothing stored, when the log holds no turn to replay, when --skills is
    not the catalog the sampled turns were routed with, or when every model call failed; 1
    when some calls failed (the rest are reported).
    """
    if cohort not in COHORTS:
        raise ConfigError(f"unknown cohort {cohort!r}; choose one of {list(COHORTS)}")
    if n < 1 or workers < 1:
        raise ConfigError("--conversations and --workers must be at least 1")
    api_key = _api_key(api_key, api_key_env)
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
    else:
        _print_summary(data)
    if data["errors"]:  # the answered turns are reported; a failed call makes the status 1
        first = next(o.error for o in result.outcomes if o.error)
        err_console.print(
            f"{data['errors']} of {data['sampled']} model calls failed (first: {first}); "
            "the figures cover the answered turns only (exit status 1)",
            highlight=False,
            markup=False,
        )
        raise typer.Exit(1)


def _print_summary(data: dict[str, Any]) -> None:
    lo, hi = data["picked_blocked_ci"]
    console.print(
        f"{data['answered']} of {data['sampled']} turns answered ({data['errors']} errors); "
        f"with every candidate the model picked a gate-blocked skill in "
        f"{data['picked_blocked']} ({data['picked_blocked_rate']:.1%}, 95% CI {lo:.1%}-{hi:.1%}); "
        f"its pick changed in {data['differ']} ({data['differ_rate']:.1%}).",
        highlight=False,
    )


def _api_key(given: str, env_name: str) -> str:
    """The API key: from the environment variable ``env_name``, or (old, hidden) given inline.

    A key typed on the command line stays in the shell history and shows in the process list,
    so the inline form only survives one release, with a warning.
    """
    if given:
        err_console.print(
            "warning: --api-key puts the key in your shell history and the process list; "
            "export it and pass --api-key-env NAME (default MAITRED_API_KEY) instead",
            highlight=False,
        )
        return given
    return os.environ.get(env_name, "")


def register(app: App, eval_app: App) -> None:
    """Add `replay` to the app (``--n`` stays a hidden alias of ``--conversations``)."""
    app.command("replay", aliases={"--n": "--conversations"})(replay_cmd)
