"""Task access, decided for a conversation's principal: who made a task, and may the caller
see it now.

A task (MCP's tasks extension) is the result of a call, to be fetched, fed or stopped later.
It belongs to the principal that made the call -- tenant, account and the credential's
subject -- and is decided again on every access: the caller must be that principal *and*
could make the task's call now (its scopes, the tool's exit predicates, its call policies,
on fresh state; :meth:`Maitred.check_unlogged <maitred.Maitred.check_unlogged>`). Anything else is
``TASK_NOT_FOUND``, in the very words of an id that does not exist, so a task's existence
never leaks; the log says which it was.
"""

from __future__ import annotations

from dataclasses import dataclass

from maitred.actions.model import APPROVAL_REQUIRED, Decision, ToolCall
from maitred.actions.refusals import refusal_text

#: the code of a task request refused: no task with that id is the caller's to see now
TASK_NOT_FOUND = "TASK_NOT_FOUND"
#: the rulebook name a task decision is logged under
TASKS_POLICY = "mcp-tasks"


@dataclass(frozen=True)
class TaskOrigin:
    """Who made one task, and with what call (what a task access is decided on).

    Attributes:
        tenant, account: its creator's.
        subject: the creator's credential's subject (``""``: none, as over stdio).
        call: the tool call that made it (its tool and arguments).
    """

    tenant: str
    account: str
    subject: str
    call: ToolCall


def why_not(method: str, task_id: str, task: TaskOrigin | None, who: tuple[str, str, str]) -> str:
    """Why ``who`` (tenant, account, subject) may not send ``method`` for ``task_id`` whatever
    its call's decision (``""``: it is the task's creator, whose call decides)."""
    if task is None:
        return "no such task"
    if (task.tenant, task.account, task.subject) != who:
        return "another principal's task"
    return ""


def allows(again: Decision) -> bool:
    """Whether the creator's call decided again lets the task be seen: allowed, or held only
    by an approval rule (the call was approved when it was made)."""
    return again.allow or again.code == APPROVAL_REQUIRED


def not_found_text() -> str:
    """What the model and client are told of a task they may not see: the words of an id
    that does not exist."""
    return refusal_text(
        TASK_NOT_FOUND,
        "no task with that id is known to you",
        undone="Nothing was done",
        then="use the id a call of yours returned",
    )
