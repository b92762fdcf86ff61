"""What varies per request, passed with the call: :class:`CallContext`.

An engine (:class:`maitred.Maitred`) is built once and shared: by the threads of the HTTP
service, by every MCP session of the gateway, by the CLI's batch runs. What differs from one
request to the next -- the run a turn is logged under, the menu format the client asked for, the
tools a listing may consider, the scopes the caller was granted -- travels with that request as
one small immutable value, the way pydantic-ai hands a tool its ``RunContext``. Nothing per
request is ever set on the engine or its parts, so two requests cannot see each other's
settings, and an adapter needs no lock of its own to keep them apart. (Whose request it is --
the tenant -- is part of the session and of the run, both stored with every row; it is not a
per-call setting.)

Every field has a neutral default: ``CallContext()`` is what a call without one gets.

**The trace id** is the W3C trace id of the request a decision was made in: 32 lowercase hex
digits, not all zero (``""``: the request carried no trace context). The adapter reads it at
its edge -- its own request span's, else the client's ``traceparent`` -- and passes it here
as data; the core stores it with the decision and never reads a trace context itself.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

#: a W3C trace id (trace-context level 1): 32 lowercase hex digits, not all zero
_TRACE_ID = re.compile("[0-9a-f]{32}")


def trace_id_fault(value: str) -> str:
    """Why ``value`` is not a W3C trace id (``""``: it is one, or it is empty -- none)."""
    if not value:
        return ""
    if not _TRACE_ID.fullmatch(value) or value == "0" * 32:
        return "is not a W3C trace id (32 lowercase hex digits, not all zero)"
    return ""


@dataclass(frozen=True)
class CallContext:
    """The per-request part of one :meth:`~maitred.Maitred.turn` or ``check``.

    Attributes:
        run_id: the decision-log run the turn is logged under (``""``: the pipeline's own run,
            started on first use).
        menu_format: the menu format to render and count tokens in (``None``: the pipeline's).
        scope: the only tools this turn may consider (``None``: every tool recall ranks); the
            gateway's listing of what a ``find_tools`` session has found.
        granted: the OAuth scopes the caller holds (an access token's ``scope``): a tool whose
            contract requires one it lacks is hidden at stage 2 and refused at stage 5
            (``INSUFFICIENT_SCOPE``), by the one kernel
            (:func:`~maitred.contract.kernel.decide_exit`). ``None``: the caller did not say,
            and contracts' ``scopes`` are not asked (a library call, a stdio launch).
        subject: the credential's subject (a JWT's ``sub``, a static token's id; ``""``:
            none), stamped on the call's decision so the log names who asked, not only whose
            account it was (:class:`~maitred.conversation.Principal`).
        upstream: where an allowed call goes (the gateway's upstream that lists the tool;
            ``""``: the caller runs it itself), stamped on the call's decision.
        era: the protocol revision the client spoke (``"2026-07-28"``, ``"2025-11-25"``;
            ``""``: none, a library or HTTP-service call), stamped on the call's decision.
        trace_id: the W3C trace id of the request (see the module docstring; ``""``: none),
            stamped on the call's decision.

    Raises:
        ValueError: ``trace_id`` is not a W3C trace id (the adapter passes only one it
            validated).
    """

    run_id: str = ""
    menu_format: str | None = None
    scope: frozenset[str] | None = None
    granted: frozenset[str] | None = None
    subject: str = ""
    upstream: str = ""
    era: str = ""
    trace_id: str = ""

    def __post_init__(self) -> None:
        if fault := trace_id_fault(self.trace_id):
            raise ValueError(f"trace_id {self.trace_id[:80]!r} {fault}")

    @classmethod
    def scoped(cls, names: Collection[str] | None) -> CallContext:
        """A context whose scope is ``names`` (``None``: unscoped)."""
        return cls(scope=None if names is None else frozenset(names))


#: the context of a call that passes none
DEFAULT = CallContext()
