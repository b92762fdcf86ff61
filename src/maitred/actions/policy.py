"""Policy predicates: named, versioned rules over a tool call, attached to tool names.

A policy predicate is a contract predicate (:class:`~maitred.contract.PythonPredicate` or
:class:`~maitred.contract.CelPredicate`) whose view has three roots:

* ``args.*`` -- the call's arguments (``args.reservation_id``);
* ``state.*`` -- the authoritative state document (``state.flights``);
* ``session.*`` -- what this session did: ``session.context.<key>`` (values the application set,
  such as a stated cancellation reason), ``session.read.<read tool>`` (record id -> read order)
  and ``session.last_read.<read tool>`` (the id last read by that tool).

A read may index by another read with brackets: ``state.reservations[args.reservation_id]`` is
the reservation the call names. Brackets are resolved by the gate, so only Python predicates may
use them; CEL predicates index in the expression instead (``state.reservations[args.id]``).

A predicate **holds when the rule is violated** ("holds" = the call must not run), exactly as an
exit predicate holds when a skill must stop. Evaluation goes through
:func:`maitred.contract.evaluate`, the single evaluator: a missing or stale read is decided by
the predicate's policy, and an error always holds. Reads listed in ``optional`` are never
missing: an absent value is passed as ``None`` and the rule decides (``"the reservation exists"``
is a rule, not a fail-closed default).

A Python rule returns a :class:`Violation` (why, and which argument fields are at fault) or
``None``. The verdict is ``rule(view) is not None``; when it holds, the gate calls the rule once
more for its explanation (rules are pure, so the second call sees what the first saw).

Every predicate on a *mutating* tool must fail closed (``on_missing`` and ``on_stale`` are
``"block"``): :meth:`Policy.build` refuses anything else, so a silent wrong state cannot come
from a missing key.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from maitred._canonical import content_hash, text_hash
from maitred.contract.predicate import CelPredicate, Predicate, PythonPredicate, StateView
from maitred.errors import ContractError

ROOTS = ("args", "state", "session")


@dataclass(frozen=True)
class Violation:
    """Why a rule holds for a call.

    Attributes:
        message: one sentence the model can act on ("nonfree_baggages must be 1, not 2").
        fields: the offending argument paths.
    """

    message: str
    fields: tuple[str, ...] = ()


Rule = Callable[[StateView], Violation | None]


@dataclass(frozen=True)
class PolicyPredicate:
    """A contract predicate, plus what the action gate needs to act on it.

    Attributes:
        predicate: the contract predicate that decides (holds = violation).
        code: the stable reason code a rejection carries (``AIRLINE_PASSENGER_COUNT_CHANGED``).
        tools: the tool names it applies to.
        optional: reads that may be absent (the predicate then sees ``None``).
        explain: for Python rules, the rule itself (called again for the message on reject).
        fields: offending argument paths when no explanation gives them.
    """

    predicate: Predicate
    code: str
    tools: tuple[str, ...]
    optional: frozenset[str] = frozenset()
    explain: Rule | None = field(default=None, compare=False)
    fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.code or not self.code.replace("_", "").isalnum() or not self.code.isupper():
            raise ContractError(
                f"policy predicate {self.name!r}: code {self.code!r} must be UPPER_SNAKE_CASE "
                "(it is a stable identifier that clients match on)"
            )
        if not self.tools:
            raise ContractError(f"policy predicate {self.name!r} names no tools in `tools`")
        for key in self.reads:
            root = key.split(".", 1)[0].split("[", 1)[0]
            if root not in ROOTS:
                raise ContractError(
                    f"policy predicate {self.name!r}: read {key!r} must start with one of "
                    f"{list(ROOTS)}"
                )
        stray = sorted(self.optional - set(self.reads))
        if stray:
            raise ContractError(
                f"policy predicate {self.name!r}: optional read {stray[0]!r} is not in `reads`"
            )

    @property
    def name(self) -> str:
        return self.predicate.name

    @property
    def reads(self) -> tuple[str, ...]:
        return self.predicate.reads

    @property
    def version(self) -> str:
        return self.predicate.version

    @property
    def message(self) -> str:
        return self.predicate.message

    def explanation(self, view: StateView) -> Violation:
        """Why the predicate holds, for a rejection (falls back to the static message)."""
        fallback = Violation(self.message or f"{self.name} holds", self.fields)
        if self.explain is None:
            return fallback
        try:
            found = self.explain(view)
        except Exception:  # the verdict already stands; the explanation is best effort
            return fallback
        return found or fallback


def policy_rule(
    *,
    code: str,
    tools: Iterable[str],
    reads: Iterable[str],
    optional: Iterable[str] = (),
    name: str | None = None,
    message: str = "",
    fields: Sequence[str] = (),
    max_age_s: float | None = None,
) -> Callable[[Rule], PolicyPredicate]:
    """Declare a Python function ``rule(view) -> Violation | None`` as a policy predicate.

    Example::

        @policy_rule(code="SHOP_REFUND_TOO_LARGE", tools=["refund"],
                     reads=["args.amount", "state.orders[args.order_id]"])
        def refund_too_large(view):
            order = view["state.orders[args.order_id]"]
            if view["args.amount"] > order["paid"]:
                return Violation(f"amount exceeds the {order['paid']} paid", ("amount",))
            return None
    """

    keys = tuple(reads)

    def wrap(rule: Rule) -> PolicyPredicate:
        def holds(view: StateView) -> bool:
            return rule(view) is not None

        predicate = PythonPredicate(
            fn=holds,
            name=name or rule.__name__,
            reads=keys,
            max_age_s=max_age_s,
            message=message or _first_line(rule.__doc__),
            version=_source_version(rule, keys, code),
        )
        return PolicyPredicate(
            predicate, code, tuple(tools), frozenset(optional), rule, tuple(fields)
        )

    return wrap


def cel_rule(
    expression: str,
    *,
    name: str,
    code: str,
    tools: Iterable[str],
    reads: Iterable[str],
    message: str,
    fields: Sequence[str] = (),
    max_age_s: float | None = None,
    source: str = "",
) -> PolicyPredicate:
    """A policy predicate written in CEL (holds = violation), e.g.
    ``cel_rule("size(args.passengers) > 5", name="too_many", code="MAX_PASSENGERS", ...)``."""
    keys = tuple(reads)
    bracketed = [k for k in keys if "[" in k]
    if bracketed:
        raise ContractError(
            f"policy predicate {name!r}: CEL reads cannot index ({bracketed[0]!r}); read the "
            "whole map and index in the expression, e.g. state.reservations[args.reservation_id]"
        )
    predicate = CelPredicate(
        expression, name, keys, max_age_s=max_age_s, message=message, source=source
    )
    return PolicyPredicate(predicate, code, tuple(tools), fields=tuple(fields))


@dataclass(frozen=True)
class ToolSpec:
    """A tool the policy knows: whether it mutates and which arguments it requires.

    ``exit_predicates`` are the tool's (or its skill's) executability predicates over plain
    state keys; the gate re-evaluates them at call time, so a hidden tool cannot be called.
    """

    name: str
    mutates: bool
    required: tuple[str, ...] = ()
    exit_predicates: tuple[Predicate, ...] = ()


@dataclass(frozen=True)
class Tracking:
    """How a session learns what was read: read tool -> id argument; creating tool ->
    (read tool it counts as, result key holding the new record's id)."""

    reads: Mapping[str, str] = field(default_factory=dict)
    creates: Mapping[str, tuple[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolPolicy:
    """One tool and the policy predicates attached to it, in evaluation order."""

    spec: ToolSpec
    predicates: tuple[PolicyPredicate, ...] = ()

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def mutates(self) -> bool:
        return self.spec.mutates


@dataclass(frozen=True)
class Policy:
    """A named set of tools and their policy predicates (a policy pack, once built).

    Attributes:
        name: the pack's name (``tau2-airline``).
        tools: tool name -> :class:`ToolPolicy`.
        tracking: what sessions record (see :class:`Tracking`).
        settings: the pack's settings, as given (``now``, ``insurance_needs_reason`` ...).
        version: content hash of every predicate's name, code and version.
    """

    name: str
    tools: Mapping[str, ToolPolicy]
    tracking: Tracking = field(default_factory=Tracking)
    settings: Mapping[str, Any] = field(default_factory=dict)
    version: str = ""

    @classmethod
    def build(
        cls,
        name: str,
        specs: Iterable[ToolSpec],
        predicates: Iterable[PolicyPredicate],
        tracking: Tracking | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> Policy:
        """Attach each predicate to the tools it names; refuse fail-open rules on writes."""
        by_tool = {spec.name: spec for spec in specs}
        attached: dict[str, list[PolicyPredicate]] = {t: [] for t in by_tool}
        for pred in predicates:
            for tool in pred.tools:
                if tool not in by_tool:
                    raise ContractError(
                        f"policy {name!r}: predicate {pred.name!r} names tool {tool!r}, which "
                        f"the policy does not declare; choose one of {sorted(by_tool)}"
                    )
                if by_tool[tool].mutates and "offer" in (
                    pred.predicate.on_missing,
                    pred.predicate.on_stale,
                ):
                    raise ContractError(
                        f"policy {name!r}: predicate {pred.name!r} fails open on the mutating "
                        f"tool {tool!r}; mutating calls fail closed: set on_missing and "
                        "on_stale to 'block'"
                    )
                attached[tool].append(pred)
        tools = {t: ToolPolicy(spec, tuple(attached[t])) for t, spec in by_tool.items()}
        signature: list[Any] = [
            [t, p.name, p.code, p.version] for t in sorted(tools) for p in tools[t].predicates
        ]
        signature.append(dict(settings or {}))
        return cls(
            name, tools, tracking or Tracking(), dict(settings or {}), content_hash(signature)
        )

    def with_exit_predicates(self, tool: str, predicates: Iterable[Predicate]) -> Policy:
        """A copy in which ``tool`` also re-checks these executability predicates per call."""
        if tool not in self.tools:
            raise ContractError(
                f"policy {self.name!r} has no tool {tool!r}; choose one of {sorted(self.tools)}"
            )
        current = self.tools[tool]
        spec = replace(current.spec, exit_predicates=tuple(predicates))
        return replace(self, tools={**self.tools, tool: replace(current, spec=spec)})


def _first_line(doc: str | None) -> str:
    lines = (doc or "").strip().splitlines()
    return lines[0].strip() if lines else ""


def _source_version(rule: Rule, reads: tuple[str, ...], code: str) -> str:
    """Hash of the rule's source, its reads and its code (a generic rule made by a factory
    has one source text but different reads per use)."""
    try:
        src = textwrap.dedent(inspect.getsource(rule))
    except (OSError, TypeError):
        src = f"{rule.__module__}.{rule.__qualname__}"
    return text_hash("\n".join([src, code, *reads]))


__all__ = [
    "Policy",
    "PolicyPredicate",
    "Rule",
    "ToolPolicy",
    "ToolSpec",
    "Tracking",
    "Violation",
    "cel_rule",
    "policy_rule",
]
