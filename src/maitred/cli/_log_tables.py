"""How ``maitred log show`` and ``maitred log list`` print decisions for people.

Presentation only: the reading is :mod:`maitred.log.lookup`, and ``--json`` prints its
``to_json()`` forms as they are. Ids are never wrapped or cut (they are copied whole into the
next command); free text (a message, a predicate's values) is cut to a line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.console import Console

from maitred.log.lookup import DecisionSummary, LoggedAction, LoggedTurn, iso_time
from maitred.records import PairRecord

_TEXT_CUT = 60
_VALUES_CUT = 90


def _cut(text: str, width: int = _TEXT_CUT) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= width else one_line[: width - 1] + "…"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _lines(console: Console, rows: Sequence[Sequence[str]], title: str = "") -> None:
    """Rows as aligned columns, one line each, never cut or wrapped by the printer (a long
    line is the terminal's to wrap, so an id or a hash is always copied whole)."""
    if title:
        console.print(title, style="bold", highlight=False, markup=False, soft_wrap=True)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        line = "  ".join([*cells, row[-1]]).rstrip()
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def _fields(console: Console, title: str, rows: Iterable[tuple[str, str]]) -> None:
    """A titled block of ``name  value`` lines (a value of several lines is indented)."""
    flat: list[tuple[str, str]] = []
    for name, value in rows:
        first, *more = value.splitlines() or [""]
        flat += [(name, first), *(("", line) for line in more)]
    _lines(console, [("", name, value) for name, value in flat], title)


def listing(
    console: Console, found: Sequence[DecisionSummary], *, more: bool = False, title: str = ""
) -> None:
    """The listing as aligned columns, and a line saying when more decisions match."""
    if not found:
        console.print("no decision matches", highlight=False)
        return
    rows = [("time (UTC)", "kind", "id", "tenant", "session", "account", "outcome", "about")]
    for s in found:
        row = s.to_json()
        if s.kind == "turn":
            outcome = f"{row['exposed']} offered, {row['visible']}/{row['candidates']} visible"
            about = _cut(s.about)
        else:
            outcome, about = s.code, s.about
        cells = (row["at_iso"], s.kind, s.decision_id, s.tenant or "-", s.session or "-")
        rows.append((*cells, s.account or "-", outcome, about))
    _lines(console, rows, title)
    if more:
        console.print(
            f"(the newest {len(found)}; more match: raise --limit or narrow the filter)",
            highlight=False,
        )


def turn(console: Console, found: LoggedTurn) -> None:
    """A turn: who and what, the candidates, the state read, the calls made on its menu."""
    record, data = found.record, found.to_json()
    run = found.run
    exposed = len(record.exposed)
    hidden = len(record.pairs) - len(record.visible)
    chain = found.chain
    position = (
        f"#{chain['chain_seq']}" if chain.get("chain_seq") is not None else f"({chain['status']})"
    )
    _fields(
        console,
        f"turn {record.turn_id}",
        [
            ("time", data["ts_iso"]),
            ("tenant", found.tenant or "-"),
            ("session", record.message.conversation),
            ("account", record.message.account),
            ("message", record.message.text),
            ("run", record.run_id + (f" (started {iso_time(run.started_at)})" if run else "")),
            ("catalog", record.catalog_version),
            ("recall / depth", f"{record.recall_method} / {record.depth_rule}"),
            ("offered", f"{exposed} of {len(record.pairs)} recalled; {hidden} hidden by the gate"),
            ("menu tokens", str(record.menu_tokens)),
            ("failed closed", record.cause or record.provider_error or "-"),
            ("hash", f"{position} {chain['row_hash']} " + _matches(found.hash_ok)),
        ],
    )
    _pairs(console, record.pairs)
    snapshot = record.snapshot
    if snapshot is not None:
        values = [(k, _cut(_json(v), _VALUES_CUT)) for k, v in sorted(snapshot.values.items())]
        values += [(k, "(missing)") for k in sorted(snapshot.missing)]
        values += [(k, f"(invalid: {why})") for k, why in sorted(snapshot.invalid.items())]
        title = f"state read (snapshot {snapshot.hash}, account {snapshot.account})"
        _fields(console, title, values or [("-", "no value")])
    if found.actions:
        listing(console, found.actions, title="action decisions on this menu")


def _pairs(console: Console, pairs: Sequence[PairRecord]) -> None:
    if not pairs:
        console.print("no candidate recalled", highlight=False)
        return
    rows = [("rank", "skill", "score", "visible", "exposed", "tokens", "fired")]
    for p in pairs:
        fired = ", ".join(f"{o.predicate} ({o.status})" for o in p.fired) or "-"
        cells = (str(p.rank), p.skill, f"{p.score:.4g}", _yes(p.visible), _yes(p.exposed))
        rows.append((*cells, str(p.desc_tokens), fired))
    _lines(console, rows, "candidates")


def action(console: Console, found: LoggedAction) -> None:
    """An action decision: the call, the verdict and why, the predicates with what they read."""
    d: Mapping[str, Any] = found.to_json()
    call = d["call"]
    linked = found.turn
    rows = [
        ("time", d["now_iso"]),
        ("tenant", d.get("tenant") or "-"),
        ("session", d.get("session_id") or "-"),
        ("account", linked.account if linked is not None else "-"),
        ("tool", call["name"]),
        ("arguments", _json(call.get("arguments", {}))),
        ("verdict", f"{d['verdict']} {d['code']}"),
        ("message", d.get("message") or "-"),
        ("to the model", d.get("message_for_model") or "-"),
    ]
    optional = (
        ("fields", ", ".join(d.get("fields") or ())),
        ("cause", d.get("cause") or ""),
        ("approval asked", d.get("approval_message") or ""),
        ("answers", _json(d["approval"]) if d.get("approval") else ""),
        ("answered by", ", ".join(found.answered_by)),
        ("retry after", f"{d['retry_after_s']} s" if d.get("retry_after_s") is not None else ""),
    )
    rows += [(name, value) for name, value in optional if value]
    turn_id = d.get("turn_id") or ""
    rows += [
        ("mutates", _yes(bool(d.get("mutates")))),
        ("policy", d.get("policy") or "-"),
        ("trace id", d.get("trace_id") or "- (the request carried no trace context)"),
        ("turn", turn_id + ("" if linked is not None or not turn_id else " (not in this log)")),
        ("logged at", iso_time(found.logged_at)),
        ("hash", f"{found.decision_hash} " + _matches(found.hash_ok)),
    ]
    _fields(console, f"action decision {found.decision_id}", rows)
    outcomes = d.get("outcomes") or []
    if outcomes:
        table = [("predicate", "holds", "status", "values read", "detail")]
        for o in outcomes:
            values = _cut(_json(o.get("values", {})), _VALUES_CUT)
            table.append(
                (o["predicate"], _yes(o["holds"]), o["status"], values, o["detail"] or "-")
            )
        _lines(console, table, "predicates")


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _matches(ok: bool) -> str:
    return (
        "(matches its content)" if ok else "(DOES NOT MATCH its content: run `maitred log verify`)"
    )
