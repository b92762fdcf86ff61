"""Each upstream's life in a running gateway: it starts, serves, goes down, comes back, or is
kept out -- and its tools join the catalog whenever it answers, not only at start.

Every upstream is in one of four states (:data:`State`), which ``GET /readyz`` reports:

=========  ===================================================================================
starting   its first listing is under way, or it answered and its tools are joining the catalog
serving    its tools are in the catalog, and it answered its latest listing
down       it did not answer its latest listing (at start, or when asked again after a call
           to it failed); it is tried again, and a tool of it that is in the catalog is still
           decided and forwarded (the call fails ``UPSTREAM_FAILED``, as before)
refused    it answered, but its tools cannot join: its sidecar does not fit what it lists, it
           lists a tool name another upstream serves, a predicate does not type-check against
           the state, or it lists no usable tool. Kept out (its tools, resources and prompts are
           never served) until the gateway restarts
=========  ===================================================================================

**At start** (:meth:`Upstreams.start`) every upstream is listed at once (tools, resources,
templates, prompts), each request within its ``timeout_s`` and the whole within
:data:`LAUNCH_S` more. One that does not answer is named on
stderr with why, and the gateway starts with the others -- with none, if none answers: an HTTP
gateway then serves ``/readyz`` as 503 and an empty tool list until one does. An upstream
marked ``required: true`` keeps the strict start: without it, the start fails with an error
naming it. What is found wrong with an upstream that *did* answer at start (a sidecar that does
not fit, a tool name two upstreams share) is a config error and stops the start, as it always
did; only what turns up later is refused rather than fatal.

**Trying again.** An upstream that is down is listed again in the background
(:meth:`Upstreams.run`, beside the server): after ``upstream_retry.initial_s``, then twice as
long after each failure, never more than ``max_s`` apart, for as long as the gateway runs. A
client's ``tools/list`` also tries each down upstream at once (:meth:`Upstreams.on_demand`; at
most once per ``initial_s`` each) and waits for it a moment (:data:`ON_DEMAND_WAIT_S`), so the
listing that finds it back already holds its tools. A call to a serving upstream that fails has
it listed again at once (:meth:`Upstreams.suspect`): only a listing that fails makes it down.

**Joining** (:meth:`Upstreams._join`). When an upstream that was not serving answers, or a serving
one lists a tool name it did not list before, the catalog grows: new engines
(:class:`~maitred.gateway.keeper.GatewayEngines`) are built aside on a worker thread
(:meth:`GatewayEngines.grown <maitred.gateway.keeper.GatewayEngines.grown>`, with every check a
start makes, and the resources' and prompts' gate with them), while the old ones keep serving. If a
check fails, the newcomer is refused (a grown listing of a serving upstream is only named on stderr;
the upstream keeps serving what it served) and nothing changed. Otherwise, in one step on the event
loop, the server gains the upstream's proxy, the gateway's middleware swaps its one reference to the
new engines (:meth:`GateMiddleware.adopt <maitred.gateway.server.GateMiddleware.adopt>`), the pins
judge the new tools, and the sessions move over, each under its own lock (:meth:`Conversation.rebase
<maitred.conversation.Conversation.rebase>`): a call in flight finishes on the engines it began on,
the next one runs on the new ones, and every session keeps its offer, its reads and its
``find_tools`` disclosures. Then every session that can be told (the state watch's way out,
:mod:`maitred.gateway.channels`) and would now see another list gets a logged listing and
``notifications/tools/list_changed``; a session that listed resources or prompts gets their
``list_changed`` when the newcomer lists some. Joins happen one at a time.

Nothing here decides a call; it only changes which catalog the engines decide over.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, Literal, Protocol

import anyio
from fastmcp import FastMCP
from fastmcp.server.providers.proxy import ProxyProvider

from maitred.contract.tool_sidecar import SurfaceNames
from maitred.conversation import Conversation
from maitred.errors import ConfigError
from maitred.gateway.channels import Channels, Key, ListKind, follow, speaks_listen
from maitred.gateway.config import GatewayConfig, Upstream
from maitred.gateway.keeper import GatewayEngines
from maitred.gateway.metrics import GatewayMetrics
from maitred.gateway.scan import warn_at_start
from maitred.gateway.surfaces import open_surfaces, warn_ungated
from maitred.gateway.upstreams import ListingProxy

#: what an upstream is doing now (see the module docstring)
State = Literal["starting", "serving", "down", "refused"]
#: how long a client's ``tools/list`` waits for the attempts it started (they go on after it)
ON_DEMAND_WAIT_S = 1.0
#: what a listing may take beyond the upstream's ``timeout_s``: launching a stdio server, or
#: connecting (each of its requests is bounded by ``timeout_s`` on its own)
LAUNCH_S = 30.0

__all__ = ["LAUNCH_S", "ON_DEMAND_WAIT_S", "Listing", "State", "UpstreamLife", "Upstreams"]


@dataclass(frozen=True)
class Listing:
    """What one upstream listed: its tools as MCP JSON objects, and the names of its
    resources, resource templates and prompts."""

    tools: list[dict[str, Any]]
    surfaces: SurfaceNames


#: lists one upstream through its proxy; raises :class:`ConfigError` saying why it could not
Probe = Callable[[ProxyProvider, Upstream], Awaitable[Listing]]


class Host(Protocol):
    """What :class:`Upstreams` needs of the gateway's middleware
    (:class:`~maitred.gateway.server.GateMiddleware`)."""

    engines: GatewayEngines
    channels: Channels
    metrics: GatewayMetrics

    def adopt(self, engines: GatewayEngines) -> list[Conversation]:
        """Decide with ``engines`` from now on; the sessions to move onto them."""
        ...

    def reachable(self) -> list[tuple[Key, Conversation]]:
        """The sessions a notification outside any request can reach."""
        ...

    async def recheck(self) -> int:
        """Re-list the reachable sessions whose list would change, and tell them."""
        ...


class Advertiser(Protocol):
    """The HTTP edge's protected-resource metadata (:class:`~maitred.gateway.auth.GatewayAuth`)."""

    def advertise(self, scopes: Iterable[str]) -> None:
        """Add ``scopes`` to what the metadata says the gateway's tools require."""
        ...


class UpstreamLife:
    """One upstream's state, and when it is to be listed again."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self.state: State = "starting"
        self.since = time.time()
        self.error = ""
        self.tools = 0
        #: listings in a row that failed (the backoff's exponent)
        self.failures = 0
        #: it is to be listed at ``next_at`` (down; or serving, and a reason to look again)
        self.wanted = False
        self.next_at = 0.0
        self.started = -math.inf
        #: set while a listing of it is under way; set() when it is over
        self.attempt: anyio.Event | None = None
        #: tool names a grown listing brought that were refused (not tried again)
        self.refused_growth: frozenset[str] = frozenset()

    def become(self, state: State, error: str | None = None) -> None:
        """Be in ``state`` (since now, when it is another), with ``error`` as its latest one
        (``""``: none; ``None``: unchanged)."""
        if state != self.state:
            self.state, self.since = state, time.time()
        if error is not None:
            self.error = error

    def want(self, at: float) -> None:
        """List it (again) at ``at``."""
        self.wanted, self.next_at = True, at

    def begin(self, now: float) -> anyio.Event:
        """A listing of it starts now; the event is set when it is over (:meth:`end`)."""
        done = self.attempt = anyio.Event()
        self.started, self.wanted = now, False
        return done

    def end(self, done: anyio.Event) -> None:
        if self.attempt is done:
            self.attempt = None
        done.set()

    def failed(self, now: float, initial_s: float, max_s: float) -> float:
        """A listing failed: the delay until the next, ``initial_s`` doubled per failure in a
        row, at most ``max_s``."""
        self.failures += 1
        delay = min(max_s, initial_s * float(2 ** min(self.failures - 1, 32)))
        self.want(now + delay)
        return delay

    def answered(self, tools: int | None = None) -> None:
        """It answered (with ``tools`` of its tools in the catalog, when they changed)."""
        self.failures, self.wanted = 0, False
        if tools is not None:
            self.tools = tools

    def refuse(self, names: Iterable[str], why: str) -> None:
        """Tools of a grown listing of it that cannot join (not tried again)."""
        self.refused_growth |= frozenset(names)
        self.error = why

    def to_json(self) -> dict[str, Any]:
        """Its entry in ``/readyz``."""
        since = datetime.fromtimestamp(self.since, UTC).isoformat(timespec="seconds")
        return {
            "name": self.upstream.name,
            "state": self.state,
            "tools": self.tools,
            "last_error": self.error or None,
            "since": since.replace("+00:00", "Z"),
        }


class Upstreams:
    """The upstreams of one gateway: their states, their retries and their joins.

    Args:
        config: the gateway's config (its upstreams, their ``required``, ``upstream_retry``).
        proxies: upstream name -> its proxy (what the server serves once it joined).
        probe: lists one upstream through its proxy (the gateway's ``tools/list`` and
            resources/prompts listings, before any gate).
        clock: monotonic seconds, for the retries.
    """

    def __init__(
        self,
        config: GatewayConfig,
        proxies: Mapping[str, ProxyProvider],
        probe: Probe,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.proxies = dict(proxies)
        self.probe = probe
        self.clock = clock
        self.lives = {up.name: UpstreamLife(up) for up in config.upstreams}
        #: upstream -> the listing its part of the catalog is built from (once it joined)
        self.tools: dict[str, list[dict[str, Any]]] = {}
        self.listed: dict[str, SurfaceNames] = {}
        self._names: dict[str, frozenset[str]] = {}
        self._server: FastMCP[Any] | None = None
        self._host: Host | None = None
        self._auth: Advertiser | None = None
        self._joining: anyio.Lock | None = None
        self._wake: anyio.Event | None = None
        self._spawn: Callable[..., Any] | None = None  # the running loop's task group
        self._serving: Callable[[str], None] | None = None
        self._followed: set[str] = set()  # upstreams whose list changes are listened to

    # -- at start -------------------------------------------------------------------------------

    async def start(self) -> None:
        """List every upstream at once (see the module docstring); those that answered are
        in :attr:`tools` and :attr:`listed`, the others are down and named on stderr.

        Raises:
            ConfigError: a ``required`` upstream did not answer (the error names it and why).
        """
        async with anyio.create_task_group() as tasks:
            for life in self.lives.values():
                tasks.start_soon(self._first, life)
        # in the config's order, not the answers'
        self.tools = {n: self.tools[n] for n in self.lives if n in self.tools}
        self.listed = {n: self.listed[n] for n in self.lives if n in self.listed}
        for life in self.lives.values():
            if life.upstream.required and life.state == "down":
                raise ConfigError(life.error)
        for life in self.lives.values():
            if life.state == "down":
                retry = self.config.upstream_retry
                _say(
                    f"{life.error}. The gateway starts without it (upstreams[].required: "
                    "false); it is tried again in the background (first after "
                    f"{retry.initial_s:g} s, then less often, but at least once every "
                    f"{retry.max_s:g} s) and whenever a client lists the tools; its tools "
                    "join when it answers"
                )

    async def _first(self, life: UpstreamLife) -> None:
        done = life.begin(self.clock())
        try:
            listing = await self._ask(life)
        except ConfigError as exc:
            self._failed(life, str(exc), quiet=True)
            return
        finally:
            life.end(done)
        life.answered()
        self._keep(life.upstream.name, listing.tools, listing.surfaces)

    def attach(
        self,
        server: FastMCP[Any],
        host: Host,
        auth: Advertiser | None = None,
        serving: Callable[[str], None] | None = None,
    ) -> None:
        """Serve the upstreams that answered at start on ``server`` (their engines are
        ``host``'s) and keep both for later joins; ``auth`` advertises a joiner's scopes, and
        ``serving(name)`` is told of each upstream whose proxy the server serves from now on
        (at start, and when it joins)."""
        self._server, self._host, self._auth = server, host, auth
        self._serving = serving
        for name, life in self.lives.items():
            if name in self.tools:
                self._serve(name)
                life.answered(len(self.tools[name]))
                self._set(life, "serving")
            else:
                self._set(life, life.state)  # shows the gauge at 0

    # -- while serving --------------------------------------------------------------------------

    async def run(self) -> None:
        """List again, with backoff, every upstream that is wanted, until cancelled (the
        serve functions run it beside the server)."""
        self._wake = anyio.Event()
        try:
            async with anyio.create_task_group() as tasks:
                self._spawn = tasks.start_soon
                while True:
                    self._follow_new(tasks.start_soon)
                    now = self.clock()
                    for life in self.lives.values():
                        if life.wanted and life.attempt is None and now >= life.next_at:
                            self._launch(life, tasks.start_soon)
                    waits = [
                        life.next_at - now
                        for life in self.lives.values()
                        if life.wanted and life.attempt is None
                    ]
                    with anyio.move_on_after(max(0.0, min(waits)) if waits else math.inf):
                        await self._wake.wait()
                    self._wake = anyio.Event()
        finally:
            self._spawn = None
            self._wake = None

    def _follow_new(self, spawn: Callable[..., Any]) -> None:
        """Listen for the list changes of each serving upstream not followed yet
        (:func:`~maitred.gateway.channels.follow`: 2026-07-28 HTTP upstreams only)."""
        for name, life in self.lives.items():
            proxy = self.proxies[name]
            if (
                life.state == "serving"
                and name not in self._followed
                and isinstance(proxy, ListingProxy)
                and speaks_listen(proxy) is not None
            ):
                self._followed.add(name)
                pause = self.config.upstream_retry.initial_s
                spawn(follow, proxy, partial(self.changed, name), pause)

    async def changed(self, name: str, kind: ListKind) -> None:
        """Upstream ``name`` says its ``kind`` list changed: list it again (new tools join
        the catalog, :meth:`observed`) and tell every reachable session, each in its era."""
        proxy = self.proxies[name]
        if isinstance(proxy, ListingProxy):
            proxy.forget(kind)
            if kind == "tools":
                with contextlib.suppress(Exception):  # down: its next listing says so
                    await proxy.list_tools()
        host = self._host
        if host is None:
            return
        for key, _ in host.reachable():
            await host.channels.notify(key, [kind])

    async def on_demand(self) -> None:
        """A client lists the tools: list each upstream that is wanted now (a down one at
        most once per ``upstream_retry.initial_s``) and wait up to :data:`ON_DEMAND_WAIT_S`
        for those listings, so this listing can hold the tools of one that just answered."""
        now = self.clock()
        pause = self.config.upstream_retry.initial_s
        due = [
            life
            for life in self.lives.values()
            if life.wanted
            and life.attempt is None
            and (life.state != "down" or now - life.started >= pause)
        ]
        if not due:
            return
        spawn = self._spawn
        with anyio.move_on_after(ON_DEMAND_WAIT_S):
            if spawn is not None:  # the loop runs them; they go on after this listing
                dones = [self._launch(life, spawn) for life in due]
                for done in dones:
                    await done.wait()
            else:  # no loop (an embedding program): this request runs them, for a moment
                async with anyio.create_task_group() as tasks:
                    for life in due:
                        self._launch(life, tasks.start_soon)

    def suspect(self, upstream: str) -> None:
        """A call to ``upstream`` failed: list it again now (a failed listing makes it
        down; it answered: it stays serving)."""
        life = self.lives.get(upstream)
        if life is not None and life.state == "serving" and life.attempt is None:
            self._want(life, self.clock())

    def answered(self, upstream: str) -> None:
        """A call to ``upstream`` came back (whatever it said): it serves again if it was
        down after having joined."""
        life = self.lives.get(upstream)
        if life is not None and life.state == "down" and upstream in self.tools:
            life.answered()
            self._set(life, "serving", "")
            _say(f"upstream {upstream!r} answers again")

    def observed(self, upstream: str, tools: Sequence[Any]) -> None:
        """A fresh listing of ``upstream`` (the proxy's listener): one that names a tool the
        catalog does not have has the upstream listed again, to join it."""
        known = self._names.get(upstream)
        life = self.lives.get(upstream)
        if known is None or life is None or life.state != "serving" or life.attempt is not None:
            return  # (a listing under way sees what this one saw)
        names = {str(getattr(t, "name", "")) for t in tools}
        if names - known - life.refused_growth:
            self._want(life, self.clock())

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Whether every upstream is serving, and each one's entry (``GET /readyz``)."""
        ready = all(life.state == "serving" for life in self.lives.values())
        return ready, {
            "status": "ready" if ready else "not_ready",
            "upstreams": [life.to_json() for life in self.lives.values()],
        }

    # -- one listing ----------------------------------------------------------------------------

    def _launch(self, life: UpstreamLife, spawn: Callable[..., Any]) -> anyio.Event:
        done = life.begin(self.clock())
        spawn(self._attempt, life, done)
        return done

    async def _attempt(self, life: UpstreamLife, done: anyio.Event) -> None:
        name = life.upstream.name
        try:
            try:
                listing = await self._ask(life)
            except ConfigError as exc:
                self._failed(life, str(exc))
                return
            life.answered()
            if name not in self.tools:
                await self._join(life, listing.tools, listing.surfaces)
                return
            added = [
                t
                for t in listing.tools
                if t.get("name") not in self._names[name]
                and t.get("name") not in life.refused_growth
            ]
            if added:
                await self._join(life, [*self.tools[name], *added], self.listed[name], added)
            if life.state == "down":
                self._set(life, "serving", "")
                _say(f"upstream {name!r} answers again")
        except Exception as exc:  # a bug: the gateway keeps serving and tries again later
            self._failed(life, f"upstream {name!r}: {type(exc).__name__}: {exc}")
        finally:
            life.end(done)
            self._poke()

    async def _ask(self, life: UpstreamLife) -> Listing:
        """The upstream's listing, within its ``timeout_s`` and :data:`LAUNCH_S`.

        Raises:
            ConfigError: it could not be started or reached, or did not answer in time.
        """
        up = life.upstream
        limit = up.timeout_s + LAUNCH_S
        with anyio.move_on_after(limit):
            return await self.probe(self.proxies[up.name], up)
        raise ConfigError(
            f"upstream {up.name!r} ({up.where}): did not list its tools within {limit:g} s "
            f"(its timeout_s, and {LAUNCH_S:g} s to start or connect)"
        )

    def _failed(self, life: UpstreamLife, why: str, *, quiet: bool = False) -> None:
        """A listing failed: ``life`` is down, to be listed again after the backoff."""
        retry = self.config.upstream_retry
        delay = life.failed(self.clock(), retry.initial_s, retry.max_s)
        was = life.state
        self._set(life, "down", why)
        if was == "serving" and not quiet:
            _say(
                f"{why}. Calls to its tools fail (UPSTREAM_FAILED) until it answers; it is "
                f"tried again in {delay:g} s"
            )

    # -- joining --------------------------------------------------------------------------------

    async def _join(
        self,
        life: UpstreamLife,
        tools: list[dict[str, Any]],
        surfaces: SurfaceNames,
        added: list[dict[str, Any]] | None = None,
    ) -> None:
        """Grow the catalog by ``life``'s ``tools`` (all of them, or a serving upstream's
        listing with the ``added`` ones), or refuse them (see the module docstring)."""
        host = self._host
        if host is None:  # not attached: nothing serves yet
            return
        name = life.upstream.name
        if self._joining is None:
            self._joining = anyio.Lock()
        async with self._joining:  # one join at a time, each over the one before
            if added is None:
                self._set(life, "starting", "")
            every = {**self.tools, name: tools}
            listed = {**self.listed, name: surfaces}
            current = host.engines
            try:
                engines = await anyio.to_thread.run_sync(
                    lambda: self._build(current, every, listed)
                )
            except Exception as exc:  # a check failed, or a broken sidecar: kept out
                self._refuse(life, added, exc)
                return
            with anyio.CancelScope(shield=True):  # from here on, all of it or none of it
                self._commit(life, engines, tools, surfaces, added)
                keepers = host.adopt(engines)
                await anyio.to_thread.run_sync(lambda: _rebase(keepers, engines))
                self._set(life, "serving", "")
        new = [str(t.get("name")) for t in (added if added is not None else tools)]
        _say(f"upstream {name!r} joined: its tools {new} are in the catalog now")
        try:  # the sessions that can be told, and would see another list now
            await host.recheck()
            if added is None:
                await self._announce_surfaces(host, surfaces)
        except Exception as exc:  # the join stands; the next listing shows it anyway
            _say(f"sessions not told of upstream {name!r} ({type(exc).__name__}: {exc})")

    def _commit(
        self,
        life: UpstreamLife,
        engines: GatewayEngines,
        tools: list[dict[str, Any]],
        surfaces: SurfaceNames,
        added: list[dict[str, Any]] | None,
    ) -> None:
        """What a join changes besides the engines' reference: the pins judge the new tools
        (before any session can list them), the scan reads them, the server serves a
        newcomer's proxy, the metadata advertises the scopes they require."""
        name = life.upstream.name
        new = added if added is not None else tools
        if engines.pins is not None:
            engines.pins.adopt(engines.owners)
            if added is None:
                engines.pins.join(name, tools)
            else:
                engines.pins.observe(name, added)
        warn_at_start(self.config, {name: new})
        if added is None:
            warn_ungated(engines, {name: surfaces}, self.config.source)
            self._serve(name)
        if self._auth is not None:
            self._auth.advertise(s for t in engines.engine.catalog for s in t.contract.scopes)
        self._keep(name, tools, surfaces)
        life.answered(len(tools))

    def _build(
        self,
        current: GatewayEngines,
        tools: Mapping[str, Sequence[Mapping[str, Any]]],
        listed: Mapping[str, SurfaceNames],
    ) -> GatewayEngines:
        """New engines over the grown catalog, governing its surfaces (the gateway's own
        skills carried over)."""
        engines = current.grown(self.config, tools, listed)
        open_surfaces(self.config, engines, listed, warn=False, skills=current.own_skills)
        return engines

    def _refuse(
        self, life: UpstreamLife, added: Sequence[Mapping[str, Any]] | None, exc: Exception
    ) -> None:
        name = life.upstream.name
        why = str(exc) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}"
        if added is None:
            self._set(life, "refused", why)
            _say(
                f"upstream {name!r} answered, but its tools cannot join the catalog, so it "
                f"is kept out (refused) until the gateway restarts: {why}"
            )
            return
        names = frozenset(str(t.get("name")) for t in added)
        life.refuse(names, why)
        _say(
            f"upstream {name!r} now lists {sorted(names)}, which cannot join the catalog "
            f"(its other tools are served as before): {why}"
        )

    def _keep(self, name: str, tools: list[dict[str, Any]], surfaces: SurfaceNames) -> None:
        self.tools[name] = tools
        self.listed[name] = surfaces
        self._names[name] = frozenset(str(t.get("name")) for t in tools)

    async def _announce_surfaces(self, host: Host, surfaces: SurfaceNames) -> None:
        """Tell the reachable sessions that listed resources or prompts that the joiner
        brought some (they list again, and its contracts decide what they see)."""
        brought: list[ListKind] = []
        if surfaces.resources or surfaces.templates:
            brought.append("resources")
        if surfaces.prompts:
            brought.append("prompts")
        if not brought:
            return
        for key, keeper in host.reachable():
            listed = keeper.listed_surfaces
            if not listed:
                continue
            kinds: list[ListKind] = [
                k
                for k in brought
                if (k == "prompts" and "prompts" in listed)
                or (k == "resources" and {"resources", "templates"} & listed)
            ]
            if kinds:
                await host.channels.notify(key, kinds)

    # -- bookkeeping ----------------------------------------------------------------------------

    def _serve(self, name: str) -> None:
        if self._server is not None:
            self._server.add_provider(self.proxies[name])
        if self._serving is not None:
            self._serving(name)

    def _want(self, life: UpstreamLife, at: float) -> None:
        life.want(at)
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _set(self, life: UpstreamLife, state: State, error: str | None = None) -> None:
        life.become(state, error)
        if self._host is not None:
            self._host.metrics.upstream_up.labels(life.upstream.name).set(
                1.0 if state == "serving" else 0.0
            )


def _rebase(keepers: Sequence[Conversation], engines: GatewayEngines) -> None:
    """Move every session onto ``engines``, each under its own lock (a request of it in flight
    finishes first)."""
    for keeper in keepers:
        with keeper.lock:
            keeper.rebase(engines)


def _say(line: str) -> None:
    print(f"maitred mcp: {line}", file=sys.stderr, flush=True)
