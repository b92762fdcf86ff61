"""Load-time checks of a catalog against a typed state store: keys exist, predicates type-check.

Two promises are kept before the first turn, for a provider that knows its keys' types
(:class:`~maitred.state.schema.SchemaAware`, e.g. the SQL provider):

1. **Every key a predicate reads has a source.** A column the table lacks would make the key
   missing for every account, which turns ``on_missing: offer`` predicates into offers; it is
   a load error naming the key, the table and the skills/tools that read it.
2. **CEL predicates are type-checked** against the keys' declared types with Google's CEL
   checker (the ``cel-expr-python`` package: variables declared by their dotted key names,
   ``now`` as ``int``). ``repo.frozen == true`` over an INTEGER column, or ``plan == 3`` over
   TEXT, would never fire (CEL's equality across types is false); each is a load error with the
   sidecar file and line.

The checker is Google's, but predicates are *evaluated* by the ``cel`` binding
(:func:`maitred.contract.predicate.cel_binding`), which differs in three ways the check allows
for, so that an expression the evaluator runs correctly is never refused:

* it compares ``int``, ``uint`` and ``double`` with each other (``balance > 100`` over a double);
* any value may be compared with ``null`` (a SQL NULL is ``null``, whatever the column type);
* it has string functions the checker's standard library lacks (``lowerAscii``): an unknown
  *function* is left to the evaluator, an unknown *state key* is an error.

A call policy's ``args.x`` must be an argument the tool's JSON schema defines (a property of its
``parameters``), whatever the provider: :func:`require_policy_arguments` (a rule over an argument
that cannot exist is missing on every call, so its ``on_missing`` decides instead of the rule).

Python predicates are opaque to the type check (their keys are still required to exist), and keys of
type ``json`` / ``any`` are ``dyn``: operations on them are checked at evaluation, where an
error holds -- including by this checker, against the kinds of the values read
(:meth:`CelPredicate.holds <maitred.contract.predicate.CelPredicate.holds>`), since CEL's
equality across types is a quiet ``false``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from maitred.contract.celcheck import check_expression
from maitred.contract.predicate import CelPredicate, Predicate
from maitred.errors import ConfigError
from maitred.skills.model import Catalog
from maitred.state.schema import SchemaAware, StateType
from maitred.state.snapshot import StateProvider


def require_typed_state(catalog: Catalog, provider: StateProvider) -> None:
    """Refuse a catalog whose predicates read keys the store lacks or misuse their types.

    Raises:
        ConfigError: every problem (see :func:`typed_state_problems`), on one line -- unless
            a CEL type error is among them, whose expression and caret need lines of their
            own; then each problem starts a line.
    """
    problems = typed_state_problems(catalog, provider)
    if problems:
        name = getattr(provider, "name", type(provider).__name__)
        head = f"the catalog does not fit state provider {name!r}:"
        if any("\n" in problem for problem in problems):  # a CEL diagram: one per block
            raise ConfigError(head + "\n" + "\n".join(problems))
        raise ConfigError(f"{head} " + "; ".join(problems))


def typed_state_problems(catalog: Catalog, provider: StateProvider) -> list[str]:
    """Every load-time problem of ``catalog`` against ``provider`` (empty when it fits, or
    when the provider cannot tell its keys' types)."""
    if not isinstance(provider, SchemaAware):
        return []
    readers: dict[str, set[str]] = {}
    for skill in catalog:
        for key in skill.contract.reads:
            readers.setdefault(key, set()).add(skill.name)
        for policy in skill.contract.policies:
            for key in _state_keys(policy.reads):
                readers.setdefault(key, set()).add(f"{skill.name} (policy {policy.name!r})")
    schema = provider.schema(readers)
    problems = [
        f"state key {key!r} has no source: {schema.absent[key]}; it is read by "
        f"{', '.join(sorted(readers[key]))} (add the column, map the root to a table that has "
        "it, or fix the predicates' reads)"
        for key in sorted(schema.absent)
    ]
    for skill in catalog:
        for predicate in skill.contract.exit_predicates:
            problems.extend(predicate_type_problems(predicate, schema.types, skill.name))
        for policy in skill.contract.policies:  # `state.<key>` is the provider's `<key>`
            keys = {k: k[len(_STATE) :] for k in _state_reads(policy.reads)}
            typed = {k: schema.types[key] for k, key in keys.items() if key in schema.types}
            owner = f"{skill.name} (call policy)"
            problems.extend(predicate_type_problems(policy.predicate, typed, owner))
    return problems


_STATE: Final = "state."


def _state_reads(reads: Iterable[str]) -> set[str]:
    """A policy's ``state.<key>`` reads that name a provider key (no brackets)."""
    return {k for k in reads if k.startswith(_STATE) and "[" not in k}


def _state_keys(reads: Iterable[str]) -> set[str]:
    return {k[len(_STATE) :] for k in _state_reads(reads)}


_ARG: Final = re.compile(r"(?<![\w.])args\.([A-Za-z_][A-Za-z0-9_]*)")


def require_policy_arguments(catalog: Catalog) -> None:
    """Refuse call policies that read an argument their tool's schema does not define.

    Raises:
        ConfigError: one line naming each rule, tool, argument and the arguments defined.
    """
    problems = policy_argument_problems(catalog)
    if problems:
        raise ConfigError("call policies read undefined arguments: " + "; ".join(problems))


def policy_argument_problems(catalog: Catalog) -> list[str]:
    """``args.x`` reads (in ``reads`` or a CEL expression) that the tool does not define."""
    problems: list[str] = []
    for skill in catalog:
        if not skill.contract.policies:
            continue
        schema = skill.parameters or {}
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        defined = set(properties) if isinstance(properties, Mapping) else set()
        for policy in skill.contract.policies:
            texts = [*policy.reads, getattr(policy.predicate, "expression", "")]
            used = sorted({name for text in texts for name in _ARG.findall(text)} - defined)
            origin = skill.contract.source or skill.path
            for name in used:
                problems.append(
                    f"policy {policy.name!r} of {skill.name} ({origin}) reads args.{name}, "
                    f"which the tool's schema does not define (it defines {sorted(defined)}): "
                    "fix the rule or the tool's inputSchema"
                )
    return problems


def predicate_type_problems(
    predicate: Predicate, types: Mapping[str, StateType], owner: str
) -> list[str]:
    """Type errors of one CEL predicate given its reads' ``types`` (keys without a type are
    ``dyn``; nothing to say for Python predicates)."""
    if not isinstance(predicate, CelPredicate):
        return []
    declared = {key: types[key] for key in predicate.reads if key in types}
    if all(kind == "any" for kind in declared.values()):
        return []  # nothing typed: nothing to check
    where = predicate.origin or predicate.source or "(no file)"
    head = f"{where}: predicate {predicate.name!r} of {owner}"
    typing = ", ".join(f"{k}: {v}" for k, v in sorted(declared.items()))
    errors, result = check_expression(predicate.expression, predicate.reads, declared)
    if errors:
        return [
            f"{head}: CEL type error at {error.where}: {error.message} (declared types: "
            f"{typing})\n{error.pointed()}"
            for error in errors
        ]
    if result not in ("bool", "dyn") and "has(" not in predicate.expression:
        return [f"{head}: the expression gives {result}, not bool (declared types: {typing})"]
    return []
