"""What a listing may depend on, and who a disclosure is recorded for.

MCP 2026-07-28 is stateless: ``tools/list`` (and the resource, template and prompt lists)
"MUST NOT vary per-connection or as a side effect of other requests"; it MAY vary by the
authorization presented. So the gateway's lists are a function of **who asks and the state
now**: the tenant, account and granted scopes the credential carries, that account's state
as read for this listing, the reviewed pins and the config -- never of what this caller (or
any other) asked before. Three things follow, and live here:

* **Who a disclosure is for** (:func:`~maitred.conversation.principal.holder_id`).
  ``find_tools`` narrows by the conversation, so its answers are *results*: the tools a need
  found, each with its name, description and input schema, are disclosed to the caller in the
  answer and never join the list. What was disclosed to whom is the log's (a ``find_tools``
  turn, chained like every turn; :mod:`maitred.log.offers`), recorded under a *holder*: on a
  2026-07-28 connection, which has no session, the principal -- one id derived from (tenant,
  account, granted scopes, disclosure mode), the same on every replica and after a restart; on a
  handshake-era connection, the MCP session (a fresh id per session, as that era's lists are per
  session). A call is then admitted only for a tool the holder's log shows offered: the
  listing's visible set (``disclosure: all``) or what ``find_tools`` disclosed to it
  (``disclosure: find_tools``), and re-decided on fresh state either way.
* **Deterministic order** (:func:`in_catalog_order`): tools are listed in the catalog's
  order (the config's upstreams, each in the order it lists them), whatever order the
  upstreams joined the server in, so two replicas -- or one process before and after a
  late upstream joined -- list the same credential and state alike.
* **Cache hints** (:func:`listing_ttl_s`): every cacheable result carries ``cacheScope:
  "private"`` (a list gated by account state must never be served to another credential by
  a shared cache) and a ``ttlMs`` no longer than the state watch's interval, the longest a
  state change can go unannounced to a listening client (no watch: ``0``, immediately
  stale, since nothing would tell a client its cached list went wrong), and no longer than
  the shortest TTL an upstream gave for its own lists.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Literal, TypeVar

from maitred.conversation.principal import holder_id as holder_id  # re-exported

#: the scope every cacheable result of the gateway carries
CACHE_SCOPE: Literal["private"] = "private"

T = TypeVar("T")


def in_catalog_order(items: Iterable[T], names: Sequence[str], name: Callable[[T], str]) -> list[T]:
    """``items`` in the order ``names`` gives their names (``name``: an item's name); an item
    whose name is not in ``names`` is left out."""
    rank = {n: i for i, n in enumerate(names)}
    return sorted((it for it in items if name(it) in rank), key=lambda it: rank[name(it)])


def listing_ttl_s(watch_interval_s: float, upstream_ttls_ms: Iterable[int | None] = ()) -> int:
    """Whole seconds a client may cache a list (see the module docstring): the watch's
    interval, rounded down, bounded by each upstream TTL that is known (``None``: an
    upstream that gave none, as a handshake-era one cannot); ``0`` without a watch."""
    if watch_interval_s <= 0:
        return 0
    ttl = math.floor(watch_interval_s)
    for given in upstream_ttls_ms:
        if given is not None:
            ttl = min(ttl, given // 1000)
    return max(ttl, 0)
