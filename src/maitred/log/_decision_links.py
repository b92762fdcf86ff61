"""``verify``'s checks of what a decision names: its turn (``turn_link``) and, for a decision
made with a person's answer, the decision that asked (``approval_link``); see
:mod:`maitred.log.verify`. ``out`` is verify's collector (``out.add(kind, key, detail)``)."""

from __future__ import annotations

import json
from typing import Any

from maitred.log.base import DecisionLog


class TurnLinks:
    """Checks each decision's turn (see the module docstring), reading each turn once."""

    def __init__(self, log: DecisionLog) -> None:
        self.log = log
        self.turns: dict[str, tuple[str, str, frozenset[str]] | None] = {}

    def _turn(self, turn_id: str) -> tuple[str, str, frozenset[str]] | None:
        if turn_id not in self.turns:
            rows = self.log.query(
                "SELECT conversation_id, tenant FROM turns WHERE turn_id = ?", (turn_id,)
            )
            exposed = self.log.query(
                "SELECT skill FROM pairs WHERE turn_id = ? AND exposed = ?", (turn_id, True)
            )
            self.turns[turn_id] = (
                (str(rows[0][0]), str(rows[0][1]), frozenset(str(r[0]) for r in exposed))
                if rows
                else None
            )
        return self.turns[turn_id]

    def check(self, row: dict[str, Any], out: Any) -> None:
        turn_id, key = str(row["turn_id"]), str(row["decision_id"])
        if not turn_id:
            return
        found = self._turn(turn_id)
        if found is None:
            out.add("turn_link", key, f"names turn {turn_id}, which is not in the log")
            return
        session, tenant, exposed = found
        if (session, tenant) != (str(row["session_id"]), str(row["tenant"])):
            out.add(
                "turn_link",
                key,
                f"is for session {row['session_id']!r} of tenant {row['tenant']!r}, but its turn "
                f"{turn_id} is of session {session!r}, tenant {tenant!r}",
            )
        elif row["verdict"] == "allow" and row["tool"] not in exposed:
            out.add(
                "turn_link",
                key,
                f"allowed {row['tool']!r}, which its turn {turn_id} did not offer",
            )


class ApprovalLinks:
    """Checks each answered decision against the one that asked (see the module docstring)."""

    def __init__(self, log: DecisionLog) -> None:
        self.log = log

    def check(self, row: dict[str, Any], out: Any) -> None:
        text, key = str(row["decision_json"]), str(row["decision_id"])
        if '"approval"' not in text:  # most decisions: no parse
            return
        try:
            data = json.loads(text)
            approval = data.get("approval")
            if approval is None:
                return
            asked_id, answer = str(approval["of"]), str(approval["answer"])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            out.add("approval_link", key, f"its approval cannot be read: {exc}")
            return
        if row["verdict"] == "allow" and answer != "approve":
            out.add("approval_link", key, f"allowed on the answer {answer!r}, not a yes")
        rows = self.log.query(
            "SELECT decision_json FROM action_decisions WHERE decision_id = ?", (asked_id,)
        )
        if not rows:
            out.add("approval_link", key, f"answers decision {asked_id}, which is not in the log")
            return
        asked = json.loads(str(rows[0][0]))
        same = (
            asked.get("session_id", ""),
            asked.get("tenant", ""),
            asked.get("call"),
        ) == (data.get("session_id", ""), data.get("tenant", ""), data.get("call"))
        if asked.get("code") != "APPROVAL_REQUIRED" or "approval" in asked:
            out.add(
                "approval_link",
                key,
                f"answers decision {asked_id}, which is {asked.get('code')!r}, not a pending "
                "APPROVAL_REQUIRED",
            )
        elif not same:
            out.add(
                "approval_link",
                key,
                f"answers decision {asked_id}, which is of another session, tenant or call",
            )
