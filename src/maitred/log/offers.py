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

**Only chained turns are offers.** A turn counts only when it is in its run's hash chain and
in a writer's links chain with the hash it has (:data:`CHAINED_TURN`): what every turn maitred
committed since ``0011_links`` is, and what a row inserted behind maitred's back is not
(``0012_chained_only`` refuses one at the database; one that gets past a dropped guard is
reported by ``verify``). A reader that meets such a turn as a session's latest, or among its
disclosures, skips it and says so in a warning naming the turn (``maitred.log``): the session's
offer is then what its chained turns offered, so the call is refused, never allowed on it.
Chained turns committed before the links (``0008``-``0010``) count when ``0012`` recorded them
(``prechain``); turns from before the chain (no ``chain_seq``) never do: such a session is
offered nothing until its next turn.

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

import logging
import threading
from dataclasses import dataclass

_log = logging.getLogger("maitred.log")
_reported: set[str] = set()
_reported_lock = threading.Lock()
#: how many turn ids are remembered as reported (then the memory starts again)
_REPORTED_MAX = 10_000


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


#: the order turns were written in (migration ``0010_turn_order``), oldest first, over the turns
#: table aliased ``t``: never the turns' clock, which two turns of one tick, or two replicas, can
#: share or disagree on (a turn written before ``0011_links`` has no ``turn_seq`` on SQLite: NULL
#: sorts first, as it was written first)
WRITE_ORDER = {"sqlite": "t.turn_seq, t.rowid", "postgres": "t.turn_seq"}
#: the same order, newest first
LATEST_FIRST = {"sqlite": "t.turn_seq DESC, t.rowid DESC", "postgres": "t.turn_seq DESC"}


#: a turn of table alias ``t`` is in its run's chain and in a writer's links chain with the hash
#: it has -- or was committed, chained, before the links (``0012_chained_only`` recorded it):
#: the only turns a session's offer is taken from
CHAINED_TURN = (
    "t.chain_seq IS NOT NULL AND (EXISTS (SELECT 1 FROM links l WHERE l.kind = 'turn' "
    "AND l.key = t.turn_id AND l.row_hash = t.row_hash) OR EXISTS (SELECT 1 FROM prechain c "
    "WHERE c.kind = 'unlinked_turn' AND c.key = t.turn_id))"
)


def latest_turn_sql(dialect: str, *, with_account: bool = False, chained: bool = True) -> str:
    """The latest committed turn of ``(tenant, conversation_id)``: ``turn_id`` (and
    ``account_id`` when ``with_account``) and whether it is chained (``1``/``0``).

    ``chained=False`` reads the latest turn whatever it is, so that a turn that is not chained
    and linked can be *reported* (the reader then asks again with ``chained=True``, which
    skips it: such a turn is never an offer, see the module docstring)."""
    cols = "t.turn_id, t.account_id" if with_account else "t.turn_id"
    where = f" AND {CHAINED_TURN}" if chained else ""
    return (
        f"SELECT {cols}, CASE WHEN {CHAINED_TURN} THEN 1 ELSE 0 END FROM turns t "
        f"WHERE t.tenant = ? AND t.conversation_id = ?{where} "
        f"ORDER BY {LATEST_FIRST[dialect]} LIMIT 1"
    )


#: one action decision's JSON by its id (``?``), when it is linked with the hash it has, or was
#: logged before the links (``prechain``): what a task's owner or an approval is read from -- a
#: decision inserted behind maitred's back is not honoured
LINKED_DECISION_SQL = (
    "SELECT d.decision_json FROM action_decisions d WHERE d.decision_id = ? AND (EXISTS "
    "(SELECT 1 FROM links l WHERE l.kind = 'decision' AND l.key = d.decision_id AND "
    "l.row_hash = d.decision_hash) OR EXISTS (SELECT 1 FROM prechain c WHERE c.kind = "
    "'decision' AND c.key = d.decision_id))"
)

#: a turn's exposed pairs (``?`` twice: the turn id, then the dialect's true)
EXPOSED_SQL = "SELECT skill FROM pairs WHERE turn_id = ? AND exposed = ?"


def disclosed_sql(dialect: str) -> str:
    """Everything the committed turns of ``(tenant, conversation_id)`` for one account exposed,
    with the turn that exposed it and whether that turn is chained (``1``/``0``: a reader
    skips, and reports, a turn that is not), in the order the turns were written (``?``:
    tenant, session id, account, the dialect's true): the last row of a tool names the latest
    turn that disclosed it, the one a decision on a call to it links to (``verify``'s
    ``turn_link``)."""
    return (
        f"SELECT p.skill, t.turn_id, CASE WHEN {CHAINED_TURN} THEN 1 ELSE 0 END "
        "FROM turns t JOIN pairs p ON p.turn_id = t.turn_id "
        "WHERE t.tenant = ? AND t.conversation_id = ? AND t.account_id = ? AND p.exposed = ? "
        f"ORDER BY {WRITE_ORDER[dialect]}"
    )


def unchained_turn(turn_id: str, tenant: str, session_id: str) -> None:
    """Report a turn that a session's read met and skipped because it is not chained (once per
    turn id per process): it was inserted behind maitred's back, or predates the links."""
    with _reported_lock:
        if turn_id in _reported:
            return
        if len(_reported) >= _REPORTED_MAX:
            _reported.clear()
        _reported.add(turn_id)
    _log.warning(
        "decision log: turn %r of session %r (tenant %r) is not in the hash chain and the links "
        "chain; it is not taken as an offer (a call on it is refused). Run `maitred log verify`: "
        "it was inserted behind maitred's back, or predates the chain",
        turn_id,
        session_id,
        tenant,
    )
