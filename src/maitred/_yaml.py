"""The one YAML reader: safe loading, repeated keys refused, errors that name the file and line.

Every YAML maitred reads goes through :func:`parse_yaml` (text) or :func:`read_yaml` (a file):
configs (``serve.yaml``, a tables mapping), contract sidecars and ``SKILL.md`` frontmatter (the
MCP gateway's config is still read by ``gateway/config.py`` itself). Loading is PyYAML's safe
loader (no Python objects; parsed by libyaml where PyYAML has it, which reads a 1,000-tool
sidecar three times as fast); a failure of any kind -- a syntax error, a character YAML does not
allow, a value the safe constructor refuses (an impossible date), absurd nesting -- is a
:class:`YamlProblem` with the file, the 1-based line where it is known and what is wrong, never
PyYAML's own text (which names ``<unicode string>`` and spans lines).

A key given twice in one mapping is refused (PyYAML would keep the last one silently, so a
repeated ``exit_if`` or ``token_sha256`` would drop the first without a word); the one place
that tolerates it, ``SKILL.md`` frontmatter (the Agent Skills format, where it is a deviation
reported as a warning), asks with ``unique_keys=False``. The merge key ``<<`` is not a repeat.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml

from maitred.errors import ConfigError

_MERGE_TAG = "tag:yaml.org,2002:merge"
#: libyaml's parser where PyYAML was built with it (three times as fast on a large sidecar;
#: ``None``: not built with it); the constructor is the safe one either way, and YAML it
#: refuses is parsed again by the pure-Python parser, whose errors maitred reports
_FAST: type[yaml.CSafeLoader] | None = getattr(yaml, "CSafeLoader", None)

ProblemKind = Literal["read", "character", "syntax", "load", "repeat"]


class YamlProblem(ConfigError):
    """A text that cannot be loaded as the YAML asked for.

    Attributes:
        source: the file (or what the text is) the message names.
        detail: what is wrong, without the file or line (``not valid YAML: ...``).
        line: the 1-based line in the file, when known.
        kind: ``read`` (not UTF-8 text, or no file), ``character`` (one YAML does not allow),
            ``syntax`` (a tag the safe loader refuses included), ``load`` (the safe
            constructor refused a value) or ``repeat`` (a key given twice).
    """

    def __init__(self, source: str, detail: str, line: int | None, kind: ProblemKind) -> None:
        self.source, self.detail, self.line, self.kind = source, detail, line, kind
        at = f"{source}:{line}" if line is not None else source
        super().__init__(f"{at}: {detail}")


def parse_yaml(
    text: str, source: str, *, first_line: int = 1, unique_keys: bool = True
) -> tuple[Any, yaml.Node | None]:
    """Safe-load one YAML document; its value and its node tree (``None, None`` when empty).

    Args:
        text: the YAML.
        source: what errors name (a file path).
        first_line: the file's line of the text's first line (frontmatter starts on line 2).
        unique_keys: refuse a key given twice in one mapping.

    Raises:
        YamlProblem: the text is not valid YAML, or cannot be loaded, or repeats a key.
    """
    try:
        yaml.reader.Reader(text)  # checks for unprintable characters up front, as a whole
    except yaml.reader.ReaderError as exc:
        at = text.count("\n", 0, exc.position) + first_line
        raise YamlProblem(
            source,
            f"not valid YAML: character #x{exc.character:04x} is not allowed in YAML; remove "
            "it, or save the file as plain UTF-8 text",
            at,
            "character",
        ) from None
    if _FAST is not None:
        try:
            return _load(_FAST, text, source, first_line, unique_keys, fast=True)
        except yaml.YAMLError:  # libyaml places and words some errors otherwise: the
            pass  # pure-Python parser's line and words are the ones maitred reports
    return _load(yaml.SafeLoader, text, source, first_line, unique_keys)


def _load(
    parser: type[yaml.SafeLoader] | type[yaml.CSafeLoader],
    text: str,
    source: str,
    first_line: int,
    unique_keys: bool,
    *,
    fast: bool = False,
) -> tuple[Any, yaml.Node | None]:
    """:func:`parse_yaml` with ``parser``; a ``fast`` one lets PyYAML's own errors through."""
    loader = parser(text)
    try:
        node = loader.get_single_node()
        if unique_keys and node is not None:
            _refuse_repeated(node, source, first_line)
        data = None if node is None else loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        if fast:
            raise
        mark = exc.problem_mark or exc.context_mark
        what = "; ".join(p for p in (exc.context, exc.problem) if p) or "syntax error"
        column = f" at column {mark.column + 1}" if mark is not None else ""
        line = mark.line + first_line if mark is not None else None
        raise YamlProblem(source, f"not valid YAML: {what}{column}", line, "syntax") from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        if fast and isinstance(exc, yaml.YAMLError):
            raise
        # the safe constructor raises ValueError for an impossible date, RecursionError for
        # absurd nesting: both mean "this YAML cannot be loaded"
        detail = f"cannot be loaded as YAML ({type(exc).__name__}: {exc})"
        raise YamlProblem(source, detail, None, "load") from None
    finally:
        loader.dispose()
    return data, node


def read_yaml(path: str | Path, what: str) -> Any:
    """The value of the YAML file at ``path`` (:func:`parse_yaml`, repeated keys refused).

    Args:
        path: the file.
        what: what the file is, for the message when it cannot be read (``the server config``).

    Raises:
        YamlProblem: the file cannot be read as UTF-8 text, or its YAML is refused.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise YamlProblem(str(path), f"cannot read {what}: {exc}", None, "read") from None
    return parse_yaml(text, str(path))[0]


def _refuse_repeated(root: yaml.Node, source: str, first_line: int) -> None:
    """Raise on the first mapping (depth first) that gives one scalar key twice."""
    stack, seen_nodes = [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:  # an alias repeats a node, not a key
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            lines: dict[tuple[str, str], int] = {}
            for key, value in node.value:
                stack.append(value)
                if not isinstance(key, yaml.ScalarNode) or key.tag == _MERGE_TAG:
                    stack.append(key)
                    continue
                line, name = key.start_mark.line + first_line, (key.tag, key.value)
                if name in lines:
                    raise YamlProblem(
                        source,
                        f"key {key.value!r} is given twice (lines {lines[name]} and {line}); "
                        "remove one",
                        line,
                        "repeat",
                    )
                lines[name] = line
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
