"""Generate the sitecare demo data: an accounts database and a stream of customer messages.

The demo reproduces the setting of the executability-gating paper: a website builder's
customer-care assistant with one family of account-changing skills. Two artefacts come out:

* :func:`write_accounts` -- a real SQLite database, one table per state root (see
  :data:`TABLES`), each keyed by ``account_id`` with an ``updated_at`` column. A state key
  ``root.field`` is column ``field`` of ``TABLES[root]["table"]``. An account may lack a row in
  a table (missing state), and a few rows lag behind their sync (stale state).
* :func:`generate_messages` / :func:`write_messages` -- conversations of 1-6 messages per
  account, about three quarters off-topic (design, SEO, fonts, chit-chat ...), the rest asking
  in the customer's own words for one of the family's skills (``gold`` = the skill) or
  following up on such a request (``gold`` = ``None``).

Both are deterministic for a seed. All timestamps are int unix seconds relative to
:data:`AS_OF`, the moment the data describes: evaluate predicates with ``now = AS_OF`` (give the
gate ``clock=lambda: AS_OF``), or pass ``as_of=int(time.time())`` to :func:`write_accounts` to
get a database that is fresh now.

Booleans are stored as 0/1 in columns declared ``BOOLEAN``; a state provider must hand them to
predicates as ``bool`` (CEL does not treat 1 as true). NULL means "no value" (``None``).
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import maitred.lab.domains.sitecare._accounts as _accounts
from maitred.lab.domains.sitecare._messages import conversation

#: The moment the generated data describes: 2026-06-01T00:00:00Z.
AS_OF = 1_780_272_000

#: root -> table and its columns (name, SQLite type), ``account_id`` and ``updated_at`` aside.
COLUMNS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "account": (
        "accounts",
        (
            ("plan", "TEXT"),
            ("created_at", "INTEGER"),
            ("email_verified", "BOOLEAN"),
            ("country", "TEXT"),
        ),
    ),
    "billing": (
        "billing",
        (
            ("status", "TEXT"),
            ("last_payment_at", "INTEGER"),
            ("last_payment_amount", "INTEGER"),  # cents
            ("refund_requested", "BOOLEAN"),
            ("auto_renew", "BOOLEAN"),
        ),
    ),
    "subscription": (
        "subscriptions",
        (("status", "TEXT"), ("renews_at", "INTEGER"), ("cancel_at_period_end", "BOOLEAN")),
    ),
    "domain": (
        "domains",
        (
            ("name", "TEXT"),
            ("owned", "BOOLEAN"),
            ("status", "TEXT"),
            ("registrar_lock", "BOOLEAN"),
            ("registered_at", "INTEGER"),
            ("connected", "BOOLEAN"),
        ),
    ),
    "site": (
        "sites",
        (
            ("status", "TEXT"),
            ("published", "BOOLEAN"),
            ("version_count", "INTEGER"),
            ("url_changed_at", "INTEGER"),
            ("premium_features", "BOOLEAN"),
        ),
    ),
    "mailbox": (
        "mailboxes",
        (("count", "INTEGER"), ("limit", "INTEGER"), ("provider", "TEXT")),
    ),
    "security": (
        "security",
        (("two_factor", "BOOLEAN"), ("identity_verified", "BOOLEAN"), ("last_reset_at", "INTEGER")),
    ),
}

#: root -> where its keys live; what ``SqlStateProvider(url, TABLES)`` takes.
TABLES: dict[str, dict[str, str]] = {
    root: {"table": table, "id_column": "account_id", "updated_column": "updated_at"}
    for root, (table, _) in COLUMNS.items()
}


def account_id(index: int) -> str:
    """The id of the ``index``-th generated account (``acc-000042``)."""
    return f"acc-{index:06d}"


def skills_dir() -> Path:
    """The folder holding the sitecare skill folders (SKILL.md + maitred.yaml + scripts/)."""
    return Path(__file__).resolve().parent / "skills"


def _create_sql(root: str) -> str:
    table, columns = COLUMNS[root]
    cols = ", ".join(f'"{name}" {kind}' for name, kind in columns)
    return (
        f'CREATE TABLE "{table}" ("account_id" TEXT PRIMARY KEY, '
        f'"updated_at" INTEGER NOT NULL, {cols})'
    )


def _insert_sql(root: str) -> str:
    table, columns = COLUMNS[root]
    names = ["account_id", "updated_at", *(name for name, _ in columns)]
    quoted = ", ".join(f'"{n}"' for n in names)
    marks = ", ".join("?" for _ in names)
    return f'INSERT INTO "{table}" ({quoted}) VALUES ({marks})'


def write_accounts(path: str | Path, n: int, seed: int, as_of: int = AS_OF) -> None:
    """Write ``n`` accounts to a new SQLite database at ``path`` (replacing any file there).

    Args:
        path: the database file.
        n: how many accounts (ids ``account_id(0)`` .. ``account_id(n - 1)``).
        seed: the random seed; the same seed gives the same database.
        as_of: the moment the data describes (unix seconds); :data:`AS_OF` by default.
    """
    target = Path(path)
    target.unlink(missing_ok=True)
    rng = random.Random(seed)
    rows: dict[str, list[tuple[Any, ...]]] = {root: [] for root in COLUMNS}
    for i in range(n):
        drawn = _accounts.draw_account(rng, as_of)
        for root, row in drawn.items():
            if row is None:
                continue
            fields = (name for name, _ in COLUMNS[root][1])
            values = (_sql_value(row[name]) for name in fields)
            rows[root].append((account_id(i), row["updated_at"], *values))
    with sqlite3.connect(target) as conn:
        for root in COLUMNS:
            conn.execute(_create_sql(root))
            conn.executemany(_insert_sql(root), rows[root])
    conn.close()


def _sql_value(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value


def generate_messages(n: int, n_accounts: int, seed: int) -> Iterator[dict[str, Any]]:
    """Yield ``n`` messages, conversation by conversation, deterministically for ``seed``.

    Each message is ``{"id", "conversation", "account", "text", "gold"}``: ``gold`` is the skill
    the message asks for, or ``None`` (off-topic, or a follow-up to an earlier request).
    Accounts are drawn from ``account_id(0)`` .. ``account_id(n_accounts - 1)``, the ids that
    :func:`write_accounts` creates.
    """
    if n_accounts < 1:
        raise ValueError(f"n_accounts must be at least 1, got {n_accounts}")
    rng = random.Random(seed)
    produced = 0
    conv = 0
    while produced < n:
        account = account_id(rng.randrange(n_accounts))
        for text, gold in conversation(rng):
            if produced == n:
                return
            yield {
                "id": f"m{produced:07d}",
                "conversation": f"c{conv:06d}",
                "account": account,
                "text": text,
                "gold": gold,
            }
            produced += 1
        conv += 1


def write_messages(path: str | Path, n: int, n_accounts: int, seed: int) -> None:
    """Write :func:`generate_messages` to ``path`` as JSON Lines (one message per line)."""
    with Path(path).open("w", encoding="utf-8") as out:
        for message in generate_messages(n, n_accounts, seed):
            out.write(json.dumps(message, ensure_ascii=False))
            out.write("\n")
