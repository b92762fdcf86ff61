"""The ``action_decisions`` table (migration ``0005_action_decisions``): one row per action-gate
decision, and the rule that ties its columns to its hash.

A row is derived from the decision's JSON alone (:meth:`maitred.actions.Decision.to_json`):

* ``decision_json`` -- that JSON in canonical form (:func:`~maitred._canonical.canonical_json`);
* ``decision_hash`` -- :func:`~maitred._canonical.content_hash` of it (``c1:...``), so
  :func:`~maitred.log.verify.verify` recomputes it from the stored text;
* the query columns (decision id, session, tool, verdict, code, fields, policy, predicate
  versions, mutates, the gate's clock, and the id of the turn whose menu the call came from,
  ``turn_id``, added by ``0007_action_turn_link``, and its ``tenant``, added by
  ``0009_tenants_sessions``, its ``account_id``, added by ``0014_decision_accounts``, and the
  W3C ``trace_id`` of the request it decided, added by ``0016_decision_traces``) --
  copies of JSON values, which ``verify`` checks
  against the JSON with :func:`decision_columns`, so a column edited alone is caught too;
* ``logged_at`` -- when the row was buffered (wall clock), the only value outside the hash.

The log layer does not import the action gate: anything with ``to_json()`` in that shape will do.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from maitred._canonical import canonical_json, text_hash
from maitred.errors import LogError
from maitred.log.storable import check_row

#: columns of ``action_decisions``, in insert order
ACTION_DECISION_COLUMNS: tuple[str, ...] = (
    "decision_id",
    "session_id",
    "tool",
    "verdict",
    "code",
    "fields_json",
    "policy",
    "versions_json",
    "mutates",
    "decided_at",
    "logged_at",
    "decision_json",
    "decision_hash",
    "turn_id",
    "tenant",
    "account_id",
    "trace_id",
)
#: the columns that copy a value of the decision JSON (checked by ``verify``): all but the
#: log's own timestamp, the JSON itself and its hash
COPIED_COLUMNS: tuple[str, ...] = tuple(
    c for c in ACTION_DECISION_COLUMNS if c not in ("logged_at", "decision_json", "decision_hash")
)


#: the decision columns that are indexed ids (:mod:`maitred.log.storable`)
DECISION_KEYS: tuple[str, ...] = (
    "decision_id",
    "session_id",
    "tool",
    "turn_id",
    "tenant",
    "account_id",
    "trace_id",
)


class LoggableDecision(Protocol):
    """What the log needs of a decision: its JSON (see the module docstring)."""

    def to_json(self) -> dict[str, Any]:
        """The decision as JSON: decision_id, session_id, call, verdict, code, fields ..."""
        ...


def decision_columns(data: dict[str, Any]) -> dict[str, Any]:
    """The query columns a decision JSON gives (``mutates`` as a bool).

    Raises:
        KeyError / TypeError: ``data`` is not a decision's JSON.
    """
    return {
        "decision_id": str(data["decision_id"]),
        "session_id": str(data.get("session_id", "")),
        "tool": str(data["call"]["name"]),
        "verdict": str(data["verdict"]),
        "code": str(data["code"]),
        "fields_json": canonical_json(list(data["fields"])),
        "policy": str(data["policy"]),
        "versions_json": canonical_json(dict(data["versions"])),
        "mutates": bool(data["mutates"]),
        "decided_at": float(data["now"]),
        "turn_id": str(data.get("turn_id", "")),
        "tenant": str(data.get("tenant", "")),
        "account_id": str(data.get("account", "")),
        "trace_id": str(data.get("trace_id", "")),
    }


def encode_decision(decision: LoggableDecision, logged_at: float | None = None) -> tuple[Any, ...]:
    """One ``action_decisions`` row (:data:`ACTION_DECISION_COLUMNS` order).

    Raises:
        LogError: the decision holds a value that is not finite JSON (a predicate read a NaN
            or an object), naming the decision and its tool.
    """
    try:
        data = decision.to_json()
        cols = decision_columns(data)
        named = [c for c in ACTION_DECISION_COLUMNS if c in cols]
        what = f"decision {cols.get('decision_id', '?')!r}"
        check_row(what, named, [cols[c] for c in named], DECISION_KEYS)
        text = canonical_json(data)
        check_row(what, ("decision_json",), (text,))
    except (TypeError, ValueError, KeyError) as exc:
        did = getattr(decision, "decision_id", "?")
        tool = getattr(getattr(decision, "call", None), "name", "?")
        where = f"decision {did!r} on tool {tool!r}"
        raise LogError(
            f"{where} cannot be written to the decision log: {exc}; the values a policy "
            "predicate reads must be finite JSON (no NaN, no objects)"
        ) from exc
    cols["logged_at"] = time.time() if logged_at is None else logged_at
    cols["decision_json"] = text
    cols["decision_hash"] = text_hash(text)  # = content_hash(data), without a second dumps
    return tuple(cols[c] for c in ACTION_DECISION_COLUMNS)
