"""A read is decided on what would be served, never on how its URI was spelled.

The gateway fronts the library server (``library_server.py``: ``docs://pricing`` and the
template ``reports://{year}`` hidden on the free plan by its sidecar) and serves two skill
folders of its own (``price-negotiation`` hidden on the free plan). A client may spell each of
those many ways -- any character percent-encoded (``%2F`` too, in either case of hex),
``./`` and ``x/../`` segments, doubled slashes, the scheme in any case, a fragment, a query
or a trailing slash -- and a server that unquotes what it is sent would serve them all.

The properties: the canonical form is one fixed point every spelling reaches; the gateway's
own skill files are resolved exactly as FastMCP's skills provider would serve them (so nothing
it would serve escapes the gate); and, end to end against ``maitred mcp`` as a process over
stdio and over streamable HTTP, with ``ungated: pass`` and ``ungated: hide``, no generated
spelling of any hidden skill file or hidden resource is ever served: each is a refusal, with a
decision id, logged as a rejection that names the canonical URI it was decided on.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import mcp_types as mt
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.skills import SkillsClientExtension
from fastmcp.skills.models import GetSkillParams, GetSkillRequest, GetSkillResult
from fastmcp.skills.provider import _locate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError
from tests.mcp.conftest import SRC, Process, child_env, sha256
from tests.mcp.test_skills import HIDDEN_SIDECAR, _skill
from tests.mcp.test_surfaces import LIBRARY, Library, library_at

from maitred.gate.uris import SkillFile, SkillIndex, base_uri, canonical_uri
from maitred.gateway import load_config
from maitred.gateway.build import open_gateway
from maitred.log import open_log
from maitred.log.lookup import DecisionFilter, list_decisions

TOKEN = "tok-names-acc1-5d0e"
HIDDEN_FILES = ("SKILL.md", "references/GUIDE.md", "_manifest")
#: what the free plan hides, whatever ``ungated`` says (a template: one of its URIs)
HIDDEN = (
    *(f"skill://price-negotiation/{f}" for f in HIDDEN_FILES),
    "docs://pricing",
    "reports://{year}",
)
#: and what ``ungated: hide`` hides besides (no contract names it)
HIDDEN_BY_HIDE = ("docs://roadmap",)
_JUNK_SEGMENTS = ("", "", "/", "./", "zz/../")
_SUFFIXES = ("", "#top", "?v=2", "/", "/.", "//")


@st.composite
def spellings(draw: st.DrawFn, uri: str) -> str:
    """One spelling of ``uri`` (``scheme://rest``, its canonical form) that a server which
    unquotes would serve as ``uri``: see the module docstring."""
    scheme, rest = uri.split("://", 1)
    scheme = "".join(c.upper() if draw(st.booleans()) else c for c in scheme)
    if scheme.lower() == "skill":  # the whole of it is a path: junk may go anywhere
        head, segments = draw(st.sampled_from(("", "/", "./"))), rest.split("/")
    else:  # the authority is case-insensitive; junk goes in the path after it
        authority, *segments = rest.split("/")
        head = "".join(c.upper() if draw(st.booleans()) else c for c in authority)
        segments = ["", *segments] if segments else []
    path = head
    for i, segment in enumerate(segments):
        path += ("/" if i or head else "") + draw(st.sampled_from(_JUNK_SEGMENTS)) + segment
    if scheme.lower() != "skill" and not segments:
        path += draw(st.sampled_from(("", "/", "/zz/..", "/.")))
    suffix = draw(st.sampled_from(_SUFFIXES)) if "_manifest" not in uri else ""
    encoded = "".join(_encoded(draw, c) for c in "//" + path)
    return f"{scheme}:{encoded}{suffix}"


def _encoded(draw: st.DrawFn, char: str) -> str:
    how = draw(st.sampled_from(("keep", "keep", "keep", "upper", "lower")))
    if how == "keep":
        return char
    hexed = "".join(f"%{b:02X}" for b in char.encode())
    return hexed if how == "upper" else hexed.lower()


def _instance(draw: st.DrawFn, hidden: str) -> str:
    """``hidden``, a template's URI made concrete."""
    year = draw(st.integers(min_value=1900, max_value=2100))
    return hidden.replace("{year}", str(year))


# -- the canonical form, on its own ----------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_every_spelling_of_a_uri_has_its_canonical_form_and_that_form_is_a_fixed_point(
    data: st.DataObject,
) -> None:
    uri = _instance(data.draw, data.draw(st.sampled_from((*HIDDEN, *HIDDEN_BY_HIDE))))
    spelled = data.draw(spellings(uri))
    canonical = canonical_uri(spelled)
    assert canonical_uri(canonical) == canonical
    # the fragment dropped; a query or a trailing slash is governed by what it is appended to
    assert base_uri(canonical) == uri


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40), st.data())
def test_a_text_canonical_form_is_a_fixed_point(text: str, data: st.DataObject) -> None:
    scheme = data.draw(st.sampled_from(("skill://", "docs://", "Docs:", "file:///", "")))
    canonical = canonical_uri(scheme + text)
    assert canonical_uri(canonical) == canonical


FILES = {"price-negotiation": ("SKILL.md", "references/GUIDE.md", "notes/a b%.md")}


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_whatever_fastmcps_provider_would_serve_the_index_resolves_to_the_same_file(
    data: st.DataObject,
) -> None:
    """FastMCP's skills provider serves a URI by unquoting it (``_locate``): every URI it
    would map to a file resolves to that very file, so no spelling reaches a file unjudged."""
    index = SkillIndex(FILES)
    name = data.draw(st.sampled_from(FILES["price-negotiation"]))
    listed = f"skill://price-negotiation/{quote(name, safe='/')}"
    raw = data.draw(st.one_of(spellings(listed), st.text(max_size=30).map(listed.__add__)))
    located = _locate(raw, FILES)
    if located is not None and located[2] in FILES[located[0]]:
        assert index.resolve(raw) == SkillFile(located[0], located[2])
    found = index.resolve(raw)
    if found is not None:  # its one URI, which FastMCP's provider serves as that same file
        assert _locate(found.uri, FILES) == ("price-negotiation", FILES[found.skill], found.path)


# -- end to end: the gateway as a process, over stdio and over HTTP --------------------------


def _site(root: Path, ungated: str) -> Library:
    _skill(root, "handbook-tour", "Walk a new hire through the handbook.", "cost: 1\n")
    _skill(root, "price-negotiation", "Negotiate a price with a customer.", HIDDEN_SIDECAR)
    return library_at(root, extra=f"skills: [skills]\nungated: {ungated}\n")


def _http_config(site: Library, ungated: str) -> Path:
    env = {
        "CALLS_FILE": str(site.root / "calls.jsonl"),
        "ACCOUNTS": str(site.root / "accounts.json"),
    }
    config = site.root / "gateway-http.yaml"
    config.write_text(
        f"skills: [skills]\nungated: {ungated}\n"
        "state: accounts.json\nlog: gateway.sqlite\n"
        "server: {host: 127.0.0.1, port: 0}\n"
        f"tokens: [{{token_sha256: {sha256(TOKEN)}, tenant: books, account: acc-1}}]\n"
        "upstreams:\n"
        "  - name: library\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(LIBRARY))}]\n"
        f"    env: {json.dumps(env)}\n"
        "    contracts: library.maitred.yaml\n",
        encoding="utf-8",
    )
    return config


@contextmanager
def _connected(site: Library, transport: str, ungated: str) -> Iterator[tuple[BlockingPortal, Any]]:
    """A portal to an event loop and a client of ``site``'s gateway, run as a process."""
    extensions = [SkillsClientExtension()]
    gateway: Process | None = None
    if transport == "stdio":
        args = ["-m", "maitred.cli.main", "mcp", "--config", str(site.config)]
        env = {**child_env(), "PYTHONPATH": str(SRC)}
        client: Any = Client(
            StdioTransport(sys.executable, args, env=env, keep_alive=False), extensions=extensions
        )
    else:
        command = [sys.executable, "-m", "maitred.cli.main", "mcp"]
        gateway = Process(
            [*command, "--config", str(_http_config(site, ungated))],
            child_env(),
            r"serving (http://\S+)",
        )
        client = Client(gateway.match.group(1), auth=TOKEN, extensions=extensions)
    try:
        with start_blocking_portal() as portal, portal.wrap_async_context_manager(client):
            yield portal, client
    finally:
        if gateway is not None:
            gateway.stop()


async def _refusal(client: Any, method: str, uri: str) -> dict[str, Any]:
    """The rejection a raw ``resources/read`` or ``skills/get`` of ``uri`` is answered with (the
    URI sent byte for byte, never normalised by the client); a served answer fails."""
    request: Any
    if method == "resources/read":
        request = mt.ReadResourceRequest(params=mt.ReadResourceRequestParams(uri=uri))
        answer: Any = mt.ReadResourceResult
    else:
        request, answer = GetSkillRequest(params=GetSkillParams(uri=uri)), GetSkillResult
    try:  # (an AssertionError, not pytest.fail: the portal's loop must outlive a failure)
        served = await client.session.send_request(request, answer)
    except MCPError as exc:
        error = exc.error
    else:
        raise AssertionError(f"{method} {uri!r} was served: {served!r:.300}")
    assert error.code == mt.INVALID_PARAMS, (uri, error)
    data = error.data
    assert isinstance(data, dict) and data.get("message") == error.message, (uri, error)
    return data


@pytest.mark.slow
@pytest.mark.parametrize("ungated", ["pass", "hide"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_no_spelling_of_a_hidden_skill_file_or_resource_is_ever_served(
    tmp_path: Path, transport: str, ungated: str
) -> None:
    site = _site(tmp_path, ungated)
    hidden = (*HIDDEN, *HIDDEN_BY_HIDE) if ungated == "hide" else HIDDEN
    attempts: list[tuple[str, str, str, dict[str, Any]]] = []

    with _connected(site, transport, ungated) as (portal, client):

        @settings(
            max_examples=40,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        )
        @given(st.data())
        def attempt(data: st.DataObject) -> None:
            target = _instance(data.draw, data.draw(st.sampled_from(hidden)))
            uri = data.draw(spellings(target))
            refused = portal.call(_refusal, client, "resources/read", uri)
            assert refused["code"] == "RESOURCE_NOT_AVAILABLE", (uri, refused)
            attempts.append(("resources/read", uri, target, refused))
            if target.endswith("/SKILL.md"):  # the skill's entry, by the same spelling
                got = portal.call(_refusal, client, "skills/get", uri)
                assert got["code"] == "SKILL_NOT_AVAILABLE", (uri, got)
                attempts.append(("skills/get", uri, target, got))

        attempt()

    assert len(attempts) >= 40
    logged = site.decisions()
    for method, uri, target, refused in attempts:
        row = logged[refused["decision_id"]]  # each attempt a logged refusal
        assert (row["verdict"], row["call"]["name"]) == ("reject", method), (uri, row)
        assert row["call"]["arguments"]["uri"] == uri
        canonical = row["call"]["arguments"].get("canonical", uri)
        assert canonical == canonical_uri(uri)  # decided on, and logged with, its identity
        assert base_uri(canonical) == target, (uri, row)
    served = site.served()
    assert not [s for s in served if s.startswith(("read docs://pricing", "read reports://"))]
    assert not [s for s in served if s == "read docs://roadmap"] or ungated == "pass"


def test_an_allowed_skill_file_is_served_by_its_canonical_name_and_a_missing_one_refused(
    tmp_path: Path,
) -> None:
    """The file served is the file decided on: a respelled read of a visible skill's file is
    served that file, logged with both spellings; a URI under a served skill that names none
    of its files is refused like an unknown resource, whatever ``ungated`` says."""
    site = _site(tmp_path, "pass")
    got: dict[str, Any] = {}

    async def main() -> None:
        server, engines = await open_gateway(load_config(site.config))
        try:
            async with Client(server, mode="legacy") as client:  # type: ignore[arg-type]
                read = mt.ReadResourceRequest(
                    params=mt.ReadResourceRequestParams(
                        uri="SKILL://%68andbook-tour/./references%2FGUIDE.md#top"
                    )
                )
                got["read"] = await client.session.send_request(read, mt.ReadResourceResult)
                got["missing"] = await _refusal(
                    client, "resources/read", "skill://handbook-tour/nope.md"
                )
                got["hidden"] = await _refusal(
                    client, "resources/read", "skill://price-negotiation/SKILL.md"
                )
        finally:
            engines.close()

    anyio.run(main)
    answer = got["read"]
    assert answer.contents[0].text == "The handbook-tour guide.\n"
    logged = site.decisions()[answer.meta["maitred/decision_id"]]
    assert logged["verdict"] == "allow"
    assert logged["call"]["arguments"] == {
        "uri": "SKILL://%68andbook-tour/./references%2FGUIDE.md#top",
        "canonical": "skill://handbook-tour/references/GUIDE.md",
    }
    missing, hidden = got["missing"], got["hidden"]
    assert missing["code"] == hidden["code"] == "RESOURCE_NOT_AVAILABLE"
    assert missing["message"] == hidden["message"]  # nothing says which one exists
    row = site.decisions()[missing["decision_id"]]
    assert row["verdict"] == "reject" and "no such file of a skill is served" in row["message"]
    # every read names its account, so an operator's filter by account finds it (item 8)
    assert logged["account"] == row["account"] == "acc-1"
    with open_log(str(site.root / "gateway.sqlite")) as log:
        mine = list_decisions(log, DecisionFilter(account="acc-1", kind="action", limit=500))
    found = {d.decision_id for d in mine.decisions}
    assert {answer.meta["maitred/decision_id"], missing["decision_id"]} <= found
