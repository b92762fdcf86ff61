"""What a session was offered, as the decision log holds it.

A session's offer is **the last turn of that session committed to the log**: the turn row with
the session's ``(tenant, conversation_id)`` and the greatest ``(ts, turn_id)``, and that turn's
exposed pairs. Nothing else decides it -- not a process's memory, not a turn that was decided
but whose commit failed (its rows were discarded, so it is not there), not a turn buffered but
not yet committed. That is what lets a session survive a restart and be served by any replica
on one log.

The tenant is matched exactly (``tenant = ?``): two tenants whose names are prefixes of each
other (``acme``, ``acme-eu``) never see each other's sessions, even under the same session id.

Two reads, both one probe of the ``turns_session`` index (``0009_tenants_sessions``):

* :data:`LATEST_TURN_SQL` -- the id of the latest committed turn: cheap enough to run on every
  check, so a cached offer is used only while it is still the latest (another replica may
  have committed a newer turn of the same session);
* :data:`LATEST_TURN_ACCOUNT_SQL` and :data:`EXPOSED_SQL` -- that turn's account and exposed
  tools, to fill the cache.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CommittedOffer:
    """The latest committed turn of one session.

    Attributes:
        tenant: whose session it is (``""``: an engine used without tenants).
        session_id: the session (the turn's ``conversation_id``).
        turn_id: the turn.
        account: whose state that turn read (the session's account).
        offered: the tools and skills the turn exposed.
    """

    tenant: str
    session_id: str
    turn_id: str
    account: str
    offered: frozenset[str]


#: the latest committed turn of ``(tenant, conversation_id)``: ``turn_id``
LATEST_TURN_SQL = (
    "SELECT turn_id FROM turns WHERE tenant = ? AND conversation_id = ? "
    "ORDER BY ts DESC, turn_id DESC LIMIT 1"
)
#: the same turn with its account
LATEST_TURN_ACCOUNT_SQL = (
    "SELECT turn_id, account_id FROM turns WHERE tenant = ? AND conversation_id = ? "
    "ORDER BY ts DESC, turn_id DESC LIMIT 1"
)
#: a turn's exposed pairs (``?`` twice: the turn id, then the dialect's true)
EXPOSED_SQL = "SELECT skill FROM pairs WHERE turn_id = ? AND exposed = ?"
