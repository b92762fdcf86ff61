"""The console's pages as HTML, each from the same JSON its URL answers with.

Every function here takes what the log (or the what-if engine) answered, as the JSON the page's
URL serves under ``Accept: application/json``, and returns the page's HTML body: what a person
sees is what a script reads, field for field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import maitred.console.charts as charts
from maitred.console.html import (
    Links,
    attr,
    badge,
    code,
    esc,
    facts,
    json_block,
    link,
    table,
    when,
)
from maitred.log.browse import KINDS

# -- overview ---------------------------------------------------------------------------------


def overview(links: Links, data: Mapping[str, Any], spans: Sequence[str] = ()) -> str:
    total = data["total"]
    if data["since"] is None:
        return '<p class="empty">The log holds no decisions yet.</p>'
    tenant = data.get("tenant")
    choices = " · ".join(
        f'<a href="{attr(links.to("/", {"span": s, "tenant": tenant}))}"'
        + (' aria-current="true"' if s == data.get("span") else "")
        + f">{esc('whole log' if s == 'all' else 'last ' + s)}</a>"
        for s in spans
    )
    span_nav = (
        f'<nav class="spans" aria-label="Time span">Up to the newest decision: {choices}</nav>'
    )
    numbers = facts(
        [
            ("span", f"{esc(when(data['since']))} to {esc(when(data['until']))}"),
            ("turns", f"{total['turns']:,}"),
            ("recalled (candidates)", f"{total['recalled']:,}"),
            ("blocked by the gate", f"{total['blocked']:,}"),
            ("exposed", f"{total['exposed']:,}"),
            ("action decisions", f"{total['decisions']:,}"),
            ("refused", f"{total['refused']:,}"),
        ]
    )
    buckets = data["buckets"]
    labels = [when(b["start"]) for b in buckets]
    funnel = charts.lines(
        "The funnel over time",
        labels,
        [
            ("recalled", "recalled", [b["recalled"] for b in buckets]),
            ("blocked", "blocked", [b["blocked"] for b in buckets]),
            ("exposed", "exposed", [b["exposed"] for b in buckets]),
        ],
    )
    calls = charts.lines(
        "Action decisions over time",
        labels,
        [
            ("decided", "decided", [b["decisions"] for b in buckets]),
            ("refused", "refused", [b["refused"] for b in buckets]),
        ],
    )
    by_code: dict[str, int] = {}
    for r in data["refusals"]:
        by_code[r["code"]] = by_code.get(r["code"], 0) + r["count"]
    codes = sorted(by_code.items(), key=lambda kv: (-kv[1], kv[0]))
    refusal_chart = charts.bars("Refusals by code", codes)
    tenants = table(
        "Per tenant",
        ("tenant", "turns", "recalled", "blocked", "exposed", "decisions", "refused"),
        (
            (
                link(links.to("/decisions", {"tenant": t["tenant"]}), t["tenant"] or "(none)"),
                *(f"{t[k]:,}" for k in ("turns", "recalled", "blocked", "exposed")),
                f"{t['decisions']:,}",
                link(
                    links.to("/decisions", {"tenant": t["tenant"], "kind": "call"}),
                    f"{t['refused']:,}",
                ),
            )
            for t in data["tenants"]
        ),
    )
    refusals = table(
        "Refusals by code and tenant",
        ("code", "tenant", "count"),
        (
            (
                link(links.to("/decisions", {"code": r["code"], "tenant": r["tenant"]}), r["code"]),
                esc(r["tenant"] or "(none)"),
                f"{r['count']:,}",
            )
            for r in data["refusals"]
        ),
        empty="No refusals in this span.",
    )
    slices = table(
        "The funnel per slice of time",
        ("from", "turns", "recalled", "blocked", "exposed", "decisions", "refused"),
        (
            (esc(when(b["start"])), *(f"{b[k]:,}" for k in
             ("turns", "recalled", "blocked", "exposed", "decisions", "refused")))
            for b in buckets
            if b["turns"] or b["decisions"]
        ),
    )  # fmt: skip
    return (
        f"{span_nav}{numbers}<section aria-labelledby='h-charts'><h2 id='h-charts'>Charts</h2>"
        f'<div class="charts">{funnel}{calls}{refusal_chart}</div></section>'
        f"<section aria-labelledby='h-tenants'><h2 id='h-tenants'>Tenants</h2>{tenants}</section>"
        f"<section aria-labelledby='h-codes'><h2 id='h-codes'>Refusals</h2>{refusals}</section>"
        "<details><summary>Every slice of time</summary>" + slices + "</details>"
    )


# -- decisions --------------------------------------------------------------------------------

_FILTERS: tuple[tuple[str, str, str], ...] = (
    ("tenant", "Tenant", "acme"),
    ("account", "Account", "acc-1"),
    ("session", "Session", "session id"),
    ("tool", "Tool", "connect_domain"),
    ("code", "Code", "TOOL_NOT_OFFERED"),
    ("trace", "Trace id", "32 hex digits"),
    ("since", "Since", "2026-12-04 or 2h"),
    ("until", "Until", "2026-12-05T10:00Z"),
)


def filter_form(links: Links, asked: Mapping[str, str], path: str = "/decisions") -> str:
    fields = []
    for name, label, hint in _FILTERS:
        fields.append(
            f'<div class="field"><label for="f-{name}">{esc(label)}</label>'
            f'<input id="f-{name}" name="{name}" value="{attr(asked.get(name, ""))}" '
            f'placeholder="{attr(hint)}" autocomplete="off"></div>'
        )
    options = '<option value="">any</option>' + "".join(
        f'<option value="{k}"' + (" selected" if asked.get("kind") == k else "") + f">{k}</option>"
        for k in KINDS
    )
    fields.append(
        f'<div class="field"><label for="f-kind">Kind</label>'
        f'<select id="f-kind" name="kind">{options}</select></div>'
    )
    return (
        f'<form class="filters" method="get" action="{attr(links.to(path))}" role="search" '
        'aria-label="Filter decisions">'
        + "".join(fields)
        + '<div class="actions"><button type="submit">Filter</button> '
        + link(links.to(path), "Clear")
        + "</div></form>"
    )


def decisions(links: Links, data: Mapping[str, Any], asked: Mapping[str, str]) -> str:
    rows = []
    for d in data["decisions"]:
        if d["kind"] == "turn":
            what = esc(d["message"])
            outcome = f"{d['exposed']} exposed of {d['candidates']} recalled"
        else:
            what = code(d["tool"])
            outcome = badge(d["code"], "ok" if d["verdict"] == "allow" else "bad")
        account = link(links.account(d["account"]), d["account"]) if d["account"] else "-"
        rows.append(
            (
                f'<time datetime="{attr(d["at_iso"])}">{esc(when(d["at"]))}</time>',
                esc(d["kind"]),
                link(links.decision(d["decision_id"]), d["decision_id"]),
                esc(d["tenant"] or "-"),
                account,
                esc(d["session"] or "-"),
                what,
                outcome,
            )
        )
    listing = table(
        "Decisions, newest first",
        ("when", "kind", "id", "tenant", "account", "session", "message or tool", "outcome"),
        rows,
        cls="decisions",
        empty="No decision matches these filters.",
    )
    pager = ""
    if data["next"]:
        pager = (
            '<nav class="pager" aria-label="Pages">'
            + link(links.to("/decisions", {**asked, "after": data["next"]}), "Older decisions →")
            + "</nav>"
        )
    if asked.get("after"):
        pager = pager or '<nav class="pager" aria-label="Pages"></nav>'
        first = link(links.to("/decisions", {k: v for k, v in asked.items() if k != "after"}),
                     "← Newest")  # fmt: skip
        pager = pager.replace('aria-label="Pages">', f'aria-label="Pages">{first} ', 1)
    live = (
        '<p class="live"><label><input type="checkbox" id="live" data-live> Live: reload when '
        "new decisions arrive</label></p>"
        if not asked.get("after")
        else ""
    )
    return filter_form(links, asked) + live + listing + pager


# -- one decision -----------------------------------------------------------------------------


def decision(links: Links, data: Mapping[str, Any]) -> str:
    checks = data.get("checks", [])
    verified = table(
        "Does this row stand in the log's chains?",
        ("check", "result", "detail"),
        ((esc(c["check"]), _status(c["status"]), esc(c["detail"])) for c in checks),
    )
    body = _turn(links, data) if data["kind"] == "turn" else _action(links, data)
    return (
        body
        + f"<section aria-labelledby='h-chain'><h2 id='h-chain'>Chain</h2>{verified}</section>"
        + "<details><summary>Everything stored (JSON)</summary>"
        + json_block(data)
        + "</details>"
    )


def _status(status: str) -> str:
    return badge(status, {"ok": "ok", "broken": "bad"}.get(status, "info"))


def _values(values: Mapping[str, Any]) -> str:
    if not values:
        return "-"
    return "<br>".join(f"{code(k)} = {code(_show(v))}" for k, v in values.items())


def _show(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, default=str)


def _predicates(outcomes: Sequence[Mapping[str, Any]], caption: str) -> str:
    return table(
        caption,
        ("predicate", "holds", "status", "values read", "detail"),
        (
            (
                code(o.get("predicate")),
                badge("holds", "bad") if o.get("holds") else badge("does not hold", "ok"),
                esc(o.get("status", "")),
                _values(o.get("values") or {}),
                esc(o.get("detail") or o.get("message") or ""),
            )
            for o in outcomes
        ),
        empty="No predicate was asked.",
    )


def _turn(links: Links, d: Mapping[str, Any]) -> str:
    run = d.get("run") or {}
    msg = d.get("message") or {}
    acc, conv = msg.get("account", ""), msg.get("conversation", "")
    top = facts(
        [
            ("kind", "turn"),
            ("when", esc(d["ts_iso"])),
            ("tenant", esc(d["tenant"] or "-")),
            ("account", link(links.account(acc), acc) if acc else "-"),
            ("session", link(links.to("/decisions", {"session": conv}), conv) if conv else "-"),
            ("message", esc(msg.get("text", ""))),
            ("run", code(run.get("run_id", "-"))),
            ("recall", code(d.get("recall_method", ""))),
            ("depth rule", code(d.get("depth_rule", ""))),
            ("menu tokens", esc(d.get("menu_tokens", ""))),
            ("cause", esc(d.get("cause") or "-")),
            ("chain", esc((d.get("chain") or {}).get("status", "-"))),
        ]
    )
    candidates = table(
        "Candidates, by rank",
        ("rank", "tool", "score", "visible", "exposed", "predicates that held"),
        (
            (
                esc(p["rank"]),
                code(p["skill"]),
                f"{float(p['score']):.3f}",
                badge("yes", "ok") if p["visible"] else badge("hidden", "bad"),
                "yes" if p["exposed"] else "no",
                "<br>".join(
                    f"{code(o['predicate'])}: {_values(o.get('values') or {})}"
                    for o in p.get("fired", [])
                )
                or "-",
            )
            for p in d.get("pairs", [])
        ),
    )
    snapshot = d.get("snapshot") or {}
    state = table(
        "State read by the gate",
        ("key", "value"),
        ((code(k), code(_show(v))) for k, v in (snapshot.get("values") or {}).items()),
        empty="No state was read.",
    )
    actions = table(
        "Calls decided on this turn's menu",
        ("when", "id", "tool", "code"),
        (
            (
                esc(when(a["at"])),
                link(links.decision(a["decision_id"]), a["decision_id"]),
                code(a["tool"]),
                badge(a["code"], "ok" if a["verdict"] == "allow" else "bad"),
            )
            for a in d.get("actions", [])
        ),
        empty="No call was decided on this turn's menu.",
    )
    return (
        top
        + f"<section aria-labelledby='h-cand'><h2 id='h-cand'>Candidates</h2>{candidates}</section>"
        + f"<section aria-labelledby='h-state'><h2 id='h-state'>State</h2>{state}</section>"
        + f"<section aria-labelledby='h-calls'><h2 id='h-calls'>Calls</h2>{actions}</section>"
    )


def _action(links: Links, d: Mapping[str, Any]) -> str:
    call = d.get("call") or {}
    turn = d.get("turn")
    offering = (
        link(links.decision(turn["decision_id"]), f"{turn['decision_id']}: {turn['message']}")
        if turn
        else esc(d.get("turn_id") or "none (no turn offered it, or it is not in the log)")
    )
    account = d.get("account") or (turn or {}).get("account") or ""
    rows = [
        ("kind", esc(d.get("kind_shown", "call"))),
        ("when", esc(d["now_iso"])),
        ("verdict", badge(d["verdict"], "ok" if d["verdict"] == "allow" else "bad")),
        ("code", code(d["code"])),
        ("tool", code(call.get("name", ""))),
        ("upstream", esc(d.get("upstream") or "-")),
        ("tenant", esc(d.get("tenant") or "-")),
        ("account", link(links.account(account), account) if account else "-"),
        ("session", link(links.to("/decisions", {"session": d["session_id"]}), d["session_id"])
         if d.get("session_id") else "-"),
        ("offering turn", offering),
        ("trace id", _trace(links, d.get("trace_id"))),
        ("message for people", esc(d.get("message") or "-")),
        ("message for the model", esc(d.get("message_for_model") or "-")),
        ("policy", code(d.get("policy") or "-")),
    ]  # fmt: skip
    if d.get("answered_by"):
        rows.append(
            ("answered by", ", ".join(link(links.decision(i), i) for i in d["answered_by"]))
        )
    approval = d.get("approval")
    if approval:
        rows.append(("answer to", link(links.decision(approval["of"]), approval["of"])))
    arguments = table(
        "Arguments",
        ("argument", "value"),
        ((code(k), code(_show(v))) for k, v in (call.get("arguments") or {}).items()),
        empty="No arguments.",
    )
    return (
        facts(rows)
        + "<section aria-labelledby='h-pred'><h2 id='h-pred'>Predicates</h2>"
        + _predicates(d.get("outcomes") or [], "Predicates asked, with the values they read")
        + "</section>"
        + f"<section aria-labelledby='h-args'><h2 id='h-args'>Call</h2>{arguments}</section>"
    )


def _trace(links: Links, trace_id: str | None) -> str:
    """The request's W3C trace id, leading to every decision made in that trace; or why there
    is none."""
    if not trace_id:
        return (
            "none: the request carried no W3C trace context (or the decision was logged before "
            "trace ids were); its spans, if any, carry <code>maitred.decision.id</code> = this id"
        )
    every = link(links.to("/decisions", {"trace": trace_id}), "every decision of this trace")
    return f"{code(trace_id)} ({every})"


# -- accounts ---------------------------------------------------------------------------------


def accounts_index(links: Links) -> str:
    return (
        f'<form method="get" action="{attr(links.to("/accounts"))}" class="filters" '
        'role="search" aria-label="Find an account"><div class="field">'
        '<label for="f-acc">Account id</label><input id="f-acc" name="account" required>'
        '</div><div class="actions"><button type="submit">Open</button></div></form>'
    )


def account(links: Links, data: Mapping[str, Any], message: str, has_engine: bool) -> str:
    acc = data["account"]
    recent = decisions_table(links, data["recent"]["decisions"])
    more = link(links.to("/decisions", {"account": acc}), "All of this account's decisions")
    if has_engine:
        form = (
            f'<form method="get" action="{attr(links.account(acc))}" class="whatif" '
            'aria-label="What-if turn"><div class="field wide">'
            '<label for="f-msg">Message</label>'
            f'<input id="f-msg" name="message" value="{attr(message)}" required '
            'placeholder="connect my domain"></div>'
            '<div class="actions"><button type="submit">What would it be offered?</button></div>'
            "</form>"
        )
    else:
        form = (
            '<p class="empty">What-if turns need the engine\'s config: start the console with '
            "<code>--config</code> (the service's config file).</p>"
        )
    found = data.get("what_if")
    whatif = _whatif(found) if found else ""
    return (
        "<section aria-labelledby='h-whatif'><h2 id='h-whatif'>What if</h2>"
        + form
        + whatif
        + "</section><section aria-labelledby='h-recent'><h2 id='h-recent'>Recent decisions</h2>"
        + recent
        + f"<p>{more}</p></section>"
    )


def decisions_table(links: Links, rows: Sequence[Mapping[str, Any]]) -> str:
    return table(
        "Recent decisions, newest first",
        ("when", "kind", "id", "message or tool", "outcome"),
        (
            (
                esc(when(d["at"])),
                esc(d["kind"]),
                link(links.decision(d["decision_id"]), d["decision_id"]),
                esc(d["message"]) if d["kind"] == "turn" else code(d["tool"]),
                f"{d['exposed']} exposed of {d['candidates']}"
                if d["kind"] == "turn"
                else badge(d["code"], "ok" if d["verdict"] == "allow" else "bad"),
            )
            for d in rows
        ),
        empty="No decisions of this account in the log.",
    )


def _whatif(w: Mapping[str, Any]) -> str:
    offered = ", ".join(code(n) for n in w.get("exposed", [])) or "nothing"
    hidden = [t for t in w.get("tools", []) if not t["visible"]]
    rows = []
    for t in hidden:
        why = "<br>".join(
            f"{code(p['predicate'])} holds: {_values(p.get('values') or {})}"
            + (f" <span class='msg'>{esc(p['message'])}</span>" if p.get("message") else "")
            for p in t["predicates"]
        )
        if not why:
            why = esc(t.get("cause") or "")
            if t.get("missing_scopes"):
                why = "missing scopes: " + ", ".join(code(s) for s in t["missing_scopes"])
        rows.append((code(t["tool"]), why or "-"))
    return (
        '<div class="whatif-result" role="status" aria-live="polite">'
        '<p class="note"><strong>What-if, not logged.</strong> This turn was routed on the '
        "engine's catalog and the account's state now; nothing was written to the log and no "
        "session's offer changed.</p>"
        + facts(
            [
                ("message", esc(w.get("message"))),
                ("offered", offered),
                ("recalled", ", ".join(code(c["skill"]) for c in w.get("candidates", [])) or "-"),
                ("failed closed", esc(w.get("cause") or "no")),
            ]
        )
        + table(
            "Hidden tools, and why",
            ("tool", "predicates that hold (values read)"),
            rows,
            cls="hidden",
            empty="No tool is hidden from this account now.",
        )
        + "</div>"
    )


# -- verify -----------------------------------------------------------------------------------


def verify(data: Mapping[str, Any]) -> str:
    ok = data.get("ok")
    head = (
        badge("verified", "ok") if ok else badge(f"{data.get('mismatch_count', 0)} fault(s)", "bad")
    )
    counts = facts(
        [(k, f"{data[k]:,}") for k in ("runs", "turns", "pairs", "snapshots", "decisions")
         if isinstance(data.get(k), int)]
    )  # fmt: skip
    faults = table(
        "Faults found",
        ("kind", "key", "detail"),
        ((esc(m["kind"]), code(m["key"]), esc(m["detail"])) for m in data.get("mismatches", [])),
        empty="No fault found.",
    )
    summary = f"<pre class='summary'>{esc(data.get('summary', ''))}</pre>"
    return f"<p class='result'>{head}</p>{counts}{summary}{faults}"
