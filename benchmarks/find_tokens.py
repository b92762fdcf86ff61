"""The tokens ``find_tools`` + ``call_tool`` save, end to end: a framework agent over the gateway.

A pydantic-ai ``Agent`` with an ``MCPToolset`` on ``maitred mcp`` (launched over stdio, as a
client launches it) in front of 1,000 tools: MetaTool's 199 tools and seeded variants of them
(``benchmarks/_catalogs.py``, ``make_catalog``; names and descriptions, no parameters, as
MetaTool gives them), served by one upstream (``benchmarks/_mcp_catalog_upstream.py``). Its
model is scripted (pydantic-ai's ``FunctionModel``, no LLM) and plays MetaTool's two-tool
tasks (``multi_tool_query_golden.json``, a seeded sample), one task a run, each tool in a step
of its own:

* ``disclosure: all`` -- the framework offers the model every tool; the model calls the two
  gold tools, one a step, then answers;
* ``disclosure: find_tools`` -- the framework offers ``find_tools`` and ``call_tool``; the
  model asks ``find_tools`` with the task's text as its need, then runs, through
  ``call_tool``, each gold tool the answer disclosed (one a step), then answers. The task is
  *complete* when both gold tools were disclosed. With ``--split`` the need is the task cut
  into steps, sent as ``needs`` (at sentence ends and at " and ": a stand-in for a model that
  plans).

At every model step the script counts, with the project's tokenizer (``maitred.menu.tokens``,
o200k_base), the tokens of the tool definitions the framework hands the model (each as the
JSON of an OpenAI ``tools`` entry: type, name, description, parameters) and, in
``find_tools`` mode, of the ``find_tools`` answers already in the conversation (the found
tools' names, descriptions and schemas, as the framework passes the tool result on). It
prints one JSON line per mode and a Markdown table for BENCHMARKS.md.

    PYTHONPATH=src .venv/bin/python benchmarks/find_tokens.py --tasks 200

Loopback and stdio only; nothing is timed.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from _catalogs import DATA, make_catalog  # noqa: E402
from metatool_routing import load_all_queries, load_tools, sample  # noqa: E402

from maitred.menu.tokens import count_tokens_memo  # noqa: E402

MODES = ("all", "find_tools")
MAX_NEEDS = 8  # what find_tools takes in one call


def definition_tokens(tool: ToolDefinition) -> int:
    """Tokens of one tool definition as an OpenAI ``tools`` entry carries it."""
    entry = {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": tool.parameters_json_schema,
        },
    }
    return count_tokens_memo(json.dumps(entry, ensure_ascii=False))


@dataclass
class Task:
    """One task's run: tokens per model step, what was found, what ran."""

    text: str
    gold: tuple[str, ...]
    definitions: list[int] = field(default_factory=list)  # tool definitions, per step
    found_tokens: list[int] = field(default_factory=list)  # find_tools answers so far, per step
    disclosed: set[str] = field(default_factory=set)
    ran: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return set(self.gold) <= self.disclosed

    @property
    def complete_by_family(self) -> bool:
        """Complete when a seeded variant of a gold tool (its copy for a region and a sector,
        ``map-tool-eu-education-000300`` of ``map-tool``) counts as that tool."""
        return set(self.gold) <= {family(n) for n in self.disclosed}


def family(name: str) -> str:
    """The MetaTool tool a catalog tool is (itself, or the tool a variant copies)."""
    parts = name.split("-")
    return "-".join(parts[:-3]) if len(parts) > 3 and parts[-1].isdigit() else name


def _disclosed(content: Any) -> set[str]:
    answer = content if isinstance(content, dict) else json.loads(str(content))
    entries = answer.get("needs", [answer])
    return {t["name"] for e in entries for t in e.get("tools", [])}


def steps_of(text: str) -> list[str]:
    """The task cut into steps as ``--split`` does: at sentence ends and at `` and ``."""
    pieces = [p.strip(" ,.") for p in re.split(r"(?<=[.?!])\s+|\s+and\s+", text)]
    return [p for p in pieces if p][:MAX_NEEDS]


def script(task: Task, mode: str, split: bool = False) -> FunctionModel:
    """The model of one task (see the module docstring)."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        task.definitions.append(sum(definition_tokens(t) for t in info.function_tools))
        returns = [
            p
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        ]
        finds = [p for p in returns if p.tool_name == "find_tools"]
        task.found_tokens.append(sum(count_tokens_memo(p.model_response_str()) for p in finds))
        step = len(task.definitions) - 1
        if mode == "all":
            todo = list(task.gold)
        else:
            if step == 0:
                steps = steps_of(task.text) if split else [task.text]
                asked = {"needs": steps} if len(steps) > 1 else {"need": task.text}
                return ModelResponse(parts=[ToolCallPart("find_tools", asked)])
            for p in finds:
                task.disclosed |= _disclosed(p.content)
            todo = [g for g in task.gold if g in task.disclosed]
        done = len(task.ran)
        if done >= len(todo):
            return ModelResponse(parts=[TextPart("done")])
        name = todo[done]
        task.ran.append(name)
        if mode == "all":
            return ModelResponse(parts=[ToolCallPart(name, {})])
        return ModelResponse(parts=[ToolCallPart("call_tool", {"name": name, "arguments": {}})])

    return FunctionModel(model)


def write_site(root: Path, mode: str, method: str, top_k: int) -> Path:
    """The catalog's tools file and a gateway config over it in ``mode``."""
    tools = root / "tools.jsonl"
    if not tools.exists():
        rows = [{"name": s.name, "description": s.description} for s in make_catalog(1000)]
        tools.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    (root / "accounts.json").write_text(json.dumps({"acc-1": {"account": {}}}), "utf-8")
    upstream = [str(HERE / "_mcp_catalog_upstream.py"), "--tools", str(tools)]
    config = root / f"gateway-{mode}.yaml"
    config.write_text(
        "account: acc-1\n"
        "state: accounts.json\n"
        f"log: {mode}.sqlite\n"
        f"disclosure: {mode}\n"
        f"find: {{method: {json.dumps(method)}, top_k: {top_k}}}\n"
        "upstreams:\n"
        "  - name: catalog\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: {json.dumps(upstream)}\n",
        "utf-8",
    )
    return config


async def run_mode(config: Path, mode: str, tasks: Sequence[Task], split: bool) -> None:
    transport = StdioTransport(
        sys.executable,
        ["-m", "maitred.cli.main", "mcp", "--config", str(config)],
        env={"PYTHONPATH": str(REPO / "src")},
        keep_alive=True,
        log_file=config.with_suffix(".stderr"),
    )
    toolset: MCPToolset[None] = MCPToolset(transport, init_timeout=600, read_timeout=600)
    async with toolset:
        for task in tasks:
            agent = Agent(script(task, mode, split), toolsets=[toolset])
            result = await agent.run(task.text)
            assert result.output == "done", result.output


def summary(mode: str, tasks: Sequence[Task]) -> dict[str, Any]:
    per_turn = [d + f for t in tasks for d, f in zip(t.definitions, t.found_tokens, strict=True)]
    definitions = [d for t in tasks for d in t.definitions]
    per_task = [sum(t.definitions) + sum(t.found_tokens) for t in tasks]
    return {
        "mode": mode,
        "tasks": len(tasks),
        "turns_per_task": statistics.mean(len(t.definitions) for t in tasks),
        "definition_tokens_per_turn": statistics.mean(definitions),
        "with_found_per_turn": statistics.mean(per_turn),
        "per_task": statistics.mean(per_task),
        "complete": statistics.mean(t.complete for t in tasks) if mode != "all" else None,
        "complete_by_family": (
            statistics.mean(t.complete_by_family for t in tasks) if mode != "all" else None
        ),
        "gold_ran": statistics.mean(len(t.ran) / len(t.gold) for t in tasks),
    }


def table(rows: Sequence[dict[str, Any]]) -> str:
    base = next(r for r in rows if r["mode"] == "all")
    lines = [
        "| disclosure | tool definitions / turn | + found tools / turn | per task (all turns) "
        "| turns / task | both gold tools found (complete) | complete, a variant counting "
        "| change per turn | change per task |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        turn = r["with_found_per_turn"] / base["with_found_per_turn"] - 1
        task = r["per_task"] / base["per_task"] - 1
        complete = "— (all listed)" if r["complete"] is None else f"{r['complete']:.3f}"
        by_family = "—" if r["complete"] is None else f"{r['complete_by_family']:.3f}"
        label = f"`{r['mode']}`" + (f" ({r['find']})" if r.get("find") else "")
        lines.append(
            f"| {label} | {r['definition_tokens_per_turn']:,.0f} "
            f"| {r['with_found_per_turn']:,.0f} | {r['per_task']:,.0f} "
            f"| {r['turns_per_task']:.2f} | {complete} | {by_family} | {turn:+.1%} "
            f"| {task:+.1%} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200, help="two-tool tasks (0: all 497)")
    parser.add_argument("--method", default="bm25", help="find.method (the config's default)")
    parser.add_argument("--top-k", type=int, default=5, help="find.top_k (the default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--split",
        action="store_true",
        help="the model sends the task's steps as `needs` (cut at sentence ends and ' and ')",
    )
    args = parser.parse_args(argv)
    # the catalog's first 199 tools are MetaTool's, in load_tools' order, renamed (kebab case)
    renamed = {
        t["name"]: s.name for t, s in zip(load_tools(DATA), make_catalog(1000).skills, strict=False)
    }
    _, multi, _ = load_all_queries(DATA, list(renamed))
    picked = sample(multi, args.tasks, args.seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="find-tokens-") as tmp:
        for mode in MODES:
            tasks = [Task(q.text, tuple(renamed[g] for g in q.gold)) for q in picked]
            config = write_site(Path(tmp), mode, args.method, args.top_k)
            anyio.run(run_mode, config, mode, tasks, args.split)
            row = summary(mode, tasks)
            row["find"] = f"{args.method}, top_k {args.top_k}" if mode != "all" else ""
            if args.split and mode != "all":
                row["find"] += ", needs split"
            print(json.dumps(row), flush=True)
            rows.append(row)
    print(table(rows))
    (REPO / "bench-out").mkdir(exist_ok=True)
    split = "-split" if args.split else ""
    out = REPO / "bench-out" / f"find_tokens-{args.method}-{args.top_k}{split}.json"
    out.write_text(json.dumps(rows, indent=1), "utf-8")


if __name__ == "__main__":
    main()
