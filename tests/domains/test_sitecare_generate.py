"""The sitecare generators: the accounts database, the message stream and the funnel over them."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
import yaml

from maitred.contract.kernel import exits
from maitred.lab.domains.sitecare import (
    AS_OF,
    COLUMNS,
    TABLES,
    account_id,
    generate_messages,
    skills_dir,
    write_accounts,
    write_messages,
)
from maitred.lab.domains.sitecare._messages import REQUESTS, SKILL_WEIGHTS
from maitred.state import Snapshot

from .sitecare_funnel import funnel, load_contracts, read_state, snapshot


@pytest.fixture(scope="module")
def accounts_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sitecare") / "accounts.db"
    write_accounts(path, 1500, seed=11)
    return path


def _columns(conn: sqlite3.Connection, table: str) -> dict[str, str]:
    return {row[1]: row[2] for row in conn.execute(f'PRAGMA table_info("{table}")')}


def test_database_has_declared_tables_and_columns(accounts_db: Path) -> None:
    conn = sqlite3.connect(accounts_db)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert tables == {spec["table"] for spec in TABLES.values()}
        assert tables == {
            "accounts",
            "billing",
            "subscriptions",
            "domains",
            "sites",
            "mailboxes",
            "security",
        }
        for root, spec in TABLES.items():
            assert spec == {
                "table": COLUMNS[root][0],
                "id_column": "account_id",
                "updated_column": "updated_at",
            }
            columns = _columns(conn, spec["table"])
            assert columns == {
                "account_id": "TEXT",
                "updated_at": "INTEGER",
                **dict(COLUMNS[root][1]),
            }
            (count,) = conn.execute(f'SELECT COUNT(*) FROM "{spec["table"]}"').fetchone()
            assert 0 < count <= 1500
    finally:
        conn.close()


def test_every_predicate_key_maps_to_a_column(accounts_db: Path) -> None:
    conn = sqlite3.connect(accounts_db)
    try:
        for name, contract in load_contracts().items():
            for key in contract.reads:
                root, _, field = key.partition(".")
                assert root in TABLES, f"{name}: {key}"
                assert field in _columns(conn, TABLES[root]["table"]), f"{name}: {key}"
    finally:
        conn.close()


def test_some_accounts_lack_rows_and_some_rows_are_stale(accounts_db: Path) -> None:
    state = read_state(accounts_db)
    assert len(state) == 1500
    assert any("billing.status" not in values for values, _ in state.values())
    assert any("domain.status" not in values for values, _ in state.values())
    ages = [AS_OF - at["billing.status"] for _, at in state.values() if "billing.status" in at]
    assert any(age > 21600 for age in ages) and sum(age <= 21600 for age in ages) > len(ages) / 2


def test_database_is_deterministic(tmp_path: Path) -> None:
    dumps = []
    for name in ("a.db", "b.db"):
        write_accounts(tmp_path / name, 200, seed=5)
        conn = sqlite3.connect(tmp_path / name)
        dumps.append(list(conn.iterdump()))
        conn.close()
    assert dumps[0] == dumps[1]
    write_accounts(tmp_path / "c.db", 200, seed=6)
    conn = sqlite3.connect(tmp_path / "c.db")
    assert list(conn.iterdump()) != dumps[0]
    conn.close()


def test_null_as_missing_gives_the_same_verdicts(accounts_db: Path) -> None:
    """A provider may report a NULL column as a None value or as a missing key: same gate."""
    state = read_state(accounts_db)
    contracts = load_contracts()
    keys = frozenset().union(*(c.reads for c in contracts.values()))
    for i in range(0, 1500, 3):
        as_none = snapshot(state, account_id(i), keys)
        present = {k: v for k, v in as_none.values.items() if v is not None}
        as_missing = Snapshot(
            as_none.account,
            present,
            as_none.as_of,
            as_none.key_as_of,
            frozenset(keys - present.keys()),
        )
        for contract in contracts.values():
            assert exits(contract, as_none, AS_OF) == exits(contract, as_missing, AS_OF)


def test_flags_as_bools_or_ints_give_the_same_verdicts(accounts_db: Path) -> None:
    """SQLite hands flags over as 0/1, PostgreSQL and JSON as booleans: the gate must not care."""
    as_int = read_state(accounts_db)
    as_bool = read_state(accounts_db, as_bool=True)
    assert as_int["acc-000000"][0]["security.two_factor"] in (0, 1)
    assert isinstance(as_bool["acc-000000"][0]["security.two_factor"], bool)
    contracts = load_contracts()
    keys = frozenset().union(*(c.reads for c in contracts.values()))
    for i in range(0, 1500, 3):
        a = snapshot(as_int, account_id(i), keys)
        b = snapshot(as_bool, account_id(i), keys)
        for contract in contracts.values():
            assert exits(contract, a, AS_OF) == exits(contract, b, AS_OF)


def test_messages_are_deterministic_and_well_formed(tmp_path: Path) -> None:
    first = list(generate_messages(3000, 400, seed=3))
    assert first == list(generate_messages(3000, 400, seed=3))
    assert first != list(generate_messages(3000, 400, seed=4))
    assert len(first) == 3000 and len({m["id"] for m in first}) == 3000
    assert all(set(m) == {"id", "conversation", "account", "text", "gold"} for m in first)
    by_conv: dict[str, list[dict[str, object]]] = {}
    for m in first:
        by_conv.setdefault(str(m["conversation"]), []).append(m)
        assert m["gold"] is None or m["gold"] in SKILL_WEIGHTS
        assert re.fullmatch(r"acc-\d{6}", str(m["account"]))
        assert int(str(m["account"])[4:]) < 400 and str(m["text"]).strip()
    for messages in by_conv.values():
        assert 1 <= len(messages) <= 6
        assert len({m["account"] for m in messages}) == 1
    path = tmp_path / "messages.jsonl"
    write_messages(path, 500, 400, seed=3)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == first[:500]


def test_off_topic_share_and_topical_mix() -> None:
    messages = list(generate_messages(20000, 2000, seed=9))
    gold = Counter(m["gold"] for m in messages)
    off_topic = gold[None] / len(messages)
    assert 0.70 <= off_topic <= 0.80
    assert set(gold) - {None} == set(SKILL_WEIGHTS)
    texts = {str(m["text"]).lower() for m in messages if m["gold"] is None}
    assert "how long will it take?" in texts  # follow-ups are gold None


def test_each_skill_has_forty_distinct_phrasings_unlike_its_description() -> None:
    """Requests are paraphrases: none shares a run of five words with the skill description."""
    for skill, phrasings in REQUESTS.items():
        assert len(set(phrasings)) == len(phrasings) >= 40, skill
        text = (skills_dir() / skill / "SKILL.md").read_text(encoding="utf-8")
        description = str(yaml.safe_load(text.split("---")[1])["description"]).lower()
        grams = _grams(description, 5)
        for phrase in phrasings:
            assert not (_grams(phrase.lower(), 5) & grams), (skill, phrase)


def _grams(text: str, n: int) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9']+", text)
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def test_gate_blocks_about_half_of_topical_pairs(tmp_path: Path) -> None:
    """As in the paper (59%), the gate hides roughly half of (topical message, skill) pairs."""
    result = funnel(2000, 8000, seed=7, db=tmp_path / "accounts.db")
    assert 0.40 <= result["blocked_share"] <= 0.65
    assert all(0.05 < share < 0.98 for share in result["blocked_share_by_skill"].values())
