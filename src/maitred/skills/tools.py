"""Load tool definitions (MCP, OpenAI, Anthropic) as ``Skill(kind="tool")``.

Three shapes of one idea (a name, a description, a JSON schema of the arguments) are accepted,
in a ``.json`` file or one per line in a ``.jsonl`` file::

    {"name": "get_weather", "description": "...", "inputSchema": {...}}          # MCP
    {"type": "function", "function": {"name": ..., "description": ...,
                                      "parameters": {...}}}                      # OpenAI
    {"name": "get_weather", "description": "...", "input_schema": {...}}         # Anthropic
    {"name": "get_weather", "description": "...", "parameters": {...},
     "body": "longer instructions", "server": "weather"}                         # plain

A ``.json`` file holds a list of those, an MCP ``tools/list`` result ``{"tools": [...]}``, the
JSON-RPC response around it ``{"result": {"tools": [...]}}``, or a single tool.

Every problem names the file, the line (JSONL) or index (``tools[3]``), and the field. A tool that
cannot be loaded is skipped and reported, so one bad line never drops the rest; strict mode also
refuses deviations (a name outside ``[A-Za-z0-9_.-]{1,128}``, a missing description, a schema
that is not ``"type": "object"``, unknown keys). Each tool's ``path`` says where it came from:
``tools.jsonl#3`` (line 3) or ``tools.json#/tools/0`` (a JSON pointer).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from maitred.errors import SkillParseError
from maitred.skills.model import Skill
from maitred.skills.report import Diagnostics, LoadReport, Problem

TOOL_SUFFIXES = (".json", ".jsonl")
TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_SCHEMA_KEYS = ("inputSchema", "input_schema", "parameters")
# Keys the MCP, OpenAI and Anthropic formats define that maitred does not use: accepted quietly.
# ``server`` (the MCP server a tool comes from; benchmarks/sets/build.py writes it) is kept as
# ``Skill.server``, which only ``+servers`` recall reads.
_KNOWN_KEYS = frozenset(
    {"name", "description", "body", "type", *_SCHEMA_KEYS}
    | {"title", "annotations", "outputSchema", "_meta", "icons", "strict", "cache_control"}
    | {"server"}
)
_BOM = b"\xef\xbb\xbf"
_Fail = Callable[[str, str], SkillParseError]
_Warn = Callable[[str, str], None]


def load_tools(
    path: str | os.PathLike[str], *, strict: bool = False
) -> tuple[tuple[Skill, ...], LoadReport]:
    """Load a tools ``.json`` or ``.jsonl`` file.

    Args:
        path: the file; ``.jsonl`` is read line by line, anything else as one JSON document.
        strict: raise on the first problem instead of skipping the tool or warning.

    Returns:
        The tools that loaded, and a report of what was examined, warned about and skipped.

    Raises:
        SkillParseError: the file cannot be read or parsed at all, or (strict) any tool has a
            problem.
    """
    diag = Diagnostics(strict=strict)
    skills, examined = read_tools(Path(path), diag)
    return _finish(skills, examined, diag)


def parse_tools(
    data: Any, *, source: str = "<tools>", strict: bool = False
) -> tuple[tuple[Skill, ...], LoadReport]:
    """Load tools from already-parsed JSON (a ``tools/list`` result, a list, or one tool).

    Args:
        data: the decoded JSON value.
        source: how to name it in paths and messages.
        strict: raise on the first problem instead of skipping the tool or warning.

    Returns:
        The tools that loaded, and the report.

    Raises:
        SkillParseError: ``data`` holds no tools list, or (strict) any tool has a problem.
    """
    diag = Diagnostics(strict=strict)
    skills, examined = _from_document(data, source, diag)
    return _finish(skills, examined, diag)


def read_tools(path: Path, diag: Diagnostics) -> tuple[list[Skill], int]:
    """Read a tools file into ``diag``: (tools loaded, definitions examined).

    A tool that cannot be loaded (and, when ``diag.strict``, one with any deviation) is recorded
    in ``diag.errors`` and skipped; the rest still load.

    Raises:
        SkillParseError: the file itself cannot be read or, for ``.json``, parsed.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SkillParseError(
            str(path), f"cannot be read ({exc.strerror or exc}): check it exists and is readable"
        ) from exc
    if path.suffix.lower() == ".jsonl":
        return _from_jsonl(raw, str(path), diag)
    try:
        text = raw.removeprefix(_BOM).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillParseError(
            str(path), f"is not UTF-8 text (byte offset {exc.start}): save it as UTF-8"
        ) from None
    return _from_document(_json(text, str(path), None), str(path), diag)


def _finish(
    skills: list[Skill], examined: int, diag: Diagnostics
) -> tuple[tuple[Skill, ...], LoadReport]:
    if diag.strict and diag.errors:
        raise diag.errors[0].to_error()
    report = LoadReport(examined, len(skills), tuple(diag.warnings), tuple(diag.errors))
    return tuple(skills), report


def _from_jsonl(raw: bytes, path: str, diag: Diagnostics) -> tuple[list[Skill], int]:
    skills: list[Skill] = []
    examined = 0
    for number, chunk in enumerate(raw.removeprefix(_BOM).split(b"\n"), start=1):
        if not chunk.strip():
            continue
        examined += 1
        try:
            try:
                text = chunk.decode("utf-8")
            except UnicodeDecodeError:
                raise SkillParseError(path, "is not UTF-8 text", line=number) from None
            entry = _json(text, path, number)
            skills.append(_tool(entry, path, diag, line=number, prefix="", ref=f"{path}#{number}"))
        except SkillParseError as exc:
            diag.error(Problem.from_error(exc))
    return skills, examined


def _from_document(data: Any, path: str, diag: Diagnostics) -> tuple[list[Skill], int]:
    entries, pointer, prefix = _entries(data, path)
    skills: list[Skill] = []
    for index, entry in enumerate(entries):
        ref = f"{path}#{pointer}/{index}" if pointer is not None else path
        field = f"{prefix}[{index}]." if pointer is not None else ""
        try:
            skills.append(_tool(entry, path, diag, line=None, prefix=field, ref=ref))
        except SkillParseError as exc:
            diag.error(Problem.from_error(exc))
    return skills, len(entries)


def _entries(data: Any, path: str) -> tuple[list[Any], str | None, str]:
    """The tool objects in a JSON document -> (entries, JSON pointer of the list, field prefix)."""
    shapes = (
        'a list of tools, an MCP tools/list result {"tools": [...]}, a JSON-RPC response '
        '{"result": {"tools": [...]}} or a single tool object'
    )
    if isinstance(data, list):
        return data, "", ""
    if not isinstance(data, dict):
        raise SkillParseError(path, f"must hold {shapes}; got {_json_type(data)}")
    if isinstance(data.get("error"), dict) and "result" not in data:
        message = data["error"].get("message", "")
        raise SkillParseError(
            path, f"is a JSON-RPC error response ({message!r}), not a tools list", field="error"
        )
    if isinstance(data.get("result"), dict) and "tools" in data["result"]:
        tools, pointer, prefix = data["result"]["tools"], "/result/tools", "result.tools"
    elif "tools" in data:
        tools, pointer, prefix = data["tools"], "/tools", "tools"
    elif "name" in data or "function" in data:
        return [data], None, ""
    else:
        raise SkillParseError(path, f"must hold {shapes}; found keys {sorted(map(str, data))}")
    if not isinstance(tools, list):
        raise SkillParseError(
            path, f"`{prefix}` must be a list of tools, got {_json_type(tools)}", field=prefix
        )
    return tools, pointer, prefix


def _tool(
    entry: Any, path: str, diag: Diagnostics, *, line: int | None, prefix: str, ref: str
) -> Skill:
    """One tool object -> ``Skill(kind="tool")``; unloadable tools raise SkillParseError."""

    def fail(key: str, message: str) -> SkillParseError:
        return SkillParseError(path, message, field=(prefix + key).rstrip(".") or None, line=line)

    def warn(key: str, message: str) -> None:
        diag.deviation(path, message, field=(prefix + key).rstrip(".") or None, line=line)

    if not isinstance(entry, dict):
        raise fail("", f"a tool must be a JSON object, got {_json_type(entry)}")
    spec: dict[str, Any] = entry
    if entry.get("type") == "function" and "function" in entry:  # OpenAI chat completions
        if not isinstance(entry["function"], dict):
            raise fail("function", f"must be an object, got {_json_type(entry['function'])}")
        for key in sorted(set(map(str, entry)) - {"type", "function"}):
            warn(key, f"unknown key {key!r} beside `function` (rule: known keys); ignored")
        spec, prefix = entry["function"], prefix + "function."
    elif "type" in entry and entry["type"] != "function":
        warn("type", f"tool type {entry['type']!r} is not 'function' (rule: function tools)")
    name = _tool_name(spec, fail, warn)
    description = _tool_description(spec, name, fail, warn)
    body = spec.get("body")
    if body is not None and not isinstance(body, str):
        warn("body", f"`body` must be a string, got {_json_type(body)}; ignored")
        body = None
    server = spec.get("server")
    if server is not None and not (isinstance(server, str) and server.strip()):
        warn("server", f"`server` must be a non-empty string, got {server!r}; ignored")
        server = None
    unknown = sorted(str(k) for k in spec if k not in _KNOWN_KEYS)
    for key in unknown:
        known = ", ".join(sorted(k for k in _KNOWN_KEYS if not k.startswith("_")))
        warn(key, f"unknown key {key!r} (rule: known keys are {known}); ignored")
    return Skill(
        name=name,
        description=description,
        kind="tool",
        body=body or "",
        parameters=_tool_schema(spec, fail, warn),
        path=ref,
        server=server.strip() if server else None,
    )


def _tool_name(spec: dict[str, Any], fail: _Fail, warn: _Warn) -> str:
    name = spec.get("name")
    if not isinstance(name, str) or not name.strip():
        got = "is missing" if "name" not in spec else f"must be a non-empty string, got {name!r}"
        raise fail("name", f"`name` {got}: every tool needs a unique name")
    if not TOOL_NAME.fullmatch(name):
        warn(
            "name",
            f"tool name {name!r} breaks the rule 1-128 characters of A-Z, a-z, 0-9, '_', '-', "
            "'.' (MCP; OpenAI and Anthropic allow fewer): rename it",
        )
    return name


def _tool_description(spec: dict[str, Any], name: str, fail: _Fail, warn: _Warn) -> str:
    description = spec.get("description")
    if description is not None and not isinstance(description, str):
        raise fail("description", f"`description` must be a string, got {_json_type(description)}")
    if description and description.strip():
        return description.strip()
    title = spec.get("title")
    fallback = title.strip() if isinstance(title, str) and title.strip() else name
    warn(
        "description",
        f"`description` is missing or empty (rule: tools are routed by their description); "
        f"using {fallback!r}: add a description saying what the tool does and when to use it",
    )
    return fallback


def _tool_schema(spec: dict[str, Any], fail: _Fail, warn: _Warn) -> dict[str, Any] | None:
    present = [k for k in _SCHEMA_KEYS if k in spec]
    if not present:
        return None
    key = present[0]
    if len(present) > 1:
        warn(key, f"give one argument schema, found {present}; using `{key}`")
    schema = spec[key]
    if schema is None:
        return None
    if not isinstance(schema, dict):
        raise fail(key, f"`{key}` must be a JSON Schema object, got {_json_type(schema)}")
    if schema.get("type") != "object":
        warn(key, f'`{key}` should have "type": "object" (rule: arguments are an object)')
    return schema


def _json(text: str, path: str, line: int | None) -> Any:
    """Parse JSON; NaN and infinities are refused (they have no canonical form)."""
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        at = line if line is not None else exc.lineno
        hint = "each line must be one JSON object" if line is not None else "fix the JSON"
        raise SkillParseError(
            path, f"is not valid JSON ({exc.msg}, column {exc.colno}): {hint}", line=at
        ) from None
    except (ValueError, RecursionError) as exc:
        raise SkillParseError(path, f"cannot be loaded as JSON: {exc}", line=line) from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed: use a finite number or a string")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} overflows a float: use a smaller number or a string")
    return value


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    for kind, label in names.items():
        if isinstance(value, kind):
            return label
    return "a number" if isinstance(value, (int, float)) else type(value).__name__
