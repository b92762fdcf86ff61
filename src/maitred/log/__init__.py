"""The decision log: every turn's decision, append-only, hashed, migratable and verifiable.

Open one with :func:`open_log` (a path for SQLite, ``postgresql://...`` for PostgreSQL), call
``begin_run`` once per run and ``write`` once per turn (committed in batches, at most about a
second after it is written); :func:`verify` recomputes every stored hash, walks each run's hash
chain and checks the append-only guards. The schema is the ordered list :data:`MIGRATIONS`;
the row layout and the row-hash definition live in :mod:`maitred.log.rows`.
:func:`find_decision` returns everything the log holds about one turn or action decision,
:func:`list_decisions` the newest matching a :class:`DecisionFilter` (:mod:`maitred.log.lookup`).
"""

from maitred.log.base import DecisionLog, backends, open_log
from maitred.log.lookup import DecisionFilter, find_decision, list_decisions
from maitred.log.migrations import MIGRATIONS, Migration
from maitred.log.rows import decode_turn, row_hash_payload
from maitred.log.verify import Mismatch, VerifyReport, verify

__all__ = [
    "MIGRATIONS",
    "DecisionFilter",
    "DecisionLog",
    "Migration",
    "Mismatch",
    "VerifyReport",
    "backends",
    "decode_turn",
    "find_decision",
    "list_decisions",
    "open_log",
    "row_hash_payload",
    "verify",
]
