"""Server-aware recall: when one MCP server clearly leads, offer its tools together, ``+servers``.

The tools of one MCP server are used together: a task that needs ``search_articles`` from a
paper-search server usually needs its ``get_article_details`` as well, and that sibling may
share no word with the request. Per-tool ranking cannot see this; the server can.

``METHOD+servers`` wraps any recall method. It reads the inner ranking to :data:`POOL`, then asks
whether the server of the best tool *dominates* the head of that ranking: its tools' share of
the positive score in the top :data:`HEAD_DEPTH` is at least ``dominance`` (:data:`DOMINANCE`).
When it does, servers are scored, then tools::

    own(t)    = score(t) / score(best tool)             0 for a tool the inner method did not rank
    server(S) = max own(t) over S's ranked tools
    final(t)  = own(t) + beta * server(server of t)     beta = BONUS; 0 for a tool without server

so every tool of a server that has a strong candidate rises, the strong server's most (its
siblings the inner method did not rank come in at ``beta``), while a strong tool of another
server keeps its place above a weak sibling. When no server dominates, the inner ranking is
returned unchanged.

The dominance test is what keeps single-tool requests safe: on a catalog of near-duplicate
servers (three map servers, two browser drivers) the head is split between servers, no server
dominates, and the ranking is left alone; on a request whose head one server holds, lifting its
siblings costs little (the best tool stays first) and finds the tools a multi-step task needs.

By construction:

- the score is ``final`` (so scores never increase down the list); every candidate gets the
  component ``servers`` (= ``final``) beside its inner components; a tool the inner method did
  not rank has only ``servers`` and ``server_added`` (1.0), so a cut-off on another component
  drops it;
- a catalog with fewer than two servers (no tool has a ``server``, or all share one) is ranked
  exactly as the inner method ranks it: the wrapper asks for ``k`` and returns that;
- a tool without a server never gets a bonus and never dominates;
- ties keep the inner order, then catalog order.

The input list is not changed; ranks are renumbered 1..k.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from maitred.errors import ConfigError
from maitred.recall.base import Candidate, Recaller
from maitred.skills.model import Catalog

DOMINANCE: Final = 0.5
"""Share of the head's positive score the best tool's server must hold for servers to count
(fitted on the MCP sets: ``benchmarks/routing_servers.py``)."""

BONUS: Final = 1.0
"""``beta``: weight of a tool's server's best score beside the tool's own (both over the
query's best score)."""

HEAD_DEPTH: Final = 10
"""How many of the inner ranking's best tools the share is taken over."""

POOL: Final = 100
"""How deep the inner ranking is read (the block is filled from it first)."""


def servers_of(catalog: Catalog) -> dict[str, tuple[str, ...]]:
    """server -> its tools' names, in catalog order (tools without a server left out)."""
    out: dict[str, list[str]] = {}
    for skill in catalog:
        if skill.server:
            out.setdefault(skill.server, []).append(skill.name)
    return {k: tuple(v) for k, v in out.items()}


def dominant_share(
    ranked: Sequence[Candidate], server_of: Mapping[str, str], depth: int = HEAD_DEPTH
) -> float:
    """The best tool's server's share of the positive score in the top ``depth`` (0.0 when the
    best tool has no server or no candidate scores above 0).

    >>> c = [Candidate("a", 1, 3.0), Candidate("b", 2, 1.0), Candidate("x", 3, 2.0)]
    >>> dominant_share(c, {"a": "s", "b": "s", "x": "t"})
    0.6666666666666666
    """
    if not ranked:
        return 0.0
    top = server_of.get(ranked[0].name)
    if top is None:
        return 0.0
    head = ranked[:depth]
    total = sum(max(c.score, 0.0) for c in head)
    if total <= 0.0:
        return 0.0
    own = sum(max(c.score, 0.0) for c in head if server_of.get(c.name) == top)
    return own / total


def lift_server(
    ranked: Sequence[Candidate],
    members: Mapping[str, Sequence[str]],
    server_of: Mapping[str, str],
    k: int,
    *,
    dominance: float = DOMINANCE,
    bonus: float = BONUS,
) -> list[Candidate]:
    """The best ``k`` of ``ranked``, servers scored then tools when one server dominates.

    Args:
        ranked: the inner method's ranking, best first (read to any depth).
        members: server -> its tools (catalog order), from :func:`servers_of`.
        server_of: tool -> its server.
        k: how many to return.
        dominance: the share :func:`dominant_share` must reach (0: always).
        bonus: ``beta`` of the module docstring.

    Returns:
        A new ranked list of at most ``k`` candidates, ranks 1..n.

    Example:
        With servers ``s = (a, b, c)`` and ``t = (x,)``, ranking ``[a, x, b]`` (scores 4, 2, 1)
        and ``dominance=0.5, bonus=1``: ``s`` holds 5/7 of the head; ``a`` scores 1 + 1,
        ``b`` 0.25 + 1, ``c`` (not ranked) 0 + 1, ``x`` 0.5 + 0.5, so the result is
        ``[a, b, c, x]``.
    """
    if k <= 0:
        return []
    top = ranked[0].score if ranked else 0.0
    if top <= 0.0 or dominant_share(ranked, server_of) < dominance:
        return [Candidate(c.name, r, c.score, c.components) for r, c in enumerate(ranked[:k], 1)]
    own = {c.name: c.score / top for c in ranked}
    best: dict[str, float] = {}
    for c in ranked:
        server = server_of.get(c.name)
        if server is not None:
            best[server] = max(best.get(server, 0.0), own[c.name])
    pool: dict[str, Mapping[str, float] | None] = {c.name: c.components for c in ranked}
    for server in best:
        for name in members[server]:
            pool.setdefault(name, None)
    order = {name: i for i, name in enumerate(pool)}

    def combined(name: str) -> float:
        server = server_of.get(name)
        return own.get(name, 0.0) + (bonus * best[server] if server is not None else 0.0)

    scores = {name: combined(name) for name in pool}
    chosen = sorted(pool, key=lambda n: (-scores[n], order[n]))[:k]
    out = []
    for r, name in enumerate(chosen, start=1):
        components = pool[name]
        extra = (
            {"servers": scores[name]}
            if components is not None
            else {
                "servers": scores[name],
                "server_added": 1.0,
            }
        )
        out.append(Candidate(name, r, scores[name], {**(components or {}), **extra}))
    return out


class ServerRecaller:
    """Any recaller, its ranking's dominant MCP server lifted into one block (``NAME+servers``).

    Attributes:
        name: ``"<inner name>+servers"``.
        inner: the wrapped recaller.
        catalog: the catalog (its tools' ``server``).
        dominance, bonus: see :func:`lift_server`.
        pool: how deep the inner ranking is read.
    """

    def __init__(
        self,
        inner: Recaller,
        catalog: Catalog,
        *,
        dominance: float = DOMINANCE,
        bonus: float = BONUS,
        pool: int = POOL,
    ) -> None:
        """Wrap ``inner`` (built over ``catalog``).

        Raises:
            ConfigError: ``dominance`` outside [0, 1], ``bonus`` negative, or ``pool`` < 1.
        """
        if not 0.0 <= dominance <= 1.0:
            raise ConfigError(f"the server dominance share must be in [0, 1], got {dominance}")
        if not bonus >= 0.0:
            raise ConfigError(f"the server bonus must be >= 0, got {bonus}")
        if pool < 1:
            raise ConfigError(f"the server pool depth must be >= 1, got {pool}")
        self.inner = inner
        self.catalog = catalog
        self.name = f"{inner.name}+servers"
        self.dominance = dominance
        self.bonus = bonus
        self.pool = pool
        self._members = servers_of(catalog)
        self._server_of = {t: s for s, tools in self._members.items() for t in tools}

    @property
    def active(self) -> bool:
        """Whether the catalog has at least two servers (otherwise ranking is the inner one)."""
        return len(self._members) >= 2

    @property
    def settings(self) -> dict[str, str]:
        """The inner recaller's settings (empty for one without)."""
        return dict(getattr(self.inner, "settings", None) or {})

    def rank(self, text: str, k: int) -> list[Candidate]:
        """The best ``k`` tools for ``text``, the dominant server's tools lifted (see module)."""
        if not self.active:
            return self.inner.rank(text, k)
        ranked = self.inner.rank(text, max(k, self.pool))
        return lift_server(
            ranked, self._members, self._server_of, k, dominance=self.dominance, bonus=self.bonus
        )

    def rank_batch(self, texts: Sequence[str], k: int) -> list[list[Candidate]]:
        """:meth:`rank` for many texts (the inner recaller's batch path when it has one)."""
        batch = getattr(self.inner, "rank_batch", None)
        if batch is None:
            return [self.rank(t, k) for t in texts]
        if not self.active:
            return list(batch(texts, k))
        depth = max(k, self.pool)
        return [
            lift_server(
                r, self._members, self._server_of, k, dominance=self.dominance, bonus=self.bonus
            )
            for r in batch(texts, depth)
        ]
