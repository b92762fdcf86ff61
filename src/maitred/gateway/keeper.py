"""The gateway's decisions, without any MCP plumbing: what one session sees and may call.

A :class:`Gatekeeper` holds one :class:`~maitred.Maitred` engine over the upstream's tools
(the ``tools/list`` it answered at start, with contracts from the upstream's sidecar) and one
:class:`~maitred.actions.Session` for the account the gateway was launched for.

* **Listing is a logged turn.** :meth:`Gatekeeper.visible` routes a turn whose "recall" is
  every upstream tool, in the upstream's order (:class:`EveryTool`), so the executability gate
  decides each one on one fresh state snapshot and the decision log keeps the turn: which tools
  were hidden, and which predicate fired with the values it read. No model text is involved.
* **A call is re-checked, never trusted to the list.** :meth:`Gatekeeper.check` offers the
  session the *whole* upstream catalog before asking :meth:`Maitred.check`, so the action gate
  re-evaluates the exit predicates on fresh state: a hidden tool named anyway is
  ``TOOL_NOT_EXECUTABLE`` with the predicate that hides it (a message the model can act on),
  a name the upstream never listed is ``TOOL_UNKNOWN``; then the arguments meet the schema and
  the call policies run. The decision is in the log (flushed) before it is returned.
* **A write can change what is visible.** After an allowed mutating call succeeded,
  :meth:`Gatekeeper.after_call` records it in the session and re-lists; it answers True when
  the visible set differs from the one last shown, and the server then sends
  ``notifications/tools/list_changed``.

**Shadow mode.** Rules the config names in ``shadow`` are taken out of the catalog the gateway
enforces, and a second engine over the *full* contracts decides every listing and call too,
under its own run (``mcp-<upstream>-shadow-...``) and session id (``<session>-shadow``) in the
same log: what the client got is the enforced run, what full enforcement would have done is the
shadow run, and the two can be compared turn by turn before a rule is switched on.

The upstream's tools become a catalog in memory (:func:`catalog_from_tools`): the sidecar named
``time.maitred.yaml`` is read as the contracts of a tools file ``time.json`` beside it, so the
same reader, the same errors and the same contract model serve a tools file and an upstream.
Nothing here imports an MCP library.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from maitred.actions.model import Decision, ToolCall
from maitred.contract.tool_sidecar import SUFFIX, load_tool_contracts
from maitred.engine import Maitred
from maitred.errors import ConfigError
from maitred.gateway.config import GatewayConfig, Upstream
from maitred.log.base import open_log
from maitred.pipeline import Pipeline
from maitred.recall.base import Candidate, Cutoff
from maitred.skills.model import Catalog
from maitred.skills.tools import parse_tools
from maitred.state.registry import open_provider

#: the text of a listing turn in the decision log (it is no user's message)
LIST_TEXT = "tools/list"


def catalog_from_tools(
    tools: Sequence[Mapping[str, Any]], upstream: Upstream, settings: Mapping[str, Any]
) -> Catalog:
    """The upstream's ``tools/list`` entries as a catalog, with the sidecar's contracts.

    A tool whose definition cannot be read is left out (so it is never listed and a call to it
    is ``TOOL_UNKNOWN``) and named on stderr.

    Raises:
        ContractError: the sidecar is invalid or names a tool the upstream does not list (the
            message names the sidecar file and the entry).
        ConfigError: the upstream lists no usable tool at all.
    """
    skills, report = parse_tools({"tools": list(tools)}, source=f"upstream {upstream.name!r}")
    for problem in report.errors:
        print(f"maitred mcp: tool left out: {problem}", file=sys.stderr)
    if not skills:
        raise ConfigError(
            f"upstream {upstream.name!r} ({upstream.command}) lists no usable tool; check that "
            "the command starts the MCP server you meant"
        )
    if upstream.contracts:
        as_tools_file = Path(upstream.contracts[: -len(SUFFIX)] + ".json")
        found = load_tool_contracts(as_tools_file, [s.name for s in skills], settings)
        skills = tuple(
            replace(
                s,
                contract=found.contracts.get(s.name, s.contract),
                family=found.families.get(s.name, s.family),
            )
            for s in skills
        )
    return Catalog(tuple(skills))


def without_rules(catalog: Catalog, names: Sequence[str], source: str = "") -> Catalog:
    """``catalog`` without the exit predicates and call policies named ``names``.

    Raises:
        ConfigError: a name is no rule of the catalog (naming ``source`` and the known rules).
    """
    known = {p.name for s in catalog for p in s.contract.exit_predicates}
    known |= {p.name for s in catalog for p in s.contract.policies}
    unknown = sorted(set(names) - known)
    if unknown:
        raise ConfigError(
            f"{source}: field 'shadow' names {unknown}, which no tool's contract declares; "
            f"choose from {sorted(known)}"
        )
    drop = set(names)
    return Catalog(
        tuple(
            replace(
                s,
                contract=replace(
                    s.contract,
                    exit_predicates=tuple(
                        p for p in s.contract.exit_predicates if p.name not in drop
                    ),
                    policies=tuple(p for p in s.contract.policies if p.name not in drop),
                ),
            )
            for s in catalog
        )
    )


class EveryTool:
    """The "recall" of a listing: every tool of the catalog, in its order, score 1."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.name = "mcp-list"

    def rank(self, text: str, k: int) -> list[Candidate]:
        return [Candidate(s.name, i + 1, 1.0) for i, s in enumerate(self.catalog.skills[:k])]


class Gatekeeper:
    """Visibility and call decisions for one gateway session (one account).

    Args:
        engine: the engine over the upstream's catalog (its log, if any, gets every decision).
        account: whose state the gates read; fixed for the gateway's lifetime.
        upstream: the upstream's name, for messages.
        shadow: an engine over the full contracts, when some rules run in shadow mode: it
            decides and logs alongside, and is never obeyed.
    """

    def __init__(
        self,
        engine: Maitred,
        account: str,
        upstream: str = "upstream",
        shadow: Maitred | None = None,
    ) -> None:
        self.engine = engine
        self.upstream = upstream
        self.session = engine.session(account)
        self.shadow = shadow
        self.shadow_session = (
            shadow.session(account, id=f"{self.session.id}-shadow") if shadow else None
        )
        self.listed: tuple[str, ...] | None = None

    @classmethod
    def open(cls, config: GatewayConfig, tools: Sequence[Mapping[str, Any]]) -> Gatekeeper:
        """A gatekeeper for ``config`` over the tools the upstream listed at start."""
        up = config.upstream
        full = catalog_from_tools(tools, up, config.settings)
        enforced = without_rules(full, up.shadow, config.source) if up.shadow else full
        provider = open_provider(config.state, config.tables)
        log = open_log(config.log) if config.log else None

        def engine(catalog: Catalog, run: str, owns_log: bool) -> Maitred:
            pipeline = Pipeline(
                catalog, EveryTool(catalog), provider, cutoff=Cutoff(top_k=len(catalog)), log=log
            )
            if log is not None:
                pipeline.begin_run(f"{run}-{uuid.uuid4().hex[:8]}")
                log.flush()
            return Maitred(pipeline, owns_log=owns_log and log is not None)

        shadow = engine(full, f"mcp-{up.name}-shadow", False) if up.shadow else None
        return cls(engine(enforced, f"mcp-{up.name}", True), config.account, up.name, shadow)

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.engine.catalog)

    def visible(self) -> tuple[str, ...]:
        """The tools this session may see now (a logged turn), in the upstream's order."""
        if self.shadow is not None and self.shadow_session is not None:
            self.shadow.turn(LIST_TEXT, session=self.shadow_session)
        turn = self.engine.turn(LIST_TEXT, session=self.session)
        self.listed = turn.exposed
        return turn.exposed

    def check(self, name: str, arguments: Mapping[str, Any] | None) -> Decision:
        """May ``name(arguments)`` reach the upstream now? (logged, flushed, then returned)."""
        call = ToolCall(name, dict(arguments or {}))
        if self.shadow is not None and self.shadow_session is not None:
            self.shadow_session.offer(self.tool_names, self.shadow_session.turn_id)
            self.shadow.check(call, session=self.shadow_session)
        self.session.offer(self.tool_names, self.session.turn_id)
        return self.engine.check(call, session=self.session)

    def after_call(self, name: str, arguments: Mapping[str, Any] | None, result: Any) -> bool:
        """Record a call that succeeded upstream; True when the session's visible set changed.

        Only a mutating tool can change the account's state, so only then is the list
        re-evaluated (a logged turn); a session never listed has nothing to be told.
        """
        call = ToolCall(name, dict(arguments or {}))
        self.engine.record(call, result, session=self.session)
        if self.shadow is not None and self.shadow_session is not None:
            self.shadow.record(call, result, session=self.shadow_session)
        tool = self.engine.policy.tools.get(name)
        if tool is None or not tool.mutates or self.listed is None:
            return False
        before = self.listed
        return self.visible() != before

    def close(self) -> None:
        if self.shadow is not None:
            self.shadow.close()  # flushes the shared log; the enforcing engine closes it
        self.engine.close()
