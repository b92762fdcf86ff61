"""Call policies: named, versioned rules over a tool call (stage 5's half of a contract).

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

A call policy belongs to a tool's :class:`~maitred.contract.Contract` (``Contract.policies``),
usually declared in the tool file's sidecar (:mod:`maitred.contract.tool_sidecar`). ``tools``
names the tools a rule applies to when it is declared once for several (a sidecar's top-level
``policies`` list); a rule declared under one tool applies to that tool.

**Approval rules.** A policy predicate marked ``approval`` holds when a *person* must say yes
before the call runs, not when the call is wrong: its code is always :data:`APPROVAL_REQUIRED`,
and its ``message`` is what that person is shown. The action gate refuses a call whose approval
rule holds with that code (after every other rule passed), and lets it run when the call comes
back with the person's yes (:class:`~maitred.actions.model.Approval`). A sidecar writes one as
``approve: true`` or ``approve: <CEL condition>`` (:mod:`maitred.contract.tool_sidecar`). An
approval rule that cannot be evaluated fails closed like any other rule.

Every predicate on a *mutating* tool must fail closed (``on_missing`` and ``on_stale`` are
``"block"``): :class:`~maitred.actions.Rulebook` refuses anything else, so a silent wrong state
cannot come from a missing key.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from maitred._canonical import text_hash
from maitred.contract.predicate import CelPredicate, Predicate, PythonPredicate, StateView
from maitred.errors import ContractError

ROOTS = ("args", "state", "session")
#: the code of every approval rule (and of the gate's decision that asks for a person's yes)
APPROVAL_REQUIRED = "APPROVAL_REQUIRED"
#: the code of the decision made when the person did not say yes
APPROVAL_DECLINED = "APPROVAL_DECLINED"


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
        tools: the tool names it applies to when declared for several (may be empty when the
            rule sits under one tool in a contract).
        optional: reads that may be absent (the predicate then sees ``None``).
        explain: for Python rules, the rule itself (called again for the message on reject).
        fields: offending argument paths when no explanation gives them.
        approval: the rule asks a person rather than refusing: when it holds, the call needs
            a yes (code :data:`APPROVAL_REQUIRED`; ``message`` is shown to the person).
    """

    predicate: Predicate
    code: str
    tools: tuple[str, ...]
    optional: frozenset[str] = frozenset()
    explain: Rule | None = field(default=None, compare=False)
    fields: tuple[str, ...] = ()
    approval: bool = False

    def __post_init__(self) -> None:
        if self.approval and self.code != APPROVAL_REQUIRED:
            raise ContractError(
                f"policy predicate {self.name!r}: an approval rule's code is {APPROVAL_REQUIRED}, "
                f"not {self.code!r}"
            )
        if not self.approval and self.code in (APPROVAL_REQUIRED, APPROVAL_DECLINED):
            raise ContractError(
                f"policy predicate {self.name!r}: code {self.code} is kept for approval by a "
                "person (write the rule with `approve:`), or choose another code"
            )
        if not self.code or not self.code.replace("_", "").isalnum() or not self.code.isupper():
            raise ContractError(
                f"policy predicate {self.name!r}: code {self.code!r} must be UPPER_SNAKE_CASE "
                "(it is a stable identifier that clients match on)"
            )
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
    reads: Iterable[str],
    tools: Iterable[str] = (),
    optional: Iterable[str] = (),
    name: str | None = None,
    message: str = "",
    fields: Sequence[str] = (),
    max_age_s: float | None = None,
    approval: bool = False,
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

    With ``approval=True`` the rule asks a person instead (see the module docstring); give
    ``code=APPROVAL_REQUIRED``.
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
            predicate, code, tuple(tools), frozenset(optional), rule, tuple(fields), approval
        )

    return wrap


def cel_rule(
    expression: str,
    *,
    name: str,
    code: str,
    reads: Iterable[str],
    message: str,
    tools: Iterable[str] = (),
    fields: Sequence[str] = (),
    max_age_s: float | None = None,
    source: str = "",
    optional: Iterable[str] = (),
    origin: str = "",
    approval: bool = False,
) -> PolicyPredicate:
    """A policy predicate written in CEL (holds = violation), e.g.
    ``cel_rule("size(args.passengers) > 5", name="too_many", code="MAX_PASSENGERS", ...)``;
    ``origin`` is where it was written (``path:line``), for load-time type errors. With
    ``approval=True`` it holds when a person must approve the call instead (code
    :data:`APPROVAL_REQUIRED`)."""
    keys = tuple(reads)
    bracketed = [k for k in keys if "[" in k]
    if bracketed:
        raise ContractError(
            f"policy predicate {name!r}: CEL reads cannot index ({bracketed[0]!r}); read the "
            "whole map and index in the expression, e.g. state.reservations[args.reservation_id]"
        )
    predicate = CelPredicate(
        expression, name, keys, max_age_s=max_age_s, message=message, source=source, origin=origin
    )
    return PolicyPredicate(
        predicate, code, tuple(tools), frozenset(optional), fields=tuple(fields), approval=approval
    )


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
    "APPROVAL_DECLINED",
    "APPROVAL_REQUIRED",
    "ROOTS",
    "PolicyPredicate",
    "Rule",
    "Violation",
    "cel_rule",
    "policy_rule",
]
