"""`maitred actions check` (shadow replay) and `maitred eval agent` (gated-agent evaluation).

`actions check` prints one JSON line per mutating call: ``{"trajectory", "index", "name",
"decision", "code", "message"}``. Allowed writes are applied to an in-memory copy of the
database so later calls see their effects; the database file is never written.

`eval agent` runs generated tasks K times with gates on and off and prints pass^1 and pass^K
with paired-bootstrap intervals, stratified by whether a gate fired (library:
:mod:`maitred.lab.agents`).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from maitred.actions.packs import load_pack, pack_names
from maitred.actions.replay import load_trajectories, replay
from maitred.actions.rules import Rulebook
from maitred.cli._common import API_KEY_ENV_HELP, console, dump_json, err_console
from maitred.cli._conventions import App
from maitred.engine import Maitred
from maitred.errors import ConfigError, InputError
from maitred.lab.agents import (
    DOMAINS,
    Agent,
    EvalReport,
    GoldAgent,
    LLMAgent,
    RecklessAgent,
    evaluate_agent,
    load_domain,
)
from maitred.lab.agents.agents import AGENTS
from maitred.lab.agents.domains import Domain
from maitred.lab.sim import make_executor
from maitred.log.base import open_log


def _load_db(path: Path, rulebook: Rulebook) -> dict[str, Any]:
    """The state document at ``path``, refused unless it has every collection ``rulebook`` reads.

    The required top-level collections are the ``state.<name>`` roots the pack's rulebook
    predicates declare in their reads (``state.reservations[args.reservation_id]`` needs
    ``reservations``), each a JSON object of records by id; an empty or wrong-shaped document
    would otherwise replay with every lookup "not found", which reads like real verdicts.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the database: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}:{exc.lineno}: the database is not JSON ({exc.msg}); pass the tau2 "
            "airline db.json"
        ) from None
    needed = sorted(
        {
            re.split(r"[.\[]", key[len("state.") :], maxsplit=1)[0]
            for tool in rulebook.tools.values()
            for pred in tool.predicates
            for key in pred.reads
            if key.startswith("state.")
        }
    )
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: the database must be a JSON object with the collections {needed} "
            f"(what pack {rulebook.name!r} reads), not a {type(data).__name__}"
        )
    missing = [name for name in needed if name not in data]
    wrong = [
        f"{name} is a {type(data[name]).__name__}"
        for name in needed
        if name in data and not isinstance(data[name], dict)
    ]
    if missing or wrong:
        problems = ([f"missing {missing}"] if missing else []) + wrong
        raise ConfigError(
            f"{path}: not a database for pack {rulebook.name!r}: {'; '.join(problems)}; it needs "
            f"the top-level collections {needed}, each an object of records by id "
            f'({{"{needed[0]}": {{"<id>": {{...}}}}, ...}})'
        )
    return data


def check(
    pack: str = typer.Option(..., "--pack", help=f"Policy pack: {', '.join(pack_names())}."),
    db: Path = typer.Option(..., "--db", help="The state document (JSON), e.g. tau2 db.json."),
    trajectories: Path = typer.Option(
        ..., "--trajectories", "-t", help='JSONL {"id", "context", "calls": [...]}.'
    ),
    now: str | None = typer.Option(
        None,
        "--now",
        help="The time the pack's rules read, ISO 8601 (default: the pack's own clock).",
    ),
    carry_state: bool = typer.Option(
        False,
        "--carry-state",
        help="Let writes carry over from one trajectory to the next (default: each starts "
        "from the initial database).",
    ),
) -> None:
    """What would the gates have done to these calls? One JSON line per mutating call.

    Each trajectory starts from the initial database. Bad lines (not JSON, no calls, a call
    without a name, a repeated id) are reported with file and line and skipped; the good ones
    are replayed; the exit status is 1 when any line was bad.
    """
    settings: dict[str, Any] = {"now": now} if now else {}
    engine = Maitred.for_pack(load_pack(pack), settings)
    state = _load_db(db, engine.rulebook)
    bad: list[InputError] = []
    items = load_trajectories(trajectories, on_error=bad.append)
    full = engine.rulebook.settings
    rows = replay(
        engine.action_gate,
        state,
        items,
        lambda work: make_executor(pack, work, full),
        carry_state=carry_state,
    )
    for row in rows:
        sys.stdout.write(json.dumps(row.to_json(), ensure_ascii=False) + "\n")
    if bad:  # every good trajectory was replayed; the bad lines are reported, then exit 1
        for err in bad:
            err_console.print(f"[yellow]skipped:[/] {escape(str(err))}", highlight=False)
        raise typer.Exit(1)


def _make_agent(
    name: str, domain: Domain, rate: float, base_url: str | None, model: str | None, key_env: str
) -> Agent:
    if name == "gold":
        return GoldAgent()
    if name == "reckless":
        if not 0.0 <= rate <= 1.0:
            raise ConfigError(f"--rate must be between 0 and 1 (got {rate})")
        return RecklessAgent(rate)
    if name == "llm":
        if not base_url or not model:
            raise ConfigError("--agent llm needs --base-url (…/v1) and --model")
        return LLMAgent(domain, base_url, model, api_key=os.environ.get(key_env, ""))
    raise ConfigError(f"unknown agent {name!r}; choose one of {list(AGENTS)}")


def _print_report(report: EvalReport) -> None:
    data = report.to_json()
    k = report.trials
    console.print(
        f"{report.agent} on {report.pack}: {len(report.results)} tasks x {k} trials per arm, "
        f"{data['rejections']} rejections (seed {report.seed})",
        highlight=False,
    )
    for name, s in data["strata"].items():
        if not s["n_tasks"]:
            console.print(f"  {name:<9}  0 tasks", highlight=False)
            continue
        for key in ("pass^1", f"pass^{k}"):
            f = s[key]
            console.print(
                f"  {name:<9} {s['n_tasks']:>3} tasks  {key:<7} on {f['on']:.3f}  off "
                f"{f['off']:.3f}  diff {f['diff']:+.3f}  95% CI [{f['low']:+.3f}, "
                f"{f['high']:+.3f}]",
                highlight=False,
                soft_wrap=True,
            )


def agent(
    pack: str = typer.Option(..., "--pack", help=f"Pack: {', '.join(sorted(DOMAINS))}."),
    tasks: int = typer.Option(
        ..., "--tasks", min=1, help="How many tasks (from seeded databases)."
    ),
    agent_name: str = typer.Option(..., "--agent", help=f"Agent: {', '.join(AGENTS)}."),
    trials: int = typer.Option(4, "--trials", "-k", min=1, help="Trials per task and arm (K)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the task set, trials and bootstrap."),
    rate: float = typer.Option(
        0.5, "--rate", min=0.0, max=1.0, help="reckless: chance of a forbidden write."
    ),
    base_url: str | None = typer.Option(
        None, "--base-url", help="llm: OpenAI-compatible URL (default: none; llm needs it)."
    ),
    model: str | None = typer.Option(
        None, "--model", help="llm: the model name (default: none; llm needs it)."
    ),
    key_env: str = typer.Option(
        "OPENAI_API_KEY", "--api-key-env", metavar="NAME", help=f"llm: {API_KEY_ENV_HELP}"
    ),
    log: str | None = typer.Option(
        None,
        "--log",
        help="Log gated decisions to this log, a file path or postgresql:// URL (default: no log).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Gates on vs off: pass^1 and pass^K with paired-bootstrap intervals, by whether a gate
    fired."""
    if trials < 1:
        raise ConfigError(f"--trials must be at least 1 (got {trials})")
    domain = load_domain(pack)
    chosen = _make_agent(agent_name, domain, rate, base_url, model, key_env)
    if log is None:
        report = evaluate_agent(domain, chosen, n_tasks=tasks, trials=trials, seed=seed)
    else:
        with open_log(log) as handle:
            report = evaluate_agent(
                domain, chosen, n_tasks=tasks, trials=trials, seed=seed, log=handle
            )
    if as_json:
        dump_json(report.to_json())
    else:
        _print_report(report)


def register(app: App, eval_app: App) -> None:
    """Add this module's commands to the `maitred` app (and its `eval` group)."""
    actions_app = App(help="The action gate: policy checks on tool calls.")
    actions_app.command("check")(check)
    app.add_typer(actions_app, name="actions")
    eval_app.command("agent")(agent)
