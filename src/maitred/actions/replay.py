"""Shadow replay: what would the gates have done to these trajectories?

Each trajectory (``{"id", "context": {"cancel_reason"?}, "calls": [{"name", "arguments"}]}``)
starts from the initial database, in its **own in-memory copy**: reads run (a read that fails is
not recorded in the session), every mutating call is checked, and an allowed write is applied so
the trajectory's later calls see its effects. A rejected write is not applied. One
:class:`ReplayRow` per mutating call is produced; the input database is never changed, and a
trajectory's verdicts never depend on the ones before it in the file (``carry_state=True`` lets
writes carry over from one trajectory to the next, in file order, when that is wanted).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maitred.actions.gate import ActionGate
from maitred.actions.model import ToolCall
from maitred.actions.packs import Executor
from maitred.actions.session import Session
from maitred.errors import InputError
from maitred.jsonl import parse_object, read_labelled


@dataclass(frozen=True)
class ReplayRow:
    """The gate's decision on one mutating call of one trajectory."""

    trajectory: str
    index: int
    name: str
    decision: str
    code: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "trajectory": self.trajectory,
            "index": self.index,
            "name": self.name,
            "decision": self.decision,
            "code": self.code,
            "message": self.message,
        }


@dataclass(frozen=True)
class _Trajectory:
    id: str
    item: dict[str, Any]


def _parse_trajectory(raw: str, seen: set[str], number: int) -> _Trajectory:
    item = parse_object(raw, ("calls",))
    if not isinstance(item["calls"], list):
        raise ValueError('"calls" must be a list of {"name", "arguments"}')
    for i, c in enumerate(item["calls"]):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise ValueError(f'calls[{i}] needs a "name"')
        if not isinstance(c.get("arguments", {}), dict):
            raise ValueError(f"calls[{i}].arguments must be an object")
    if not isinstance(item.get("context", {}), dict):
        raise ValueError('"context" must be an object')
    tid = str(item.setdefault("id", f"line-{number}"))
    if tid in seen:
        raise ValueError(f"trajectory id {tid!r} is used by an earlier line")
    return _Trajectory(tid, item)


def load_trajectories(
    path: Path, *, on_error: Callable[[InputError], None] | None = None
) -> list[dict[str, Any]]:
    """Read a trajectories JSONL file (``{"id"?, "context"?, "calls": [...]}`` per line).

    Args:
        path: the file.
        on_error: called with an :class:`InputError` (file and line) for every bad line, which
            is then skipped; ``None``: the first bad line raises it.

    Raises:
        InputError: the file cannot be read, or (without ``on_error``) a line is bad: not JSON,
            no ``calls`` list, a call without a name, an id used by an earlier line.
    """
    numbers: list[int] = []

    def parse(raw: str, seen: set[str]) -> _Trajectory:
        return _parse_trajectory(raw, seen, numbers[-1])

    def strict(err: InputError) -> None:
        raise err

    found = read_labelled(
        path, parse, what="trajectories", on_error=on_error or strict, line_numbers=numbers
    )
    return [t.item for t in found]


def replay(
    gate: ActionGate,
    db: Mapping[str, Any],
    trajectories: Iterable[Mapping[str, Any]],
    make_executor: Callable[[dict[str, Any]], Executor],
    *,
    carry_state: bool = False,
) -> Iterator[ReplayRow]:
    """Replay trajectories through ``gate``, each on a fresh deep copy of ``db`` (which is not
    modified).

    Args:
        gate: the action gate.
        db: the database.
        trajectories: as read by :func:`load_trajectories`.
        make_executor: ``(db_copy) -> executor``: runs a tool by name on the copy.
        carry_state: one copy for the whole file, so writes carry over between trajectories.
    """
    work: dict[str, Any] = copy.deepcopy(dict(db))
    run = make_executor(work)
    fresh = False
    for item in trajectories:
        if fresh and not carry_state:
            work = copy.deepcopy(dict(db))
            run = make_executor(work)
        fresh = True
        tid = str(item.get("id", ""))
        session = Session(id=tid, context=dict(item.get("context") or {}))
        for index, raw in enumerate(item["calls"]):
            row = _step(gate, work, run, session, tid, index, raw)
            if row is not None:
                yield row


def _step(
    gate: ActionGate,
    work: dict[str, Any],
    run: Executor,
    session: Session,
    tid: str,
    index: int,
    raw: Mapping[str, Any],
) -> ReplayRow | None:
    call = ToolCall(str(raw["name"]), dict(raw.get("arguments") or {}))
    tool = gate.rulebook.tools.get(call.name)
    decision = gate.check(call, work, session)
    mutates = tool is None or tool.mutates
    if decision.reject:
        if not mutates:
            return None
        return ReplayRow(tid, index, call.name, "reject", decision.code, decision.message)
    try:
        result = run(call.name, call.arguments)
    except Exception as exc:  # a loud tool error: the call did not succeed
        if not mutates:
            return None
        return ReplayRow(
            tid, index, call.name, "allow", decision.code, f"allowed; the tool then failed: {exc}"
        )
    session.record(call, result, gate.rulebook.tracking)
    if not mutates:
        return None
    return ReplayRow(tid, index, call.name, "allow", decision.code, decision.message)
