"""A small, self-contained reading of the sitecare accounts DB and the gate's funnel over it.

This is *not* maitred's SQL state provider (that lives in :mod:`maitred.state`); it is the
simplest faithful reading of the generated database, as maitred's SQL provider reads it -- a
row's columns become ``root.field`` values (flags as SQLite returns them, 0/1; NULL as
``None``), its ``updated_at`` is every key's ``key_as_of``, and an absent row makes all of that
root's keys missing -- used to check the data and to measure how much the gate blocks.
Run it directly for the numbers::

    .venv/bin/python -m tests.domains.sitecare_funnel
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from maitred.contract import Contract, load_sidecar
from maitred.contract.kernel import exits
from maitred.lab.domains.sitecare import (
    AS_OF,
    COLUMNS,
    generate_messages,
    skills_dir,
    write_accounts,
)
from maitred.state import Snapshot


def load_contracts() -> dict[str, Contract]:
    """Every sitecare skill's contract, by skill name."""
    out: dict[str, Contract] = {}
    for folder in sorted(p for p in skills_dir().iterdir() if p.is_dir()):
        contract, _family = load_sidecar(folder, folder.name)
        out[folder.name] = contract
    return out


def read_state(
    db: Path, *, as_bool: bool = False
) -> dict[str, tuple[dict[str, Any], dict[str, float]]]:
    """account_id -> (values by ``root.field``, key_as_of by ``root.field``).

    ``as_bool`` turns ``BOOLEAN`` columns into ``bool`` (as a PostgreSQL or JSON source would
    give them); by default they stay 0/1, as SQLite returns them.
    """
    state: dict[str, tuple[dict[str, Any], dict[str, float]]] = {}
    conn = sqlite3.connect(db)
    try:
        for root, (table, columns) in COLUMNS.items():
            names = [name for name, _ in columns]
            bools = {name for name, kind in columns if kind == "BOOLEAN" and as_bool}
            quoted = ", ".join(f'"{n}"' for n in names)
            sql = f'SELECT "account_id", "updated_at", {quoted} FROM "{table}"'
            for account, updated, *values in conn.execute(sql):
                vals, ages = state.setdefault(account, ({}, {}))
                for name, value in zip(names, values, strict=True):
                    key = f"{root}.{name}"
                    vals[key] = bool(value) if name in bools and value is not None else value
                    ages[key] = float(updated)
    finally:
        conn.close()
    return state


def snapshot(
    state: dict[str, tuple[dict[str, Any], dict[str, float]]], account: str, keys: Iterable[str]
) -> Snapshot:
    """The snapshot a provider would return for ``keys`` of ``account`` at :data:`AS_OF`."""
    values, ages = state.get(account, ({}, {}))
    wanted = set(keys)
    return Snapshot(
        account,
        {k: values[k] for k in wanted if k in values},
        float(AS_OF),
        {k: ages[k] for k in wanted if k in ages},
        frozenset(k for k in wanted if k not in values),
    )


def funnel(n_accounts: int, n_messages: int, seed: int, db: Path) -> dict[str, Any]:
    """Generate both artefacts and measure the gate over every (topical message, skill) pair."""
    write_accounts(db, n_accounts, seed)
    state = read_state(db)
    contracts = load_contracts()
    keys = frozenset().union(*(c.reads for c in contracts.values()))
    pairs = blocked = topical = 0
    per_skill: Counter[str] = Counter()
    messages = list(generate_messages(n_messages, n_accounts, seed))
    for message in messages:
        if message["gold"] is None:
            continue
        topical += 1
        snap = snapshot(state, message["account"], keys)
        for name, contract in contracts.items():
            pairs += 1
            if exits(contract, snap, AS_OF):
                blocked += 1
                per_skill[name] += 1
    return {
        "messages": len(messages),
        "topical": topical,
        "off_topic_share": 1 - topical / len(messages),
        "pairs": pairs,
        "blocked": blocked,
        "blocked_share": blocked / pairs if pairs else 0.0,
        "blocked_share_by_skill": {k: per_skill[k] / topical for k in sorted(contracts)},
    }


def main(argv: list[str]) -> None:
    n_accounts = int(argv[0]) if argv else 5000
    n_messages = int(argv[1]) if len(argv) > 1 else 20000
    with tempfile.TemporaryDirectory() as tmp:
        result = funnel(n_accounts, n_messages, 7, Path(tmp) / "accounts.db")
    for key, value in result.items():
        if isinstance(value, dict):
            print(f"{key}:")
            for name, share in value.items():
                print(f"  {name:24s} {share:.3f}")
        else:
            print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")


if __name__ == "__main__":
    main(sys.argv[1:])
