"""`maitred actions check`: shadow-replay recorded trajectories through a policy pack's gates.

Prints one JSON line per mutating call: ``{"trajectory", "index", "name", "decision", "code",
"message"}``. Allowed writes are applied to an in-memory copy of the database so later calls
see their effects; the database file is never written.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from maitred.actions.packs import PACKS, load_pack
from maitred.actions.replay import load_trajectories, replay
from maitred.errors import ConfigError


def _load_db(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the database: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}:{exc.lineno}: the database is not JSON ({exc.msg}); pass the tau2 "
            "airline db.json"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object with flights, users, reservations")
    return data


def check(
    pack: str = typer.Option(..., "--pack", help=f"Policy pack: {', '.join(sorted(PACKS))}."),
    db: Path = typer.Option(..., "--db", help="The state document (JSON), e.g. tau2 db.json."),
    trajectories: Path = typer.Option(
        ..., "--trajectories", "-t", help='JSONL {"id", "context", "calls": [...]}.'
    ),
    now: str | None = typer.Option(None, "--now", help="The pack's clock (ISO time)."),
) -> None:
    """What would the gates have done to these calls? One JSON line per mutating call."""
    entry = load_pack(pack)
    settings: dict[str, Any] = {"now": now} if now else {}
    gate = entry.make_gate(settings)
    state = _load_db(db)
    items = load_trajectories(trajectories)
    full = gate.policy.settings
    for row in replay(gate, state, items, lambda work: entry.make_executor(work, full)):
        sys.stdout.write(json.dumps(row.to_json(), ensure_ascii=False) + "\n")


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add this module's commands to the `maitred` app (and its `eval` group)."""
    actions_app = typer.Typer(
        help="The action gate: policy checks on tool calls.", no_args_is_help=True
    )
    actions_app.command("check")(check)
    app.add_typer(actions_app, name="actions")
