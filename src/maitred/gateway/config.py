"""The gateway's configuration file (YAML), read once at start and checked field by field.

::

    account: acc-1                  # over stdio: whose state the gates read (--account overrides)
    state: accounts.json            # a provider spec (maitred.state.open_provider)
    tables: {account: accounts}     # key root -> table, for SQL providers only
    log: gateway.sqlite             # the decision log (path or postgresql:// URL)
    settings: {}                    # values for rule factories in the contracts sidecars
    disclosure: all                 # all | find_tools (tools/list starts with find_tools only)
    find: {method: bm25, top_k: 5}  # the recall find_tools runs (find_tools mode), and
                                    # optionally its analyzer (scripts) and embedder (auto),
                                    # and call_tool: the name of the tool listed beside
                                    # find_tools that runs a found tool (call_tool)
    upstreams:
      - name: time                  # how errors and the log name it
        command: mcp-server-time    # launched over stdio ...
        args: []
        env: {}                     # added to the MCP SDK's safe default (HOME, PATH, ...)
        contracts: time.maitred.yaml
        shadow: [free_plan]         # rules evaluated and logged, never enforced (optional)
      - name: notes
        url: http://127.0.0.1:9001/mcp   # ... or reached over streamable HTTP
        headers: {}                 # sent with every request to it (an upstream's own token)
        timeout_s: 60               # a request to an upstream past this is UPSTREAM_FAILED
        contracts: notes.maitred.yaml
        required: false             # true: the gateway does not start without it
    upstream_retry: {initial_s: 1, max_s: 60}   # an upstream that does not answer: retried
    watch: {interval_s: 5}          # re-check listed sessions on state changes (0: off)
    server: {host: 127.0.0.1, port: 8765, path: /mcp, max_sessions: 1000,   # serve over HTTP
             max_body_bytes: 1048576,   # a larger request is a 413, never parsed
             allowed_hosts: [localhost, 127.0.0.1, "[::1]"],   # Host names served (else 421)
             allowed_origins: [https://app.example.com],        # browser origins (else 403)
             request_state_keys_file: request-state.keys,   # shared by every replica
             request_state_ttl_s: 600}      # how long a sealed requestState is accepted
    tokens:                         # over HTTP: who a bearer token is (only its hash is kept)
      - {token_sha256: 9f86d0..., tenant: acme, account: acc-1, scopes: [notes:write]}
    auth:                           # over HTTP: JWT access tokens (an OAuth 2.1 resource server)
      issuer: https://id.example.com
      audience: https://mcp.example.com/mcp
      jwks_url: https://id.example.com/.well-known/jwks.json   # or jwks_file, or public_key
      tenant_claim: org_id          # or tenant: acme (one tenant for every token)
      account_claim: sub
    tracing: {enabled: true, exporter: otlp}   # OpenTelemetry spans (maitred.tracing; off)
    pins: {file: gateway.pins.json, unpinned: hide}   # reviewed tool definitions (or just a path)
    scan: warn                      # warn at start about suspicious tool descriptions (or off)
    ungated: pass                   # resources/prompts no sidecar names: pass (warned) | hide
    skills: [skills/]               # Agent Skills folders served over MCP (gateway/skillset.py)
    rate_limits: {per_token: 60/minute, per_tool: {upgrade: 5/second}}   # maitred.ratelimit

**Whose account.** Over stdio the account is part of the *launch*: an MCP client starts one
gateway process per account (its own pipe), so nothing the model writes can change whose state
is read. Over HTTP it is part of the *token*: each token maps to exactly one tenant and one
account, so an authenticated request has one answer to "whose state" and no request field is
ever consulted. With ``auth`` the token may also be a JWT access token signed by the
configured issuer, whose claims name the tenant and the account (``tenant_claim``,
``account_claim``) and whose ``scope`` the scopes a tool's contract may require. A config with
a ``server`` block serves HTTP (``--stdio`` overrides that, ``--http`` asks for HTTP without
one); HTTP needs ``tokens`` or ``auth``, stdio needs ``account``.

**The state watch** (``watch.interval_s``, off by default). State changes outside the gateway
too (a billing system moves the account to another plan). Every ``tools/list`` and every call
reads state afresh whatever this says, so the gates never act on an old value; the watch is
only about *telling* a session that its list changed. Every ``interval_s`` seconds it reads the
state of each account that has a listed session, decides in memory what each such session
would see, and only when that differs from what it was last shown runs a logged listing turn
and sends ``notifications/tools/list_changed``. It is off unless asked for because its cost
falls on the state store (one batched read per watched account per interval, from every
gateway process), which only the operator can size; 5 seconds suits a JSON file or a local
database.

**Pinned tool definitions** (``pins``, off unless named; :mod:`maitred.gateway.pins`). The
file ``maitred mcp pin`` writes holds each reviewed tool's definition and its hash; a tool whose
definition differs from its pin is hidden and refused (``TOOL_DEFINITION_CHANGED``) until it is
re-approved. ``unpinned`` says what happens to a tool the file has no pin for (one added to an
upstream after the review): ``hide`` (the default: nothing unreviewed reaches a model) or
``allow``. ``scan`` (:mod:`maitred.gateway.scan`) only ever warns.

**Resources and prompts** are gated by the same contracts as tools, given under the sidecar's
``resources`` and ``prompts`` keys (:mod:`maitred.gateway.surfaces`). ``ungated`` says what
happens to those that no sidecar names: ``pass`` (the default: listed and readable as the
upstream serves them, and named on stderr at start) or ``hide`` (absent from every list, and
reads and gets refused).

**Skills** (``skills``, none unless named; :mod:`maitred.gateway.skillset`): Agent Skills
folders the gateway serves itself over the skills extension (``skills/list``, ``skills/get``,
``skill://`` resources), each gated by the ``maitred.yaml`` contract beside its ``SKILL.md``.

**Upstreams that do not answer** (:mod:`maitred.gateway.lifecycle`). One that cannot be
started or reached at start is named on stderr and the gateway starts with the others; it is
tried again in the background (after ``upstream_retry.initial_s``, doubling up to ``max_s``)
and whenever a client lists the tools, and its tools join once it answers. ``required: true``
keeps the strict start: without that upstream the gateway does not start.

Every error names the file and the dotted field (``upstreams[0].command``) and says what to
write; unknown fields are errors, so a typo never becomes a silently ignored setting. Relative
paths (a JSON or SQLite state file, the log, the contracts) are relative to the config file, so
the gateway behaves the same from any working directory; a ``command`` is looked up on ``PATH``
unless it contains a ``/`` (then it too is relative to the config file).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from maitred._yaml import read_yaml
from maitred.config_reader import ConfigReader, resolve_log, resolve_path, resolve_state
from maitred.contract.sidecar import SCOPE_PATTERN
from maitred.contract.tool_sidecar import SUFFIX
from maitred.conversation.finding import CALL_TOOL, FIND_TOOLS
from maitred.gateway.http_config import HttpServer, read_server
from maitred.ratelimit import RateLimitOptions, read_rate_limits
from maitred.tracing import TracingOptions, read_tracing

Disclosure = Literal["all", "find_tools"]
#: a tool name as MCP 2026-07-28 advises it (the name ``find.call_tool`` may give)
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")

_TOP = frozenset(
    {
        "account",
        "state",
        "tables",
        "log",
        "settings",
        "upstreams",
        "disclosure",
        "find",
        "server",
        "tokens",
        "watch",
        "tracing",
        "pins",
        "scan",
        "ungated",
        "rate_limits",
        "auth",
        "upstream_retry",
        "skills",
    }
)
_UPSTREAM = frozenset(
    {
        "name",
        "command",
        "args",
        "env",
        "url",
        "headers",
        "contracts",
        "shadow",
        "timeout_s",
        "required",
    }
)
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
#: what a tenant (or an upstream) may be called: it prefixes session ids in the log
NAME_PATTERN = _NAME
_AUTH = frozenset(
    {
        "issuer",
        "audience",
        "jwks_file",
        "jwks_url",
        "public_key",
        "algorithms",
        "leeway_s",
        "tenant_claim",
        "tenant",
        "account_claim",
        "scope_claim",
        "required_scopes",
        "jwks_timeout_s",
        "jwks_cache_s",
        "resource",
        "authorization_servers",
    }
)
#: the asymmetric JWS algorithms ``auth.algorithms`` may name
ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
_MAX_LEEWAY_S = 300
#: the shortest watch interval accepted: below it the watch would poll the state store flat out
_MIN_WATCH_S = 0.1


@dataclass(frozen=True)
class Upstream:
    """One MCP server the gateway fronts: a subprocess over stdio, or a streamable-HTTP URL.

    Attributes:
        name: how errors, results and the log name it.
        command: the executable (stdio); ``""`` for an HTTP upstream.
        args: its arguments.
        env: variables added to the safe default environment the MCP SDK gives a stdio server
            (HOME, PATH and the like; the gateway's other variables are not passed on).
        contracts: the ``*.maitred.yaml`` sidecar with its tools' contracts (``""``: none, so
            every tool is visible and only argument schemas are checked).
        shadow: names of the sidecar's rules (exit predicates or call policies) to run in
            shadow mode: evaluated and logged on every listing and call, never enforced.
        url: the streamable-HTTP endpoint (``""`` for a stdio upstream).
        headers: HTTP headers sent with every request to ``url``.
        timeout_s: how long a request to it may take; past that the call is
            ``UPSTREAM_FAILED`` (an upstream that hangs must not hold a session forever).
        required: the gateway does not start unless it answers (``False``: one that does
            not is retried while the others serve; :mod:`maitred.gateway.lifecycle`).
    """

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    contracts: str = ""
    shadow: tuple[str, ...] = ()
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 60.0
    required: bool = False

    @property
    def where(self) -> str:
        """What it runs or where it is, for messages."""
        return self.url or " ".join((self.command, *self.args))


@dataclass(frozen=True)
class Token:
    """Who a static bearer token is over HTTP: one tenant, one account, the OAuth scopes it
    grants (none unless listed; only its hash is kept)."""

    token_sha256: str
    tenant: str
    account: str
    scopes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class AuthOptions:
    """JWT access tokens (the ``auth`` block): the gateway as an OAuth 2.1 resource server.

    Exactly one of ``jwks_file``, ``jwks_url`` and ``public_key`` (a PEM file) names the
    issuer's keys; exactly one of ``tenant_claim`` and ``tenant`` names the tenant. See
    :mod:`maitred.gateway.jwt` for the checks and :mod:`maitred.gateway.auth` for the HTTP edge.

    Attributes:
        issuer: the tokens' ``iss``, exactly.
        audience: the values of ``aud`` this gateway answers to (one is enough).
        jwks_file: a JWKS file, read at start.
        jwks_url: a JWKS URL, fetched on first use and cached for ``jwks_cache_s``.
        public_key: a PEM public key file.
        algorithms: the ``alg`` values accepted (asymmetric only).
        leeway_s: seconds of clock skew allowed on ``exp`` and ``nbf``.
        tenant_claim: the claim naming the tenant (``""``: every token has ``tenant``).
        tenant: the one tenant of every token when no ``tenant_claim`` is given.
        account_claim: the claim naming the account (whose state the gates read).
        scope_claim: the claim holding the granted scopes (space-separated, or a list).
        required_scopes: scopes every token must grant to be served at all (else 403).
        jwks_timeout_s: the deadline of one fetch of ``jwks_url``.
        jwks_cache_s: how long a fetched JWKS is used before it is fetched again.
        resource: this gateway's resource identifier in its protected-resource metadata
            (RFC 9728; ``""``: the ``audience`` when it is a URL, else the URL requested).
        authorization_servers: the metadata's ``authorization_servers`` (default: the issuer).
    """

    issuer: str
    audience: tuple[str, ...]
    jwks_file: str = ""
    jwks_url: str = ""
    public_key: str = ""
    algorithms: tuple[str, ...] = ("RS256", "ES256")
    leeway_s: float = 30.0
    tenant_claim: str = ""
    tenant: str = ""
    account_claim: str = "sub"
    scope_claim: str = "scope"
    required_scopes: tuple[str, ...] = ()
    jwks_timeout_s: float = 5.0
    jwks_cache_s: float = 300.0
    resource: str = ""
    authorization_servers: tuple[str, ...] = ()


@dataclass(frozen=True)
class FindOptions:
    """The recall ``find_tools`` runs over every upstream tool (then the gate, then depth)."""

    method: str = "bm25"
    top_k: int = 5
    #: the lexical analyzer and the dense model (PipelineOptions' ``analyzer`` / ``embedder``)
    analyzer: str = "scripts"
    embedder: str = "auto"
    #: the name of the tool listed beside ``find_tools`` that runs a found tool by name
    #: (:func:`maitred.conversation.finding.unwrap`); another name when an upstream has a
    #: tool of this one
    call_tool: str = CALL_TOOL


@dataclass(frozen=True)
class WatchOptions:
    """The state watch: how often listed sessions are re-checked (``0``: never; see the module
    docstring for what a check costs and why it is off by default)."""

    interval_s: float = 0.0


@dataclass(frozen=True)
class RetryOptions:
    """How an upstream that does not answer is tried again: first after ``initial_s``, then
    after twice as long each time, never more than ``max_s`` apart (and on demand, at most once
    per ``initial_s``, when a client lists the tools)."""

    initial_s: float = 1.0
    max_s: float = 60.0


@dataclass(frozen=True)
class PinOptions:
    """Where the reviewed tool definitions are (:mod:`maitred.gateway.pins`), and what a tool
    with no pin gets: ``hide`` (held back like a changed one) or ``allow``."""

    file: str
    unpinned: Literal["allow", "hide"] = "hide"


@dataclass(frozen=True)
class GatewayConfig:
    """A checked gateway configuration (paths resolved against the config file).

    ``account`` is ``""`` when the config names none (an HTTP-only gateway: tokens name the
    accounts); serving it over stdio is then refused.
    """

    account: str
    state: str
    upstreams: tuple[Upstream, ...]
    tables: Mapping[str, Any] | None = None
    log: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""
    disclosure: Disclosure = "all"
    find: FindOptions = field(default_factory=FindOptions)
    server: HttpServer | None = None
    tokens: tuple[Token, ...] = ()
    watch: WatchOptions = field(default_factory=WatchOptions)
    tracing: TracingOptions = field(default_factory=TracingOptions)
    pins: PinOptions | None = None
    scan: Literal["warn", "off"] = "warn"
    ungated: Literal["pass", "hide"] = "pass"
    rate_limits: RateLimitOptions | None = None
    auth: AuthOptions | None = None
    upstream_retry: RetryOptions = field(default_factory=RetryOptions)
    skills: tuple[str, ...] = ()

    @property
    def upstream(self) -> Upstream:
        """The first upstream (the only one of a one-upstream gateway)."""
        return self.upstreams[0]


def load_config(path: str | Path, *, account: str | None = None) -> GatewayConfig:
    """Read and check a gateway config; ``account`` (from ``--account``) overrides the file's.

    Raises:
        ConfigError: the file cannot be read, is not YAML, or a field is wrong (the message
            names the file, the line or the field, and what to write).
    """
    data = read_yaml(path, "the gateway config")  # a key given twice is refused there too
    return parse_config(data, str(path), base=Path(path).resolve().parent, account=account)


def parse_config(
    data: Any, source: str, *, base: Path | None = None, account: str | None = None
) -> GatewayConfig:
    """Check a decoded config mapping (``source`` names it in errors)."""
    r = ConfigReader(source)
    top = r.mapping(data if data is not None else {}, "")
    r.no_unknown(top, _TOP, "")
    root = base or Path.cwd()
    tokens = _tokens(r, top["tokens"]) if top.get("tokens") is not None else ()
    auth = _auth(r, top["auth"], root) if top.get("auth") is not None else None
    who = account if account else top.get("account")
    if who is None and not tokens and auth is None:
        r.fail(
            "account",
            "is required (or pass --account): whose state the gates read over stdio; "
            "an HTTP gateway names its accounts under 'tokens' (or 'auth') instead",
        )
    state = resolve_state(root, r.string(r.require(top, "state", ""), "state"))
    tables = r.mapping(top["tables"], "tables") if top.get("tables") is not None else None
    log = top.get("log")
    ups = r.require(top, "upstreams", "")
    if not isinstance(ups, list) or not ups:
        r.fail(
            "upstreams",
            "must be a list of one or more upstreams ({name, command, args, env, contracts} "
            "or {name, url, headers, contracts})",
        )
    upstreams = tuple(_upstream(r, u, f"upstreams[{i}]", root) for i, u in enumerate(ups))
    seen: dict[str, int] = {}
    for i, up in enumerate(upstreams):
        if up.name in seen:
            r.fail(f"upstreams[{i}].name", f"{up.name!r} is already upstreams[{seen[up.name]}]")
        seen[up.name] = i
    disclosure = top.get("disclosure", "all")
    if disclosure not in ("all", "find_tools"):
        r.fail("disclosure", f"must be one of ['all', 'find_tools'], not {disclosure!r}")
    scan = top.get("scan", "warn")
    if scan not in ("warn", "off"):
        r.fail("scan", f"must be one of ['warn', 'off'], not {scan!r}")
    ungated = top.get("ungated", "pass")
    if ungated not in ("pass", "hide"):
        r.fail(
            "ungated",
            f"must be one of ['hide', 'pass'], not {ungated!r}: what happens to the resources, "
            "resource templates and prompts no sidecar names",
        )
    return GatewayConfig(
        account=r.string(who, "account") if who is not None else "",
        state=state,
        upstreams=upstreams,
        tables=tables,
        log=resolve_log(root, r.string(log, "log")) if log is not None else None,
        settings=r.mapping(top.get("settings") or {}, "settings"),
        source=source,
        disclosure=disclosure,
        find=_find(r, top.get("find") or {}),
        server=read_server(r, top["server"], root) if top.get("server") is not None else None,
        tokens=tokens,
        watch=_watch(r, top.get("watch") or {}),
        tracing=read_tracing(r, top.get("tracing"), service_name="maitred-gateway"),
        pins=_pins(r, top["pins"], root) if top.get("pins") is not None else None,
        scan="off" if scan == "off" else "warn",
        ungated="hide" if ungated == "hide" else "pass",
        rate_limits=read_rate_limits(r, top.get("rate_limits")),
        auth=auth,
        upstream_retry=_retry(r, top.get("upstream_retry") or {}),
        skills=_skills(r, top.get("skills"), root),
    )


def _skills(r: ConfigReader, value: Any, root: Path) -> tuple[str, ...]:
    """``skills``: folders (a skill folder, or a folder of them) the gateway serves itself."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        r.fail("skills", f"must be a list of folders (Agent Skills folders), not {value!r}")
    found: list[str] = []
    for i, folder in enumerate(value):
        path = resolve_path(root, folder)
        if not Path(path).is_dir():
            r.fail(f"skills[{i}]", f"{path} is not a folder; give a skill folder or their parent")
        found.append(path)
    return tuple(found)


def _upstream(r: ConfigReader, value: Any, where: str, root: Path) -> Upstream:
    data = r.mapping(value, where)
    r.no_unknown(data, _UPSTREAM, where)
    name = r.string(r.require(data, "name", where), f"{where}.name")
    if not _NAME.match(name):
        r.fail(f"{where}.name", "upstream names use letters, digits, '_', '.', '-' (at most 64)")
    has_command, has_url = data.get("command") is not None, data.get("url") is not None
    if has_command == has_url:
        r.fail(
            f"{where}.command",
            "is required (a stdio server to launch), or 'url' instead (a streamable-HTTP "
            "endpoint); give exactly one of them",
        )
    command, url = "", ""
    if has_command:
        command = r.string(data["command"], f"{where}.command")
        if "/" in command:
            command = resolve_path(root, command)
        for key in ("headers",):
            if key in data:
                r.fail(f"{where}.{key}", "is for an HTTP upstream ('url'), not a 'command'")
    else:
        url = r.string(data["url"], f"{where}.url")
        if not url.startswith(("http://", "https://")):
            r.fail(f"{where}.url", f"must be an http:// or https:// URL, not {url!r}")
        for key in ("args", "env"):
            if key in data:
                r.fail(f"{where}.{key}", "is for a stdio upstream ('command'), not a 'url'")
    args = data.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
        r.fail(f"{where}.args", f"must be a list of strings, not {args!r}")
    env = r.mapping(data.get("env") or {}, f"{where}.env")
    headers = r.mapping(data.get("headers") or {}, f"{where}.headers")
    contracts = data.get("contracts")
    path = ""
    if contracts is not None:
        path = resolve_path(root, r.string(contracts, f"{where}.contracts"))
        if not path.endswith(SUFFIX):
            r.fail(f"{where}.contracts", f"must name a sidecar file ending in {SUFFIX!r}")
        if not Path(path).is_file():
            r.fail(f"{where}.contracts", f"{path} does not exist; write it or fix the path")
    timeout = data.get("timeout_s", 60.0)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        r.fail(f"{where}.timeout_s", f"must be a positive number of seconds, not {timeout!r}")
    shadow = data.get("shadow") or []
    if not isinstance(shadow, list) or not all(isinstance(n, str) and n for n in shadow):
        r.fail(f"{where}.shadow", f"must be a list of rule names, not {shadow!r}")
    if shadow and not path:
        r.fail(f"{where}.shadow", "names rules, but the upstream has no contracts file")
    required = data.get("required", False)
    if not isinstance(required, bool):
        r.fail(
            f"{where}.required",
            f"must be true (the gateway does not start without it) or false, not {required!r}",
        )
    return Upstream(
        name=name,
        command=command,
        args=tuple(str(a) for a in args),
        env={k: str(v) for k, v in env.items()},
        contracts=path,
        shadow=tuple(shadow),
        url=url,
        headers={k: str(v) for k, v in headers.items()},
        timeout_s=float(timeout),
        required=required,
    )


def _tokens(r: ConfigReader, value: Any) -> tuple[Token, ...]:
    if not isinstance(value, list) or not value:
        r.fail("tokens", "must be a list of {token_sha256, tenant, account, scopes}")
    out: list[Token] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(value):
        where = f"tokens[{i}]"
        data = r.mapping(item, where)
        r.no_unknown(data, frozenset({"token_sha256", "tenant", "account", "scopes"}), where)
        digest = r.token_digest(data, where)
        if digest in seen:
            r.fail(f"{where}.token_sha256", f"is the same token as tokens[{seen[digest]}]")
        seen[digest] = i
        tenant = r.string(r.require(data, "tenant", where), f"{where}.tenant")
        if not _NAME.match(tenant):
            r.fail(f"{where}.tenant", "use letters, digits, '_', '.', '-' (at most 64)")
        account = r.string(r.require(data, "account", where), f"{where}.account")
        scopes = _scopes(r, data.get("scopes"), f"{where}.scopes")
        out.append(Token(digest, tenant, account, frozenset(scopes)))
    return tuple(out)


def _scopes(r: ConfigReader, value: Any, where: str) -> tuple[str, ...]:
    """A list of OAuth scope tokens (RFC 6749 3.3; ``None``: none)."""
    if value is None:
        return ()
    scopes = r.str_list(value, where)
    for i, scope in enumerate(scopes):
        if not SCOPE_PATTERN.fullmatch(scope):
            r.fail(
                f"{where}[{i}]",
                f"{scope!r} is not an OAuth scope (printable ASCII without spaces, '\"' or '\\')",
            )
    return tuple(scopes)


def _url(r: ConfigReader, value: Any, where: str) -> str:
    url = r.string(value, where)
    if not url.startswith(("http://", "https://")):
        r.fail(where, f"must be an http:// or https:// URL, not {url!r}")
    return url


def _seconds(r: ConfigReader, data: Mapping[str, Any], key: str, default: float) -> float:
    value = data.get(key, default)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        r.fail(f"auth.{key}", f"must be a positive number of seconds, not {value!r}")
    return float(value)


def _auth(r: ConfigReader, value: Any, root: Path) -> AuthOptions:
    data = r.mapping(value, "auth")
    r.no_unknown(data, _AUTH, "auth")
    issuer = r.string(r.require(data, "issuer", "auth"), "auth.issuer")
    audience = tuple(r.str_list(r.require(data, "audience", "auth"), "auth.audience"))
    if not audience:
        r.fail("auth.audience", "must name this gateway's audience (the tokens' aud)")
    sources = [k for k in ("jwks_file", "jwks_url", "public_key") if data.get(k) is not None]
    if len(sources) != 1:
        r.fail(
            "auth.jwks_file",
            "give exactly one of 'jwks_file' (a JWKS JSON file), 'jwks_url' (the issuer's JWKS "
            "on your network) or 'public_key' (a PEM public key file)"
            + (f"; found {sources}" if sources else ""),
        )
    files = {}
    for key in ("jwks_file", "public_key"):
        if data.get(key) is not None:
            path = resolve_path(root, r.string(data[key], f"auth.{key}"))
            if not Path(path).is_file():
                r.fail(f"auth.{key}", f"{path} does not exist; write it or fix the path")
            files[key] = path
    jwks_url = _url(r, data["jwks_url"], "auth.jwks_url") if data.get("jwks_url") else ""
    algorithms = tuple(r.str_list(data.get("algorithms", ["RS256", "ES256"]), "auth.algorithms"))
    for i, alg in enumerate(algorithms):
        if alg not in ALGORITHMS:
            why = (
                "a shared-secret algorithm: a resource server verifies with the issuer's "
                "public key, and accepting HS* with a public key is the HS/RS confusion attack"
                if alg.upper().startswith("HS")
                else "not accepted"
                if alg.lower() == "none"
                else "not a known JWS algorithm"
            )
            r.fail(f"auth.algorithms[{i}]", f"{alg!r} is {why}; choose from {list(ALGORITHMS)}")
    if not algorithms:
        r.fail("auth.algorithms", f"must name at least one of {list(ALGORITHMS)}")
    leeway = data.get("leeway_s", 30)
    if (
        not isinstance(leeway, (int, float))
        or isinstance(leeway, bool)
        or not 0 <= leeway <= _MAX_LEEWAY_S
    ):
        r.fail("auth.leeway_s", f"must be 0-{_MAX_LEEWAY_S} seconds of clock skew, not {leeway!r}")
    tenant_claim = data.get("tenant_claim")
    tenant = data.get("tenant")
    if (tenant_claim is None) == (tenant is None):
        r.fail(
            "auth.tenant_claim",
            "give exactly one of 'tenant_claim' (the claim naming each token's tenant, e.g. "
            "org_id) or 'tenant' (one tenant for every token)",
        )
    if tenant is not None and not _NAME.match(r.string(tenant, "auth.tenant")):
        r.fail("auth.tenant", "use letters, digits, '_', '.', '-' (at most 64)")
    servers = data.get("authorization_servers")
    return AuthOptions(
        issuer=issuer,
        audience=audience,
        jwks_file=files.get("jwks_file", ""),
        jwks_url=jwks_url,
        public_key=files.get("public_key", ""),
        algorithms=algorithms,
        leeway_s=float(leeway),
        tenant_claim=r.string(tenant_claim, "auth.tenant_claim") if tenant_claim else "",
        tenant=str(tenant) if tenant is not None else "",
        account_claim=r.string(data.get("account_claim", "sub"), "auth.account_claim"),
        scope_claim=r.string(data.get("scope_claim", "scope"), "auth.scope_claim"),
        required_scopes=_scopes(r, data.get("required_scopes"), "auth.required_scopes"),
        jwks_timeout_s=_seconds(r, data, "jwks_timeout_s", 5.0),
        jwks_cache_s=_seconds(r, data, "jwks_cache_s", 300.0),
        resource=_url(r, data["resource"], "auth.resource") if data.get("resource") else "",
        authorization_servers=tuple(
            _url(r, u, f"auth.authorization_servers[{i}]")
            for i, u in enumerate(r.str_list(servers, "auth.authorization_servers"))
        )
        if servers is not None
        else (issuer,),
    )


def _find(r: ConfigReader, value: Any) -> FindOptions:
    data = r.mapping(value, "find")
    r.no_unknown(data, frozenset({"method", "top_k", "analyzer", "embedder", "call_tool"}), "find")
    method = r.string(data.get("method", "bm25"), "find.method")
    call_tool = r.string(data.get("call_tool", CALL_TOOL), "find.call_tool")
    if not _TOOL_NAME.fullmatch(call_tool) or call_tool == FIND_TOOLS:
        r.fail(
            "find.call_tool",
            f"must be a tool name (1 to 128 of A-Z a-z 0-9 _ - .) other than {FIND_TOOLS!r}, "
            f"not {call_tool!r}",
        )
    analyzer = r.string(data.get("analyzer", FindOptions.analyzer), "find.analyzer")
    embedder = r.string(data.get("embedder", FindOptions.embedder), "find.embedder")
    top_k = data.get("top_k", 5)
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
        r.fail("find.top_k", f"must be a whole number >= 1, not {top_k!r}")
    return FindOptions(method, top_k, analyzer, embedder, call_tool)


def _watch(r: ConfigReader, value: Any) -> WatchOptions:
    data = r.mapping(value, "watch")
    r.no_unknown(data, frozenset({"interval_s"}), "watch")
    every = data.get("interval_s", 0)
    if (
        not isinstance(every, (int, float))
        or isinstance(every, bool)
        or not (every == 0 or every >= _MIN_WATCH_S)
    ):
        r.fail(
            "watch.interval_s",
            f"must be 0 (off) or a number of seconds >= {_MIN_WATCH_S}, not {every!r}",
        )
    return WatchOptions(float(every))


def _retry(r: ConfigReader, value: Any) -> RetryOptions:
    data = r.mapping(value, "upstream_retry")
    r.no_unknown(data, frozenset({"initial_s", "max_s"}), "upstream_retry")
    found: dict[str, float] = {}
    for key, default in (("initial_s", 1.0), ("max_s", 60.0)):
        every = data.get(key, default)
        if not isinstance(every, (int, float)) or isinstance(every, bool) or every < _MIN_WATCH_S:
            r.fail(
                f"upstream_retry.{key}",
                f"must be a number of seconds >= {_MIN_WATCH_S}, not {every!r}",
            )
        found[key] = float(every)
    if found["max_s"] < found["initial_s"]:
        r.fail("upstream_retry.max_s", f"must be at least initial_s ({found['initial_s']:g})")
    return RetryOptions(found["initial_s"], found["max_s"])


def _pins(r: ConfigReader, value: Any, root: Path) -> PinOptions:
    data = {"file": value} if isinstance(value, str) else r.mapping(value, "pins")
    r.no_unknown(data, frozenset({"file", "unpinned"}), "pins")
    path = resolve_path(root, r.string(r.require(data, "file", "pins"), "pins.file"))
    unpinned = data.get("unpinned", "hide")
    if unpinned not in ("allow", "hide"):
        r.fail("pins.unpinned", f"must be one of ['allow', 'hide'], not {unpinned!r}")
    return PinOptions(path, "allow" if unpinned == "allow" else "hide")
