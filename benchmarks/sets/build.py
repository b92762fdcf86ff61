"""Convert public tool-retrieval sets into maitred's catalog and query formats.

Each converter reads a fetched copy of the set's source repository (a checkout, or a bare git
directory such as the search tool's ``fetch`` leaves: files are then read with ``git show``)
and writes, under ``--out/<set>/``:

- ``tools.jsonl``: one tool a line, ``{"name", "description", "parameters"?, "body"?}`` as
  :mod:`maitred.skills.tools` reads it (``body`` holds the long documentation);
- ``queries.jsonl``: ``{"id", "text", "gold": [tool names]}`` (step-wise sets add
  ``"steps": [...]``) as ``maitred eval routing`` reads it;
- ``source.json``: the source repository, commit, licence, counts and the converter's notes
  (files it could not read, tasks it left out and why).

Sets (see ``benchmarks/sets/README.md`` for licences and what each tests):

- ``toolalpaca`` (``tangqiaoyu/ToolAlpaca``, Apache-2.0): the two evaluation files
  (``data/eval_real.json``, ``data/eval_simulated.json``); every function of every API is one
  tool named ``API.function``; queries are the instructions, gold the functions their golden
  answers call (1-5 each).
- ``bfcl`` (``ShishirPatil/gorilla``, Apache-2.0): the Berkeley function-calling sets
  ``simple_python``, ``multiple``, ``parallel`` and ``parallel_multiple``; the catalog is the union
  of every function offered (first definition of a name wins); gold = the functions of the
  possible answer.
- ``api-bank`` (``AlibabaResearch/DAMO-ConvAI``, ``api-bank/``, Apache-2.0): the API list
  (``data/all_apis.csv``: description, input and output parameters) and the level-1 dialogues;
  the query is what the user says before the first API call, gold every API the dialogue calls.
- ``apibench-hf`` (``ShishirPatil/gorilla``, Apache-2.0): APIBench's Hugging Face API catalog
  (``data/api/huggingface_api.jsonl``, 936 models) and evaluation instructions; gold = the API the
  reference answer calls. Names ``org/model`` become ``org__model`` (tool names allow no ``/``).
- ``mcptoolbench`` (``mcp-tool-bench/MCPToolBenchPP``, no licence stated: never sampled here):
  single-step queries over real MCP servers' tools; each tool keeps its ``server``; gold = the
  labelled tool and its ``similar_tools``.
- ``mcp-bench`` and ``mcp-bench-steps`` (``xuhaike/mcp-bench``, Apache-2.0 claimed by a README
  badge only, tool texts from 28 third-party servers: never sampled here): the 257 tools of its
  28 servers, each with its ``server``; tasks asked as the user's request (``mcp-bench``) or as
  the numbered steps of their plan, tool names masked (``mcp-bench-steps``); gold derived from
  the tools the plan names (:func:`_mcpb_gold`).
- ``acebench-zh`` and ``acebench-en`` (``ACEBench/ACEBench``, MIT): the Chinese and English
  halves of ACEBench, each item's candidate functions pooled into one catalog, gold the gold
  call's name (``benchmarks/sets/acebench.py``); split into ``queries.jsonl`` (test) and
  ``dev.jsonl`` (dev) by a hash of the item id.

Nothing here is tuned or filtered by how any method scores. Run::

    python benchmarks/sets/build.py toolalpaca --src /path/to/ToolAlpaca --out bench-out/sets
    python benchmarks/sets/build.py mcp-bench-steps --src /path/to/mcp-bench
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import json
import random
import re
import subprocess
import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import acebench

Rows = list[dict[str, Any]]
Converted = tuple[Rows, Rows, dict[str, Any]]
"""A converter's tools, queries and notes (what was left out and why; into ``source.json``)."""


def read_text(src: Path, rel: str) -> str:
    """A file of the source: from a checkout, or ``git show HEAD:rel`` from a bare git dir."""
    if (src / rel).is_file():
        return (src / rel).read_text("utf-8")
    out = subprocess.run(
        ["git", f"--git-dir={src}", "show", f"HEAD:{rel}"],
        capture_output=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"{src}: cannot read {rel}: {out.stderr.decode().strip()}")
    return out.stdout.decode("utf-8")


def commit_of(src: Path) -> str:
    """The commit the source copy is at (``unknown`` if it is not a git copy)."""
    for args in (["git", f"--git-dir={src}"], ["git", "-C", str(src)]):
        out = subprocess.run([*args, "rev-parse", "HEAD"], capture_output=True, check=False)
        if out.returncode == 0:
            return out.stdout.decode().strip()
    return "unknown"


def tool_name(text: str) -> str:
    """A name maitred's tool rules accept: ``[A-Za-z0-9_.-]``, other runs become ``_``."""
    name = re.sub(r"[^A-Za-z0-9_.\-]+", "_", text.replace("/", "__")).strip("_")
    return name[:128]


def _jsonl(path: Path, rows: Rows) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


# --------------------------------------------------------------------------- ToolAlpaca
def _ta_params(text: str) -> dict[str, Any] | None:
    """``Parameters: {"city": "string. Required. The city"}`` -> a JSON schema, if present."""
    found = re.search(r"Parameters:\s*(\{.*?\})\s*(?:\n|$)", text)
    if not found:
        return None
    try:
        raw = json.loads(found.group(1))
    except json.JSONDecodeError:
        return None
    if not isinstance(raw, dict):
        return None
    props = {str(k): {"description": str(v)} for k, v in raw.items()}
    return {"type": "object", "properties": props}


def toolalpaca(src: Path) -> Converted:
    """Tools and queries of ToolAlpaca's evaluation files."""
    tools: Rows = []
    queries: Rows = []
    for part in ("eval_real", "eval_simulated"):
        for api in json.loads(read_text(src, f"data/{part}.json")):
            prefix = tool_name(api["Name"])
            intro = str(api.get("Introduction") or "")
            for func, doc in (api.get("Function_Description") or {}).items():
                if func == "components":
                    continue
                first, _, rest = str(doc).partition("\n")
                tool: dict[str, Any] = {
                    "name": f"{prefix}.{tool_name(func)}",
                    "description": first.strip() or str(api.get("Description") or func),
                    "body": f"{rest.strip()}\n\n{api['Name']}: {intro}".strip(),
                }
                schema = _ta_params(str(doc))
                if schema:
                    tool["parameters"] = schema
                tools.append(tool)
            for i, (text, answer) in enumerate(
                zip(api.get("Instructions") or [], api.get("Golden_Answers") or [], strict=False)
            ):
                gold = [f"{prefix}.{tool_name(step['Action'])}" for step in answer or []]
                if text and gold:
                    queries.append({"id": f"{part}-{prefix}-{i}", "text": text, "gold": gold})
    return tools, queries, {}


# --------------------------------------------------------------------------- BFCL
_BFCL = "berkeley-function-call-leaderboard/bfcl_eval/data"
BFCL_PARTS = ("simple_python", "multiple", "parallel", "parallel_multiple")


def _bfcl_schema(node: Any) -> Any:
    """BFCL writes Python type names (``dict``, ``float``, ``tuple``); map to JSON Schema."""
    kinds = {"dict": "object", "float": "number", "tuple": "array", "any": "string"}
    if isinstance(node, dict):
        out = {k: _bfcl_schema(v) for k, v in node.items()}
        if isinstance(out.get("type"), str):
            out["type"] = kinds.get(out["type"], out["type"])
        return out
    if isinstance(node, list):
        return [_bfcl_schema(v) for v in node]
    return node


def _lines(text: str) -> Iterator[dict[str, Any]]:
    for line in text.splitlines():
        if line.strip():
            yield json.loads(line)


def bfcl(src: Path) -> Converted:
    """Tools and queries of the four single-turn, non-live BFCL sets."""
    tools: dict[str, dict[str, Any]] = {}
    queries: Rows = []
    for part in BFCL_PARTS:
        answers = {
            a["id"]: a["ground_truth"]
            for a in _lines(read_text(src, f"{_BFCL}/possible_answer/BFCL_v4_{part}.json"))
        }
        for entry in _lines(read_text(src, f"{_BFCL}/BFCL_v4_{part}.json")):
            for fn in entry["function"]:
                name = tool_name(fn["name"])
                tools.setdefault(
                    name,
                    {
                        "name": name,
                        "description": fn.get("description") or name,
                        "parameters": _bfcl_schema(fn.get("parameters") or {"type": "object"}),
                    },
                )
            turn = entry["question"][0]
            text = " ".join(m["content"] for m in turn if m.get("role") == "user")
            gold = list(dict.fromkeys(tool_name(n) for call in answers[entry["id"]] for n in call))
            if text.strip() and gold:
                queries.append({"id": entry["id"], "text": text, "gold": gold})
    return list(tools.values()), queries, {}


# --------------------------------------------------------------------------- APIBench
def _api_body(api: dict[str, Any]) -> str:
    keep = ("domain", "functionality", "api_call", "api_arguments", "example_code", "performance")
    parts = []
    for key in keep:
        value = api.get(key)
        if value in (None, "", "N/A", [], {}):
            continue
        parts.append(f"{key}: {value if isinstance(value, str) else json.dumps(value)}")
    return "\n".join(parts)


def apibench_hf(src: Path) -> Converted:
    """APIBench's Hugging Face catalog and evaluation instructions."""
    tools: dict[str, dict[str, Any]] = {}
    for api in _lines(read_text(src, "data/api/huggingface_api.jsonl")):
        name = tool_name(str(api["api_name"]))
        tools.setdefault(
            name,
            {
                "name": name,
                "description": str(api.get("description") or api["api_name"]),
                "body": _api_body(api),
            },
        )
    queries: Rows = []
    for i, row in enumerate(_lines(read_text(src, "data/apibench/huggingface_eval.json"))):
        found = re.search(r"###Instruction:(.*?)(?:###Output|$)", row["code"], re.DOTALL)
        gold = tool_name(str(row["api_data"]["api_name"]))
        if found and found.group(1).strip() and gold in tools:
            queries.append({"id": f"hf-{i}", "text": found.group(1).strip(), "gold": [gold]})
    return list(tools.values()), queries, {}


# --------------------------------------------------------------------------- API-Bank
_APIBANK = "api-bank"


def _py_literal(text: str, name: str) -> Any:
    """The Python literal assigned to ``name`` in an API-Bank ``api_info`` text, or None."""
    found = re.search(rf"{name}\s*=\s*", text)
    if not found:
        return None
    rest = text[found.end() :]
    for end in range(len(rest), 0, -1):  # the longest prefix that parses
        if rest[end - 1] not in "}\"'":
            continue
        try:
            return ast.literal_eval(rest[:end])
        except (ValueError, SyntaxError):
            continue
    return None


def apibank(src: Path) -> Converted:
    """API-Bank's API list and its level-1 dialogues (the request = the user turns before the
    first API call; gold = every API the dialogue calls)."""
    tools: dict[str, dict[str, Any]] = {}
    for row in csv.DictReader(io.StringIO(read_text(src, f"{_APIBANK}/data/all_apis.csv"))):
        info = row["api_info"]
        name = tool_name(row["类名"])
        params = _py_literal(info, "input_parameters")
        outputs = _py_literal(info, "output_parameters")
        params = params if isinstance(params, dict) else {}
        outputs = outputs if isinstance(outputs, dict) else {}
        props = {
            str(k): {"type": "string", "description": str(v.get("description", ""))}
            for k, v in params.items()
            if isinstance(v, dict)
        }
        body = "Returns: " + "; ".join(
            f"{k}: {v.get('description', '')}" for k, v in outputs.items() if isinstance(v, dict)
        )
        tools.setdefault(
            name,
            {
                "name": name,
                "description": str(_py_literal(info, "description") or name),
                "parameters": {"type": "object", "properties": props},
                "body": body,
            },
        )
    queries: Rows = []
    folder = f"{_APIBANK}/lv1-lv2-samples/level-1-given-desc"
    for rel in _list_files(src, folder):
        turns = list(_lines(read_text(src, rel)))
        first_call = next((i for i, t in enumerate(turns) if t.get("role") == "API"), len(turns))
        text = " ".join(t["text"] for t in turns[:first_call] if t.get("role") == "User")
        gold = list(
            dict.fromkeys(
                tool_name(t["api_name"])
                for t in turns
                if t.get("role") == "API" and t.get("api_name") != "ToolSearcher"
            )
        )
        if text.strip() and gold:
            queries.append({"id": Path(rel).stem, "text": text, "gold": gold})
    return list(tools.values()), queries, {}


def _list_files(src: Path, folder: str) -> list[str]:
    if (src / folder).is_dir():
        return sorted(str(p.relative_to(src)) for p in (src / folder).glob("*.jsonl"))
    out = subprocess.run(
        ["git", f"--git-dir={src}", "ls-tree", "--name-only", f"HEAD:{folder}"],
        capture_output=True,
        check=True,
    )
    return sorted(f"{folder}/{n}" for n in out.stdout.decode().split() if n.endswith(".jsonl"))


def _try_read(src: Path, rel: str) -> str | None:
    """:func:`read_text`, or None when the copy lacks the file's content (a mirror may list a
    large file without holding it)."""
    try:
        return read_text(src, rel)
    except SystemExit:
        return None


def _tree(src: Path, folder: str, suffix: str) -> list[str]:
    """Every file under ``folder`` (recursively) whose name ends with ``suffix``, sorted."""
    if (src / folder).is_dir():
        return sorted(
            str(p.relative_to(src)) for p in (src / folder).rglob(f"*{suffix}") if p.is_file()
        )
    out = subprocess.run(
        ["git", f"--git-dir={src}", "ls-tree", "-r", "--name-only", "HEAD", folder],
        capture_output=True,
        check=True,
    )
    return sorted(n for n in out.stdout.decode().splitlines() if n.endswith(suffix))


def _unique_names(pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(server, tool) -> a catalog name: the tool's own name, or ``server.tool`` (server made a
    valid name) for every tool whose name another server also uses."""
    servers_of: dict[str, set[str]] = {}
    for server, name in pairs:
        servers_of.setdefault(name, set()).add(server)
    return {
        (server, name): tool_name(name)
        if len(servers_of[name]) == 1
        else tool_name(f"{server}.{name}")
        for server, name in pairs
    }


# --------------------------------------------------------------------------- MCPToolBench++
_MTB = "data"
_MTB_SKIP = ("_forqwen", "/test_project_root/")  # a renamed copy of the search set; fixtures


def _mtb_rows(text: str) -> tuple[Rows, bool]:
    """A MCPToolBench++ data file's entries, and whether it had to be repaired (the map demo
    lists its entries with no comma between them)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = json.loads(re.sub(r"\}\s*\{\s*\"uuid\"", '},{"uuid"', text))
        return list(data), True
    return (list(data) if isinstance(data, list) else [data]), False


def mcptoolbench(src: Path) -> Converted:
    """MCPToolBench++'s single-step queries over real MCP servers' tools (browser, file system,
    finance, search, map, pay): the catalog is every tool any entry offers (a name two servers
    use becomes ``server.name``); gold = the labelled tool and the tools it lists as
    ``similar_tools`` (the same action on another server offered alongside it)."""
    files = [f for f in _tree(src, _MTB, ".json") if not any(x in f for x in _MTB_SKIP)]
    read: list[str] = []
    unreadable: list[str] = []
    repaired: list[str] = []
    entries: list[tuple[str, dict[str, Any]]] = []
    for rel in files:
        text = _try_read(src, rel)
        if text is None:
            unreadable.append(rel)
            continue
        rows, fixed = _mtb_rows(text)
        read.append(rel)
        if fixed:
            repaired.append(rel)
        entries.extend((rel, row) for row in rows)
    definitions: dict[tuple[str, str], dict[str, Any]] = {}
    for _, row in entries:
        by_name = {t["name"]: t for t in row.get("tools") or []}
        for server, names in (row.get("mcp_tools_dict") or {}).items():
            for name in names:
                if name in by_name:
                    definitions.setdefault((server, name), by_name[name])
    names = _unique_names(list(definitions))
    tools: Rows = []
    for (server, name), spec in definitions.items():
        tool: dict[str, Any] = {
            "name": names[(server, name)],
            "description": str(spec.get("description") or name).strip(),
            "server": server,
        }
        schema = spec.get("input_schema") or spec.get("inputSchema")
        if isinstance(schema, dict):
            tool["parameters"] = schema
        tools.append(tool)
    queries: Rows = []
    seen: set[str] = set()
    for _, row in entries:
        qid = str(row.get("uuid") or "")
        text = str(row.get("query") or "").strip()
        if not qid or qid in seen or not text:  # the demo files repeat some entries
            continue
        seen.add(qid)
        gold: list[str] = []
        for call in row.get("function_call_label") or []:
            for item in [call, *(call.get("similar_tools") or [])]:
                key = (str(item.get("mcp_server")), str(item.get("name")))
                gold.append(names.get(key, tool_name(key[1])))
        if gold:
            queries.append(
                {
                    "id": qid,
                    "text": text,
                    "gold": list(dict.fromkeys(gold)),
                    "category": row.get("category"),
                }
            )
    notes = {"files_read": read, "files_unreadable": unreadable, "files_repaired": repaired}
    return tools, queries, notes


# --------------------------------------------------------------------------- MCP-Bench
_MCPB_TASKS = (
    "tasks/mcpbench_tasks_single_runner_format.json",
    "tasks/mcpbench_tasks_multi_2server_runner_format.json",
    "tasks/mcpbench_tasks_multi_3server_runner_format.json",
)
_EDGE = r"A-Za-z0-9_\-"


def _identifier_like(name: str) -> bool:
    """A tool name no sentence uses as a plain word (``get_article``, ``getParkDetails``,
    ``tavily-search``), unlike ``search`` or ``add``."""
    return bool(re.search(r"[_\-0-9]|[a-z][A-Z]", name))


def _mentioned(text: str, server: str, name: str) -> bool:
    """Does the task text name this tool: ``Server:tool`` always counts; the bare name counts
    when it is identifier-like or written as a call (``add(``)."""
    if re.search(rf"{re.escape(server)}\s*:\s*{re.escape(name)}(?![{_EDGE}])", text):
        return True
    bare = rf"(?<![{_EDGE}]){re.escape(name)}"
    if _identifier_like(name):
        return re.search(bare + rf"(?![{_EDGE}])", text) is not None
    return re.search(bare + r"\(", text) is not None


def _mask(text: str, servers: Sequence[str], names: Collection[str]) -> str:
    """``Server:tool`` -> ``Server``; a bare identifier-like tool name -> ``a tool``: a step
    then says what it needs and of which service, not which tool (else a lexical method
    finds a tool by its spelled-out name)."""
    for server in sorted(servers, key=len, reverse=True):
        text = re.sub(rf"{re.escape(server)}\s*:\s*[{_EDGE}]+", server, text)
    for name in sorted((n for n in names if _identifier_like(n)), key=len, reverse=True):
        text = re.sub(rf"(?<![{_EDGE}]){re.escape(name)}(?![{_EDGE}])", "a tool", text)
    return text


def _numbered(text: str) -> list[str]:
    """A task description split at its top-level numbered items (``1.``, ``2)``, ``Step 3:``,
    in order 1, 2, 3, ...): the text before item 1 (if any) and then each item."""
    parts: list[str] = []
    start, number = 0, 1
    while True:
        pattern = rf"(?:(?<=\s)|^|(?<=[:.]))(?:Step\s*)?{number}[.):]\s"
        found = re.compile(pattern).search(text, start)
        if not found:
            break
        parts.append(text[start : found.start()])
        start, number = found.end(), number + 1
    parts.append(text[start:])
    if number <= 2:  # no numbered list: nothing to split
        return []
    return [p for p in (" ".join(x.split()) for x in parts) if p]


def _mcpb_catalog(src: Path) -> tuple[Rows, dict[tuple[str, str], str]]:
    servers = json.loads(read_text(src, "mcp_servers_info.json"))["servers"]
    pairs = [(server, name) for server, info in servers.items() for name in info["tools"]]
    names = _unique_names(pairs)
    tools: Rows = []
    for server, name in pairs:
        spec = servers[server]["tools"][name]
        tool: dict[str, Any] = {
            "name": names[(server, name)],
            "description": str(spec.get("description") or name).strip(),
            "server": server,
        }
        schema = spec.get("input_schema") or spec.get("inputSchema")
        if isinstance(schema, dict):
            tool["parameters"] = schema
        tools.append(tool)
    return tools, names


def _mcpb_tasks(src: Path) -> Iterator[tuple[list[str], dict[str, Any]]]:
    """(the task's servers, the task) for every task of the three task files."""
    for rel in _MCPB_TASKS:
        for group in json.loads(read_text(src, rel))["server_tasks"]:
            servers = list(group.get("servers") or [group["server_name"]])
            for task in group["tasks"]:
                yield servers, task


def _mcpb_gold(
    servers: Sequence[str], task: dict[str, Any], names: dict[tuple[str, str], str]
) -> list[str]:
    """The task's servers' tools its own plan names (``task_description`` and
    ``dependency_analysis``), in catalog order."""
    text = f"{task.get('task_description') or ''}\n{task.get('dependency_analysis') or ''}"
    return [
        catalog_name
        for (server, name), catalog_name in names.items()
        if server in servers and _mentioned(text, server, name)
    ]


def mcp_bench(src: Path) -> Converted:
    """MCP-Bench's 28 real MCP servers (``mcp_servers_info.json``, every tool; a name two
    servers use becomes ``server.name``) and its tasks, asked as the user's request
    (``fuzzy_description``, which names no tool); gold = the tools of the task's servers that
    the task's plan names (see :func:`_mcpb_gold`)."""
    tools, names = _mcpb_catalog(src)
    queries: Rows = []
    no_gold: list[str] = []
    for servers, task in _mcpb_tasks(src):
        gold = _mcpb_gold(servers, task, names)
        text = str(task.get("fuzzy_description") or "").strip()
        if not gold or not text:
            no_gold.append(str(task["task_id"]))
            continue
        queries.append({"id": task["task_id"], "text": text, "gold": gold, "servers": servers})
    return tools, queries, {"tasks_left_out_no_named_tool": no_gold}


def mcp_bench_steps(src: Path) -> Converted:
    """MCP-Bench's tasks step by step: the steps are the numbered items of the task's plan
    (``task_description``; the text before item 1 is a step too), tool names masked (see
    :func:`_mask`); the query's ``text`` is the whole masked plan, so asking it once and
    asking its steps differ only in the splitting. Same catalog and gold as ``mcp-bench``;
    tasks whose plan has no numbered list are left out."""
    tools, names = _mcpb_catalog(src)
    all_servers = sorted({server for server, _ in names})
    all_names = {name for _, name in names}
    queries: Rows = []
    no_gold: list[str] = []
    no_steps: list[str] = []
    for servers, task in _mcpb_tasks(src):
        gold = _mcpb_gold(servers, task, names)
        plan = str(task.get("task_description") or "")
        steps = [_mask(step, all_servers, all_names) for step in _numbered(plan)]
        if not gold:
            no_gold.append(str(task["task_id"]))
        elif len(steps) < 2:
            no_steps.append(str(task["task_id"]))
        else:
            text = " ".join(_mask(plan, all_servers, all_names).split())
            queries.append(
                {
                    "id": task["task_id"],
                    "text": text,
                    "steps": steps,
                    "gold": gold,
                    "servers": servers,
                }
            )
    notes = {"tasks_left_out_no_named_tool": no_gold, "tasks_left_out_no_steps": no_steps}
    return tools, queries, notes


def _acebench(lang: str) -> Callable[[Path], Converted]:
    def convert(src: Path) -> Converted:
        return acebench.convert(
            lambda rel: read_text(src, rel), lambda folder: _tree(src, folder, ".json"), lang
        )

    return convert


class Source(NamedTuple):
    """Where a set comes from: its converter, repository, licence, and whether that licence
    lets a derived sample be committed here (``--sample`` refuses otherwise)."""

    convert: Callable[[Path], Converted]
    repository: str
    licence: str
    redistributable: bool = True


_NO_LICENCE_MTB = "none stated (no licence file or statement in the repository)"
_NO_LICENCE_MCPB = (
    "Apache-2.0 claimed by a README badge, but no licence file; the tool descriptions are "
    "copied from 28 third-party MCP servers, several without a licence"
)

SETS: dict[str, Source] = {
    "toolalpaca": Source(toolalpaca, "tangqiaoyu/ToolAlpaca", "Apache-2.0"),
    "bfcl": Source(bfcl, "ShishirPatil/gorilla", "Apache-2.0"),
    "apibench-hf": Source(apibench_hf, "ShishirPatil/gorilla", "Apache-2.0"),
    "api-bank": Source(apibank, "AlibabaResearch/DAMO-ConvAI (api-bank/)", "Apache-2.0"),
    "mcptoolbench": Source(
        mcptoolbench, "mcp-tool-bench/MCPToolBenchPP", _NO_LICENCE_MTB, redistributable=False
    ),
    "mcp-bench": Source(mcp_bench, "xuhaike/mcp-bench", _NO_LICENCE_MCPB, redistributable=False),
    "mcp-bench-steps": Source(
        mcp_bench_steps, "xuhaike/mcp-bench", _NO_LICENCE_MCPB, redistributable=False
    ),
    "acebench-zh": Source(_acebench("zh"), "ACEBench/ACEBench (data_all/data_zh)", "MIT"),
    "acebench-en": Source(_acebench("en"), "ACEBench/ACEBench (data_all/data_en)", "MIT"),
}


def build(name: str, src: Path, out: Path, *, max_queries: int, seed: int = 0) -> dict[str, Any]:
    """Convert set ``name`` from ``src`` into ``out/name``; return its ``source.json``."""
    source = SETS[name]
    tools, queries, notes = source.convert(src)
    if max_queries and len(queries) > max_queries:
        queries = random.Random(seed).sample(queries, max_queries)
        queries.sort(key=lambda q: str(q["id"]))
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    _jsonl(folder / "tools.jsonl", tools)
    if any("split" in q for q in queries):  # a set with a dev side: queries.jsonl is its test
        _jsonl(folder / "dev.jsonl", [q for q in queries if q.get("split") == "dev"])
        queries = [q for q in queries if q.get("split") != "dev"]
    _jsonl(folder / "queries.jsonl", queries)
    info = {
        "set": name,
        "repository": source.repository,
        "commit": commit_of(src),
        "licence": source.licence,
        "redistributable": source.redistributable,
        "tools": len(tools),
        "queries": len(queries),
        "multi_tool_queries": sum(len(q["gold"]) > 1 for q in queries),
        "step_queries": sum(bool(q.get("steps")) for q in queries),
        "seed": seed,
        **notes,
    }
    (folder / "source.json").write_text(json.dumps(info, indent=1) + "\n", "utf-8")
    return info


def sample(name: str, out: Path, dest: Path, *, queries: int = 12, others: int = 24) -> None:
    """A small committed sample of a converted set: ``queries`` seeded queries, their gold
    tools and ``others`` seeded other tools (the tests read it; licences allow it).

    Raises:
        SystemExit: the set's licence does not allow committing a derived sample.
    """
    if not SETS[name].redistributable:
        raise SystemExit(
            f"{name}: its source's licence ({SETS[name].licence}) does not clearly allow "
            "redistributing a derived sample; build the set from a fetched copy instead"
        )
    folder = out / name
    tools = [json.loads(x) for x in (folder / "tools.jsonl").read_text("utf-8").splitlines()]
    rows = [json.loads(x) for x in (folder / "queries.jsonl").read_text("utf-8").splitlines()]
    known = {t["name"] for t in tools}
    rng = random.Random(f"sample:{name}")
    picked = rng.sample([q for q in rows if set(q["gold"]) <= known], queries)
    gold = {g for q in picked for g in q["gold"]}
    rest = rng.sample([t for t in tools if t["name"] not in gold], others)
    keep = gold | {t["name"] for t in rest}
    dest.mkdir(parents=True, exist_ok=True)
    _jsonl(dest / "tools.jsonl", [t for t in tools if t["name"] in keep])
    _jsonl(dest / "queries.jsonl", sorted(picked, key=lambda q: str(q["id"])))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set", choices=sorted(SETS))
    parser.add_argument("--src", type=Path, required=True, help="checkout or bare git dir")
    parser.add_argument("--out", type=Path, default=Path("bench-out/sets"))
    parser.add_argument(
        "--max-queries", type=int, default=1000, help="seeded sample size (0: all queries)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--sample", type=Path, help="also write a small sample of the set into this folder"
    )
    args = parser.parse_args(argv)
    info = build(args.set, args.src, args.out, max_queries=args.max_queries, seed=args.seed)
    print(json.dumps(info))
    if args.sample is not None:
        sample(args.set, args.out, args.sample)


if __name__ == "__main__":
    main()
