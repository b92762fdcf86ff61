"""The needs of one task ranked together: the task's servers weigh in, each need shows new tools.

A task of several steps is asked need by need (``find_tools``' ``needs``; a labelled query's
``steps``). Ranked apart, each need sees only its own sentence: a step that says "fetch the
details of each result" cannot tell which of several servers' detail tools the task is about,
and the needs of one task keep finding the same few tools (the top 3 of nine steps are on
average about 15 distinct tools, not 27). :func:`rank_steps` ranks them together, in two moves:

**The task's servers.** Each MCP server gets its summed share of the needs' heads (over every
need, its tools' scores over that need's best score, in the need's top :data:`PRIOR_DEPTH`),
scaled so that the leading server has 1: the servers the task as a whole keeps pointing to. A
need's tool then scores::

    steps(t) = own(t) + prior * server(server of t)        own(t) = score(t) / the need's best

so a need leans toward the servers the whole task is about (the tools used together); a tool
without a server, or a catalog with fewer than two servers, gets no lift.

**Fresh tools.** In need order, a tool already in an earlier need's top ``k`` moves below
every tool not yet shown (it keeps its place among the shown ones), so each need's top ``k``
brings new tools. This shows more tools per task at the same ``k``; what it buys at the *same
number of tools shown* is in BENCHMARKS.md ("Step-wise discovery"): there, on the only
step-wise dev set (mcp-bench-steps), it is what pays; ``prior`` was chosen by five-fold
cross-validation over its tasks (:data:`PRIOR`). Nothing is ranked beyond the needs themselves
(an earlier version ranked the needs joined as one more text: as good, and 2.15x the time).

One need alone is ranked as the recaller ranks it. Every candidate keeps its inner components
and gets ``steps`` (= its score here); ranks are renumbered 1..n. Nothing here reads state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from maitred.errors import ConfigError
from maitred.recall.base import Candidate, Recaller
from maitred.recall.servers import servers_of
from maitred.skills.model import Catalog

PRIOR: Final = 0.5
"""Weight of the task's server share beside a tool's own score (chosen by five-fold
cross-validation over mcp-bench-steps' tasks: ``benchmarks/routing_steps.py``)."""

PRIOR_DEPTH: Final = 3
"""How many of each need's best tools the server shares are taken over."""

DEPTH: Final = 100
"""How deep each need is ranked (the fresh tools are drawn from it)."""


def server_shares(
    rankings: Sequence[Sequence[Candidate]], server_of: dict[str, str], depth: int = PRIOR_DEPTH
) -> dict[str, float]:
    """Each server's summed share of the rankings' top ``depth`` (each score over its own
    ranking's best), the largest scaled to 1 (empty when nothing scores above 0).

    >>> c = [Candidate("a", 1, 4.0), Candidate("b", 2, 2.0), Candidate("x", 3, 2.0)]
    >>> server_shares([c], {"a": "s", "b": "s", "x": "t"})
    {'s': 1.0, 't': 0.3333333333333333}
    """
    shares: dict[str, float] = {}
    for ranked in rankings:
        top = ranked[0].score if ranked else 0.0
        for c in ranked[:depth] if top > 0.0 else ():
            server = server_of.get(c.name)
            if server is not None and c.score > 0.0:
                shares[server] = shares.get(server, 0.0) + c.score / top
    most = max(shares.values(), default=0.0)
    return {s: v / most for s, v in shares.items()} if most > 0.0 else {}


def rank_steps(
    recaller: Recaller,
    needs: Sequence[str],
    k: int,
    *,
    catalog: Catalog | None = None,
    prior: float = PRIOR,
    fresh: bool = True,
    depth: int = DEPTH,
) -> list[list[Candidate]]:
    """Rank the needs of one task together (see the module docstring).

    Args:
        recaller: ranks one text (its ``rank_batch`` is used when it has one).
        needs: the task's needs, in order.
        k: how many tools each need will show (the fresh tools fill each need's top ``k``).
        catalog: the catalog (its tools' ``server``); default: the recaller's ``catalog``.
        prior: weight of the task's server shares (0: none).
        fresh: move the tools earlier needs showed below the others.
        depth: how deep each need is ranked.

    Returns:
        One ranking per need, in need order, each at most ``max(depth, k)`` long.

    Raises:
        ConfigError: ``k`` or ``depth`` below 1, or ``prior`` negative.
    """
    if k < 1 or depth < 1:
        raise ConfigError(f"step-wise ranking needs k >= 1 and depth >= 1, got {k} and {depth}")
    if not prior >= 0.0:
        raise ConfigError(f"the server prior must be >= 0, got {prior}")
    deep = max(depth, k)
    texts = list(needs)
    if len(texts) < 2:
        return [recaller.rank(t, deep) for t in texts]
    catalog = catalog if catalog is not None else getattr(recaller, "catalog", None)
    members = servers_of(catalog) if catalog is not None else {}
    server_of = {t: s for s, tools in members.items() for t in tools}
    lifts = prior > 0.0 and len(members) >= 2
    batch = getattr(recaller, "rank_batch", None)
    rankings = list(batch(texts, deep)) if batch else [recaller.rank(t, deep) for t in texts]
    shares = server_shares(rankings, server_of) if lifts else {}
    shown: set[str] = set()
    out = []
    for ranked in rankings:
        joint = _lifted(ranked, server_of, shares, prior)
        if fresh:
            joint = sorted(joint, key=lambda c: c.name in shown)  # stable: order kept within
        out.append([Candidate(c.name, r, c.score, c.components) for r, c in enumerate(joint, 1)])
        shown.update(c.name for c in out[-1][:k])
    return out


def _lifted(
    ranked: Sequence[Candidate],
    server_of: dict[str, str],
    shares: dict[str, float],
    prior: float,
) -> list[Candidate]:
    """One need's ranking rescored by ``own + prior * server share`` (best first; ties keep
    the need's own order)."""
    top = ranked[0].score if ranked else 0.0
    scored = []
    for c in ranked:
        own = c.score / top if top > 0.0 else 0.0
        lift = prior * shares.get(server_of.get(c.name, ""), 0.0) if own > 0.0 else 0.0
        scored.append(Candidate(c.name, c.rank, own + lift, {**c.components, "steps": own + lift}))
    return sorted(scored, key=lambda c: -c.score)
