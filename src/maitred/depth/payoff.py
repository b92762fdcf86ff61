"""The payoff of an exposed set, and the prefix quantities every depth rule is judged by.

For a task ``x`` with minimal required set ``G_x`` and an exposed set ``A`` with per-skill costs
``c_j``, the payoff is::

    U(A, x) = 1{G_x ⊆ A} − λ · Σ_{j ∈ A} c_j

Depth rules only ever expose a *prefix* of the ranked, visible candidates, so what matters is
``U_k = U(A_k, x)`` for ``A_k`` = the top ``k`` (``k = 0..n``). With ``k*`` the shortest
sufficient prefix (``G_x ⊆ A_k`` exactly when ``k ≥ k*``; ``k* = ∞`` when some required skill
is not in the list at all) and ``C_k`` the cumulative cost::

    U_k = 1{k ≥ k*} − λ · C_k

Invariants (tested as properties):

* the oracle depth -- the *smallest* ``k`` maximising ``U_k`` -- bounds every rule's payoff
  on every task, since every rule picks some ``k``;
* for a fixed exposed set, ``U`` is non-increasing in ``λ`` (costs are positive), and so is the
  oracle payoff; the oracle depth is non-increasing in ``λ`` too.

At prefix ``t`` (``t`` skills exposed, ``t < n``) the CAM-DF training signal is the gap between
stopping now and the best continuation::

    Δ_t = U_t − max_{k > t} U_k        label "stop" iff Δ_t ≥ 0, weight |Δ_t|

Costs: a skill's cost is its contract's declared ``cost`` (:data:`DEFAULT_COST` = 1.0 when the
contract declares none) or, for task files built with ``--costs tokens``, its description tokens
divided by the catalog's mean (so the mean skill costs 1 and ``λ`` is "payoff per average skill").
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

import numpy as np
from numpy.typing import NDArray

from maitred.depth.rules import Ranked

DEFAULT_COST: Final = 1.0
"""The cost of a skill whose contract declares none (the contract's own default)."""


@dataclass(frozen=True)
class DepthTask:
    """One ranked list with the skills the task needs.

    Attributes:
        id: unique within its file.
        candidates: the visible candidates, best first.
        required: ``G_x``, the minimal set of skill names the task needs. A name that is not
            among the candidates makes every prefix insufficient.
        query: the message, when known (for reading results only).
    """

    id: str
    candidates: tuple[Ranked, ...]
    required: frozenset[str]
    query: str = ""

    @property
    def n(self) -> int:
        """How many candidates the list holds."""
        return len(self.candidates)

    @property
    def costs(self) -> NDArray[np.float64]:
        """The candidates' costs, in rank order."""
        return np.array([c.cost for c in self.candidates], dtype=np.float64)

    @property
    def scores(self) -> NDArray[np.float64]:
        """The candidates' scores, in rank order."""
        return np.array([c.score for c in self.candidates], dtype=np.float64)


def payoff(exposed: Iterable[Ranked], required: Collection[str], lam: float) -> float:
    """``U(A, x)`` for any exposed set (not only prefixes)."""
    chosen = list(exposed)
    names = {r.name for r in chosen}
    covered = 1.0 if set(required) <= names else 0.0
    return covered - lam * sum(r.cost for r in chosen)


def sufficient_depth(task: DepthTask) -> int | None:
    """``k*``: the shortest prefix holding every required skill; ``None`` if none does."""
    position = {c.name: i for i, c in enumerate(task.candidates)}
    if not task.required:
        return 0
    if not all(name in position for name in task.required):
        return None
    return max(position[name] for name in task.required) + 1


def sufficiency(task: DepthTask) -> NDArray[np.float64]:
    """``1{G_x ⊆ A_k}`` for ``k = 0..n`` (length ``n + 1``)."""
    k_star = sufficient_depth(task)
    ks = np.arange(task.n + 1)
    if k_star is None:
        return np.zeros(task.n + 1)
    return (ks >= k_star).astype(np.float64)


def prefix_payoffs(task: DepthTask, lam: float) -> NDArray[np.float64]:
    """``U_k`` for ``k = 0..n`` (length ``n + 1``)."""
    cumulative = np.concatenate(([0.0], np.cumsum(task.costs)))
    result: NDArray[np.float64] = sufficiency(task) - lam * cumulative
    return result


def oracle_depth(task: DepthTask, lam: float) -> int:
    """The best prefix in hindsight: the smallest ``k`` maximising ``U_k``."""
    return int(np.argmax(prefix_payoffs(task, lam)))


def stop_gaps(task: DepthTask, lam: float) -> NDArray[np.float64]:
    """``Δ_t = U_t − max_{k>t} U_k`` for ``t = 0..n−1`` (empty when the list is empty)."""
    u = prefix_payoffs(task, lam)
    if task.n == 0:
        return np.zeros(0)
    # best continuation from t: max over u[t+1:], computed as a reversed running maximum
    best_after = np.maximum.accumulate(u[::-1])[::-1][1:]
    gaps: NDArray[np.float64] = u[:-1] - best_after
    return gaps


P = TypeVar("P", int, float)


def select(
    tasks: Sequence[DepthTask],
    lam: float,
    params: Sequence[P],
    depth_of: Callable[[P], Sequence[int]],
    *,
    floor: float | None = None,
) -> P:
    """The parameter with the best mean training payoff over ``tasks`` at cost weight ``lam``.

    Every tuned rule (each baseline's k or threshold, CAM-DF's stop threshold) is chosen here.

    Ties go to less exposure, then to the first tried; with ``floor``, only parameters whose
    mean training sufficiency reaches it compete (the most sufficient wins when none does).
    """
    payoffs = [prefix_payoffs(t, lam) for t in tasks]
    suffs = [sufficiency(t) for t in tasks]
    best_key: tuple[bool, float, float, float] | None = None
    best_param = params[0]
    for param in params:
        depths = depth_of(param)
        mean_u = float(np.mean([u[k] for u, k in zip(payoffs, depths, strict=True)]))
        mean_s = float(np.mean([s[k] for s, k in zip(suffs, depths, strict=True)]))
        eligible = floor is None or mean_s >= floor - 1e-12
        # an ineligible value competes on sufficiency first: the most sufficient wins
        first, second = (mean_u, 0.0) if eligible else (mean_s, mean_u)
        key = (eligible, round(first, 12), round(second, 12), -float(np.mean(depths)))
        if best_key is None or key > best_key:
            best_key, best_param = key, param
    return best_param
