"""A scan of upstream tool definitions for signs of prompt injection, warned about at start.

A tool's description reaches the model as trusted text, so a server can put instructions in
it ("tool poisoning"). The scan looks at every string of a tool's pinned definition (its
description, and every description, title, default, enum value and property name of its
schemas; :data:`maitred.gateway.pins.PINNED_FIELDS`) for three kinds of sign:

* ``hidden-instruction``: phrases that address the model rather than describe the tool --
  "ignore previous instructions", pseudo-tags such as ``<IMPORTANT>`` or ``<system>``, "do
  not tell the user", and paths of secrets an innocent tool has no reason to name
  (``~/.ssh``, ``id_rsa``, ``mcp.json``, ``.aws/credentials``);
* ``invisible-unicode``: characters a reviewer cannot see -- the format characters (Unicode
  category ``Cf``: zero-width spaces and joiners, bidi embeddings, overrides and isolates, the
  byte-order mark, the tag characters U+E0000..U+E007F that can spell out a hidden text), the
  supplementary variation selectors U+E0100..U+E01EF, and control characters other than tab
  and line breaks;
* ``long-description``: a description (of the tool or of one schema field) longer than
  :data:`LONG_DESCRIPTION` characters, where a few instructions hide easily.

It is a heuristic and says so: it **only warns** (``scan: warn``, the default; ``scan: off``
silences it), on stderr at start, naming the upstream, the tool, the field and the sign, and
``maitred mcp pin`` prints the same warnings for what it is asked to approve. What blocks is
pinning (:mod:`maitred.gateway.pins`): a reviewed definition that later changes is held back
whatever this scan thinks of it. The characters are named by code point, never printed, and a
phrase is quoted at most :data:`_EXCERPT` characters long.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from maitred.gateway.config import GatewayConfig
from maitred.gateway.pins import definition, field_path

#: a description longer than this (characters) is worth a second look
LONG_DESCRIPTION = 2000
_EXCERPT = 60

#: (what it is, pattern), matched case-insensitively against every string of a definition
PHRASES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (what, re.compile(pattern, re.IGNORECASE))
    for what, pattern in (
        (
            "an instruction to ignore earlier instructions",
            r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?"
            r"(?:previous|prior|above|earlier|preceding|other|system)\s+"
            r"(?:instructions?|prompts?|rules|messages|directions)",
        ),
        (
            "a pseudo-tag that addresses the model",
            r"<\s*/?\s*(?:important|system|instructions?|secret|hidden|admin|sudo)\s*>",
        ),
        (
            "an instruction to keep something from the user",
            r"\b(?:do\s+not|don'?t|never|without)\s+(?:tell(?:ing)?|inform(?:ing)?|mention(?:ing)?|"
            r"reveal(?:ing)?|show(?:ing)?|notify(?:ing)?|alert(?:ing)?|let(?:ting)?)\s+"
            r"(?:this\s+|it\s+|that\s+)?(?:to\s+)?(?:the\s+)?user",
        ),
        (
            "the path of a secret",
            r"~/\.ssh\b|\bid_(?:rsa|ed25519|ecdsa)\b|\bmcp\.json\b|\.aws/credentials|"
            r"/etc/(?:passwd|shadow)\b",
        ),
    )
)


@dataclass(frozen=True)
class Finding:
    """One suspicious sign in a tool's definition.

    Attributes:
        upstream: the upstream that lists the tool.
        tool: the tool's name.
        where: the field (``description``, ``inputSchema.properties.path.description``).
        sign: ``hidden-instruction``, ``invisible-unicode`` or ``long-description``.
        detail: what was found (the phrase, the code points, the length).
    """

    upstream: str
    tool: str
    where: str
    sign: str
    detail: str

    def line(self) -> str:
        """One line for stderr."""
        return (
            f"scan: tool {self.tool!r} (upstream {self.upstream!r}) {self.where}: {self.sign}: "
            f"{self.detail}; review it before approving it"
        )


def scan_tool(upstream: str, tool: Mapping[str, Any]) -> list[Finding]:
    """The suspicious signs in one ``tools/list`` entry (see the module docstring)."""
    name = str(tool.get("name", ""))
    found: list[Finding] = []
    for where, text, is_key in _strings(definition(tool)):
        hidden = _invisible(text)
        if hidden:
            what = f"the key {where}" if is_key else where
            found.append(Finding(upstream, name, what, "invisible-unicode", hidden))
        if is_key:
            continue
        for what, pattern in PHRASES:
            match = pattern.search(text)
            if match:
                quoted = ascii(match.group(0)[:_EXCERPT])
                found.append(
                    Finding(upstream, name, where, "hidden-instruction", f"{what} ({quoted})")
                )
        if where.endswith("description") and len(text) > LONG_DESCRIPTION:
            found.append(
                Finding(
                    upstream,
                    name,
                    where,
                    "long-description",
                    f"{len(text)} characters (more than {LONG_DESCRIPTION})",
                )
            )
    return found


def scan_listings(listings: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[Finding]:
    """:func:`scan_tool` over every upstream's listing (upstream -> its ``tools/list``)."""
    return [f for up, tools in listings.items() for tool in tools for f in scan_tool(up, tool)]


def warn_at_start(
    config: GatewayConfig, listings: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[Finding]:
    """Print every finding on stderr, unless the config says ``scan: off``; returns them."""
    if config.scan == "off":
        return []
    found = scan_listings(listings)
    for finding in found:
        print(f"maitred mcp: {finding.line()}", file=sys.stderr, flush=True)
    return found


def _strings(value: Any, path: str = "") -> Iterator[tuple[str, str, bool]]:
    """(path, text, is a key) for every string in ``value``, keys included."""
    if isinstance(value, str):
        yield path, value, False
    elif isinstance(value, Mapping):
        for key, item in value.items():
            step = field_path(path, str(key))
            if isinstance(key, str):
                yield step, key, True
            yield from _strings(item, step)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")


def _invisible(text: str) -> str:
    """The invisible characters of ``text``, named (``U+200B ZERO WIDTH SPACE x2``), or ``""``."""
    counts: dict[str, int] = {}
    for ch in text:
        point = ord(ch)
        if (
            unicodedata.category(ch) == "Cf"
            or 0xE0000 <= point <= 0xE007F
            or 0xE0100 <= point <= 0xE01EF
            or (unicodedata.category(ch) == "Cc" and ch not in "\t\n\r")
        ):
            counts[ch] = counts.get(ch, 0) + 1
    if not counts:
        return ""
    named = [
        f"U+{ord(ch):04X} {unicodedata.name(ch, 'control character')}" + (f" x{n}" if n > 1 else "")
        for ch, n in counts.items()
    ]
    if len(named) > 4:
        named = [*named[:4], f"{len(named) - 4} more kinds"]
    return ", ".join(named)
