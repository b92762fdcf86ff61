"""The server's configuration file (YAML), read once at start and checked field by field.

::

    catalogs: [skills/, tools.json]        # skill folders and tools files (relative to this file)
    state: sqlite:///accounts.db           # a provider spec (maitred.state.open_provider)
    tables: {account: accounts}            # key root -> table (SQL providers), or a YAML/JSON file
    state_timeout_s: 0.5                   # the deadline on every state fetch (SQL providers)
    state_clock_skew_s: 300                # state dated further ahead of the clock is invalid
    require_scopes: false                  # true: every turn and check must send "scopes"
    options: {method: bm25, top_k: 10, menu_format: openai}   # PipelineOptions fields
    log: log.sqlite                        # the decision log (path or postgresql:// URL), or
                                           # {url: log.sqlite, durability: commit | async}
    cache_dir: .maitred-cache              # where recall indexes persist
    settings: {}                           # values for rule factories in tools sidecars
    tenants:
      acme:
        token_sha256: 9f86d0...            # printf %s "$TOKEN" | sha256sum
        accounts: [acc-1, acc-2]           # or: account_prefix: "acme-"
    limits: {max_body_bytes: 65536, max_sessions: 10000, session_idle_s: 1800}
    server: {host: 127.0.0.1, port: 8080}
    reload: {interval_s: 2}                # poll the catalog files this often (hot reload)
    tracing: {enabled: true, exporter: otlp}   # OpenTelemetry spans (maitred.tracing; off)
    rate_limits: {per_tenant: 600/minute, per_tool: {connect_domain: 5/second}}   # 429s
    operators:                             # who may open the console (/console; maitred console)
      alice: {token_sha256: 2c26b4...}     # printf %s "$TOKEN" | sha256sum

Invariants:

* Only **hashes** of bearer tokens are stored (64 hex digits of SHA-256); a config that holds
  something else in ``token_sha256`` is refused, and two tenants may not share a hash.
* Each tenant names its accounts by an explicit list **or** a prefix, never both and never
  neither, so "which accounts may this token act on" always has one answer.
* Every error names the file and the dotted field (``tenants.acme.accounts``) and says what to
  write instead; unknown fields are errors too, so a typo never becomes a setting silently
  ignored.
* Relative paths (catalogs, tables and log files, a JSON or SQLite state file, cache_dir)
  are relative to the config file, so the server behaves the same from any working directory.
* ``require_scopes: true`` makes ``scopes`` a required field of every turn and check (422
  naming it when absent; ``[]`` says "no scopes"). Left false, a request without ``scopes``
  has not said what its user may do, and tools' required ``scopes`` are not asked: a tool
  that needs ``admin`` is offered and allowed like any other. Turn it on whenever tools
  declare scopes and the callers can say what they were granted.
* ``log.durability`` is ``commit`` unless ``async`` is written out: a response is sent only
  once the commit holding its decision is done; ``async`` answers first and leaves the commit
  to the log's age bound (about a second), which a crash can lose (:mod:`maitred.serve.service`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from maitred._yaml import YamlProblem, read_yaml
from maitred.build import PipelineOptions
from maitred.config_reader import ConfigReader, resolve_log, resolve_path, resolve_state
from maitred.ratelimit import RateLimitOptions, read_rate_limits
from maitred.state.answer import DEFAULT_CLOCK_SKEW_S
from maitred.tracing import TracingOptions, read_tracing

_TENANT = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
#: when a decision is acknowledged: after its commit, or before (loss window ~1 s)
Durability = Literal["commit", "async"]
DURABILITIES: tuple[Durability, ...] = ("commit", "async")
_TOP = frozenset(
    {
        "catalogs",
        "state",
        "tables",
        "state_timeout_s",
        "state_clock_skew_s",
        "require_scopes",
        "options",
        "log",
        "cache_dir",
        "settings",
        "tenants",
        "limits",
        "server",
        "reload",
        "tracing",
        "rate_limits",
        "operators",
    }
)


@dataclass(frozen=True)
class Tenant:
    """Who a bearer token is, and which accounts it may act on.

    Attributes:
        name: the tenant's name (in metrics, run ids and logs; never secret).
        token_sha256: SHA-256 of the token, as 64 lower-case hex digits.
        accounts: the accounts it owns, when listed explicitly.
        account_prefix: the prefix every account it owns starts with, otherwise.
    """

    name: str
    token_sha256: str
    accounts: frozenset[str] | None = None
    account_prefix: str | None = None

    def owns(self, account: str) -> bool:
        """Whether ``account`` belongs to this tenant."""
        if self.accounts is not None:
            return account in self.accounts
        return self.account_prefix is not None and account.startswith(self.account_prefix)


@dataclass(frozen=True)
class Limits:
    """Bounds on what one request, and the server's memory of sessions, may take.

    Attributes:
        max_body_bytes: a larger request body is refused (413) before it is parsed.
        max_sessions: sessions kept in memory; the least recently used is dropped beyond it.
        session_idle_s: a session unused for this long is forgotten (its id then gives 404).
    """

    max_body_bytes: int = 64 * 1024
    max_sessions: int = 10_000
    session_idle_s: float = 1800.0


@dataclass(frozen=True)
class ServeConfig:
    """Everything ``maitred serve`` needs, as plain values (see the module docstring)."""

    catalogs: tuple[str, ...]
    state: str
    #: who may call, by the hash of their bearer token, and which accounts each may act on
    tenants: Mapping[str, Tenant]
    tables: Mapping[str, Any] | None = None
    state_timeout_s: float | None = None
    state_clock_skew_s: float = DEFAULT_CLOCK_SKEW_S
    require_scopes: bool = False
    options: PipelineOptions = field(default_factory=PipelineOptions)
    log: str | None = None
    #: ``log.durability``: ``commit`` answers once the decision is committed, ``async`` before
    durability: Durability = "commit"
    cache_dir: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: the ``limits`` block: request size and the sessions kept in memory
    limits: Limits = field(default_factory=Limits)
    #: ``server.host``: the address to listen on
    host: str = "127.0.0.1"
    #: ``server.port``
    port: int = 8080
    #: ``reload.interval_s``: how often the catalog files are polled for changes (hot reload)
    reload_interval_s: float = 2.0
    #: the config file's path, for messages (set by the loader, not written in the file)
    source: str = "<config>"
    tracing: TracingOptions = field(default_factory=TracingOptions)
    rate_limits: RateLimitOptions | None = None
    #: ``operators``: who may open the console, by the SHA-256 of their token (name -> digest)
    operators: Mapping[str, str] = field(default_factory=dict)


def load_config(path: str | Path) -> ServeConfig:
    """Read and check a server configuration file.

    Raises:
        ConfigError: the file cannot be read, is not YAML, or a field is wrong (the message
            names the file, the field and what to write).
    """
    data = read_yaml(path, "the server config")
    return parse_config(data, str(path), base=Path(path).resolve().parent)


def parse_config(data: Any, source: str, *, base: Path | None = None) -> ServeConfig:
    """Check a decoded configuration mapping (``source`` names it in errors)."""
    r = ConfigReader(source)
    top = r.mapping(data, "")
    r.no_unknown(top, _TOP, "")
    root = base or Path.cwd()
    catalogs = r.str_list(r.require(top, "catalogs", ""), "catalogs")
    if not catalogs:
        r.fail("catalogs", "is empty; list at least one skill folder or tools file")
    state = r.string(r.require(top, "state", ""), "state")
    limits = _limits(r, top.get("limits", {}))
    host, port = _server(r, top.get("server", {}))
    interval = _reload(r, top.get("reload", {}))
    timeout = top.get("state_timeout_s")
    if timeout is not None and (not _is_number(timeout) or timeout <= 0):
        r.fail("state_timeout_s", f"must be a positive number of seconds, not {timeout!r}")
    skew = top.get("state_clock_skew_s", DEFAULT_CLOCK_SKEW_S)
    if not _is_number(skew) or skew < 0:
        r.fail(
            "state_clock_skew_s",
            f"must be a number of seconds from 0 up, not {skew!r} (how far a state key's date "
            "may run ahead of the server's clock and still count as current)",
        )
    require_scopes = top.get("require_scopes", False)
    if not isinstance(require_scopes, bool):
        r.fail("require_scopes", f"must be true or false, not {require_scopes!r}")
    tables = top.get("tables")
    if isinstance(tables, str):
        tables = _tables_file(r, Path(resolve_path(root, tables)))
    elif tables is not None:
        tables = r.mapping(tables, "tables")
    settings = r.mapping(top.get("settings", {}), "settings")
    log, durability = _log(r, top.get("log"))
    cache_dir = top.get("cache_dir")
    return ServeConfig(
        catalogs=tuple(resolve_path(root, c) for c in catalogs),
        state=resolve_state(root, state),
        tenants=_tenants(r, r.require(top, "tenants", "")),
        tables=tables,
        state_timeout_s=float(timeout) if timeout is not None else None,
        state_clock_skew_s=float(skew),
        require_scopes=require_scopes,
        options=_options(r, top.get("options", {})),
        log=resolve_log(root, log) if log is not None else None,
        durability=durability,
        cache_dir=resolve_path(root, r.string(cache_dir, "cache_dir")) if cache_dir else None,
        settings=settings,
        limits=limits,
        host=host,
        port=port,
        reload_interval_s=interval,
        source=source,
        tracing=read_tracing(r, top.get("tracing"), service_name="maitred-serve"),
        rate_limits=_rate_limits(r, top.get("rate_limits")),
        operators=_operators(r, top.get("operators", {}), top.get("tenants")),
    )


def _operators(r: ConfigReader, value: Any, tenants: Any) -> dict[str, str]:
    """The ``operators`` block: name -> ``{token_sha256}``; an operator's token is never a
    tenant's (the console reads every tenant's decisions; a tenant's token reads its own)."""
    data = r.mapping(value, "operators")
    tenant_digests = {
        str(spec.get("token_sha256", "")).lower()
        for spec in (tenants or {}).values()
        if isinstance(spec, Mapping)
    }
    out: dict[str, str] = {}
    for name, spec in data.items():
        where = f"operators.{name}"
        if not _TENANT.match(str(name)):
            r.fail(where, "operator names use letters, digits, '_', '.', '-' (at most 64)")
        body = r.mapping(spec, where)
        r.no_unknown(body, frozenset({"token_sha256"}), where)
        digest = r.token_digest(body, where)
        if digest in tenant_digests:
            r.fail(
                f"{where}.token_sha256", "is a tenant's token; give operators tokens of their own"
            )
        if digest in out.values():
            r.fail(f"{where}.token_sha256", "is the same token as another operator's")
        out[str(name)] = digest
    return out


def _rate_limits(r: ConfigReader, value: Any) -> RateLimitOptions | None:
    """The ``rate_limits`` block (:mod:`maitred.serve.rates`): the gateway's, less
    ``per_token``."""
    if isinstance(value, Mapping) and "per_token" in value:
        r.fail(
            "rate_limits.per_token",
            "is the gateway's: the service has one token per tenant, so a token's budget is "
            "its tenant's; write per_tenant",
        )
    return read_rate_limits(r, value, scopes=("per_tenant", "per_tool"))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _tenants(r: ConfigReader, value: Any) -> dict[str, Tenant]:
    data = r.mapping(value, "tenants")
    if not data:
        r.fail("tenants", "is empty; define at least one tenant with a token_sha256")
    out: dict[str, Tenant] = {}
    seen: dict[str, str] = {}
    for name, spec in data.items():
        where = f"tenants.{name}"
        if not _TENANT.match(name):
            r.fail(where, "tenant names use letters, digits, '_', '.', '-' (at most 64)")
        body = r.mapping(spec, where)
        r.no_unknown(body, frozenset({"token_sha256", "accounts", "account_prefix"}), where)
        digest = r.token_digest(body, where)
        if digest in seen:
            r.fail(f"{where}.token_sha256", f"is the same token as tenant {seen[digest]!r}")
        seen[digest] = name
        has_list, has_prefix = "accounts" in body, "account_prefix" in body
        if has_list == has_prefix:
            r.fail(where, "needs exactly one of 'accounts' (a list) or 'account_prefix'")
        accounts = (
            frozenset(r.str_list(body["accounts"], f"{where}.accounts")) if has_list else None
        )
        prefix = r.string(body["account_prefix"], f"{where}.account_prefix") if has_prefix else None
        out[name] = Tenant(name, digest, accounts, prefix)
    return out


def _tables_file(r: ConfigReader, path: Path) -> dict[str, Any]:
    """A key root -> table mapping kept in its own YAML/JSON file (``maitred demo`` writes one)."""
    try:
        data = read_yaml(path, "the tables mapping")
    except YamlProblem as exc:
        r.fail("tables", f"names a file that cannot be read as YAML/JSON: {exc}")
    return r.mapping(data, f"tables ({path})")


def _limits(r: ConfigReader, value: Any) -> Limits:
    data = r.mapping(value, "limits")
    known = frozenset(f.name for f in fields(Limits))
    r.no_unknown(data, known, "limits")
    for key, val in data.items():
        if not _is_number(val) or val <= 0:
            r.fail(f"limits.{key}", f"must be a positive number, not {val!r}")
    for key in ("max_body_bytes", "max_sessions"):
        if key in data and not isinstance(data[key], int):
            r.fail(f"limits.{key}", f"must be a whole number, not {data[key]!r}")
    return Limits(**data)


def _server(r: ConfigReader, value: Any) -> tuple[str, int]:
    data = r.mapping(value, "server")
    r.no_unknown(data, frozenset({"host", "port"}), "server")
    host = r.string(data.get("host", "127.0.0.1"), "server.host")
    port = data.get("port", 8080)
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        r.fail("server.port", f"must be a port number 0-65535, not {port!r}")
    return host, int(port)


def _reload(r: ConfigReader, value: Any) -> float:
    data = r.mapping(value, "reload")
    r.no_unknown(data, frozenset({"interval_s"}), "reload")
    interval = data.get("interval_s", 2.0)
    if not _is_number(interval) or interval <= 0:
        r.fail("reload.interval_s", f"must be a positive number of seconds, not {interval!r}")
    return float(interval)


def _log(r: ConfigReader, value: Any) -> tuple[str | None, Durability]:
    """``log: <path or URL>`` or ``log: {url: ..., durability: commit | async}``."""
    if value is None or isinstance(value, str):
        return (r.string(value, "log") if value is not None else None), "commit"
    data = r.mapping(value, "log")
    r.no_unknown(data, frozenset({"url", "durability"}), "log")
    url = r.string(r.require(data, "url", "log"), "log.url")
    durability = data.get("durability", "commit")
    if durability not in DURABILITIES:
        r.fail(
            "log.durability",
            f"must be one of {list(DURABILITIES)}, not {durability!r} ('commit' answers after "
            "the decision is committed; 'async' answers first and may lose about a second)",
        )
    return url, durability


def _options(r: ConfigReader, value: Any) -> PipelineOptions:
    data = r.mapping(value, "options")
    known = frozenset(f.name for f in fields(PipelineOptions))
    r.no_unknown(data, known, "options")
    defaults = PipelineOptions()
    for key, val in data.items():
        default = getattr(defaults, key)
        ok = (
            (key == "min_score" and (val is None or _is_number(val)))
            or (isinstance(default, bool) and isinstance(val, bool))
            or (isinstance(default, int) and not isinstance(default, bool) and type(val) is int)
            or (isinstance(default, str) and isinstance(val, str))
            or (key == "depth_params" and isinstance(val, Mapping))
        )
        if not ok:
            r.fail(f"options.{key}", f"has the wrong type ({val!r}); the default is {default!r}")
    return PipelineOptions(**data)
