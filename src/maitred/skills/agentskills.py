"""Read Agent Skills folders (agentskills.io): ``SKILL.md`` frontmatter, body and resources.

A skill is a folder whose ``SKILL.md`` starts with YAML frontmatter between two ``---`` lines,
followed by a markdown body::

    pdf-processing/
    ├── SKILL.md          ---
    │                     name: pdf-processing            # required, = the folder name
    │                     description: Extract text ...   # required, 1-1024 characters
    │                     license: Apache-2.0             # optional
    │                     compatibility: Needs poppler    # optional, 1-500 characters
    │                     metadata: {owner: docs-team}    # optional, string -> string
    │                     allowed-tools: Bash Read        # optional, space-delimited
    │                     ---
    │                     # PDF processing  ...           (the body)
    ├── maitred.yaml      maitred's contract (see :mod:`maitred.contract.sidecar`)
    ├── scripts/  references/  assets/                    (listed in ``Skill.resources``)

Delimiters are matched as whole lines, exactly ``---`` (a trailing ``\\r`` is allowed, and a
UTF-8 byte-order mark before the first one): an indented ``---`` inside a block scalar, or a
``----`` rule, does not close the frontmatter. The parser is written out by hand rather than
borrowed from a front-matter library so that these rules, and the line numbers in errors (always
lines of ``SKILL.md``, never of the YAML fragment), are exactly the spec's.

``name`` must be 1-64 characters of ``a-z``, ``0-9`` and single hyphens, not starting or ending
with a hyphen, and equal to the folder name.

Strict mode raises :class:`~maitred.errors.SkillParseError` for any broken rule. Lenient mode (the
default) loads what real skill folders contain (names with capitals or underscores, a name that
differs from its folder, long descriptions, non-string metadata values, unknown fields, a missing
name) and reports each deviation as a warning that names the file, field and rule. What makes a
skill unloadable is an error in both modes: no frontmatter, unclosed frontmatter, invalid YAML,
frontmatter that is not a mapping, a missing or empty description, a file that is not UTF-8.
A body longer than the spec recommends (:data:`BODY_MAX_LINES` lines, about
:data:`BODY_MAX_TOKENS` tokens) is advice: a warning in every mode, never an error.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from maitred.contract.sidecar import load_sidecar
from maitred.errors import SkillParseError
from maitred.skills.frontmatter import Frontmatter, key_nodes, node_line, read_frontmatter
from maitred.skills.model import Skill
from maitred.skills.report import Diagnostics, Problem

SKILL_FILE = "SKILL.md"
NAME_MAX = 64
DESCRIPTION_MAX = 1024
COMPATIBILITY_MAX = 500
FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
RESOURCE_DIRS = ("scripts", "references", "assets")
BODY_MAX_LINES = 500
"""The spec's recommended maximum length of the ``SKILL.md`` body, in lines."""
BODY_MAX_TOKENS = 5000
"""The spec's recommended maximum size of the body, in tokens (estimated)."""
CHARS_PER_TOKEN = 4

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


@dataclass(frozen=True)
class SkillMd:
    """The parsed content of one ``SKILL.md``.

    Attributes:
        name: the skill name (lenient mode: the folder name when the field is missing).
        description: what the skill does and when to use it (surrounding whitespace removed).
        body: the markdown after the closing ``---`` line, with ``\\n`` line endings.
        license, compatibility, allowed_tools: optional frontmatter fields.
        metadata: the ``metadata`` map, every key and value a string.
    """

    name: str
    description: str
    body: str = ""
    license: str | None = None
    compatibility: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    allowed_tools: str | None = None


def parse_skill_md(
    source: str | bytes,
    *,
    path: str = SKILL_FILE,
    folder_name: str | None = None,
    strict: bool = False,
) -> tuple[SkillMd, tuple[Problem, ...]]:
    """Parse the text of a ``SKILL.md``.

    Args:
        source: the file's bytes (decoded as UTF-8) or text.
        path: the file name used in errors and warnings.
        folder_name: the skill folder's name; ``name`` must equal it, and lenient mode uses it
            when ``name`` is missing. ``None`` skips both.
        strict: raise on every broken rule instead of warning.

    Returns:
        The parsed file and the warnings lenient mode produced (empty in strict mode).

    Raises:
        SkillParseError: the file cannot be loaded, or (strict) a rule is broken.
    """
    diag = Diagnostics(strict=strict)
    fm = read_frontmatter(source, path, diag)
    _check_keys(fm, path, diag)
    md = SkillMd(
        name=_name(fm, folder_name, path, diag),
        description=_description(fm, path, diag),
        body=fm.body,
        license=_optional_text(fm, "license", path, diag),
        compatibility=_compatibility(fm, path, diag),
        metadata=_metadata(fm, path, diag),
        allowed_tools=_allowed_tools(fm, path, diag),
    )
    _check_body_size(fm.body, path, diag)
    return md, tuple(diag.warnings)


def _check_body_size(body: str, path: str, diag: Diagnostics) -> None:
    """Advise when the body is longer than the spec recommends (a warning in every mode).

    The spec loads the whole body when a skill is activated and recommends keeping it under
    :data:`BODY_MAX_LINES` lines and about :data:`BODY_MAX_TOKENS` tokens, with details moved
    to ``references/``. Tokens are estimated at :data:`CHARS_PER_TOKEN` characters each (the
    skills package does not load a tokenizer).
    """
    lines = body.count("\n") + 1 if body else 0
    tokens = len(body) // CHARS_PER_TOKEN
    if lines <= BODY_MAX_LINES and tokens <= BODY_MAX_TOKENS:
        return
    diag.advise(
        path,
        f"the body is {lines} lines and about {tokens} tokens (the spec recommends under "
        f"{BODY_MAX_LINES} lines and {BODY_MAX_TOKENS} tokens, all loaded on activation): "
        "move details into `references/` files that the body links to",
    )


def load_skill(
    folder: str | os.PathLike[str], *, strict: bool = False, family_from_parent: bool = False
) -> tuple[Skill, tuple[Problem, ...]]:
    """Load one skill folder: ``SKILL.md``, its ``maitred.yaml`` contract and its resources.

    The family is the sidecar's ``family``, else ``metadata["family"]``, else (only with
    ``family_from_parent``) the name of the folder that holds the skill folder.

    Args:
        folder: the skill folder (the one that contains ``SKILL.md``).
        strict: raise on every broken rule instead of warning.
        family_from_parent: fall back to the parent folder's name as the family.

    Returns:
        The skill and the warnings lenient mode produced.

    Raises:
        SkillParseError: ``SKILL.md`` cannot be read or loaded, or (strict) breaks a rule.
        ContractError: the ``maitred.yaml`` sidecar is invalid (the message names it).
    """
    folder = Path(folder)
    md_path = folder / SKILL_FILE
    try:
        raw = md_path.read_bytes()
    except OSError as exc:
        raise SkillParseError(
            str(md_path), f"cannot be read ({exc.strerror or exc}): check it exists and is readable"
        ) from exc
    here = Path(os.path.abspath(folder))
    md, warnings = parse_skill_md(raw, path=str(md_path), folder_name=here.name, strict=strict)
    contract, family = load_sidecar(folder, md.name)
    if family is None:
        family = md.metadata.get("family") or None
    if family is None and family_from_parent:
        family = here.parent.name or None
    skill = Skill(
        name=md.name,
        description=md.description,
        kind="skill",
        body=md.body,
        path=str(folder),
        family=family,
        license=md.license,
        compatibility=md.compatibility,
        metadata=dict(md.metadata),
        allowed_tools=md.allowed_tools,
        resources=list_resources(folder),
        contract=contract,
    )
    return skill, warnings


def list_resources(folder: str | os.PathLike[str]) -> tuple[str, ...]:
    """Files under the skill's ``scripts/``, ``references/`` and ``assets/``, sorted.

    Paths are relative to the skill folder, with ``/`` separators. Hidden files and folders and
    ``__pycache__`` are left out; symlinked folders are not followed (no loops).
    """
    root = Path(folder)
    found: list[str] = []
    for sub in RESOURCE_DIRS:
        base = root / sub
        if not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not _hidden(d)]
            here = Path(dirpath)
            found.extend(
                (here / f).relative_to(root).as_posix() for f in filenames if not _hidden(f)
            )
    return tuple(sorted(found))


# --- fields ---------------------------------------------------------------------------------


def _check_keys(fm: Frontmatter, path: str, diag: Diagnostics) -> None:
    """Warn about top-level fields the spec does not define (a near miss gets a suggestion)."""
    for key in fm.data:
        if key in FIELDS:
            continue
        name = _as_text(key)
        close = difflib.get_close_matches(name, FIELDS, n=1)
        hint = f"did you mean `{close[0]}`? " if close else ""
        diag.deviation(
            path,
            f"unknown field {name!r} (rule: the spec allows only {', '.join(FIELDS)}): {hint}"
            "move extra information under `metadata:`; the field is ignored",
            field=name,
            line=fm.line(name),
        )


def _name(fm: Frontmatter, folder_name: str | None, path: str, diag: Diagnostics) -> str:
    raw = fm.data.get("name")
    line = fm.line("name")
    if raw is None or isinstance(raw, (list, dict)) or (isinstance(raw, str) and not raw.strip()):
        what = "is missing" if "name" not in fm.data else f"must be non-empty text, got {raw!r}"
        if folder_name is None:
            raise SkillParseError(
                path, f"`name` {what}: add `name: <skill-name>`", field="name", line=line
            )
        diag.deviation(
            path,
            f"`name` {what} (rule: name is required); using the folder name {folder_name!r}: "
            f"add `name: {folder_name}`",
            field="name",
            line=line,
        )
        name = folder_name
    elif not isinstance(raw, str):
        name = _as_text(raw, fm.nodes.get("name"))
        diag.deviation(
            path,
            f"`name` must be a string, got {type(raw).__name__} (rule: name is text); "
            f"loaded as {name!r}: quote it",
            field="name",
            line=line,
        )
    else:
        name = raw
    for rule in name_rule_violations(name):
        diag.deviation(path, f"`name` {name!r} {rule}", field="name", line=line)
    if folder_name is not None and name != folder_name:
        diag.deviation(
            path,
            f"`name` {name!r} does not match its folder {folder_name!r} (rule: name must equal "
            "the folder name): rename the folder or change `name`",
            field="name",
            line=line,
        )
    return name


def name_rule_violations(name: str) -> list[str]:
    """The Agent Skills ``name`` rules that ``name`` breaks, one message each (empty: valid).

    Rules: 1-64 characters; only ``a-z``, ``0-9`` and ``-``; no leading or trailing hyphen;
    no ``--``.
    """
    broken: list[str] = []
    if not name:
        broken.append("is empty (rule: 1-64 characters)")
    if len(name) > NAME_MAX:
        broken.append(f"is {len(name)} characters long (rule: at most {NAME_MAX}): shorten it")
    bad = sorted(set(name) - _NAME_CHARS)
    if bad:
        shown = ", ".join(repr(c) for c in bad[:8])
        broken.append(
            f"contains {shown} (rule: only lowercase letters a-z, digits and hyphens): "
            f"use e.g. {_suggest_name(name)!r}"
        )
    if name.startswith("-") or name.endswith("-"):
        broken.append("starts or ends with a hyphen (rule: hyphens only between characters)")
    if "--" in name:
        broken.append("contains '--' (rule: no consecutive hyphens)")
    return broken


def _suggest_name(name: str) -> str:
    chars = [c if c in _NAME_CHARS else "-" for c in name.lower()]
    parts = [p for p in "".join(chars).split("-") if p]
    return "-".join(parts)[:NAME_MAX].strip("-") or "my-skill"


def _description(fm: Frontmatter, path: str, diag: Diagnostics) -> str:
    raw = fm.data.get("description")
    line = fm.line("description")
    fix = "add `description:` saying what the skill does and when to use it (1-1024 characters)"
    if raw is None:
        what = "is missing" if "description" not in fm.data else "is empty"
        raise SkillParseError(path, f"`description` {what}: {fix}", field="description", line=line)
    if isinstance(raw, (list, dict)):
        raise SkillParseError(
            path,
            f"`description` must be text, got a {type(raw).__name__}: {fix}",
            field="description",
            line=line,
        )
    if not isinstance(raw, str):
        raw = _as_text(raw, fm.nodes.get("description"))
        diag.deviation(
            path,
            f"`description` must be a string (rule: description is text); loaded as {raw!r}",
            field="description",
            line=line,
        )
    text = raw.strip()
    if not text:
        raise SkillParseError(
            path, f"`description` is empty: {fix}", field="description", line=line
        )
    if len(text) > DESCRIPTION_MAX:
        diag.deviation(
            path,
            f"`description` is {len(text)} characters long (rule: at most {DESCRIPTION_MAX}): "
            "shorten it, and move details into the body",
            field="description",
            line=line,
        )
    return text


def _optional_text(fm: Frontmatter, key: str, path: str, diag: Diagnostics) -> str | None:
    raw = fm.data.get(key)
    if raw is None:
        return None
    if isinstance(raw, str):
        return raw
    text = _as_text(raw, fm.nodes.get(key))
    diag.deviation(
        path,
        f"`{key}` must be a string, got {type(raw).__name__} (rule: {key} is text); "
        f"loaded as {text!r}",
        field=key,
        line=fm.line(key),
    )
    return text


def _compatibility(fm: Frontmatter, path: str, diag: Diagnostics) -> str | None:
    text = _optional_text(fm, "compatibility", path, diag)
    if text is None:
        return None
    line = fm.line("compatibility")
    if not text.strip():
        diag.deviation(
            path,
            f"`compatibility` is empty (rule: 1-{COMPATIBILITY_MAX} characters when present): "
            "remove it or state the requirement; ignored",
            field="compatibility",
            line=line,
        )
        return None
    if len(text) > COMPATIBILITY_MAX:
        diag.deviation(
            path,
            f"`compatibility` is {len(text)} characters long (rule: at most {COMPATIBILITY_MAX}): "
            "shorten it",
            field="compatibility",
            line=line,
        )
    return text.strip()


def _metadata(fm: Frontmatter, path: str, diag: Diagnostics) -> dict[str, str]:
    raw = fm.data.get("metadata")
    if raw is None:
        return {}
    line = fm.line("metadata")
    if not isinstance(raw, dict):
        diag.deviation(
            path,
            f"`metadata` must be a mapping, got {type(raw).__name__} (rule: metadata maps "
            "string keys to string values); ignored",
            field="metadata",
            line=line,
        )
        return {}
    values: dict[str, yaml.Node] = {}
    node = fm.nodes.get("metadata")
    if isinstance(node, yaml.MappingNode):
        values = key_nodes(node)
    out: dict[str, str] = {}
    for key, value in raw.items():
        name = key if isinstance(key, str) else _as_text(key)
        where = values.get(name)
        at = node_line(where) if where is not None else line
        if not isinstance(key, str):
            diag.deviation(
                path,
                f"`metadata` key {key!r} must be a string (rule: string keys); loaded as {name!r}",
                field=f"metadata.{name}",
                line=at,
            )
        if isinstance(value, str):
            out[name] = value
            continue
        text = _as_text(value, where)
        diag.deviation(
            path,
            f"`metadata.{name}` must be a string, got {type(value).__name__} (rule: string "
            f"values); loaded as {text!r}: quote it in the YAML",
            field=f"metadata.{name}",
            line=at,
        )
        out[name] = text
    return out


def _allowed_tools(fm: Frontmatter, path: str, diag: Diagnostics) -> str | None:
    raw = fm.data.get("allowed-tools")
    if raw is None or isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        text = " ".join(_as_text(item) for item in raw)
        got = "a list"
    else:
        text = _as_text(raw, fm.nodes.get("allowed-tools"))
        got = type(raw).__name__
    diag.deviation(
        path,
        f"`allowed-tools` must be a space-delimited string, got {got} (rule: allowed-tools is "
        f"text); loaded as {text!r}",
        field="allowed-tools",
        line=fm.line("allowed-tools"),
    )
    return text


def _as_text(value: Any, node: yaml.Node | None = None) -> str:
    """Text for a non-string YAML value: the scalar as written when known (``1.10`` stays
    ``"1.10"``), JSON for lists and mappings, ``""`` for null."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(node, yaml.ScalarNode) and not isinstance(value, (list, dict)):
        return str(node.value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, (list, dict)):
        try:
            return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
        except (TypeError, ValueError):  # mixed key types, or a self-referencing alias
            return str(value)
    return str(value)


def _hidden(name: str) -> bool:
    return name.startswith(".") or name == "__pycache__"
