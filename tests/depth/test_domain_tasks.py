"""Two-request messages for the built-in domains, and `maitred depth domain-queries`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from maitred.cli.main import app
from maitred.errors import ConfigError
from maitred.lab.depth.domain_tasks import domain_queries, multi_skill_queries
from maitred.lab.domains import DOMAINS, get_domain
from maitred.recall.evaluate import Query, load_queries
from maitred.skills.catalog import load_catalog


def _jsonl(rows: list[Query]) -> str:
    return "".join(
        json.dumps({"id": q.id, "text": q.text, "gold": list(q.gold)}) + "\n" for q in rows
    )


def test_sitecare_messages_are_unchanged() -> None:
    """The sitecare depth results in docs/depth.md were measured on exactly these messages."""
    text = _jsonl(domain_queries("sitecare", 400, 1, "sctr"))
    digest = hashlib.sha256(text.encode()).hexdigest()
    assert digest == "f221a112d73d2d8fda8ae5be9c84c3c4537f8ba15b12c187698f579be1847d99"


@pytest.mark.parametrize("domain", DOMAINS)
def test_two_distinct_catalog_skills_per_message(domain: str) -> None:
    rows = domain_queries(domain, 300, 7)
    names = {s.name for s in load_catalog(get_domain(domain).skills_dir)}
    assert rows == domain_queries(domain, 300, 7)
    assert rows != domain_queries(domain, 300, 8)
    assert [q.id for q in rows] == [f"{get_domain(domain).prefix}{i}" for i in range(300)]
    for q in rows:
        assert len(q.gold) == 2 and q.gold[0] != q.gold[1] and set(q.gold) <= names
        assert "{" not in q.text and "}" not in q.text
    assert len({q.gold for q in rows}) > 40  # many different pairs, not a few repeated


def test_airline_messages_draw_every_skill_by_weight() -> None:
    rows = domain_queries("airline", 2000, 1, prefix="t")
    firsts = [q.gold[0] for q in rows]
    weights = get_domain("airline").weights
    assert set(firsts) == set(weights)
    top, rare = max(weights, key=weights.__getitem__), min(weights, key=weights.__getitem__)
    assert firsts.count(top) > 2 * firsts.count(rare)


def test_one_message_fills_a_slot_once() -> None:
    requests = {"a": ("move {res}",), "b": ("cancel {res}",)}
    slots = {"res": tuple(f"R{i}" for i in range(50))}
    for q in multi_skill_queries(requests, {"a": 1, "b": 1}, slots, 30, 0, "x", ("{a} / {b}",)):
        first, second = q.text.lower().split(" / ")
        assert first.split()[-1] == second.split()[-1]


def test_bad_banks_and_names_are_refused() -> None:
    with pytest.raises(ConfigError, match="two weighted skills"):
        multi_skill_queries({"a": ("x",), "b": ("y",)}, {"a": 1, "b": 0}, {}, 5, 0, "x")
    with pytest.raises(ConfigError, match=r"\['b'\] have no phrasings"):
        multi_skill_queries({"a": ("x",)}, {"a": 1, "b": 1}, {}, 5, 0, "x")
    with pytest.raises(ConfigError, match="choose one of sitecare, airline"):
        domain_queries("railway", 5, 0)


def test_cli_writes_labelled_queries(tmp_path: Path) -> None:
    out = tmp_path / "q.jsonl"
    args = ["depth", "domain-queries", "--domain", "airline", "--messages", "25", "--seed", "2"]
    result = CliRunner().invoke(app, [*args, "--prefix", "alte", "--out", str(out)])
    assert result.exit_code == 0, (result.stdout, result.exception)
    assert "wrote 25 queries" in result.stdout
    assert out.read_text(encoding="utf-8") == _jsonl(domain_queries("airline", 25, 2, "alte"))
    assert [q.id for q in load_queries(out)][:2] == ["alte0", "alte1"]
    bad = CliRunner().invoke(app, ["depth", "domain-queries", "--domain", "x", "--out", str(out)])
    assert isinstance(bad.exception, ConfigError)
