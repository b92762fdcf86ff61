"""Read the contracts of a tools file from one YAML beside it, keyed by tool name.

A tools file ``tools.json`` (MCP ``tools/list``, OpenAI or Anthropic definitions) gets its
contracts from ``tools.maitred.yaml`` in the same folder -- the same contract model a skill's
``maitred.yaml`` fills, so a tool can be hidden before exposure and checked at call time::

    settings:                         # optional: defaults for rule factories' parameters
      refund_limit: 500
    policies:                         # optional: rules declared once for several tools
      - python: rules.py:must_read_order          # a PolicyPredicate naming its tools ...
      - name: no_weekend_refunds                  # ... or CEL, with `tools`
        expr: args.amount > 100 && state.calendar.weekend
        code: SHOP_WEEKEND_REFUND
        reads: [args.amount, state.calendar.weekend]
        tools: [refund]
        message: Large refunds wait for Monday.
    tools:
      refund:
        mutates: true
        cost: 1.5
        family: orders
        scopes: [orders:write]                    # OAuth scopes a caller must hold (all of them)
        records: {reads: order_id}                # or {creates: {read_tool: get_order, key: id}}
        exit_predicates:                          # visibility, as for skills (account state)
          - name: refunds_disabled
            expr: account.refunds_disabled
            reads: [account.refunds_disabled]
        policies:                                 # call policies: args.* / state.* / session.*
          - name: refund_too_large
            expr: args.amount > state.orders[args.order_id].paid
            code: SHOP_REFUND_TOO_LARGE
            reads: [args.amount, args.order_id, state.orders]
            fields: [amount]
            message: The refund is larger than what was paid.
          - python: rules.py:refund_window        # file (relative to the YAML) or module path
          - name: large_refund_needs_a_yes        # approval by a person: `approve: true`, or
            approve: args.amount > 100            # a CEL condition over args/state/session
            reads: [args.amount]
            message: Refunds over 100 need a person's yes.   # what the person is shown
    resources:                        # optional (the MCP gateway): by URI or URI template
      docs://pricing:                             # hidden, and its reads refused, while an
        exit_predicates:                          # exit predicate holds, as for a tool
          - name: free_plan
            expr: account.plan == "free"
            reads: [account.plan]
      reports://{year}: {}                        # a template governs every URI under it;
    prompts:                                      # {} is a contract with no rules: shown
      negotiate:                                  # (what `ungated: hide` asks for)
        exit_predicates:
          - name: free_plan
            expr: account.plan == "free"
            reads: [account.plan]

A ``python:`` entry names a :class:`~maitred.contract.policy.PolicyPredicate`, a list of them,
or a *factory* -- a function whose parameters are filled from ``settings`` by name (the values
given at load time override the file's defaults) -- returning one or a list. A predicate a
factory made carries the settings it was given in its version. An ``approve`` entry is an
approval rule (:mod:`maitred.contract.policy`): it takes no ``code`` (its code is always
``APPROVAL_REQUIRED``); ``approve: true`` asks for every call (and reads the call's
arguments, ``args``); a CEL condition asks only when it holds and declares its ``reads``
like any CEL rule (and is type-checked like them). A tool of the file without an entry gets
an empty contract (it does not mutate and has no rules); an entry naming no tool of
the file is an error. ``scopes`` lists the OAuth scopes a caller must hold (all of them) for
the tool to be offered or called: the decision kernel's scope rule
(:func:`~maitred.contract.kernel.missing_scopes`), asked only of a caller that says which
scopes it holds. Every error names the YAML file and the entry at fault.

``resources`` and ``prompts`` are for the MCP gateway (:mod:`maitred.gateway.surfaces`),
which reads an upstream's sidecar as this file: each entry is a contract body like a tool's,
with the keys that mean something for something read rather than called
(:data:`SURFACE_KEYS`: ``exit_predicates``; a key added to tools' contracts that is not
tool-only applies here too). Given the names the upstream lists (:class:`SurfaceNames`), a
key that is neither a resource URI, a resource template nor a prompt it lists is an error;
without them (a tools file read by ``maitred skills validate``) the entries are checked for
form only.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import yaml

from maitred._canonical import content_hash
from maitred.contract.model import Contract, Records
from maitred.contract.policy import APPROVAL_REQUIRED, PolicyPredicate, cel_rule
from maitred.contract.predicate import Predicate
from maitred.contract.sidecar import (
    _entry_field,
    _key_node,
    _predicate,
    _Problems,
    _read,
    _resolve,
    _value_nodes,
    read_scopes,
)
from maitred.errors import ContractError, ProcedureError, SidecarError

_T = TypeVar("_T")

SUFFIX = ".maitred.yaml"
_TOP_KEYS = {"settings", "policies", "tools", "resources", "prompts"}
_TOOL_KEYS = {"mutates", "cost", "family", "records", "exit_predicates", "policies", "scopes"}
#: contract keys that only mean something for a call (a tool), never for a read
_TOOL_ONLY = {"mutates", "cost", "family", "records", "policies"}
#: the keys of a ``resources`` or ``prompts`` entry: every contract key but the tool-only ones
SURFACE_KEYS = frozenset(_TOOL_KEYS - _TOOL_ONLY)
_POLICY_KEYS = {
    "name", "expr", "python", "code", "reads", "optional", "tools", "fields", "message",
    "max_age_s", "approve",
}  # fmt: skip
#: what an approval rule shows the person when its sidecar entry gives no `message`
_APPROVAL_MESSAGE = "A person must approve this call before it runs."


def sidecar_for(tools_file: Path) -> Path:
    """``tools.json`` -> ``tools.maitred.yaml`` (same folder)."""
    return tools_file.with_name(tools_file.stem + SUFFIX)


@dataclass(frozen=True)
class SurfaceNames:
    """What an MCP server lists besides its tools: the names a sidecar's ``resources`` and
    ``prompts`` keys must be one of (read by the gateway at start)."""

    resources: tuple[str, ...] = ()
    templates: tuple[str, ...] = ()
    prompts: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolContracts:
    """What a tools file's sidecar declares.

    Attributes:
        contracts: tool name -> its contract.
        families: tool name -> family, for tools that declare one.
        settings: the settings the rules were built with (defaults updated by overrides).
        source: the sidecar's path (``""`` when there is none).
        resources: resource URI or URI template -> its contract (the ``resources`` key).
        prompts: prompt name -> its contract (the ``prompts`` key).
    """

    contracts: Mapping[str, Contract]
    families: Mapping[str, str]
    settings: Mapping[str, Any]
    source: str = ""
    resources: Mapping[str, Contract] = field(default_factory=dict)
    prompts: Mapping[str, Contract] = field(default_factory=dict)


def load_tool_contracts(
    tools_file: Path,
    tool_names: Sequence[str],
    settings: Mapping[str, Any] | None = None,
    *,
    surfaces: SurfaceNames | None = None,
) -> ToolContracts:
    """Read ``tools_file``'s sidecar for the tools it defines (no sidecar: no contracts).

    ``settings`` override the sidecar's own defaults of the same names (others are ignored
    here; :func:`maitred.skills.load_catalog` refuses a setting no sidecar declares).
    ``surfaces``: what the MCP server behind the sidecar lists, which its ``resources`` and
    ``prompts`` keys must name (``None``: not checked).

    Raises:
        SidecarError: the sidecar is not valid YAML, has an unknown key, names a tool the file
            does not define (or a resource or prompt the server does not list), or a rule
            cannot be built (every problem, each with its line).
    """
    path = sidecar_for(tools_file)
    if not path.is_file():
        return ToolContracts({}, {}, {})
    return _Reader(path, tool_names, settings or {}, surfaces).read()


class _Reader:
    """One sidecar being read: its folder (for file references), modules, settings, and every
    problem found so far (each with its line; raised together at the end)."""

    def __init__(
        self,
        path: Path,
        tool_names: Sequence[str],
        overrides: Mapping[str, Any],
        surfaces: SurfaceNames | None = None,
    ):
        self.path, self.where, self.folder = path, str(path), path.parent
        self.tool_names = list(tool_names)
        self.overrides = overrides
        self.surfaces = surfaces
        self.modules: dict[str, ModuleType] = {}
        self.settings: dict[str, Any] = {}
        self.problems = _Problems(self.where)

    def read(self) -> ToolContracts:
        data, root = _read(self.path, self.problems, _TOP_KEYS)
        self.problems.raise_any()
        nodes = _value_nodes(root)
        self._unknown(data, _TOP_KEYS, "", root)
        self.settings = (
            self._attempt(nodes.get("settings"), self._settings, data.get("settings") or {}) or {}
        )
        entries = data.get("tools") or {}
        if not isinstance(entries, dict):
            self.problems.add(nodes.get("tools"), "`tools` must map tool names to contracts")
            entries = {}
        listed = nodes.get("tools")
        stray = sorted(set(map(str, entries)) - set(self.tool_names))
        if stray:
            self.problems.add(
                _key_node(listed, stray[0]),
                f"tools {stray} are not defined in the tools file; it defines "
                f"{sorted(self.tool_names)}",
            )
        shared = self._policy_list(data.get("policies"), "policies", None, nodes.get("policies"))
        tool_nodes = _value_nodes(listed)
        contracts: dict[str, Contract] = {}
        families: dict[str, str] = {}
        for name in self.tool_names:
            entry = entries.get(name)
            own = _shared_for(shared, name)
            made = self._tool(name, entry or {}, own, tool_nodes.get(name, listed))
            if made is None:
                continue
            contract, family = made
            if entry is not None or own:
                contracts[name] = contract
            if family:
                families[name] = family
        for pred in shared:
            unknown = sorted(set(pred.tools) - set(self.tool_names))
            if unknown:
                self.problems.add(
                    nodes.get("policies"),
                    f"policy {pred.name!r} names tools {unknown} that the tools file does not "
                    f"define; it defines {sorted(self.tool_names)}",
                )
        resources = self._surfaces("resources", data, nodes)
        prompts = self._surfaces("prompts", data, nodes)
        self.problems.raise_any()
        return ToolContracts(
            contracts, families, dict(self.settings), self.where, resources, prompts
        )

    def _surfaces(
        self, key: str, data: Mapping[str, Any], nodes: Mapping[str, yaml.Node]
    ) -> dict[str, Contract]:
        """The contracts under ``resources`` or ``prompts`` (key -> contract body), each key
        checked against what the server lists when that is known."""
        entries = data.get(key)
        listed = nodes.get(key)
        if entries is None:
            return {}
        what = "resource URIs or URI templates" if key == "resources" else "prompt names"
        if not isinstance(entries, dict):
            self.problems.add(listed, f"`{key}` must map {what} to contracts")
            return {}
        if self.surfaces is not None:
            names = self.surfaces
            known = (*names.resources, *names.templates) if key == "resources" else names.prompts
            lists = (
                f"resources {sorted(names.resources)} and templates {sorted(names.templates)}"
                if key == "resources"
                else f"prompts {sorted(names.prompts)}"
            )
            for stray in sorted(set(map(str, entries)) - set(known)):
                self.problems.add(
                    _key_node(listed, stray) or listed,
                    f"{key}: {stray!r} is not listed by the server; it lists {lists} "
                    "(a key is one of those, exactly as listed)",
                )
        entry_nodes = _value_nodes(listed)
        out: dict[str, Contract] = {}
        for name, entry in entries.items():
            made = self._tool(
                str(name),
                entry if entry is not None else {},
                (),
                entry_nodes.get(str(name), listed),
                at=f"{key}.{name}",
                keys=SURFACE_KEYS,
            )
            if made is not None:
                out[str(name)] = made[0]
        return out

    def _attempt(self, node: yaml.Node | None, make: Callable[..., _T], *args: Any) -> _T | None:
        """``make(*args)``; a problem at ``node`` (or the field it names) when it fails."""
        try:
            return make(*args)
        except SidecarError as exc:
            self.problems.items.extend(exc.problems)
        except ContractError as exc:
            self.problems.add(_entry_field(node, str(exc)), str(exc))
        return None

    def _settings(self, defaults: Any) -> dict[str, Any]:
        if not isinstance(defaults, dict):
            raise ContractError(f"{self.where}: `settings` must be a mapping of name -> value")
        given = {k: v for k, v in self.overrides.items() if k in defaults and v is not None}
        return {**defaults, **given}

    def _unknown(
        self, data: Mapping[str, Any], known: set[str], where: str, node: yaml.Node | None
    ) -> bool:
        """Record a problem (at the first unknown key) when ``data`` has keys not in ``known``."""
        unknown = sorted(set(map(str, data)) - known)
        if unknown:
            self.problems.add(
                _key_node(node, unknown[0]) or node,
                f"{where}unknown key(s) {unknown}; known keys: {sorted(known)}",
            )
        return bool(unknown)

    def _tool(
        self,
        name: str,
        entry: Any,
        shared: Sequence[PolicyPredicate],
        node: yaml.Node | None,
        *,
        at: str = "",
        keys: Collection[str] = _TOOL_KEYS,
    ) -> tuple[Contract, str | None] | None:
        """The tool's contract and family; ``None`` when a problem was recorded.

        ``at`` names the entry in messages (``tools.<name>`` by default); ``keys`` are the
        contract keys it may have (a resource's or prompt's entry: :data:`SURFACE_KEYS`)."""
        at = at or f"tools.{name}"
        before = len(self.problems.items)
        if not isinstance(entry, dict):
            self.problems.add(node, f"`{at}` must be a mapping of contract keys")
            return None
        fields = _value_nodes(node)
        self._unknown(entry, set(keys), f"{at}: ", node)
        cost = entry.get("cost", 1.0)
        if isinstance(cost, bool) or not isinstance(cost, (int, float)) or cost <= 0:
            self.problems.add(
                fields.get("cost", node), f"{at}.cost must be a positive number, got {cost!r}"
            )
        mutates = entry.get("mutates", False)
        if not isinstance(mutates, bool):
            self.problems.add(fields.get("mutates", node), f"{at}.mutates must be true or false")
        family = entry.get("family")
        if family is not None and not isinstance(family, str):
            self.problems.add(
                fields.get("family", node), f"{at}.family must be a string, got {family!r}"
            )
        scopes = read_scopes(entry.get("scopes"))
        if isinstance(scopes, str):
            self.problems.add(fields.get("scopes", node), f"{at}.scopes {scopes}")
        predicates = self._exits(name, entry.get("exit_predicates") or [], at, fields)
        own = self._policy_list(
            entry.get("policies"), f"{at}.policies", name, fields.get("policies")
        )
        policies = (*shared, *own)
        names = [p.name for p in policies]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            self.problems.add(
                fields.get("policies", node), f"{at}: policy name(s) {dupes} attached twice"
            )
        records = self._attempt(
            fields.get("records", node), self._records, entry.get("records"), at
        )
        if len(self.problems.items) > before or records is None or isinstance(scopes, str):
            return None
        contract = self._attempt(
            node,
            Contract,
            float(cost),
            mutates,
            tuple(predicates),
            None,
            self.where,
            policies,
            records,
            scopes,
        )
        return None if contract is None else (contract, family)

    def _exits(
        self, name: str, exits: Any, at: str, fields: Mapping[str, yaml.Node]
    ) -> list[Predicate]:
        listed = fields.get("exit_predicates")
        if not isinstance(exits, list):
            self.problems.add(listed, f"{at}.exit_predicates must be a list")
            return []
        entry_nodes = listed.value if isinstance(listed, yaml.SequenceNode) else []
        out: list[Predicate] = []
        for i, e in enumerate(exits):
            where = f"{at}.exit_predicates[{i}]"
            here = entry_nodes[i] if i < len(entry_nodes) else listed
            expr = _value_nodes(here).get("expr")
            origin = f"{self.where}:{expr.start_mark.line + 1}" if expr is not None else ""
            made = self._attempt(
                here, _predicate, self.folder, e, name, self.modules, where, origin
            )
            if made is not None:
                out.append(made)
        return out

    def _records(self, value: Any, at: str) -> Records:
        if value is None:
            return Records()
        shape = "{reads: <argument>} or {creates: {read_tool: <tool>, key: <result key>}}"
        if not isinstance(value, dict) or set(value) - {"reads", "creates"}:
            raise ContractError(f"{self.where}: {at}.records must be {shape}")
        reads, creates = value.get("reads"), value.get("creates")
        if reads is not None and not isinstance(reads, str):
            raise ContractError(f"{self.where}: {at}.records.reads must name an argument")
        made: tuple[str, str] | None = None
        if creates is not None:
            if not isinstance(creates, dict) or set(creates) != {"read_tool", "key"}:
                raise ContractError(f"{self.where}: {at}.records must be {shape}")
            made = (str(creates["read_tool"]), str(creates["key"]))
        return Records(reads, made)

    def _policy_list(
        self, value: Any, at: str, tool: str | None, node: yaml.Node | None
    ) -> list[PolicyPredicate]:
        """The rules of a ``policies`` list that load; a problem for each one that does not."""
        if value is None:
            return []
        if not isinstance(value, list):
            self.problems.add(node, f"`{at}` must be a list of rules")
            return []
        entry_nodes = node.value if isinstance(node, yaml.SequenceNode) else []
        out: list[PolicyPredicate] = []
        for i, entry in enumerate(value):
            here = entry_nodes[i] if i < len(entry_nodes) else node
            found = _value_nodes(here)
            expr = found.get("expr") or found.get("approve")
            origin = f"{self.where}:{expr.start_mark.line + 1}" if expr is not None else ""
            made = self._attempt(here, self._policy, entry, f"{at}[{i}]", tool, origin)
            out.extend(made or [])
        return out

    def _policy(
        self, entry: Any, at: str, tool: str | None, origin: str = ""
    ) -> list[PolicyPredicate]:
        where = at  # the file and line are added by the SidecarError
        if not isinstance(entry, dict):
            raise ContractError(f"{where}: must be a mapping with `expr` or `python`")
        unknown = sorted(set(map(str, entry)) - _POLICY_KEYS)
        if unknown:
            raise ContractError(
                f"{where}: unknown key(s) {unknown}; known keys: {sorted(_POLICY_KEYS)}"
            )
        if sum(k in entry for k in ("expr", "python", "approve")) != 1:
            raise ContractError(
                f"{where}: give exactly one of `expr` (CEL), `python`, or `approve` (true or a "
                "CEL condition: a person must say yes)"
            )
        tools = entry.get("tools")
        if tool is not None and tools is not None:
            raise ContractError(f"{where}: a rule under one tool cannot name `tools`")
        if tools is not None and (
            not isinstance(tools, list) or not all(isinstance(t, str) for t in tools)
        ):
            raise ContractError(f"{where}: `tools` must be a list of tool names")
        if "approve" in entry:
            found = [self._approval(entry, where, tools, origin)]
        elif "python" in entry:
            found = self._python(str(entry["python"]), where)
            if tools is not None:
                found = [replace(p, tools=tuple(tools)) for p in found]
        else:
            found = [self._cel(entry, where, tools, origin)]
        if tool is None and any(not p.tools for p in found):
            raise ContractError(
                f"{where}: a rule in the top-level `policies` must name its `tools` (or sit "
                "under a tool in `tools`)"
            )
        return found if tool is None else [replace(p, tools=(tool,)) for p in found]

    def _approval(
        self, entry: Mapping[str, Any], where: str, tools: Any, origin: str = ""
    ) -> PolicyPredicate:
        """An ``approve:`` entry: ``true`` (every call) or a CEL condition (calls it holds for)."""
        asks = entry["approve"]
        if asks is not True and not (isinstance(asks, str) and asks.strip()):
            raise ContractError(
                f"{where}: `approve` must be true or a CEL condition (a string), got {asks!r}; "
                "to ask no one, remove the rule"
            )
        if "code" in entry:
            raise ContractError(
                f"{where}: an approval rule takes no `code`; its decision's code is always "
                f"{APPROVAL_REQUIRED}"
            )
        if "reads" not in entry and asks is not True:
            raise ContractError(f"{where}: an `approve` condition needs `reads` (a list of paths)")
        rule = {
            **entry,
            "expr": "true" if asks is True else asks,
            "code": APPROVAL_REQUIRED,
            # a predicate reads something; "every call" reads the call's arguments (the
            # values the person is shown, so the log keeps what was approved)
            "reads": entry.get("reads", ["args"]),
            "message": entry.get("message") or _APPROVAL_MESSAGE,
        }
        return self._cel(rule, where, tools, origin, approval=True)

    def _cel(
        self,
        entry: Mapping[str, Any],
        where: str,
        tools: Any,
        origin: str = "",
        *,
        approval: bool = False,
    ) -> PolicyPredicate:
        for key in ("name", "code"):
            if not isinstance(entry.get(key), str):
                raise ContractError(f"{where}: a CEL rule needs `{key}` (a string)")
        reads = entry.get("reads")
        if not isinstance(reads, list) or not all(isinstance(k, str) for k in reads):
            raise ContractError(f"{where} ({entry['name']}): `reads` must be a list of paths")
        max_age = entry.get("max_age_s")
        if max_age is not None and (
            isinstance(max_age, bool) or not isinstance(max_age, (int, float))
        ):
            raise ContractError(f"{where} ({entry['name']}): `max_age_s` must be seconds")
        try:
            return cel_rule(
                str(entry["expr"]),
                name=entry["name"],
                code=entry["code"],
                reads=reads,
                message=str(entry.get("message", "")),
                tools=tuple(tools or ()),
                fields=tuple(str(f) for f in entry.get("fields") or ()),
                max_age_s=float(max_age) if max_age is not None else None,
                source=f"{where} ({entry['name']})",
                optional=tuple(str(k) for k in entry.get("optional") or ()),
                origin=origin,
                approval=approval,
            )
        except ContractError as exc:
            if where in str(exc):
                raise
            raise ContractError(f"{where} ({entry['name']}): {exc}") from None

    def _python(self, ref: str, where: str) -> list[PolicyPredicate]:
        obj = self._object(ref, where)
        given: dict[str, Any] = {}
        if callable(obj) and not isinstance(obj, PolicyPredicate):
            params = inspect.signature(obj).parameters
            missing = [p for p in params if p not in self.settings]
            if missing:
                raise ContractError(
                    f"{where}: the factory {ref!r} takes {missing}, which `settings` does not "
                    f"give; settings: {sorted(self.settings)}"
                )
            given = {p: self.settings[p] for p in params}
            try:
                obj = obj(**given)
            except Exception as exc:
                raise ContractError(
                    f"{where}: the factory {ref!r} failed: {type(exc).__name__}: {exc}"
                ) from exc
        found = list(obj) if isinstance(obj, (list, tuple)) else [obj]
        bad = [type(o).__name__ for o in found if not isinstance(o, PolicyPredicate)]
        if bad:
            raise ContractError(
                f"{where}: {ref!r} gave {bad[0]}, not a policy predicate (use @policy_rule or "
                "cel_rule, or a factory returning them)"
            )
        if not given:
            return found
        return [_with_settings(p, given) for p in found]

    def _object(self, ref: str, where: str) -> Any:
        module_part, sep, attr = ref.partition(":")
        if not sep or not attr:
            raise ContractError(
                f"{where}: {ref!r} must look like 'rules.py:name' or 'package.module:name'"
            )
        if module_part.endswith(".py"):
            try:
                return _resolve(self.folder, ref, self.path.stem, self.modules, where)
            except ProcedureError as exc:
                raise ContractError(str(exc)) from None
        try:
            module = importlib.import_module(module_part)
        except ImportError as exc:
            raise ContractError(f"{where}: cannot import {module_part!r}: {exc}") from None
        if not hasattr(module, attr):
            raise ContractError(f"{where}: module {module_part!r} has no attribute {attr!r}")
        return getattr(module, attr)


def _shared_for(shared: Sequence[PolicyPredicate], tool: str) -> list[PolicyPredicate]:
    """The top-level rules that name ``tool``, attached to it alone."""
    return [replace(p, tools=(tool,)) for p in shared if tool in p.tools]


def _with_settings(pred: PolicyPredicate, given: Mapping[str, Any]) -> PolicyPredicate:
    """``pred`` whose version also covers the settings its factory was given."""
    version = content_hash([pred.version, dict(given)])
    inner = pred.predicate
    if hasattr(inner, "version") and not isinstance(inner, type):
        try:
            inner = replace(inner, version=version)  # type: ignore[type-var]
        except TypeError:
            return pred
    return replace(pred, predicate=inner)
