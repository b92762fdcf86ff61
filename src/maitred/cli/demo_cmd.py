"""`maitred demo`: the whole pipeline on the embedded `sitecare` domain, end to end.

Generates a seeded accounts database (SQLite) and a message file, builds the recall index,
routes every message through recall -> executability gate -> depth -> menu, logs each decision
and prints the funnel. Everything it writes lands in ``--out``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer

from maitred.analytics.funnel import funnel as compute_funnel
from maitred.analytics.funnel import render_table
from maitred.build import PipelineOptions
from maitred.cli._common import console, err_console, index_progress, progress_bar
from maitred.engine import Maitred
from maitred.lab.domains import sitecare
from maitred.messages import read_messages

#: the demo's recall set-up: dense ranking (the best method on MetaTool and on sitecare's own
#: labelled messages, see BENCHMARKS.md), a cosine floor that decides whether a message is about the
#: domain at all, and family-level recall (a matched message gets the whole family, as in the
#: deployment the executability-gating paper reports).
DEMO_OPTIONS = PipelineOptions(method="dense", top_k=5, min_score=0.35, family=True)


def demo(
    messages: int = typer.Option(
        100_000, "--messages", "-n", min=1, help="How many messages to generate."
    ),
    out: Path = typer.Option(Path("demo-out"), "--out", "-o", help="Output folder."),
    accounts: int = typer.Option(5_000, "--accounts", min=1, help="How many accounts to generate."),
    seed: int = typer.Option(7, "--seed", help="Seed for the generators."),
) -> None:
    """Generate the sitecare domain's accounts and traffic, route it all, print the funnel."""
    out.mkdir(parents=True, exist_ok=True)
    db, msgs, log_path = out / "accounts.sqlite", out / "messages.jsonl", out / "decisions.sqlite"
    for stale in (db, log_path, Path(f"{log_path}-wal"), Path(f"{log_path}-shm")):
        stale.unlink(missing_ok=True)
    err_console.print(f"generating {accounts} accounts and {messages} messages (seed {seed})")
    # account facts are dated relative to now, so freshness and date rules read as intended
    sitecare.write_accounts(db, accounts, seed, as_of=int(time.time()))
    sitecare.write_messages(msgs, messages, accounts, seed)
    (out / "tables.json").write_text(json.dumps(sitecare.TABLES, indent=2) + "\n")
    state = f"sqlite:///{db.resolve()}"
    with (
        Maitred.open(
            [sitecare.skills_dir()],
            state,
            DEMO_OPTIONS,
            tables=sitecare.TABLES,
            cache_dir=out / "index",
            log=str(log_path),
            progress=index_progress(),
        ) as engine,
        progress_bar("routing", messages) as advance,
    ):
        stats = engine.run(read_messages(msgs), progress=advance)
    err_console.print(
        f"routed {stats.messages} messages in {stats.seconds:.1f}s "
        f"({stats.messages / max(stats.seconds, 1e-9):.0f} msg/s)",
        highlight=False,
    )
    # the log was created for this run alone, so the whole-log funnel is this run's, and
    # funnel.json is exactly what `maitred funnel --log DIR/decisions.sqlite --json` prints
    result = compute_funnel(str(log_path))
    (out / "funnel.json").write_text(json.dumps(result.to_json(), indent=2) + "\n")
    console.print(render_table(result))
    console.print(
        f"wrote {log_path}, {out / 'funnel.json'}; try one message yourself:\n"
        f"  maitred route 'I want to hook up my own domain' --account {sitecare.account_id(1)} "
        f"--skills {sitecare.skills_dir()} --state {state} --tables {out / 'tables.json'} "
        "--method dense --family --min-score 0.35",
        highlight=False,
    )
