"""The server's cache of conversations: a bounded, expiring map of :class:`Session` objects.

With a decision log, a session *lives in the log*: what it was offered is its latest committed
turn (:mod:`maitred.log.offers`), and this map only caches the :class:`Session` objects built
from it -- a session dropped here is rebuilt from the log on its next request, and a cached one
is used for a check only while its turn is still the session's latest committed turn
(:meth:`maitred.Maitred.check`). Without a log, this map is the only memory: a forgotten session
is a 404. Either way a session is put here only once its turn is committed. Keys are
``(tenant, session_id)``:

* **Tenant-scoped keys.** Tenant B asking for tenant A's session id finds nothing, exactly as if
  the id did not exist, so the API answers 404 and leaks nothing about other tenants.
* **Bounded.** At most ``max_sessions`` are kept; beyond that the least recently used is
  dropped (an ``OrderedDict`` moved to the end on every use).
* **Expiring.** A session unused for ``idle_s`` seconds is forgotten the next time it is
  looked up or the map is pruned (then reloaded from the log, or, without one, a 404).

The map is shared by the server's worker threads, so every operation holds one lock.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from maitred.actions.session import Session

Key = tuple[str, str]
"""``(tenant, session_id)``."""


class SessionStore:
    """Sessions by ``(tenant, session_id)``, least recently used first, with an idle expiry.

    Args:
        max_sessions: how many to keep at most.
        idle_s: how long an unused session lives.
        clock: monotonic seconds (injectable for tests).
    """

    def __init__(
        self,
        max_sessions: int,
        idle_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_sessions = max_sessions
        self.idle_s = idle_s
        self.clock = clock
        self._items: OrderedDict[Key, tuple[Session, float]] = OrderedDict()
        self._lock = threading.Lock()
        self.evicted = 0
        self.expired = 0

    def get(self, tenant: str, session_id: str) -> Session | None:
        """The live session, refreshed as just used; ``None`` if unknown or expired."""
        key = (tenant, session_id)
        now = self.clock()
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            session, last = found
            if now - last > self.idle_s:
                del self._items[key]
                self.expired += 1
                return None
            self._items[key] = (session, now)
            self._items.move_to_end(key)
            return session

    def put(self, tenant: str, session: Session) -> None:
        """Keep ``session`` under its id, dropping expired and then least recently used ones."""
        now = self.clock()
        with self._lock:
            self._items[(tenant, session.id)] = (session, now)
            self._items.move_to_end((tenant, session.id))
            self._prune_locked(now)

    def forget(self, tenant: str, session: Session) -> None:
        """Drop ``session`` if it is still the one kept under its id."""
        with self._lock:
            key = (tenant, session.id)
            found = self._items.get(key)
            if found is not None and found[0] is session:
                del self._items[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def _prune_locked(self, now: float) -> None:
        while self._items:
            key, (_, last) = next(iter(self._items.items()))
            if now - last > self.idle_s:
                del self._items[key]
                self.expired += 1
            elif len(self._items) > self.max_sessions:
                del self._items[key]
                self.evicted += 1
            else:
                break
