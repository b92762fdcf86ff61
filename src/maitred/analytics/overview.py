"""The overview: the funnel over time, per tenant, and the refusals by code, from the log alone.

The funnel of :mod:`maitred.analytics.funnel` is one set of totals; an operator watching a
log also asks *when*: how many candidates recall found, how many the gate blocked and how many
were exposed, in each slice of the log's time span, and which codes the action gate refused
with. :func:`overview` answers with plain aggregate SQL in the log's own database (SQLite or
PostgreSQL), on the log opened read-only:

* **buckets** -- the span (the log's first to last decision, or the range asked) cut into
  ``buckets`` equal slices; per slice: turns, recalled (candidate pairs), blocked (candidates
  the executability gate hid), exposed (pairs on the menu), action decisions and refusals;
* **tenants** -- the same totals per tenant (``""``: decisions made without tenants);
* **refusals** -- rejected action decisions by code and tenant, most first.

Asked for no range, it covers the ``span_s`` seconds up to the log's newest decision (the last
day by default; ``span_s=None``: the whole log): every row of the range is read, so the whole
of a 1,000,000-decision log takes seconds (5 s on PostgreSQL, 16 s on SQLite under load), the
last day of it a fraction.

Each turn counts in the slice of its ``ts``, each action decision in that of its
``decided_at`` (the gate's clock), as in ``maitred log list``. Blocked is ``n_candidates -
n_visible`` of each turn, the funnel's "blocked by the gate".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from maitred.errors import ConfigError
from maitred.log import DecisionLog


@dataclass(frozen=True)
class Counts:
    """Totals of one slice of time or one tenant."""

    turns: int = 0
    recalled: int = 0
    blocked: int = 0
    exposed: int = 0
    decisions: int = 0
    refused: int = 0

    def plus(self, other: Counts) -> Counts:
        return Counts(*(a + b for a, b in zip(self.to_tuple(), other.to_tuple(), strict=True)))

    def to_tuple(self) -> tuple[int, int, int, int, int, int]:
        return (self.turns, self.recalled, self.blocked, self.exposed, self.decisions, self.refused)

    def to_json(self) -> dict[str, int]:
        names = ("turns", "recalled", "blocked", "exposed", "decisions", "refused")
        return dict(zip(names, self.to_tuple(), strict=True))


@dataclass(frozen=True)
class Overview:
    """What :func:`overview` found.

    Attributes:
        since: the span's start (unix seconds; ``None``: the log is empty).
        until: its end (exclusive).
        bucket_s: the length of one slice, seconds.
        buckets: one :class:`Counts` per slice, oldest first.
        tenants: totals per tenant, by tenant name.
        refusals: ``(code, tenant, count)``, most first.
        tenant: the tenant asked for (``None``: every tenant).
    """

    since: float | None
    until: float | None
    bucket_s: float
    buckets: tuple[Counts, ...]
    tenants: tuple[tuple[str, Counts], ...]
    refusals: tuple[tuple[str, str, int], ...]
    tenant: str | None = None
    span_s: float | None = None

    @property
    def total(self) -> Counts:
        out = Counts()
        for counts in self.buckets:
            out = out.plus(counts)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "since": self.since,
            "until": self.until,
            "bucket_s": self.bucket_s,
            "tenant": self.tenant,
            "span_s": self.span_s,
            "total": self.total.to_json(),
            "buckets": [
                {"start": (self.since or 0.0) + i * self.bucket_s, **c.to_json()}
                for i, c in enumerate(self.buckets)
            ],
            "tenants": [{"tenant": t, **c.to_json()} for t, c in self.tenants],
            "refusals": [{"code": c, "tenant": t, "count": n} for c, t, n in self.refusals],
        }


def overview(
    log: DecisionLog,
    *,
    since: float | None = None,
    until: float | None = None,
    tenant: str | None = None,
    buckets: int = 48,
    span_s: float | None = 86_400.0,
) -> Overview:
    """The overview of ``log`` between ``since`` and ``until`` (default: the ``span_s`` seconds
    up to its newest decision; ``span_s=None``: from its first).

    Raises:
        ConfigError: ``buckets`` is not from 1 to 1,000, or the range is empty.
    """
    if not 1 <= buckets <= 1000:
        raise ConfigError(f"buckets must be from 1 to 1000, got {buckets}")
    if since is None or until is None:
        first, last = _span(log)
        until = (last + 1e-3 if last is not None else None) if until is None else until
        if since is None and first is not None and until is not None:
            since = first if span_s is None else max(first, until - span_s)
    if since is None or until is None:
        return Overview(None, None, 0.0, (), (), (), tenant, span_s)
    if since >= until:
        raise ConfigError(f"the time range is empty: since {since} is not before until {until}")
    width = (until - since) / buckets
    slices = [Counts() for _ in range(buckets)]
    per_tenant: dict[str, Counts] = {}
    cut = "CAST((%s - ?) / ? AS INTEGER)" if log.dialect == "sqlite" else "FLOOR((%s - ?) / ?)"
    cond, extra = ("", []) if tenant is None else (" AND tenant = ?", [tenant])
    turns = log.query(
        f"SELECT {cut % 'ts'} AS b, tenant, COUNT(*), SUM(n_candidates), "
        "SUM(n_candidates - n_visible), SUM(n_exposed) FROM turns "
        f"WHERE ts >= ? AND ts < ?{cond} GROUP BY b, tenant",
        [since, width, since, until, *extra],
    )
    for b, who, n, recalled, blocked, exposed in turns:
        add = Counts(int(n), int(recalled or 0), int(blocked or 0), int(exposed or 0))
        _into(slices, int(b), add)
        per_tenant[str(who)] = per_tenant.get(str(who), Counts()).plus(add)
    actions = log.query(
        f"SELECT {cut % 'decided_at'} AS b, tenant, COUNT(*), "
        "SUM(CASE WHEN verdict = 'reject' THEN 1 ELSE 0 END) FROM action_decisions "
        f"WHERE decided_at >= ? AND decided_at < ?{cond} GROUP BY b, tenant",
        [since, width, since, until, *extra],
    )
    for b, who, n, refused in actions:
        add = Counts(decisions=int(n), refused=int(refused or 0))
        _into(slices, int(b), add)
        per_tenant[str(who)] = per_tenant.get(str(who), Counts()).plus(add)
    refusals = log.query(
        "SELECT code, tenant, COUNT(*) FROM action_decisions WHERE verdict = 'reject' "
        f"AND decided_at >= ? AND decided_at < ?{cond} GROUP BY code, tenant",
        [since, until, *extra],
    )
    ranked = sorted(((str(c), str(t), int(n)) for c, t, n in refusals), key=lambda r: (-r[2], r))
    return Overview(
        since,
        until,
        width,
        tuple(slices),
        tuple(sorted(per_tenant.items())),
        tuple(ranked),
        tenant,
        span_s,
    )


def _into(slices: list[Counts], index: int, add: Counts) -> None:
    index = min(max(index, 0), len(slices) - 1)  # the float edge of the last slice
    slices[index] = slices[index].plus(add)


def _span(log: DecisionLog) -> tuple[float | None, float | None]:
    """The first and last decision's clock (each an index read)."""
    ends: list[float] = []
    for table, clock in (("turns", "ts"), ("action_decisions", "decided_at")):
        for (value,) in log.query(f"SELECT MIN({clock}) FROM {table}"):
            if value is not None:
                ends.append(float(value))
        for (value,) in log.query(f"SELECT MAX({clock}) FROM {table}"):
            if value is not None:
                ends.append(float(value))
    return (min(ends), max(ends)) if ends else (None, None)
