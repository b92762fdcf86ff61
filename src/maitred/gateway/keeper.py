"""The gateway's engines: built from its config over what its upstreams listed.

A gateway decides nothing itself: every request of a session is asked of that session's
:class:`~maitred.conversation.Conversation` (the core object holding one principal), over
engines shared by all of them (:class:`~maitred.conversation.engines.Engines`).
:class:`GatewayEngines` is how a gateway builds those engines at start, over the tools every
upstream that answered listed (each upstream's own sidecar contracts and shadow rules applied
to its own tools, then joined into one catalog, :mod:`maitred.gateway.catalogs`): one engine
that lists and checks, one that runs ``find_tools`` (real recall over the same catalog), and
one over the full contracts when some rules run in shadow mode, on one state provider and one
decision log.

**A catalog that grows.** An upstream that answers after the start (or lists a tool it did not
list before) brings tools the engines do not know. Engines are never changed in place:
:meth:`GatewayEngines.grown` builds new engines aside over the larger catalog, with every check
a start makes, and the gateway swaps its one reference to them
(:mod:`maitred.gateway.lifecycle`); each conversation then moves over under its own lock
(:meth:`Conversation.rebase <maitred.conversation.Conversation.rebase>`).

**Names across upstreams.** Tools keep the names their upstream gives them (the names its
sidecar, its documentation and the model's prompts use); two upstreams listing the same name
is refused with a :class:`~maitred.errors.ConfigError` naming both (at start; an upstream that
joins later with such a name is kept out), rather than renamed silently, because a prefix
would change what every sidecar, prompt and log row says.

**Shadow mode.** Rules the config names in an upstream's ``shadow`` are taken out of the
catalog the gateway enforces, and a second engine over the *full* contracts decides every
listing and call too, under its own run (``mcp-shadow-...``).

Nothing here imports an MCP library.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from maitred.build import PipelineOptions, build_pipeline, check_against_state
from maitred.contract.tool_sidecar import SurfaceNames, ToolContracts
from maitred.conversation.conversation import Conversation
from maitred.conversation.engines import Engines, begin, listing_engine, listing_pipeline
from maitred.conversation.finding import FIND_TOOLS as FIND_TOOLS  # re-exported
from maitred.conversation.finding import FIND_TOOLS_DESCRIPTION as FIND_TOOLS_DESCRIPTION
from maitred.conversation.principal import Principal
from maitred.engine import Maitred
from maitred.errors import ConfigError, EmptyCatalogError
from maitred.gateway.catalogs import catalog_from_tools as catalog_from_tools  # re-exported
from maitred.gateway.catalogs import join_upstreams
from maitred.gateway.config import GatewayConfig
from maitred.gateway.pins import PinGuard, guard_at_start
from maitred.gateway.scan import warn_at_start
from maitred.log.base import DecisionLog, open_log
from maitred.skills.model import Catalog
from maitred.state.registry import open_provider
from maitred.state.snapshot import StateProvider


class GatewayEngines(Engines):
    """The engines of one gateway, built from its config over what its upstreams listed
    (:class:`~maitred.conversation.engines.Engines`, shared by all its conversations; see
    the module docstring). ``pins`` are the reviewed tool definitions, when the config names
    a pin file; ``sidecars`` each upstream's sidecar as read (for its resources' and prompts'
    contracts, :mod:`maitred.gateway.surfaces`).
    """

    pins: PinGuard | None

    @classmethod
    def open(
        cls,
        config: GatewayConfig,
        tools: Mapping[str, Sequence[Mapping[str, Any]]],
        listed: Mapping[str, SurfaceNames] | None = None,
    ) -> GatewayEngines:
        """The engines for ``config`` over ``tools`` (upstream name -> what it listed at start;
        an upstream that did not answer is absent, and its tools join later: :meth:`grown`).

        ``listed``: what each upstream listed besides tools, which its sidecar's ``resources``
        and ``prompts`` keys must name (``None``: those keys are checked for form only).

        Raises:
            ConfigError: two upstreams list the same tool name (both named), a shadow rule
                names no rule, or an upstream lists nothing usable.
            ContractError: a sidecar is invalid.
        """
        full, enforced, owners, sidecars = join_upstreams(config, tools, listed)
        warn_at_start(config, tools)
        pins = guard_at_start(config, tools, owners)
        provider = open_provider(config.state, config.tables)
        log = open_log(config.log) if config.log else None
        try:
            return cls._build(config, (full, enforced, owners, sidecars), provider, log, pins)
        except BaseException:
            if log is not None:
                log.close()
            raise

    def grown(
        self,
        config: GatewayConfig,
        tools: Mapping[str, Sequence[Mapping[str, Any]]],
        listed: Mapping[str, SurfaceNames] | None = None,
    ) -> GatewayEngines:
        """New engines over ``tools`` (this catalog's upstreams and one that joined, or grew),
        sharing this one's state provider, decision log and pins; nothing here changes.

        The new catalog passes every check :meth:`open` makes (sidecars against what their
        upstreams list, one owner per tool name, keys and CEL types against the state), so a
        late upstream is held to what a start would have held it to. Its conversations are
        moved over by :meth:`Conversation.rebase
        <maitred.conversation.Conversation.rebase>`. The new engines log under runs of their own.

        Raises:
            ConfigError, ContractError: as :meth:`open`; the caller keeps serving these engines.
        """
        joined = join_upstreams(config, tools, listed)
        return GatewayEngines._build(
            config, joined, self.engine.provider, self.engine.log, self.pins, owns_log=False
        )

    @classmethod
    def _build(
        cls,
        config: GatewayConfig,
        joined: tuple[Catalog, Catalog, dict[str, str], dict[str, ToolContracts]],
        provider: StateProvider,
        log: DecisionLog | None,
        pins: PinGuard | None,
        *,
        owns_log: bool = True,
    ) -> GatewayEngines:
        full, enforced, owners, sidecars = joined
        try:  # the same load-time checks as every engine: keys exist, predicates type-check
            check_against_state(full, provider)
        except ConfigError as exc:
            raise ConfigError(f"{config.source}: the upstreams' contracts: {exc}") from None
        finder = None
        if config.disclosure == "find_tools":
            find = config.find
            options = PipelineOptions(
                method=find.method,
                top_k=find.top_k,
                analyzer=find.analyzer,
                embedder=find.embedder,
            )
            try:
                pipeline = build_pipeline(enforced, provider, options, log=log)
            except ConfigError as exc:
                raise ConfigError(f"{config.source}: field 'find': {exc}") from None
            except EmptyCatalogError:  # no upstream serves yet: nothing can be found
                pipeline = listing_pipeline(enforced, provider, log)
            begin(pipeline, log, "mcp-find")
            finder = Maitred(pipeline)
        shadow = None
        if any(up.shadow for up in config.upstreams):
            shadow = listing_engine(full, provider, log, "mcp-shadow", owns_log=False)
        engine = listing_engine(enforced, provider, log, "mcp", owns_log=owns_log)
        return cls(
            engine,
            owners,
            finder=finder,
            shadow=shadow,
            pins=pins,
            sidecars=sidecars,
            call_tool=config.find.call_tool,
        )

    def keeper(
        self,
        account: str,
        *,
        tenant: str = "",
        granted: frozenset[str] | None = None,
        principal: bool = False,
        subject: str = "",
    ) -> Conversation:
        """A new conversation for ``account`` (deprecated: :meth:`conversation` takes the
        :class:`~maitred.conversation.Principal` itself)."""
        who = Principal(account, tenant=tenant, granted=granted, subject=subject)
        return self.conversation(who, by_principal=principal)


#: deprecated name of :class:`maitred.conversation.Conversation` (kept for one release)
Gatekeeper = Conversation
