"""Rounds a client carries: a question asked in one request and answered in a later one, on
any process.

A protocol without sessions (MCP 2026-07-28's multi-round-trip calls) hands the client an
opaque ``requestState`` with a question and takes it back with the answer; the server that
sealed it (:mod:`maitred.gateway.approval`) may not be the one the answer reaches. Two things
make such a round safe to finish anywhere, and both live here, protocol-free:

* **The question it names.** :func:`asked` is the pending ``APPROVAL_REQUIRED`` decision a
  sealed question carried (its decision id, the call it asked about, the session and tenant
  it was asked of), rebuilt on the process that receives the answer, so that
  :meth:`Maitred.approve <maitred.Maitred.approve>` decides the answer there as it would have
  where it was asked. It was logged and flushed before the question went out; the answer
  names it in ``approval.of``, which ``maitred log verify`` checks.
* **One use.** :class:`SpentStates` records that a single-use round was used -- in the
  decision log when there is one (``spent_states``, :meth:`DecisionLog.spend
  <maitred.log.base.DecisionLog.spend>`: one primary key shared by every process on that log,
  so the first use wins everywhere and a replay on another replica is found), else in this
  process's memory, kept until the state could no longer be used anyway.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from maitred.actions.model import APPROVAL_REQUIRED, Decision, ToolCall
from maitred.log.base import DecisionLog


def asked(
    of: str,
    name: str,
    arguments: Mapping[str, Any],
    *,
    call_id: str,
    session_id: str,
    tenant: str,
) -> Decision:
    """The pending decision ``of`` on the call ``call_id``, ``name(arguments)``, asked of the
    session ``session_id`` (see the module docstring): what :meth:`Maitred.approve
    <maitred.Maitred.approve>` reads of a pending decision to decide its answer (the answer's
    call is the question's, its id included)."""
    return Decision(
        ToolCall(name, dict(arguments), call_id),
        "reject",
        APPROVAL_REQUIRED,
        decision_id=of,
        session_id=session_id,
        tenant=tenant,
    )


#: what was spent without a log, shared by every engine of the process (a gateway whose catalog
#: grew decides on new engines): key -> when it expires; keys are unique ids, never reused
_MEMORY: dict[str, float] = {}
_MEMORY_LOCK = threading.Lock()


class SpentStates:
    """Which single-use rounds were used: in ``log`` (shared), or in memory without one.

    Args:
        log: the decision log (``None``: this process's memory only, which replicas do not
            share; run replicas on one log).
        clock: unix seconds, for forgetting in memory what has expired.
    """

    def __init__(self, log: DecisionLog | None, clock: Callable[[], float] = time.time) -> None:
        self.log = log
        self.clock = clock

    def spend(self, key: str, *, tenant: str, session_id: str, expires_at: float) -> bool:
        """True the first time ``key`` is spent, False after (on every process sharing the log).

        Raises:
            LogError: the log could not record it (the caller fails closed: nothing runs).
        """
        if self.log is not None:
            return self.log.spend(key, tenant=tenant, session_id=session_id, expires_at=expires_at)
        with _MEMORY_LOCK:
            now = self.clock()
            if len(_MEMORY) > 1024:  # forget what can no longer be used anyway
                for old in [k for k, t in _MEMORY.items() if t <= now]:
                    del _MEMORY[old]
            if key in _MEMORY:
                return False
            _MEMORY[key] = expires_at
            return True
