"""The ACEBench converter (``benchmarks/sets/acebench.py``) on a small tree in its format: user
turns only, parallel calls' copies, names outside MCP's rule, categories left out, the split."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parents[2] / "benchmarks" / "sets" / "acebench.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("acebench_under_test", HERE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


acebench = _module()


def _fn(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "description": description, "parameters": {"type": "dict"}}


FILES = {
    "data_all/data_zh/data_normal_similar_api.json": {
        "id": "normal_similar_api_0",
        "question": 'user: 查一下品牌信息。\nsystem: [brand_info(brand="Jya")]\n'
        "system: 已查到。\nuser: 还有环保方面\n的信息。\n",
        "function": [_fn("brand_info", "品牌信息"), _fn("brand_green", "品牌环保信息")],
    },
    "data_all/data_zh/possible_answer/data_normal_similar_api.json": {
        "id": "normal_similar_api_0",
        "ground_truth": {"brand_green": {"brand": "Jya"}},
    },
    "data_all/data_zh/data_normal_single_turn_parallel_function.json": {
        "id": "normal_single_turn_parallel_function_0",
        "question": "user: 规划两条路线",
        "function": [_fn("route_tool", "规划路线"), _fn("室内光照管理器", "管理室内光照")],
    },
    "data_all/data_zh/possible_answer/data_normal_single_turn_parallel_function.json": {
        "id": "normal_single_turn_parallel_function_0",
        "ground_truth": [{"route_tool_1": {}}, {"route_tool_2": {}}, {"室内光照管理器": {}}],
    },
    "data_all/data_zh/data_special_irrelevant.json": {
        "id": "special_irrelevant_0",
        "question": "user: 讲个笑话",
        "function": [_fn("joke_teller", "讲笑话")],
    },
    "data_all/data_zh/possible_answer/data_special_irrelevant.json": {
        "id": "special_irrelevant_0",
        "ground_truth": "none",
    },
}


def test_a_tree_converts_to_user_turns_gold_names_and_mcp_tool_names() -> None:
    def read(rel: str) -> str:
        return json.dumps(FILES[rel], ensure_ascii=False) + "\n"

    tools, queries, notes = acebench.convert(read, lambda folder: sorted(FILES), "zh")
    by_id = {q["id"]: q for q in queries}
    similar = by_id["normal_similar_api_0"]
    assert similar["text"] == "查一下品牌信息。\n还有环保方面\n的信息。"  # system turns dropped
    assert similar["gold"] == ["brand_green"]
    renamed = acebench.mcp_name("室内光照管理器")
    assert renamed.startswith("fn_") and len(renamed) == 13
    parallel = by_id["normal_single_turn_parallel_function_0"]
    assert parallel["gold"] == ["route_tool", renamed]
    names = {t["name"]: t for t in tools}
    assert names[renamed]["description"] == "室内光照管理器：管理室内光照"
    assert names["route_tool"]["parameters"]["type"] == "object"  # "dict" fixed
    assert "joke_teller" not in names and "special_irrelevant_0" not in by_id
    assert notes["renamed_to_mcp_names"] == 1
    assert all(q["split"] in ("dev", "test") for q in queries)
    assert acebench.split_of("normal_similar_api_0") == acebench.split_of("normal_similar_api_0")
