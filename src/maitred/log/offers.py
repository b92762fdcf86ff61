"""What a session was offered, as the decision log holds it.

A session's offer is **the last turn of that session committed to the log**: of the turn rows
with the session's ``(tenant, conversation_id)``, the one committed last (``turns.turn_seq``,
given by the committer -- never the turns' own clock, which two turns of one tick or two
replicas can share or disagree on; SQLite turns from before ``0011`` have none and follow in
``rowid`` order), and that turn's exposed pairs. ``turn_seq`` is in the links chain
(:mod:`maitred.log.links`), so ``verify`` reports an edit of it, and a turn deleted and
inserted again keeps it: moving an old turn to the end changes no session. Nothing else
decides it -- not a process's memory, not a turn that was decided but whose commit failed (its
rows were discarded, so it is not there), not a turn buffered but not yet committed. That is
what lets a session survive a restart and be served by any replica on one log.

The tenant is matched exactly (``tenant = ?``): two tenants whose names are prefixes of each
other (``acme``, ``acme-eu``) never see each other's sessions, even under the same session id.

Two reads, both one probe of the ``turns_session_order`` index (``0010_turn_order``):

* :func:`latest_turn_sql` -- the id of the latest committed turn: cheap enough to run on every
  check, so a cached offer is used only while it is still the latest (another replica may
  have committed a newer turn of the same session);
* ``latest_turn_sql(..., with_account=True)`` and :data:`EXPOSED_SQL` -- that turn's account
  and exposed tools, to fill the cache.

**Sessions whose turns disclose** (:attr:`Session.accumulates <maitred.actions.Session>`: the
MCP gateway's ``find_tools``). There a turn is not a menu that the next one replaces but a
*result* the model keeps: what one turn disclosed stays offered for the rest of the session.
Such a session's offer is :func:`disclosed_sql`, every tool any of its committed turns exposed
for its account, each with the latest turn that exposed it -- the turn a decision on a call to
that tool names (an index probe on the session's turns, then each turn's pairs), read again
only when its latest committed turn changed. It is still nothing but committed turns: each is
a row of its run's hash chain (``verify`` covers its pairs), so what was disclosed to whom is
as tamper-evident as the rest of the log, the same on every replica and after a restart, and
only ever grows (a disclosure is never taken back by a later turn; the action gate re-decides
every call on fresh state anyway).
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


#: the column that orders turns as they were written, by dialect (migration ``0010_turn_order``):
#: never the turns' clock, which two turns of one tick, or two replicas, can share or disagree on
TURN_ORDER = {"sqlite": "turn_seq DESC, rowid DESC", "postgres": "turn_seq DESC"}
#: the same order, oldest first, over the turns table aliased ``t`` (a turn written before
#: ``0011_links`` has no ``turn_seq`` on SQLite: NULL sorts first, as it was written first)
WRITE_ORDER = {"sqlite": "t.turn_seq, t.rowid", "postgres": "t.turn_seq"}


def latest_turn_sql(dialect: str, *, with_account: bool = False) -> str:
    """The latest committed turn of ``(tenant, conversation_id)``: ``turn_id`` (and
    ``account_id`` when ``with_account``)."""
    cols = "turn_id, account_id" if with_account else "turn_id"
    return (
        f"SELECT {cols} FROM turns WHERE tenant = ? AND conversation_id = ? "
        f"ORDER BY {TURN_ORDER[dialect]} LIMIT 1"
    )


#: a turn's exposed pairs (``?`` twice: the turn id, then the dialect's true)
EXPOSED_SQL = "SELECT skill FROM pairs WHERE turn_id = ? AND exposed = ?"


def disclosed_sql(dialect: str) -> str:
    """Everything the committed turns of ``(tenant, conversation_id)`` for one account exposed,
    with the turn that exposed it, in the order the turns were written (``?``: tenant, session
    id, account, the dialect's true): the last row of a tool names the latest turn that
    disclosed it, the one a decision on a call to it links to (``verify``'s ``turn_link``)."""
    return (
        "SELECT p.skill, t.turn_id FROM turns t JOIN pairs p ON p.turn_id = t.turn_id "
        "WHERE t.tenant = ? AND t.conversation_id = ? AND t.account_id = ? AND p.exposed = ? "
        f"ORDER BY {WRITE_ORDER[dialect]}"
    )
