"""ACEBench as routing sets, one per language: ``acebench-zh`` and ``acebench-en``.

ACEBench (``ACEBench/ACEBench``, MIT) is a function-calling benchmark written twice, in Chinese
(``data_all/data_zh``) and English (``data_all/data_en``). Each item offers a model a handful of
candidate functions and a user request; its ``possible_answer`` file holds the gold call. As a
routing set:

- the **catalog** is every candidate function of every kept item, pooled (a name offered by
  several items is one tool; the first definition wins, and how many later ones differed is
  recorded in ``source.json``);
- a **query** is the item's user turns joined (``user:`` lines and their continuation lines;
  ``system:`` lines are dropped, since in ``similar_api`` items they hold earlier calls by name);
- its **gold** is the names of the gold call(s); a parallel call's ``name_1``, ``name_2`` are the
  offered ``name``;
- a function name outside MCP's tool-name rule (some Chinese items name functions in Chinese:
  ``室内光照管理器``) is renamed ``fn_`` + 10 hex digits of its hash, and the original name is put
  in front of its description (as an MCP ``title`` would show it), so its words stay findable;
  ``source.json`` counts these.

Kept: the ``normal_*`` categories and ``special_incomplete`` (a request whose gold is the one
function it needs, missing arguments aside). Left out: ``agent_*`` (gold is an end state, not a
call), ``special_error_param`` and ``special_irrelevant`` (no function is right), and any item
whose gold names a function it did not offer (counted in ``source.json``).

Every query carries ``split``: ``"dev"`` for about 3 in 10 (by a hash of its id, so the two
languages split alike), ``"test"`` for the rest. Anything chosen on this set (an analyzer, an
embedder) is chosen on ``dev`` and reported on ``test``; ``queries.jsonl`` holds the test side and
``dev.jsonl`` the dev side.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Rows = list[dict[str, Any]]
Converted = tuple[Rows, Rows, dict[str, Any]]

KEPT = ("normal_", "special_incomplete")
DEV_SHARE = 3  # of 10
_SPEAKER = re.compile(r"^(user|system)\s*[:：]\s?", re.IGNORECASE)
_COPY = re.compile(r"_\d+$")
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


def mcp_name(name: str) -> str:
    """``name`` if MCP allows it as a tool name, else ``fn_`` + 10 hex digits of its hash."""
    if _TOOL_NAME.match(name):
        return name
    return "fn_" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:10]


def split_of(item_id: str) -> str:
    """``"dev"`` or ``"test"``, from a hash of the item id (the same in both languages)."""
    digest = hashlib.sha256(item_id.encode("utf-8")).digest()
    return "dev" if digest[0] % 10 < DEV_SHARE else "test"


def user_text(question: str) -> str:
    """The user's turns of an ACEBench ``question``, joined by newlines (system turns dropped)."""
    kept: list[str] = []
    speaker = "user"
    for line in question.splitlines():
        found = _SPEAKER.match(line)
        if found:
            speaker = found.group(1).lower()
            line = line[found.end() :]
        if speaker == "user" and line.strip():
            kept.append(line.strip())
    return "\n".join(kept)


def gold_names(truth: Any, offered: set[str]) -> list[str]:
    """The names the gold call(s) use, mapped to offered functions (``f_1`` -> ``f``)."""
    calls = truth if isinstance(truth, list) else [truth]
    names: list[str] = []
    for call in calls:
        if not isinstance(call, dict):
            continue
        for name in call:
            if name not in offered and _COPY.sub("", name) in offered:
                name = _COPY.sub("", name)
            if name not in names:
                names.append(name)
    return names


def _items(read: Callable[[str], str], folder: str, part: str) -> Iterator[tuple[dict, Any]]:
    answers: dict[str, Any] = {}
    for line in read(f"{folder}/possible_answer/data_{part}.json").splitlines():
        if line.strip():
            row = json.loads(line)
            answers[row["id"]] = row.get("ground_truth")
    for line in read(f"{folder}/data_{part}.json").splitlines():
        if line.strip():
            item = json.loads(line)
            yield item, answers.get(item["id"])


def convert(
    read: Callable[[str], str], list_files: Callable[[str], list[str]], lang: str
) -> Converted:
    """Tools and queries of one language of ACEBench (``read(rel)`` -> a file's text)."""
    folder = f"data_all/data_{lang}"
    parts = sorted(
        Path(f).stem[len("data_") :]
        for f in list_files(folder)
        if f.endswith(".json") and "possible_answer" not in f
    )
    tools: dict[str, dict[str, Any]] = {}
    queries: Rows = []
    redefined = 0
    renamed: set[str] = set()
    no_gold: list[str] = []
    for part in parts:
        if not part.startswith(KEPT):
            continue
        for item, truth in _items(read, folder, part):
            offered: set[str] = set()
            for fn in item.get("function", []):
                name = str(fn["name"])
                offered.add(name)
                description = str(fn.get("description", ""))
                if mcp_name(name) != name:
                    renamed.add(name)
                    description = f"{name}：{description}"
                tool = {
                    "name": mcp_name(name),
                    "description": description,
                    "parameters": fn.get("parameters") or {"type": "object", "properties": {}},
                }
                if tool["name"] in tools and tools[tool["name"]] != tool:
                    redefined += 1
                tools.setdefault(tool["name"], tool)
            gold = gold_names(truth, offered)
            if not gold or not set(gold) <= offered:
                no_gold.append(item["id"])
                continue
            queries.append(
                {
                    "id": item["id"],
                    "text": user_text(item["question"]),
                    "gold": [mcp_name(g) for g in gold],
                    "category": part,
                    "split": split_of(item["id"]),
                }
            )
    notes = {
        "language": lang,
        "categories": [p for p in parts if p.startswith(KEPT)],
        "redefined_names_first_kept": redefined,
        "renamed_to_mcp_names": len(renamed),
        "items_left_out_gold_not_offered": no_gold,
        "dev_queries": sum(q["split"] == "dev" for q in queries),
    }
    return [_schema_fixed(t) for t in tools.values()], queries, notes


def _schema_fixed(tool: dict[str, Any]) -> dict[str, Any]:
    """ACEBench's agent files write ``"type": "dict"``; JSON Schema says ``object``."""
    params = tool["parameters"]
    if isinstance(params, dict) and params.get("type") == "dict":
        params = {**params, "type": "object"}
    return {**tool, "parameters": params}
