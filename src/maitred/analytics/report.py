"""The funnel report: a self-contained ``report.html`` and its PNG charts, from DuckDB queries.

Every figure is a read-only DuckDB query over the decision log (:mod:`maitred.analytics.duck`);
the charts are drawn with matplotlib (Agg, no display) and embedded in the HTML as data URIs,
so the one file can be mailed or attached to a ticket. ``anonymise`` replaces skill and
predicate names by stable pseudonyms (``skill-01`` ordered by candidate pairs) for sharing
outside the team.

Charts:

* ``funnel_messages.png`` -- all messages -> semantically matched -> a non-empty gated menu;
* ``funnel_tokens.png`` -- skill-description tokens: every skill for every message -> after
  recall -> after the gate;
* ``skills.png`` -- per skill: block rate, and description tokens the gate saved;
* ``predicates.png`` -- the predicates that blocked the most pairs.

Turns that failed closed as a whole (the state store was down: ``state_unavailable``; it had no
record of the account: ``account_not_found``) are counted apart, turns and withheld pairs per
cause, and the page says so in red at the top when there are any: an outage must not read as a
gate that simply blocked a lot.
"""

from __future__ import annotations

import base64
import html
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maitred.analytics.duck import connect_log
from maitred.analytics.funnel import cause_sql
from maitred.records import CAUSES

_WHERE_RUN = "WHERE t.run_id = ?"


@dataclass(frozen=True)
class ReportData:
    """What the report shows, as plain values (also written as ``report.json``)."""

    messages: int
    matched: int
    with_menu: int
    tokens_all: int
    tokens_recall: int
    tokens_gate: int
    skills: list[dict[str, Any]] = field(default_factory=list)
    predicates: list[dict[str, Any]] = field(default_factory=list)
    run_id: str | None = None
    #: cause -> {"turns": n, "pairs": blocked pairs of those turns}, every cause listed
    fail_closed: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def fail_closed_turns(self) -> int:
        """Turns that failed closed as a whole, whatever the cause."""
        return sum(c["turns"] for c in self.fail_closed.values())


def collect(location: str | os.PathLike[str], run_id: str | None = None) -> ReportData:
    """Run the report's DuckDB queries over the log at ``location``."""
    conn = connect_log(location)
    try:
        where, params = (_WHERE_RUN, [run_id]) if run_id else ("", [])
        messages, matched, with_menu, tokens_all = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM((t.n_candidates > 0)::INT), 0), "
            "COALESCE(SUM((t.n_visible > 0)::INT), 0), COALESCE(SUM(r.tokens_all_skills), 0) "
            f"FROM log.turns t JOIN log.runs r ON r.run_id = t.run_id {where}",
            params,
        ).fetchone()
        skill_rows = conn.execute(
            "SELECT p.skill, COUNT(*) AS candidates, SUM((p.visible = 0)::INT) AS blocked, "
            "SUM(p.desc_tokens) AS tokens, SUM(CASE WHEN p.visible = 0 THEN p.desc_tokens "
            "ELSE 0 END) AS saved FROM log.pairs p JOIN log.turns t ON t.turn_id = p.turn_id "
            f"{where} GROUP BY p.skill ORDER BY candidates DESC, p.skill",
            params,
        ).fetchall()
        pred_rows = conn.execute(
            "SELECT p.skill, u.f.predicate AS predicate, COUNT(*) AS pairs FROM log.pairs p "
            "JOIN log.turns t ON t.turn_id = p.turn_id, "
            'unnest(from_json(p.fired_json, \'[{"predicate": "VARCHAR"}]\')) AS u(f) '
            f"{where + ' AND' if where else 'WHERE'} p.visible = 0 "
            "GROUP BY ALL ORDER BY pairs DESC, p.skill, predicate LIMIT 15",
            params,
        ).fetchall()
        cause_rows = conn.execute(
            f"SELECT {cause_sql()} AS cause, COUNT(DISTINCT t.turn_id), "
            "COALESCE(SUM(CASE WHEN p.turn_id IS NOT NULL AND p.visible = 0 THEN 1 ELSE 0 END), 0) "
            "FROM log.turns t LEFT JOIN log.pairs p ON p.turn_id = t.turn_id "
            f"{where + ' AND' if where else 'WHERE'} t.provider_error <> '' GROUP BY ALL",
            params,
        ).fetchall()
    finally:
        conn.close()
    found = {str(c): {"turns": int(n), "pairs": int(pairs)} for c, n, pairs in cause_rows}
    fail_closed = {str(c): found.get(c, {"turns": 0, "pairs": 0}) for c in CAUSES}
    skills = [
        {
            "skill": s,
            "candidates": int(c),
            "blocked": int(b),
            "block_rate": b / c if c else 0.0,
            "tokens": int(tk),
            "tokens_saved": int(sv),
        }
        for s, c, b, tk, sv in skill_rows
    ]
    tokens_recall = sum(s["tokens"] for s in skills)
    tokens_gate = tokens_recall - sum(s["tokens_saved"] for s in skills)
    predicates = [{"skill": s, "predicate": p, "pairs": int(n)} for s, p, n in pred_rows]
    return ReportData(
        int(messages),
        int(matched),
        int(with_menu),
        int(tokens_all),
        tokens_recall,
        tokens_gate,
        skills,
        predicates,
        run_id,
        fail_closed,
    )


def anonymise(data: ReportData) -> ReportData:
    """Replace skill and predicate names with stable pseudonyms (by candidate count)."""
    alias = {s["skill"]: f"skill-{i:02d}" for i, s in enumerate(data.skills, start=1)}
    pred_alias: dict[tuple[str, str], str] = {}
    for p in data.predicates:
        key = (p["skill"], p["predicate"])
        n = sum(1 for k in pred_alias if k[0] == p["skill"]) + 1
        pred_alias.setdefault(key, f"p{n}")
    return ReportData(
        data.messages,
        data.matched,
        data.with_menu,
        data.tokens_all,
        data.tokens_recall,
        data.tokens_gate,
        [{**s, "skill": alias[s["skill"]]} for s in data.skills],
        [
            {
                **p,
                "skill": alias.get(p["skill"], "skill-?"),
                "predicate": pred_alias[(p["skill"], p["predicate"])],
            }
            for p in data.predicates
        ],
        data.run_id,
        data.fail_closed,
    )


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:62rem;
color:#1f2933;padding:0 1rem}h1{font-size:1.6rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0}td,th{padding:.3rem .8rem;border-bottom:1px solid
#d9e2ec;text-align:right}td:first-child,th:first-child{text-align:left}img{max-width:100%}
.note{color:#52606d;font-size:.9rem}.alarm{color:#b42318;font-weight:600}
"""


def _png_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _row(cells: list[Any]) -> str:
    return "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>"


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "n/a"


def render_html(data: ReportData, charts: dict[str, Path]) -> str:
    """The self-contained report page."""
    funnel_rows = [
        ["messages", f"{data.messages:,}", "", f"{data.tokens_all:,}"],
        [
            "matched by recall",
            f"{data.matched:,}",
            _share(data.matched, data.messages),
            f"{data.tokens_recall:,}",
        ],
        [
            "non-empty gated menu",
            f"{data.with_menu:,}",
            _share(data.with_menu, data.messages),
            f"{data.tokens_gate:,}",
        ],
    ]
    skill_rows = [
        [
            s["skill"],
            f"{s['candidates']:,}",
            f"{s['blocked']:,}",
            f"{s['block_rate']:.1%}",
            f"{s['tokens_saved']:,}",
        ]
        for s in data.skills
    ]
    pred_rows = [[p["skill"], p["predicate"], f"{p['pairs']:,}"] for p in data.predicates]
    cause_rows = [
        [cause, f"{c['turns']:,}", _share(c["turns"], data.messages), f"{c['pairs']:,}"]
        for cause, c in data.fail_closed.items()
    ]
    alarm = (
        f'<p class="alarm">{data.fail_closed_turns:,} turn(s) failed closed because state could '
        "not be trusted (see Fail-closed turns): their skills were withheld without any "
        "predicate being asked.</p>"
        if data.fail_closed_turns
        else ""
    )
    reduction = _share(data.tokens_all - data.tokens_gate, data.tokens_all)
    scope = f"run {html.escape(data.run_id)}" if data.run_id else "every run in the log"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>maitred funnel report</title>
<style>{_CSS}</style></head><body>
<h1>maitred funnel report</h1>
<p class="note">{scope}; every figure is a read-only DuckDB query over the decision log.
Skill-description tokens fell by {reduction} against offering every skill with every message.</p>
{alarm}
<h2>Funnel</h2>
<table><tr><th>stage</th><th>messages</th><th>share</th><th>description tokens</th></tr>
{"".join(_row(r) for r in funnel_rows)}</table>
<h2>Fail-closed turns</h2>
<table><tr><th>cause</th><th>turns</th><th>share</th><th>pairs withheld</th></tr>
{"".join(_row(r) for r in cause_rows)}</table>
<img alt="message funnel" src="{_png_uri(charts["funnel_messages"])}">
<img alt="token funnel" src="{_png_uri(charts["funnel_tokens"])}">
<h2>Per skill</h2>
<img alt="per-skill block rate and tokens saved" src="{_png_uri(charts["skills"])}">
<table><tr><th>skill</th><th>candidate pairs</th><th>blocked</th><th>block rate</th>
<th>tokens saved</th></tr>{"".join(_row(r) for r in skill_rows)}</table>
<h2>Predicates that blocked the most pairs</h2>
<img alt="top predicates" src="{_png_uri(charts["predicates"])}">
<table><tr><th>skill</th><th>predicate</th><th>pairs blocked</th></tr>
{"".join(_row(r) for r in pred_rows)}</table>
</body></html>
"""


def write_report(
    location: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    run_id: str | None = None,
    anonymised: bool = False,
) -> dict[str, Path]:
    """Query the log, draw the charts and write ``report.html`` (+ PNGs, ``report.json``).

    Returns:
        name -> path of everything written (``html``, ``json`` and each chart).
    """
    import json
    from dataclasses import asdict

    from maitred.analytics.charts import draw_all

    data = collect(location, run_id)
    if anonymised:
        data = anonymise(data)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    charts = draw_all(data, folder)
    page = folder / "report.html"
    page.write_text(render_html(data, charts), encoding="utf-8")
    summary = folder / "report.json"
    summary.write_text(json.dumps(asdict(data), indent=2) + "\n", encoding="utf-8")
    return {"html": page, "json": summary, **charts}
