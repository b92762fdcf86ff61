"""The MCP converters of ``benchmarks/sets/build.py`` on small hand-written source trees in their
repositories' formats (neither source's licence lets a sample be committed): names, servers,
gold, steps and the files a mirror lacks."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from maitred.recall.evaluate import load_queries
from maitred.skills.catalog import load_catalog_report

BUILD = Path(__file__).resolve().parents[2] / "benchmarks" / "sets" / "build.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sets_build_under_test", BUILD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sets_build = _module()


def _write(root: Path, rel: str, data: Any) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), "utf-8")


def _tool(name: str, description: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    return {"name": name, "description": description, "input_schema": schema}


def _entry(uid: str, query: str, server: str, tools: list[dict[str, Any]], call: str, **kw: Any):
    return {
        "uuid": uid,
        "category": kw.get("category", "search"),
        "call_type": "single",
        "tools": tools,
        "mcp_tools_dict": {server: [t["name"] for t in tools]},
        "query": query,
        "function_call_label": [
            {"name": call, "mcp_server": server, "similar_tools": kw.get("similar", [])}
        ],
    }


@pytest.fixture
def mtb(tmp_path: Path) -> Path:
    """A MCPToolBench++-shaped tree: two servers both offering ``search``, a similar tool, a
    demo file repeating an entry, one file with its entries unseparated, a renamed copy."""
    root = tmp_path / "MCPToolBenchPP"
    google = [_tool("search", "Google web search"), _tool("fetch_page", "Fetch a web page")]
    tavily = [_tool("search", "Tavily search"), _tool("tavily-extract", "Extract page text")]
    both = [*google]
    rows = [
        _entry("u1", "latest news on rates", "google-search", both, "search"),
        _entry(
            "u2",
            "find articles on solar power",
            "google-search",
            both,
            "search",
            similar=[{"name": "search", "mcp_server": "tavily-mcp"}],
        ),
    ]
    rows[1]["tools"] = [*google, *tavily]
    rows[1]["mcp_tools_dict"] = {
        "google-search": ["search", "fetch_page"],
        "tavily-mcp": ["search", "tavily-extract"],
    }
    _write(root, "data/search/search_v2.json", rows)
    _write(root, "data/search/search_single_demo.json", rows[:1])  # repeats u1
    _write(root, "data/search/search_v2_forqwen.json", [{**rows[0], "uuid": "q"}])
    maps = [_tool("maps_geocode", "Convert an address into coordinates")]
    joined = "".join(
        json.dumps(_entry(u, t, "google-maps", maps, "maps_geocode", category="map"))
        for u, t in (("m1", "coordinates of Paris"), ("m2", "где находится Невский"))
    )
    _write(root, "data/map/map_single_demo.json", "[" + joined.replace("}{", "},{") + "]")
    _write(root, "data/map/broken_demo.json", "[" + joined + "]")  # no comma between entries
    _write(root, "data/file_system/test_project_root/data/x.json", {"not": "an entry"})
    return root


def test_mcptoolbench_names_servers_and_gold(mtb: Path) -> None:
    tools, queries, notes = sets_build.mcptoolbench(mtb)
    by_name = {t["name"]: t for t in tools}
    assert set(by_name) == {
        "google-search.search",  # two servers share ``search``: both are prefixed
        "tavily-mcp.search",
        "fetch_page",
        "tavily-extract",
        "maps_geocode",
    }
    assert by_name["tavily-extract"]["server"] == "tavily-mcp"
    assert by_name["maps_geocode"]["parameters"]["type"] == "object"
    gold = {q["id"]: q["gold"] for q in queries}
    assert gold == {
        "u1": ["google-search.search"],
        "u2": ["google-search.search", "tavily-mcp.search"],  # the labelled and its similar
        "m1": ["maps_geocode"],
        "m2": ["maps_geocode"],
    }
    assert notes["files_repaired"] == ["data/map/broken_demo.json"]
    assert not any("forqwen" in f or "test_project_root" in f for f in notes["files_read"])


def test_a_mirror_without_a_files_content_is_noted_not_fatal(mtb: Path, tmp_path: Path) -> None:
    """A bare git directory (what the fetch tool leaves) whose object for one file is missing:
    the file is listed but unreadable; the converter reads the rest and says which."""
    work = tmp_path / "work"
    shutil.copytree(mtb, work)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(work)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    bare = tmp_path / "bare.git"  # a local clone copies the loose objects as they are
    subprocess.run(
        ["git", "clone", "-q", "--bare", "--no-hardlinks", str(work), str(bare)], check=True
    )
    blob = subprocess.run(
        ["git", f"--git-dir={bare}", "rev-parse", "HEAD:data/map/map_single_demo.json"],
        capture_output=True,
        check=True,
        text=True,
    ).stdout.strip()
    (bare / "objects" / blob[:2] / blob[2:]).unlink()
    tools, queries, notes = sets_build.mcptoolbench(bare)
    assert notes["files_unreadable"] == ["data/map/map_single_demo.json"]
    assert "data/map/broken_demo.json" in notes["files_read"]
    assert {q["id"] for q in queries} == {"u1", "u2", "m1", "m2"}  # m1, m2 from the other file
    assert len(tools) == 5


SERVERS = {
    "Wikipedia": ["search_wikipedia", "get_article", "get_summary"],
    "Math MCP": ["add", "multiply", "mean"],
    "Time MCP": ["convert_time", "get_current_time"],
    "Unit Converter": ["convert_time", "convert_length"],
}


def _mcpb_tree(root: Path) -> Path:
    servers = {
        name: {
            "name": name,
            "tools": {t: {"name": t, "description": f"{name} {t.replace('_', ' ')}"} for t in ts},
        }
        for name, ts in SERVERS.items()
    }
    _write(root, "mcp_servers_info.json", {"summary": {}, "servers": servers})
    wiki = {
        "task_id": "wikipedia_000",
        "task_description": (
            "Research the Moon. 1. Call Wikipedia:search_wikipedia with query='Moon'. "
            "2. Fetch the full text with get_article. 3) Write a short search summary."
        ),
        "fuzzy_description": "Tell me about the Moon, with the article behind it.",
        "dependency_analysis": "search_wikipedia feeds get_article; no other tool.",
    }
    math = {
        "task_id": "math_time_000",
        "task_description": (
            "Step 1: add the two numbers using Math MCP:add. Step 2: multiply them, "
            "multiply(a, b). Step 3: convert_time the result to Tokyo time. Then take the mean."
        ),
        "fuzzy_description": "Add and multiply my numbers, then tell me the time in Tokyo.",
        "dependency_analysis": "",
    }
    unnumbered = {
        "task_id": "wikipedia_001",
        "task_description": "Use get_summary on 'Mars' and report it.",
        "fuzzy_description": "What is Mars like?",
        "dependency_analysis": "",
    }
    nothing = {
        "task_id": "wikipedia_002",
        "task_description": "1. Look things up. 2. Report.",
        "fuzzy_description": "Look it up.",
        "dependency_analysis": "",
    }
    single = {
        "server_tasks": [
            {"server_name": "Wikipedia", "servers": ["Wikipedia"], "tasks": [wiki]},
            {"server_name": "Wikipedia", "servers": ["Wikipedia"], "tasks": [unnumbered]},
            {"server_name": "Wikipedia", "servers": ["Wikipedia"], "tasks": [nothing]},
        ]
    }
    multi = {
        "server_tasks": [
            {"server_name": "Math MCP+Time MCP", "servers": ["Math MCP", "Time MCP"],
             "tasks": [math]},
        ]
    }  # fmt: skip
    _write(root, "tasks/mcpbench_tasks_single_runner_format.json", single)
    _write(root, "tasks/mcpbench_tasks_multi_2server_runner_format.json", multi)
    _write(root, "tasks/mcpbench_tasks_multi_3server_runner_format.json", {"server_tasks": []})
    return root


def test_mcp_bench_gold_is_what_the_plan_names(tmp_path: Path) -> None:
    tools, queries, notes = sets_build.mcp_bench(_mcpb_tree(tmp_path / "mcp-bench"))
    names = [t["name"] for t in tools]
    assert "Time_MCP.convert_time" in names and "Unit_Converter.convert_time" in names
    assert len(names) == sum(map(len, SERVERS.values()))
    assert {t["server"] for t in tools} == set(SERVERS)
    gold = {q["id"]: q["gold"] for q in queries}
    assert gold["wikipedia_000"] == ["search_wikipedia", "get_article"]
    # ``add`` as Server:add, ``multiply(`` as a call, ``convert_time`` bare but only the task's
    # server's; the plain word ``mean`` names no tool
    assert gold["math_time_000"] == ["add", "multiply", "Time_MCP.convert_time"]
    assert gold["wikipedia_001"] == ["get_summary"]
    assert notes["tasks_left_out_no_named_tool"] == ["wikipedia_002"]
    assert {q["id"]: q["text"] for q in queries}["wikipedia_000"].startswith("Tell me")


def test_mcp_bench_steps_split_the_plan_and_mask_tool_names(tmp_path: Path) -> None:
    _, queries, notes = sets_build.mcp_bench_steps(_mcpb_tree(tmp_path / "mcp-bench"))
    by_id = {q["id"]: q for q in queries}
    assert by_id["wikipedia_000"]["steps"] == [
        "Research the Moon.",
        "Call Wikipedia with query='Moon'.",
        "Fetch the full text with a tool.",
        "Write a short search summary.",
    ]
    assert by_id["math_time_000"]["steps"] == [
        "add the two numbers using Math MCP.",
        "multiply them, multiply(a, b).",
        "a tool the result to Tokyo time. Then take the mean.",
    ]
    assert "search_wikipedia" not in by_id["wikipedia_000"]["text"]
    assert by_id["wikipedia_000"]["gold"] == ["search_wikipedia", "get_article"]
    assert notes["tasks_left_out_no_steps"] == ["wikipedia_001"]


def test_built_sets_load_and_record_their_source(tmp_path: Path) -> None:
    src = _mcpb_tree(tmp_path / "mcp-bench")
    out = tmp_path / "out"
    info = sets_build.build("mcp-bench-steps", src, out, max_queries=0)
    assert info["redistributable"] is False and info["step_queries"] == 2
    assert info["repository"] == "xuhaike/mcp-bench"
    catalog, report = load_catalog_report([out / "mcp-bench-steps" / "tools.jsonl"])
    assert catalog is not None and not report.errors and not report.warnings
    queries = load_queries(out / "mcp-bench-steps" / "queries.jsonl", repeated="refuse")
    assert [len(q.steps) for q in queries] == [4, 3]
    written = json.loads((out / "mcp-bench-steps" / "source.json").read_text())
    assert written["tasks_left_out_no_steps"] == ["wikipedia_001"]
    with pytest.raises(SystemExit, match="does not clearly allow redistributing"):
        sets_build.sample("mcp-bench-steps", out, tmp_path / "sample")
    assert not (tmp_path / "sample").exists()
