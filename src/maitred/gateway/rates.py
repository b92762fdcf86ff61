"""The gateway's side of rate limits (``rate_limits:`` in its config; :mod:`maitred.ratelimit`).

**Where it applies.** Every ``tools/call`` that reaches the gate (authenticated, its arguments
I-JSON) is charged to its caller's budgets first, before anything is decided: the bearer
token's (``per_token``; over stdio the launch account's), its tenant's (``per_tenant``; over
HTTP only) and, for a tool ``per_tool`` names, the tenant's budget for that tool. A call that
finds a budget exhausted is still *decided*: the limit's refusal is passed to the action gate
as a :class:`~maitred.actions.model.Hold`, so the call is ``RATE_LIMITED`` with a decision id
and a row in the log like every refusal, reads no state, never reaches the upstream and is
not re-listed first. The model's payload carries ``retry_after_s``. A tool held back for its
definition (``TOOL_DEFINITION_CHANGED``) keeps that reason, and a name no upstream lists stays
``TOOL_UNKNOWN`` (both are charged all the same). ``find_tools`` counts like any call; its
refusal is the same payload, logged as a decision on the ``find_tools`` call
(:meth:`~maitred.conversation.Conversation.refuse`). Listings (``tools/list``) are not
charged.

**When the shared store is down**, a call to a tool that ``mutates`` is refused
``RATE_LIMIT_UNAVAILABLE`` (also a logged decision), and a read-only call is counted by this
gateway process alone (see :mod:`maitred.ratelimit`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import anyio
from fastmcp.server.dependencies import get_access_token

from maitred.conversation import Conversation
from maitred.conversation.finding import FIND_TOOLS
from maitred.errors import ConfigError
from maitred.gateway.config import GatewayConfig
from maitred.ratelimit import Admission, Caller, Limiter, token_id, unknown_tools

#: what :func:`admit` answers when the gateway has no rate limits
ADMITTED = Admission()


def open_limiter(
    config: GatewayConfig, tools: Mapping[str, Sequence[Mapping[str, Any]]]
) -> Limiter | None:
    """The gateway's limiter (``None`` without ``rate_limits``), over the upstreams' ``tools``.

    A shared store that does not answer at start is reported on stderr, not fatal: the
    gateway serves, and mutating calls are refused until the store answers.

    Raises:
        ConfigError: ``per_tool`` names a tool no upstream lists (a typo would limit nothing).
            While some upstream has not answered (it is absent from ``tools``) the name may
            be one of its tools: that is only named on stderr.
    """
    options = config.rate_limits
    if options is None:
        return None
    names = {str(t.get("name", "")) for listed in tools.values() for t in listed}
    if config.disclosure == "find_tools":
        names.add(FIND_TOOLS)
    unknown = unknown_tools(options, frozenset(names))
    if unknown and all(up.name in tools for up in config.upstreams):
        raise ConfigError(
            f"{config.source}: field 'rate_limits.per_tool.{unknown[0]}' names a tool no "
            "upstream lists; write a tool name as its upstream lists it"
        )
    if unknown:
        print(
            f"maitred mcp: rate limits: 'rate_limits.per_tool' names {list(unknown)}, which "
            "no upstream serving now lists; they are limited once an upstream that has not "
            "answered yet lists them",
            file=sys.stderr,
            flush=True,
        )
    limiter = Limiter(options, "mcp")
    if options.shared:
        error = limiter.check_store()
        if error:
            print(
                f"maitred mcp: rate limits: the store {limiter.where} does not answer "
                f"({error}); calls that change things will be refused until it does",
                file=sys.stderr,
                flush=True,
            )
    return limiter


def caller_of(keeper: Conversation, *, stdio: bool) -> Caller:
    """Whose budgets the request being served is charged to: over stdio the launch account
    (the one credential there is); over HTTP the bearer token and its tenant."""
    if stdio:
        return Caller(token=f"launch:{keeper.account}")
    token = get_access_token()
    return Caller(token_id(token.token) if token is not None else "", keeper.tenant)


async def admit(
    limiter: Limiter | None, keeper: Conversation, name: str, *, stdio: bool
) -> Admission:
    """Charge one call of ``name`` (see the module docstring); a shared store is asked on a
    worker thread, the in-memory one at once."""
    if limiter is None:
        return ADMITTED
    engines = keeper.engines
    # a name the gateway does not know is treated as a write: it fails closed
    mutates = name != FIND_TOOLS and (not engines.knows(name) or keeper.mutates(name))
    charge = partial(limiter.admit, caller_of(keeper, stdio=stdio), name, mutates=mutates)
    return await anyio.to_thread.run_sync(charge) if limiter.blocking else charge()
