"""The gateway's configuration file (YAML), read once at start and checked field by field.

::

    account: acc-1                  # whose state the gates read (``--account`` overrides it)
    state: accounts.json            # a provider spec (maitred.state.open_provider)
    tables: {account: accounts}     # key root -> table, for SQL providers only
    log: gateway.sqlite             # the decision log (path or postgresql:// URL)
    settings: {}                    # values for rule factories in the contracts sidecars
    upstreams:
      - name: time                  # how errors and the log name it
        command: mcp-server-time    # launched over stdio
        args: []
        env: {}                     # added to the MCP SDK's safe default (HOME, PATH, ...)
        contracts: time.maitred.yaml
        shadow: [free_plan]         # rules evaluated and logged, never enforced (optional)

The account is part of the *launch*: an MCP client starts one gateway process per account (its
own stdio pipe), so nothing the model writes can change whose state is read. ``upstreams`` is a
list so that several upstreams (and streamable-HTTP ones) fit later without a new format; this
slice serves exactly one.

Every error names the file and the dotted field (``upstreams[0].command``) and says what to
write; unknown fields are errors, so a typo never becomes a silently ignored setting. Relative
paths (a JSON or SQLite state file, the log, the contracts) are relative to the config file, so
the gateway behaves the same from any working directory; a ``command`` is looked up on ``PATH``
unless it contains a ``/`` (then it too is relative to the config file).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml

from maitred.contract.tool_sidecar import SUFFIX
from maitred.errors import ConfigError

_TOP = frozenset({"account", "state", "tables", "log", "settings", "upstreams"})
_UPSTREAM = frozenset({"name", "command", "args", "env", "contracts", "shadow"})


@dataclass(frozen=True)
class Upstream:
    """One MCP server the gateway fronts, launched as a subprocess speaking MCP over stdio.

    Attributes:
        name: how errors, results and the log name it.
        command: the executable.
        args: its arguments.
        env: variables added to the safe default environment the MCP SDK gives a stdio server
            (HOME, PATH and the like; the gateway's other variables are not passed on).
        contracts: the ``*.maitred.yaml`` sidecar with its tools' contracts (``""``: none, so
            every tool is visible and only argument schemas are checked).
        shadow: names of the sidecar's rules (exit predicates or call policies) to run in
            shadow mode: evaluated and logged on every listing and call, never enforced.
    """

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    contracts: str = ""
    shadow: tuple[str, ...] = ()


@dataclass(frozen=True)
class GatewayConfig:
    """A checked gateway configuration (paths resolved against the config file)."""

    account: str
    state: str
    upstreams: tuple[Upstream, ...]
    tables: Mapping[str, Any] | None = None
    log: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""

    @property
    def upstream(self) -> Upstream:
        """The one upstream of this slice."""
        return self.upstreams[0]


def load_config(path: str | Path, *, account: str | None = None) -> GatewayConfig:
    """Read and check a gateway config; ``account`` (from ``--account``) overrides the file's.

    Raises:
        ConfigError: the file cannot be read, is not YAML, or a field is wrong (the message
            names the file, the line or the field, and what to write).
    """
    where = str(path)
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{where}{line}: not valid YAML: {exc.problem}") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{where}: cannot read the gateway config: {exc}") from None
    return parse_config(data, where, base=Path(path).resolve().parent, account=account)


def parse_config(
    data: Any, source: str, *, base: Path | None = None, account: str | None = None
) -> GatewayConfig:
    """Check a decoded config mapping (``source`` names it in errors)."""
    r = _Reader(source)
    top = r.mapping(data if data is not None else {}, "")
    r.no_unknown(top, _TOP, "")
    root = base or Path.cwd()
    who = account if account else top.get("account")
    if who is None:
        r.fail("account", "is required (or pass --account): whose state the gates read")
    state = _resolve_state(root, r.string(r.require(top, "state", ""), "state"))
    tables = r.mapping(top["tables"], "tables") if top.get("tables") is not None else None
    log = top.get("log")
    ups = r.require(top, "upstreams", "")
    if not isinstance(ups, list) or len(ups) != 1:
        r.fail(
            "upstreams",
            "must be a list of exactly one upstream ({name, command, args, env, contracts}); "
            "several upstreams are not served yet",
        )
    return GatewayConfig(
        account=r.string(who, "account"),
        state=state,
        upstreams=tuple(_upstream(r, u, f"upstreams[{i}]", root) for i, u in enumerate(ups)),
        tables=tables,
        log=_resolve_log(root, r.string(log, "log")) if log is not None else None,
        settings=r.mapping(top.get("settings") or {}, "settings"),
        source=source,
    )


def _upstream(r: _Reader, value: Any, where: str, root: Path) -> Upstream:
    data = r.mapping(value, where)
    r.no_unknown(data, _UPSTREAM, where)
    name = r.string(r.require(data, "name", where), f"{where}.name")
    command = r.string(r.require(data, "command", where), f"{where}.command")
    if "/" in command:
        command = _resolve(root, command)
    args = data.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
        r.fail(f"{where}.args", f"must be a list of strings, not {args!r}")
    env = r.mapping(data.get("env") or {}, f"{where}.env")
    contracts = data.get("contracts")
    path = ""
    if contracts is not None:
        path = _resolve(root, r.string(contracts, f"{where}.contracts"))
        if not path.endswith(SUFFIX):
            r.fail(f"{where}.contracts", f"must name a sidecar file ending in {SUFFIX!r}")
        if not Path(path).is_file():
            r.fail(f"{where}.contracts", f"{path} does not exist; write it or fix the path")
    shadow = data.get("shadow") or []
    if not isinstance(shadow, list) or not all(isinstance(n, str) and n for n in shadow):
        r.fail(f"{where}.shadow", f"must be a list of rule names, not {shadow!r}")
    if shadow and not path:
        r.fail(f"{where}.shadow", "names rules, but the upstream has no contracts file")
    return Upstream(
        name=name,
        command=command,
        args=tuple(str(a) for a in args),
        env={k: str(v) for k, v in env.items()},
        contracts=path,
        shadow=tuple(shadow),
    )


class _Reader:
    """Type checks that raise a ConfigError naming the file and the dotted field."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, what: str) -> NoReturn:
        field_name = f" field {where!r}" if where else ""
        raise ConfigError(f"{self.source}:{field_name} {what}")

    def require(self, data: Mapping[str, Any], key: str, prefix: str) -> Any:
        if data.get(key) is None:
            self.fail(f"{prefix}.{key}" if prefix else key, "is required")
        return data[key]

    def mapping(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            self.fail(where, f"must be a mapping, not {type(value).__name__}")
        return {str(k): v for k, v in value.items()}

    def string(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value:
            self.fail(where, f"must be a non-empty string, not {value!r}")
        return value

    def no_unknown(self, data: Mapping[str, Any], known: frozenset[str], prefix: str) -> None:
        extra = sorted(set(data) - known)
        if extra:
            at = f"{prefix}.{extra[0]}" if prefix else extra[0]
            self.fail(at, f"is not a known field; choose one of {sorted(known)}")


def _resolve(root: Path, value: str) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else root / path)


def _resolve_state(root: Path, spec: str) -> str:
    """JSON and SQLite state files are relative to the config; other URLs are kept."""
    sqlite = "sqlite:///"
    if spec.startswith(sqlite) and not spec[len(sqlite) :].startswith("/"):
        return sqlite + _resolve(root, spec[len(sqlite) :])
    if spec.startswith("json:"):
        return "json:" + _resolve(root, spec[5:])
    if ":" not in spec.split("/")[0] and spec.lower().endswith(".json"):
        return _resolve(root, spec)
    return spec


def _resolve_log(root: Path, value: str) -> str:
    return value if "://" in value else _resolve(root, value)
