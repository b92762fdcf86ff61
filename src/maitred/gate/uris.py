"""What a resource URI names: the one form a read is decided on, and served by.

A client may spell one resource many ways. ``skill://internal-comms/SKILL.md`` is also
``skill://%69nternal-comms/SKILL.md``, ``skill://internal-comms%2FSKILL.md``,
``SKILL://internal-comms/./SKILL.md`` and ``skill://internal-comms//SKILL.md``; a server that
unquotes what it is sent (FastMCP's skills provider does, and its template matcher unquotes
every parameter) serves them all as the same file. A gate that matched the URI as written
would let each of those spellings past a contract written for the first. So every read is
decided on :func:`canonical_uri` -- and the files of the gateway's own skills are *served* by
the same resolution (:meth:`SkillIndex.resolve`), so what is decided and what is served cannot
drift apart.

**The canonical form** (:func:`canonical_uri`):

* the scheme is lower-cased (RFC 3986: schemes are case-insensitive), and so is the
  authority of a hierarchical URI (its host is case-insensitive);
* the fragment is dropped (it is never part of what a server is asked for);
* every percent-encoded octet of the path is decoded, ``%2F`` included (a server that
  unquotes would serve it so), before the URI is split into authority and path;
* in the path, ``.`` and ``..`` segments are resolved and repeated slashes collapsed;
* the result is percent-encoded again the one way (only what a path may not hold is
  encoded, in upper-case hex), so the canonical form of a canonical form is itself;
* the query is kept, with only its unreserved characters decoded (``&`` and ``=`` keep
  their meaning).

``skill:`` URIs follow the skills extension's shape, ``skill://<skill path>/<file path>``,
where the skill's path may have several segments (``skill://ops/deploy/SKILL.md``): the whole
of it is a path, with no authority, and its case is kept (skill names are lower-case, and
files' names are case-sensitive).

**What it cannot know.** The canonical form is what an RFC 3986 server that unquotes once
would serve. A server whose own normalisation goes further -- case-insensitive paths, decoding
twice, ``\\`` read as ``/``, Unicode normalisation of names -- may serve under a spelling the
gate decided as something else; the gateway's docs say what that means for an upstream
(docs/gateway/surfaces.md, "The canonical name of a read").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote, unquote_to_bytes

#: what a canonical path keeps unencoded besides letters, digits and ``-._~`` (RFC 3986
#: ``pchar`` and ``/``): sub-delims, ``:`` and ``@``
_PATH_SAFE = "/!$&'()*+,;=:@"
#: what a canonical authority keeps unencoded (a host, its port, an IP literal)
_AUTHORITY_SAFE = "!$&'()*+,;=:@[]"
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):(.*)", re.DOTALL)
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
#: the extension's name of the file that lists a skill's files (served beside its files)
MANIFEST = "_manifest"


def canonical_uri(uri: str) -> str:
    """The canonical form of ``uri`` (see the module docstring); a string with no scheme is
    no URI and is returned as written.

    >>> canonical_uri("SKILL://%69nternal-comms%2F./SKILL.md#top")
    'skill://internal-comms/SKILL.md'
    >>> canonical_uri("Docs://Pricing//2024/../latest?q=%41%26b")
    'docs://pricing/latest?q=A%26b'
    """
    found = _SCHEME.fullmatch(uri)
    if found is None:
        return uri
    scheme, rest = found.group(1).lower(), found.group(2).partition("#")[0]
    hier, asked, query = rest.partition("?")
    raw = unquote_to_bytes(hier)
    if scheme == "skill":
        path = _normalized(raw.lstrip(b"/"))
        out = f"skill://{quote(path, _PATH_SAFE)}"
    elif raw.startswith(b"//"):
        authority, slash, path = raw[2:].partition(b"/")
        tail = _normalized(b"/" + path) if slash else b""
        out = f"{scheme}://{quote(authority.lower(), _AUTHORITY_SAFE)}{quote(tail, _PATH_SAFE)}"
    else:
        out = f"{scheme}:{quote(_normalized(raw), _PATH_SAFE)}"
    return f"{out}?{_ESCAPE.sub(_query_escape, query)}" if asked else out


def base_uri(canonical: str) -> str:
    """``canonical`` without its query and trailing slash: the resource a query or a trailing
    slash is appended to (a server may well ignore either, so its contract governs them)."""
    base = canonical.partition("?")[0]
    stripped = base.rstrip("/")
    return base if stripped.endswith(":") else stripped


def _normalized(path: bytes) -> bytes:
    """``path`` with repeated slashes collapsed and its ``.`` and ``..`` segments resolved
    (RFC 3986 5.2.4; a ``..`` above the root is dropped); a trailing slash is kept."""
    rooted = path.startswith(b"/")
    kept: list[bytes] = []
    parts = path.split(b"/")
    for part in parts:
        if part == b"..":
            if kept:
                kept.pop()
        elif part not in (b"", b"."):
            kept.append(part)
    trailing = bool(kept) and parts[-1] in (b"", b".", b"..")
    joined = b"/".join(kept)
    return (b"/" if rooted else b"") + joined + (b"/" if trailing else b"")


def _query_escape(escape: re.Match[str]) -> str:
    octet = int(escape.group(1), 16)
    return chr(octet) if octet in _UNRESERVED else f"%{octet:02X}"


@dataclass(frozen=True)
class SkillFile:
    """One file of a skill the gateway serves: what a ``skill://`` URI resolves to.

    Attributes:
        skill: the skill's path (``internal-comms``; ``ops/deploy`` for a nested one).
        path: the file's path inside the skill's folder (``SKILL.md``,
            ``references/GUIDE.md``; ``_manifest`` for the file list).
    """

    skill: str
    path: str

    @property
    def uri(self) -> str:
        """The file's canonical URI: the one it is listed, decided and served under."""
        return canonical_uri(f"skill://{quote(self.skill + '/' + self.path, _PATH_SAFE)}")

    @property
    def skill_uri(self) -> str:
        """The canonical URI of its skill's ``SKILL.md`` (the skill's key everywhere)."""
        return SkillFile(self.skill, "SKILL.md").uri


class SkillIndex:
    """The files of the skills the gateway serves, and the one resolution of a URI to them.

    Both the gate (:class:`~maitred.gate.surfaces.SurfaceContracts`) and the gateway's skill
    provider (:mod:`maitred.gateway.skillset`) resolve a read with :meth:`resolve`: the file it
    decides on is the file that is served, whatever the spelling.

    Args:
        files: each skill's path and the paths of its files (the manifest's).
    """

    def __init__(self, files: Mapping[str, Iterable[str]]) -> None:
        self.files = {skill: frozenset([*paths, MANIFEST]) for skill, paths in files.items()}
        #: each skill's folder URI, canonical, with its trailing slash
        self.roots = {skill: SkillFile(skill, "").uri for skill in self.files}

    def __bool__(self) -> bool:
        return bool(self.files)

    def owner(self, uri: str) -> str | None:
        """The skill whose folder the canonical form of ``uri`` falls under (None: none of
        the gateway's skills)."""
        canonical = canonical_uri(uri)
        under = [s for s, root in self.roots.items() if canonical.startswith(root)]
        return max(under, key=len) if under else None

    def resolve(self, uri: str) -> SkillFile | None:
        """The file of one of the gateway's skills that ``uri`` names, however spelled (None:
        it names none of them, e.g. a file the skill lacks, or a URI with a query)."""
        canonical = canonical_uri(uri)
        skill = self.owner(canonical)
        if skill is None or "?" in canonical:
            return None
        try:
            path = unquote_to_bytes(canonical.removeprefix(self.roots[skill])).decode()
        except UnicodeDecodeError:
            return None
        return SkillFile(skill, path) if path in self.files[skill] else None


__all__ = ["MANIFEST", "SkillFile", "SkillIndex", "base_uri", "canonical_uri"]
