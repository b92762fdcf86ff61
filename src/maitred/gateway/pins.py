"""Pinned tool definitions: the gateway serves a tool only as it was reviewed.

An MCP server can change a tool's description or schema at any time after someone reviewed
it -- a "rug pull", or tool-description poisoning: the text a model reads is the attack. The
gateway keeps a **pin** per reviewed tool, written by ``maitred mcp pin``: the hash of the
tool's definition and the definition itself, so that a later difference can be *named*
(``description``, ``inputSchema.properties.path.description``), not just detected.

* **What is pinned.** The fields a model or a client acts on (:data:`PINNED_FIELDS`): name,
  description, input schema, output schema and annotations (a ``readOnlyHint`` turned true can
  make a client skip its confirmation). Not ``title``, ``icons``, ``execution`` or ``_meta``:
  display and protocol metadata rather than what the tool does (and the gateway once filled in
  a title and metadata of its own, so pins written then stay valid).
* **The hash** is the project's versioned content hash (:func:`maitred._canonical.content_hash`,
  ``c1:`` + SHA-256 of canonical JSON): object keys sorted, so an upstream that sends the same
  schema with its keys in another order keeps its pin; arrays keep their order (``required``
  and ``enum`` lists are compared as sent); strings are hashed exactly as received, with no
  Unicode normalisation, so an invisible character added to a description -- a zero-width
  space, a bidi control, a tag character -- changes the hash.
* **At start and on every re-listing** (:class:`PinGuard`): each upstream tool's definition is
  hashed and compared with its pin. A tool that differs is *held back*: hidden from every
  session's ``tools/list`` and ``find_tools``, and a call by name is refused by the action gate
  with ``TOOL_DEFINITION_CHANGED`` (:class:`~maitred.actions.model.Hold`: a logged decision
  with a decision id; the model is told that the tool changed, never what it now says). The
  gateway re-lists an upstream on every client ``tools/list`` and whenever the proxy's cached
  list has expired, so a change made while the gateway runs is caught at the next listing. A
  tool whose definition returns to its pin is served again. A tool with no pin (added after the
  review) is held back the same way unless the config says ``pins: {unpinned: allow}``.
* **Re-approval** is ``maitred mcp pin`` (all tools, or ``--tool NAME`` for one) and takes
  effect at the gateway's next start, which also rebuilds the catalog (argument schemas,
  contracts) from the approved definitions.

The pin file is JSON, written atomically (a reader never sees half a file) under a lock beside
it (two ``maitred mcp pin`` runs never lose each other's approvals); non-ASCII characters are
written as ``\\uXXXX`` escapes, so an invisible character is visible to whoever reviews the file::

    {"format": "maitred-pins/1",
     "upstreams": {"notes": {"add_note": {"hash": "c1:…", "pinned_at": "2026-…Z",
                                          "definition": {"name": "add_note", …}}}}}

Nothing here imports an MCP library: definitions are MCP ``tools/list`` entries as JSON.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from maitred._atomic import entry_lock, write_file
from maitred._canonical import canonical_json, content_hash
from maitred.actions.model import Hold
from maitred.config_reader import ConfigReader
from maitred.errors import ConfigError
from maitred.gateway.config import GatewayConfig

#: the code of a refused call to a tool whose definition is not the one reviewed
TOOL_DEFINITION_CHANGED = "TOOL_DEFINITION_CHANGED"
#: the fields of a ``tools/list`` entry a pin covers, in the order diffs name them
PINNED_FIELDS = ("name", "description", "inputSchema", "outputSchema", "annotations")
#: the pin file's format tag
FORMAT = "maitred-pins/1"

_CHANGED_FOR_MODEL = (
    "this tool's definition changed at its server after it was reviewed, so the gateway holds "
    "it back until an operator approves the new definition"
)
_UNPINNED_FOR_MODEL = (
    "this tool has not been reviewed for this gateway, so the gateway holds it back until an "
    "operator approves it"
)


def definition(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The pinned part of a ``tools/list`` entry (:data:`PINNED_FIELDS` that it has)."""
    return {k: tool[k] for k in PINNED_FIELDS if k in tool}


def definition_hash(tool: Mapping[str, Any]) -> str:
    """The versioned hash of ``tool``'s pinned part (see the module docstring).

    Raises:
        ValueError: the definition is not plain JSON (a NaN, a non-string key...).
    """
    try:
        return content_hash(definition(tool))
    except TypeError as exc:
        raise ValueError(str(exc)) from None


#: a side of a difference where the field is absent
ABSENT: Any = object()


def differences(old: Any, new: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Where ``new`` differs from ``old``: (path, old value, new value), :data:`ABSENT` for a
    side that lacks the field. Objects are compared key by key and arrays of one length item
    by item, so a path names the smallest part that changed (``description``,
    ``inputSchema.properties.path.description``, ``inputSchema.required[1]``).

    Keys that are not plain identifiers are quoted as JSON (``properties["a.b"]``), with
    non-ASCII escaped, so a key holding an invisible character shows it.
    """
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        out: list[tuple[str, Any, Any]] = []
        for key in [*new, *(k for k in old if k not in new)]:
            step = field_path(path, str(key))
            if key not in old or key not in new:
                out.append((step, old.get(key, ABSENT), new.get(key, ABSENT)))
            else:
                out += differences(old[key], new[key], step)
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        items: list[tuple[str, Any, Any]] = []
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            items += differences(a, b, f"{path}[{i}]")
        return items
    if _same(old, new):
        return []
    return [(path or "(the whole definition)", old, new)]


def changed_fields(old: Any, new: Any) -> list[str]:
    """The paths of :func:`differences`, a field present on one side only marked
    ``(added)`` or ``(removed)``."""
    return [
        f"{p} (added)" if a is ABSENT else f"{p} (removed)" if b is ABSENT else p
        for p, a, b in differences(old, new)
    ]


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON (``1`` and ``True`` are not; ``1`` and ``1.0`` are written apart too)."""
    try:
        return canonical_json(a) == canonical_json(b)
    except (TypeError, ValueError):
        return False


def field_path(path: str, key: str) -> str:
    """``path.key``, or ``path["key"]`` (JSON, non-ASCII escaped) for a key that is not a plain
    identifier, so that a key holding an invisible character shows it."""
    plain = key.isascii() and key.replace("_", "a").replace("-", "a").replace("$", "a").isalnum()
    if plain and not key[0].isdigit():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


@dataclass(frozen=True)
class Pin:
    """One reviewed tool definition: its hash, the definition, when it was approved."""

    hash: str
    definition: Mapping[str, Any]
    pinned_at: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"hash": self.hash, "pinned_at": self.pinned_at, "definition": self.definition}


@dataclass(frozen=True)
class Pins:
    """A pin file's content: upstream name -> tool name -> :class:`Pin`."""

    upstreams: Mapping[str, Mapping[str, Pin]] = field(default_factory=dict)

    def get(self, upstream: str, tool: str) -> Pin | None:
        return self.upstreams.get(upstream, {}).get(tool)

    def __iter__(self) -> Iterator[tuple[str, str, Pin]]:
        for upstream, tools in self.upstreams.items():
            for name, pin in tools.items():
                yield upstream, name, pin

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "upstreams": {
                up: {name: pin.to_json() for name, pin in sorted(tools.items())}
                for up, tools in sorted(self.upstreams.items())
            },
        }


def load_pins(path: str | Path) -> Pins:
    """Read and check a pin file (every stored hash is recomputed from its definition).

    Raises:
        ConfigError: the file is missing, is not JSON, or an entry is malformed or does not
            hash to its stored value (the message names the file and the entry).
    """
    where = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such pin file") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{where}: cannot read the pin file: {exc}") from None
    r = ConfigReader(where)
    top = r.mapping(data, "")
    r.no_unknown(top, frozenset({"format", "upstreams"}), "")
    if top.get("format") != FORMAT:
        r.fail("format", f"must be {FORMAT!r} (a file `maitred mcp pin` wrote)")
    out: dict[str, dict[str, Pin]] = {}
    for up, tools in r.mapping(top.get("upstreams") or {}, "upstreams").items():
        for name, entry in r.mapping(tools, f"upstreams.{up}").items():
            at = f"upstreams.{up}.{name}"
            item = r.mapping(entry, at)
            r.no_unknown(item, frozenset({"hash", "pinned_at", "definition"}), at)
            stored = r.string(r.require(item, "hash", at), f"{at}.hash")
            body = r.mapping(r.require(item, "definition", at), f"{at}.definition")
            if body.get("name") != name:
                r.fail(f"{at}.definition.name", f"must be {name!r}, the tool it pins")
            try:
                digest = definition_hash(body)
            except ValueError as exc:
                r.fail(f"{at}.definition", f"is not plain JSON ({exc})")
            if digest != stored:
                r.fail(
                    f"{at}.hash",
                    f"is {stored!r}, but the stored definition hashes to {digest!r}; the file "
                    "was edited by hand. Re-approve the tool with `maitred mcp pin --tool "
                    f"{name}`",
                )
            pinned_at = item.get("pinned_at", "")
            out.setdefault(up, {})[name] = Pin(stored, body, str(pinned_at or ""))
    return Pins(out)


def write_pins(path: str | Path, pins: Pins) -> None:
    """Write ``pins`` to ``path`` atomically (see the module docstring for the form)."""
    text = json.dumps(pins.to_json(), indent=2, sort_keys=True, ensure_ascii=True) + "\n"
    write_file(Path(path), text)


def pin_lock(path: str | Path) -> AbstractContextManager[None]:
    """The lock that serialises read-modify-write runs on one pin file (``with pin_lock(p):``)."""
    return entry_lock(Path(path))


# -- re-approval (maitred mcp pin) ---------------------------------------------------------------

Status = Literal["new", "changed", "unchanged", "removed", "not approved"]


@dataclass(frozen=True)
class Change:
    """What ``maitred mcp pin`` did with one tool.

    ``status``: ``new`` (no pin before, approved now), ``changed`` (re-approved; ``fields``
    names what differs from the old pin), ``unchanged``, ``removed`` (pinned, no longer
    listed: the pin is dropped), ``not approved`` (new or changed, but ``--tool`` did not name
    it: the old pin, or none, stays).
    """

    upstream: str
    tool: str
    status: Status
    fields: tuple[str, ...] = ()
    #: (path, old value, new value) per field that differs (:func:`differences`)
    values: tuple[tuple[str, Any, Any], ...] = ()


def repin(
    old: Pins,
    listings: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    only: Collection[str] | None = None,
    now: float | None = None,
) -> tuple[Pins, list[Change]]:
    """The pins after approving what the upstreams list now, and what changed.

    Args:
        old: the pins so far (empty for a first review).
        listings: upstream name -> its ``tools/list`` entries now.
        only: approve only these tool names (``--tool``); every other tool keeps its old pin
            (or stays unpinned), and no pin is dropped. ``None``: approve every listed tool and
            drop the pins of tools no longer listed.
        now: the approval time (unix seconds), for ``pinned_at``.

    Raises:
        ConfigError: ``only`` names a tool no upstream lists, or a definition is not plain
            JSON.
    """
    if only is not None:
        listed = {str(t.get("name")) for tools in listings.values() for t in tools}
        unknown = sorted(set(only) - listed)
        if unknown:
            raise ConfigError(
                f"--tool names {unknown}, which no upstream lists; choose from {sorted(listed)}"
            )
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None else now))
    result: dict[str, dict[str, Pin]] = {up: dict(tools) for up, tools in old.upstreams.items()}
    changes: list[Change] = []
    for upstream, tools in listings.items():
        mine = result.setdefault(upstream, {})
        names = set()
        for tool in tools:
            name = str(tool.get("name"))
            names.add(name)
            try:
                digest = definition_hash(tool)
            except ValueError as exc:
                raise ConfigError(
                    f"upstream {upstream!r}: tool {name!r} has a definition that is not plain "
                    f"JSON ({exc}); it cannot be pinned"
                ) from None
            before = old.get(upstream, name)
            if before is not None and before.hash == digest:
                changes.append(Change(upstream, name, "unchanged"))
                continue
            now_def = definition(tool)
            fields = () if before is None else tuple(changed_fields(before.definition, now_def))
            values = () if before is None else tuple(differences(before.definition, now_def))
            if only is not None and name not in only:
                changes.append(Change(upstream, name, "not approved", fields, values))
                continue
            mine[name] = Pin(digest, now_def, stamp)
            status: Status = "new" if before is None else "changed"
            changes.append(Change(upstream, name, status, fields, values))
        if only is None:
            for name in sorted(set(mine) - names):
                del mine[name]
                changes.append(Change(upstream, name, "removed"))
    return Pins({up: tools for up, tools in result.items() if tools}), changes


# -- the running gateway -----------------------------------------------------------------------


@dataclass(frozen=True)
class Drift:
    """A listed tool whose definition is not its pin (``pinned == ""``: it has none)."""

    upstream: str
    tool: str
    hash: str
    pinned: str
    fields: tuple[str, ...] = ()

    @property
    def unpinned(self) -> bool:
        return not self.pinned

    def what(self) -> str:
        """The fields that differ, for a line of text."""
        return ", ".join(self.fields) or "its definition"


class PinGuard:
    """The pins of a running gateway: which tools are held back now, and why.

    Built at start by :func:`guard_at_start`; :meth:`observe` is called with every fresh
    listing of an upstream (at start, then each time the gateway re-lists it). :meth:`held` is
    read by every listing and call, from any thread: it is a mapping that is replaced, never
    changed, under the guard's lock, and :attr:`generation` counts its replacements (the state
    watch compares it, so a session is re-checked when the held set changed).

    Args:
        pins: the reviewed definitions.
        owners: tool name -> the upstream that listed it at start (a tool another upstream
            lists later is not this guard's to judge until the catalog takes it in:
            :meth:`join`).
        unpinned: ``hide`` or ``allow`` a tool that has no pin.
        file: the pin file, for messages.
        config: the gateway config's path, for the re-approval command messages print.
    """

    def __init__(
        self,
        pins: Pins,
        owners: Mapping[str, str],
        *,
        unpinned: Literal["allow", "hide"] = "hide",
        file: str = "",
        config: str = "",
    ) -> None:
        self.pins = pins
        self.owners = dict(owners)
        self.unpinned = unpinned
        self.file = file
        self.config = config
        self.generation = 0
        self._held: Mapping[str, Hold] = {}
        self._drifts: Mapping[str, Drift] = {}
        self._seen: dict[str, str] = {}
        self._lock = threading.Lock()

    def adopt(self, owners: Mapping[str, str]) -> None:
        """Judge the tools of ``owners`` too (tool -> upstream): the catalog grew to take
        them in (an upstream joined after the start, or listed a new tool)."""
        with self._lock:
            self.owners = {**self.owners, **owners}

    def join(self, upstream: str, tools: Sequence[Mapping[str, Any]]) -> list[Drift]:
        """Judge ``upstream``'s listing as the catalog takes it in (at start, or when it joins
        later: :meth:`adopt` first); a pinned tool it no longer lists is named on stderr."""
        found = self.observe(upstream, tools)
        names = {t.get("name") for t in tools}
        for name in sorted(set(self.pins.upstreams.get(upstream, {})) - names):
            _say(f"pinned tool {name!r} (upstream {upstream!r}) is no longer listed by it")
        return found

    def held(self) -> Mapping[str, Hold]:
        """Tool name -> why it is held back, now (never mutated: safe to read unlocked)."""
        return self._held

    def drifts(self) -> tuple[Drift, ...]:
        """What is held back now, as found (the tools, the fields that differ)."""
        return tuple(self._drifts.values())

    def observe(self, upstream: str, tools: Sequence[Mapping[str, Any]]) -> list[Drift]:
        """Compare a fresh listing of ``upstream`` with its pins; the drifts found *now*.

        Only a tool whose definition differs from what this guard last saw of it is judged
        again, so a listing that changed nothing costs a hash per tool and says nothing. Each
        change of what is held back is reported on stderr (held, or served again).
        """
        found: list[Drift] = []
        with self._lock:
            held, drifts = dict(self._held), dict(self._drifts)
            for tool in tools:
                name = tool.get("name")
                if not isinstance(name, str) or self.owners.get(name) != upstream:
                    continue
                try:
                    digest = definition_hash(tool)
                except ValueError:
                    digest = "not-json"
                if self._seen.get(name) == digest:
                    continue
                self._seen[name] = digest
                drift = self._drift(upstream, tool, digest)
                if drift is None or (drift.unpinned and self.unpinned == "allow"):
                    drifts.pop(name, None)
                    if held.pop(name, None) is not None:
                        _say(f"tool {name!r} (upstream {upstream!r}) matches its pin again: served")
                    elif drift is not None:
                        _say(
                            f"tool {name!r} (upstream {upstream!r}) has no pin in {self.file}; "
                            "served unreviewed (pins.unpinned: allow)"
                        )
                    continue
                held[name], drifts[name] = self._hold(drift), drift
                found.append(drift)
                _say(self._line(drift))
            if held != self._held:
                self._held, self._drifts = held, drifts
                self.generation += 1
        return found

    def _drift(self, upstream: str, tool: Mapping[str, Any], digest: str) -> Drift | None:
        name = str(tool["name"])
        pin = self.pins.get(upstream, name)
        if pin is not None and pin.hash == digest:
            return None
        if pin is None:
            return Drift(upstream, name, digest, "")
        fields = tuple(changed_fields(pin.definition, definition(tool)))
        return Drift(upstream, name, digest, pin.hash, fields)

    def _approve(self, tool: str) -> str:
        return f"maitred mcp pin --config {self.config or 'gateway.yaml'} --tool {tool}"

    def _hold(self, drift: Drift) -> Hold:
        if drift.unpinned:
            reason = (
                f"no pin in {self.file} (a tool added after the review); approve it with "
                f"`{self._approve(drift.tool)}`"
            )
            return Hold(TOOL_DEFINITION_CHANGED, _UNPINNED_FOR_MODEL, reason)
        reason = (
            f"its definition {drift.hash[:15]} differs from the one pinned in {self.file} "
            f"({drift.pinned[:15]}) in {drift.what()}; re-approve it with "
            f"`{self._approve(drift.tool)}`"
        )
        return Hold(TOOL_DEFINITION_CHANGED, _CHANGED_FOR_MODEL, reason)

    def _line(self, drift: Drift) -> str:
        why = (
            f"has no pin in {self.file}"
            if drift.unpinned
            else f"differs from its pin in {drift.what()}"
        )
        return (
            f"tool {drift.tool!r} (upstream {drift.upstream!r}) {why}: hidden, and calls are "
            f"refused ({TOOL_DEFINITION_CHANGED}) until it is approved: {self._approve(drift.tool)}"
        )


def _say(line: str) -> None:
    print(f"maitred mcp: {line}", file=sys.stderr, flush=True)


def guard_at_start(
    config: GatewayConfig,
    tools: Mapping[str, Sequence[Mapping[str, Any]]],
    owners: Mapping[str, str],
) -> PinGuard | None:
    """The pin guard of a gateway starting with ``tools`` (upstream -> its start listing), or
    ``None`` when the config names no pin file. Every tool held back is named on stderr, and so
    is a pinned tool its upstream no longer lists.

    Raises:
        ConfigError: the pin file is missing or invalid (naming the config's field).
    """
    options = config.pins
    if options is None:
        return None
    try:
        pins = load_pins(options.file)
    except ConfigError as exc:
        hint = (
            f"review the upstreams' tools and write it with `maitred mcp pin --config "
            f"{config.source}`"
            if not Path(options.file).exists()
            else "fix it, or write it again with `maitred mcp pin`"
        )
        raise ConfigError(f"{config.source}: field 'pins.file': {exc}; {hint}") from None
    guard = PinGuard(
        pins, owners, unpinned=options.unpinned, file=options.file, config=config.source
    )
    for up in config.upstreams:
        if up.name in tools:  # one that did not answer is judged when it joins
            guard.join(up.name, tools[up.name])
    return guard
