"""MkDocs hook: the configuration reference, generated from the config models at every build.

The page ``reference/config.md`` does not exist on disk. At each build this hook reads the
frozen dataclasses that ``maitred serve`` and ``maitred mcp`` parse their YAML into
(:class:`maitred.serve.config.ServeConfig`, :class:`maitred.gateway.config.GatewayConfig`) and
every dataclass reachable from their fields, and writes one table per class: each field's name,
type, default, and what it means. The meaning comes from the code, in this order: the class
docstring's ``Attributes:`` section, a ``#:`` comment above the field, and, for the top-level
keys, the comment on that key's line in the module docstring's YAML example. A field added to a
model therefore shows up in the reference with no edit here; one without any of these three
still shows up, with its type and default.

``tests/test_docs.py`` checks that the reference names every field of both models.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import re
import sys
import types
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PAGE = "reference/config.md"

#: (command, module, class) of each configuration file documented
MODELS = (
    ("maitred serve --config serve.yaml", "maitred.serve.config", "ServeConfig"),
    ("maitred mcp --config gateway.yaml", "maitred.gateway.config", "GatewayConfig"),
)


def on_files(files: Any, config: Any, **_: Any) -> Any:
    """Add the generated page to the build (MkDocs event)."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=render()))
    return files


def render() -> str:
    """The whole reference page, as Markdown."""
    if str(REPO / "src") not in sys.path:  # document this checkout, not an installed copy
        sys.path.insert(0, str(REPO / "src"))
    out = [
        "# Configuration reference",
        "",
        "Generated from the configuration models at every build of these pages, so it lists",
        "exactly the fields the code reads. Each section starts with the example from its",
        "module's docstring, which shows where each field is written in the YAML file; the",
        "tables give every field's type, default and meaning. A field with no default is",
        "required. Every mistake in a file is reported with the file and the field.",
        "",
    ]
    for command, module_name, class_name in MODELS:
        module = importlib.import_module(module_name)
        model = getattr(module, class_name)
        prefix = command.split()[1]  # serve, mcp: a class both use gets an anchor in each
        out += [f"## `{command}` {{#{prefix}}}", ""]
        example = _example(module.__doc__ or "")
        if example:
            out += ["```yaml", example, "```", ""]
        for cls in _reachable(model):
            out += _class_section(cls, prefix)
    return "\n".join(out)


def _class_section(cls: type, prefix: str) -> list[str]:
    """One class: its summary and a table of its fields."""
    example = _example(sys.modules[cls.__module__].__doc__ or "")
    docs = {**_example_comments(example), **_comment_docs(cls), **_attribute_docs(cls)}
    hints = _hints(cls)
    lines = [f"### `{cls.__name__}` {{#{_anchor(prefix, cls)}}}", ""]
    lines += [f"`{cls.__module__}.{cls.__qualname__}`: {_summary(cls)}", ""]
    lines += ["| field | type | default | meaning |", "| --- | --- | --- | --- |"]
    for f in dataclasses.fields(cls):
        kind = _type(hints.get(f.name, Any), prefix)
        lines.append(f"| `{f.name}` | {kind} | {_default(f)} | {_md(docs.get(f.name, ''))} |")
    return [*lines, ""]


def _reachable(model: type) -> list[type]:
    """The model and every dataclass its fields name, breadth first, each once."""
    order: list[type] = []
    todo = [model]
    while todo:
        cls = todo.pop(0)
        if cls in order:
            continue
        order.append(cls)
        hints = _hints(cls)
        for f in dataclasses.fields(cls):
            todo += [t for t in _parts(hints.get(f.name, Any)) if dataclasses.is_dataclass(t)]
    return order


def _hints(cls: type) -> dict[str, Any]:
    """The fields' types; as written (text) where one names something only a type checker
    imports, so a new field never breaks the build."""
    try:
        return typing.get_type_hints(cls)
    except NameError:
        return {f.name: f.type for f in dataclasses.fields(cls)}


def _parts(tp: Any) -> Iterator[Any]:
    """A type and every type inside it (``tuple[X, ...] | None`` yields X too)."""
    yield tp
    for arg in typing.get_args(tp):
        yield from _parts(arg)


def _type(tp: Any, prefix: str) -> str:
    """A type as a reader of the YAML file would name it."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is type(None):
        return "`null`"
    if tp is Any:
        return "any"
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type(a, prefix) for a in args)
    if origin in (tuple, list, frozenset, set):
        inner = [a for a in args if a is not Ellipsis]
        return f"list of {_type(inner[0], prefix)}" if inner else "list"
    if origin is not None and issubclass(origin, Mapping):
        return (
            f"mapping of {_type(args[0], prefix)} to {_type(args[1], prefix)}"
            if args
            else "mapping"
        )
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return f"[`{tp.__name__}`](#{_anchor(prefix, tp)})"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return " \\| ".join(f"`{m.value}`" for m in tp)
    if isinstance(tp, str):  # an annotation that could not be resolved
        return f"`{tp}`"
    name = {str: "string", int: "integer", float: "number", bool: "boolean"}.get(tp)
    return name or f"`{getattr(tp, '__name__', str(tp))}`"


def _default(f: dataclasses.Field[Any]) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "**required**"
    if dataclasses.is_dataclass(value):
        return "each field's default"
    return f"`{_yaml(value)}`"


def _yaml(value: Any) -> str:
    """A default as it would be written in the YAML file."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return _yaml(value.value)
    if isinstance(value, (tuple, list, frozenset, set)):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_yaml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str):
        return value if value and re.fullmatch(r"[\w./:+-]+", value) else repr(value)
    return repr(value)


def _attribute_docs(cls: type) -> dict[str, str]:
    """Field descriptions from the docstring's Google-style ``Attributes:`` section."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    found = re.search(r"^Attributes:\n((?:[ \t]+.*\n?|\n)*)", doc, re.M)
    if not found:
        return {}
    docs: dict[str, str] = {}
    name = ""
    for line in found.group(1).splitlines():
        entry = re.match(r"^\s{4}(\w+)(?: \([^)]*\))?: (.*)$", line)
        if entry:
            name, text = entry.groups()
            docs[name] = text
        elif name and line.strip():
            docs[name] += " " + line.strip()
    return docs


def _comment_docs(cls: type) -> dict[str, str]:
    """Field descriptions from ``#:`` comments written above the fields."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    docs: dict[str, str] = {}
    pending: list[str] = []
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        field = re.match(r"^\s+(\w+)\s*:", line)
        if field and pending:
            docs[field.group(1)] = " ".join(pending)
        pending = []
    return docs


def _example(doc: str) -> str:
    """The first literal block (``::``) of a module docstring: the YAML example."""
    found = re.search(r"::\n\n((?:[ \t]+.*\n|\n)+)", inspect.cleandoc(doc) + "\n")
    if not found:
        return ""
    block = found.group(1).rstrip()
    indent = min(len(x) - len(x.lstrip()) for x in block.splitlines() if x.strip())
    return "\n".join(x[indent:] for x in block.splitlines())


def _example_comments(example: str) -> dict[str, str]:
    """The comment on each key's line of a YAML example (continued on comment-only lines
    below it); where a key appears twice, its first comment."""
    docs: dict[str, str] = {}
    key = ""
    for line in example.splitlines():
        entry = re.match(r"^\s*(?:- )?(\w+):[^#]*#\s*(.+)$", line)
        if entry:
            key = entry.group(1)
            docs.setdefault(key, entry.group(2).strip())
        elif key and re.match(r"^\s*#", line) and docs.get(key):
            docs[key] += " " + line.strip().lstrip("#").strip()
        else:
            key = ""
    return docs


def _summary(cls: type) -> str:
    """The first paragraph of a class docstring."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    return _md(doc.split("\n\n", 1)[0].replace("\n", " ")) if doc else ""


def _md(text: str) -> str:
    """reStructuredText roles and literals as Markdown, safe inside a table cell."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text)
    text = text.replace("``", "`")
    # braces outside code would read as attr_list's {attributes} and vanish
    parts = text.split("`")
    parts[::2] = [re.sub(r"([{}])", r"\\\1", part) for part in parts[::2]]
    return "`".join(parts).replace("|", "\\|")


def _anchor(prefix: str, cls: type) -> str:
    return f"{prefix}-{cls.__name__.lower()}"
