"""State fixtures for the parity audit: boundary values, odd values, missing and stale keys.

A :class:`FixtureSpace` is built once per skill from the boundary hints of its exit predicates
(:mod:`maitred.audit.bounds`). For every key the predicates read it holds a :class:`KeyPool`:

* ``typical`` -- the boundary values and their neighbours (what a healthy source sends);
* ``odd`` -- what a sloppy source sends: ``None``, an unknown enum member, a number where a
  string was expected and the other way round, a float where an int was;
* ``ages`` -- how old a key may be: ``0`` (fresh), then one second either side of every
  ``max_age_s`` bound of a predicate that reads the key, then far too old.

A :class:`Fixture` gives every key one :data:`Slot`: ``("missing",)`` or ``("value", v, age)``.
Three ways to produce fixtures share those pools:

* :meth:`FixtureSpace.sweep` -- deterministic: every pool value, missing and every stale age of
  each key in turn, with the other keys at a random typical value;
* :meth:`FixtureSpace.draw` -- one random fixture from a seeded :class:`random.Random` (the bulk:
  fast and reproducible);
* :meth:`FixtureSpace.strategy` / :meth:`FixtureSpace.focused` -- hypothesis strategies over the
  same pools, ordered so that shrinking moves towards "present, fresh, first typical value";
  ``focused(fixture)`` can reach a given fixture quickly and shrink away from it, which is how
  :mod:`maitred.audit.parity` turns a random counterexample into a minimal one.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from maitred.audit.bounds import DAY, KeyHint, hints_for, looks_like_timestamp
from maitred.contract.evaluate import evaluate
from maitred.contract.predicate import Predicate, max_age_for
from maitred.state.snapshot import Snapshot

#: The clock of every parity fixture (2026-06-01T00:00:00Z): fixed, so reports reproduce.
AUDIT_NOW = 1_780_272_000
#: The account id the fixtures' snapshots carry.
AUDIT_ACCOUNT = "parity-fixture"
_FAR_TOO_OLD = 400 * 86400
_UNKNOWN_MEMBER = "zz-unknown"
_OTHER = "other"

#: One key's state in a fixture: ``("missing",)`` or ``("value", value, age_seconds)``.
Slot = tuple[Any, ...]
MISSING: Slot = ("missing",)

# chances for a random draw: missing, odd value, stale
_P_MISSING, _P_ODD, _P_STALE = 0.07, 0.1, 0.12
_P_NEAR_PASSING = 0.5


@dataclass(frozen=True)
class KeyPool:
    """The values, odd values and ages one state key takes in fixtures (see the module doc)."""

    key: str
    typical: tuple[Any, ...]
    odd: tuple[Any, ...]
    ages: tuple[int, ...]
    passing: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Fixture:
    """One generated state: a slot per key (sorted by key)."""

    slots: tuple[tuple[str, Slot], ...]

    def snapshot(self, now: float = AUDIT_NOW) -> Snapshot:
        """The snapshot this fixture stands for, taken at ``now``."""
        values: dict[str, Any] = {}
        key_as_of: dict[str, float] = {}
        missing: list[str] = []
        for key, slot in self.slots:
            if slot[0] == "missing":
                missing.append(key)
                continue
            values[key] = slot[1]
            if slot[2]:
                key_as_of[key] = float(now - slot[2])
        return Snapshot(AUDIT_ACCOUNT, values, float(now), key_as_of, frozenset(missing))

    def to_json(self) -> dict[str, Any]:
        """``{"values": {...}, "missing": [...], "age_s": {...}}`` (ages only where not 0)."""
        present = {k: s for k, s in self.slots if s[0] != "missing"}
        return {
            "values": {k: s[1] for k, s in present.items()},
            "missing": [k for k, s in self.slots if s[0] == "missing"],
            "age_s": {k: s[2] for k, s in present.items() if s[2]},
        }

    def describe(self, now: int | None = AUDIT_NOW) -> str:
        """One line for people: ``a.b=1, c.d=missing, e.f='x' (aged 3601s)``; with ``now``,
        a timestamp-like value also shows how far it is from now (``now-14d``)."""
        parts = []
        for key, slot in self.slots:
            if slot[0] == "missing":
                parts.append(f"{key}=missing")
                continue
            value = repr(slot[1])
            if now is not None and looks_like_timestamp(key):
                value += _relative(slot[1], now)
            aged = f" (aged {slot[2]}s)" if slot[2] else ""
            parts.append(f"{key}={value}{aged}")
        return ", ".join(parts) or "(no state keys)"


def _relative(value: Any, now: int) -> str:
    """`` [now-14d]`` / `` [now-14d+1s]`` for an int timestamp near ``now``, else ``""``."""
    if isinstance(value, bool) or not isinstance(value, int) or abs(now - value) > 3650 * DAY:
        return ""
    delta = value - now
    days, rest = divmod(abs(delta), DAY)
    if rest > DAY // 2:
        days, rest = days + 1, rest - DAY
    sign = "-" if delta < 0 else "+"
    text = f"now{sign}{days}d" if days else "now"
    if rest:
        text += f"{'-' if (rest < 0) != (delta < 0) else '+'}{abs(rest)}s"
    return f" [{text}]"


def _ages(key: str, predicates: Iterable[Predicate]) -> tuple[int, ...]:
    ages: list[int] = [0]
    for predicate in predicates:
        bound = max_age_for(predicate.max_age_s, key) if key in predicate.reads else None
        if bound is not None:
            for age in (int(bound) - 1, int(bound), int(bound) + 1):
                if age > 0 and age not in ages:
                    ages.append(age)
    ages.append(_FAR_TOO_OLD)
    return tuple(ages)


def _passing(
    key: str, typical: tuple[Any, ...], predicates: tuple[Predicate, ...], now: int
) -> tuple[Any, ...]:
    """The typical values of ``key`` on which no predicate reading only ``key`` holds.

    Random draws lean on these so that many fixtures sit one key away from a state the gate
    offers -- where gate and procedure are most likely to disagree."""
    own = [p for p in predicates if set(p.reads) == {key}]
    out = []
    for value in typical:
        snap = Snapshot(AUDIT_ACCOUNT, {key: value}, float(now), hash="-")
        if not any(evaluate(p, snap, now).holds for p in own):
            out.append(value)
    return tuple(out)


def _odd(hint: KeyHint, typical: tuple[Any, ...]) -> tuple[Any, ...]:
    """Values a sloppy source might send for this key, none of them in ``typical``."""
    candidates: list[Any] = [None]
    if any(isinstance(v, str) for v in typical):
        candidates += [_UNKNOWN_MEMBER, "", 0]
    numbers = [v for v in typical if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if numbers:
        first = numbers[0]
        candidates += [float(first) if isinstance(first, int) else int(first), str(first), -1]
    if any(isinstance(v, bool) for v in typical):
        candidates += ["true", 2]
    seen = {(type(v), v) for v in typical}
    out: list[Any] = []
    for value in candidates:
        if (type(value), value) not in seen:
            seen.add((type(value), value))
            out.append(value)
    return tuple(out)


@dataclass(frozen=True)
class FixtureSpace:
    """Every key a skill's exit predicates read, with its pools.

    Attributes:
        skill: whose predicates these are.
        pools: one pool per key, sorted by key.
        now: the clock the fixtures are built for (timestamps sit around it).
    """

    skill: str
    pools: tuple[KeyPool, ...]
    now: int = AUDIT_NOW

    @classmethod
    def for_predicates(
        cls, skill: str, predicates: Iterable[Predicate], now: int = AUDIT_NOW
    ) -> FixtureSpace:
        """Build the space from the predicates' boundary hints."""
        preds = tuple(predicates)
        hints = hints_for(preds, now)
        pools = []
        for key in sorted(hints):
            typical = tuple(v for v in hints[key].values if v is not None) or (0,)
            if any(isinstance(v, str) for v in typical) and _OTHER not in typical:
                typical += (_OTHER,)  # a member the predicates do not name
            odd = _odd(hints[key], typical)
            passing = _passing(key, typical, preds, now)
            pools.append(KeyPool(key, typical, odd, _ages(key, preds), passing))
        return cls(skill, tuple(pools), now)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(p.key for p in self.pools)

    # -- seeded random draws ----------------------------------------------------------------

    def draw(self, rng: random.Random) -> Fixture:
        """One random fixture (most keys present, fresh and typical).

        Half the draws are *near-passing*: every key at a value on which its own predicates do
        not hold, except one key drawn from its whole pool."""
        if self.pools and rng.random() < _P_NEAR_PASSING:
            moved = rng.randrange(len(self.pools))
            slots = []
            for i, pool in enumerate(self.pools):
                if i == moved or not pool.passing:
                    slots.append((pool.key, _draw_slot(pool, rng)))
                else:
                    slots.append((pool.key, ("value", _pick(pool.passing, rng), 0)))
            return Fixture(tuple(slots))
        return Fixture(tuple((p.key, _draw_slot(p, rng)) for p in self.pools))

    def sweep(self, rng: random.Random) -> Iterator[Fixture]:
        """Each key through every value, odd value, missing and stale age; others random.

        Also one fixture with nothing known and, per age, one where every key is that old."""
        yield Fixture(tuple((p.key, MISSING) for p in self.pools))
        for i, pool in enumerate(self.pools):
            slots: list[Slot] = [("value", v, 0) for v in (*pool.typical, *pool.odd)]
            slots += [MISSING]
            slots += [("value", pool.typical[0], age) for age in pool.ages[1:]]
            for slot in slots:
                base = [(p.key, _draw_slot(p, rng, plain=True)) for p in self.pools]
                base[i] = (pool.key, slot)
                yield Fixture(tuple(base))
        ages = sorted({a for p in self.pools for a in p.ages[1:]})
        for age in ages:
            yield Fixture(tuple((p.key, ("value", _pick(p.typical, rng), age)) for p in self.pools))

    # -- hypothesis strategies --------------------------------------------------------------

    def strategy(self) -> st.SearchStrategy[Fixture]:
        """Hypothesis fixtures over the pools; shrinks towards present, fresh, first value."""
        per_key = [st.tuples(st.just(p.key), _slot_strategy(p)) for p in self.pools]
        return st.tuples(*per_key).map(Fixture)

    def focused(self, target: Fixture) -> st.SearchStrategy[Fixture]:
        """Fixtures that reach ``target`` often (each key: its target slot, or any slot).

        Shrinking prefers the generic slots (they come first), so a counterexample found at
        ``target`` shrinks to the simplest state that still fails the same way."""
        wanted: Mapping[str, Slot] = dict(target.slots)
        per_key = []
        for pool in self.pools:
            goal = wanted.get(pool.key, MISSING)
            per_key.append(
                st.tuples(st.just(pool.key), st.one_of(_slot_strategy(pool), st.just(goal)))
            )
        return st.tuples(*per_key).map(Fixture)


def simplify(
    space: FixtureSpace, fixture: Fixture, keeps_failing: Callable[[Fixture], bool]
) -> Fixture:
    """Greedy polish after hypothesis has shrunk: move each key to the simplest slot (in
    :func:`slots_of` order) that keeps ``keeps_failing`` true, until nothing moves.

    Deterministic and cheap (at most a few passes over every slot of every key); it catches
    the single-key simplifications a shrinker can leave behind when two keys moved together."""
    current = dict(fixture.slots)
    pools = {p.key: p for p in space.pools}
    changed = True
    while changed:
        changed = False
        for key in sorted(current):
            options = slots_of(pools[key]) if key in pools else ()
            typed = [_typed_slot(o) for o in options]
            now_at = _typed_slot(current[key])
            rank = typed.index(now_at) if now_at in typed else len(options)
            for slot in options[:rank]:
                trial = Fixture(tuple(sorted({**current, key: slot}.items())))
                if keeps_failing(trial):
                    current[key] = slot
                    changed = True
                    break
    return Fixture(tuple(sorted(current.items())))


def _typed_slot(slot: Slot) -> tuple[tuple[str, Any], ...]:
    """A slot compared by type too: ``True == 1`` in Python, but not for a CEL flag test."""
    return tuple((type(x).__name__, x) for x in slot)


def _pick(values: tuple[Any, ...], rng: random.Random) -> Any:
    return values[rng.randrange(len(values))]


def _draw_slot(pool: KeyPool, rng: random.Random, *, plain: bool = False) -> Slot:
    if plain:
        return ("value", _pick(pool.typical, rng), 0)
    roll = rng.random()
    if roll < _P_MISSING:
        return MISSING
    odd = roll < _P_MISSING + _P_ODD and pool.odd
    value = _pick(pool.odd, rng) if odd else _pick(pool.typical, rng)
    stale = rng.random() < _P_STALE and len(pool.ages) > 1
    return ("value", value, _pick(pool.ages[1:], rng) if stale else 0)


def _slot_strategy(pool: KeyPool) -> st.SearchStrategy[Slot]:
    """Every slot of a key in one list, in shrink order: fresh typical < aged typical < odd <
    missing -- so a minimal counterexample names a present, fresh value whenever one fails the
    same way (one index per key also shrinks far better than nested choices)."""
    return st.sampled_from(slots_of(pool))


def slots_of(pool: KeyPool) -> tuple[Slot, ...]:
    """All the slots a key can take in fixtures, simplest first."""
    fresh = [("value", v, 0) for v in pool.typical]
    aged = [("value", v, age) for age in pool.ages[1:] for v in pool.typical]
    odd = [("value", v, 0) for v in pool.odd]
    return (*fresh, *aged, *odd, MISSING)
