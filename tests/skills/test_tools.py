"""Tool definitions: MCP, JSON-RPC, OpenAI, Anthropic, plain JSONL; bad lines skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from maitred.errors import SkillParseError
from maitred.skills import load_tools, parse_tools

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
MCP_TOOL = {
    "name": "get_weather",
    "title": "Weather",
    "description": "Current weather for a city.",
    "inputSchema": WEATHER_SCHEMA,
    "annotations": {"readOnlyHint": True},
}
OPENAI_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "create_invoice",
        "description": "Create an invoice for a customer.",
        "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}},
        "strict": True,
    },
}
ANTHROPIC_TOOL = {
    "name": "refund_order",
    "description": "Refund an order.",
    "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
}
PLAIN_TOOL = {"name": "lookup-docs", "description": "Search the docs.", "body": "Long help."}


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    "document",
    [
        {"tools": [MCP_TOOL]},
        {"jsonrpc": "2.0", "id": 1, "result": {"tools": [MCP_TOOL], "nextCursor": None}},
        [MCP_TOOL],
        MCP_TOOL,
    ],
    ids=["tools-list", "json-rpc", "list", "single"],
)
def test_mcp_shapes_in_a_json_file(tmp_path: Path, document: Any) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(document))
    tools, report = load_tools(path, strict=True)
    (tool,) = tools
    assert (tool.name, tool.kind, tool.description) == (
        "get_weather",
        "tool",
        MCP_TOOL["description"],
    )
    assert tool.parameters == WEATHER_SCHEMA
    assert tool.path.startswith(str(path))
    assert (report.examined, report.loaded, report.errors) == (1, 1, ())


def test_every_format_in_one_jsonl(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "tools.jsonl", [MCP_TOOL, OPENAI_TOOL, ANTHROPIC_TOOL, PLAIN_TOOL]
    )
    tools, report = load_tools(path, strict=True)
    by_name = {t.name: t for t in tools}
    assert list(by_name) == ["get_weather", "create_invoice", "refund_order", "lookup-docs"]
    assert by_name["create_invoice"].parameters == OPENAI_TOOL["function"]["parameters"]
    assert by_name["refund_order"].parameters == ANTHROPIC_TOOL["input_schema"]
    assert by_name["lookup-docs"].body == "Long help."
    assert by_name["lookup-docs"].parameters is None
    assert by_name["refund_order"].path == f"{path}#3"
    assert report.warnings == () and report.examined == 4


def test_json_pointer_paths(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"result": {"tools": [MCP_TOOL, PLAIN_TOOL]}}))
    tools, _ = load_tools(path)
    assert [t.path for t in tools] == [f"{path}#/result/tools/0", f"{path}#/result/tools/1"]


def test_bad_jsonl_line_is_skipped_and_reported_with_its_line(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "tools.jsonl",
        [MCP_TOOL, '{"name": "broken", "description": ', "", ANTHROPIC_TOOL, {"description": "x"}],
    )
    tools, report = load_tools(path)
    assert [t.name for t in tools] == ["get_weather", "refund_order"]
    assert (report.examined, report.loaded) == (4, 2)
    assert [(e.line, e.field) for e in report.errors] == [(2, None), (5, "name")]
    assert report.errors[0].as_dict()["path"] == f"{path}:2"
    assert "not valid JSON" in report.errors[0].message
    with pytest.raises(SkillParseError, match="not valid JSON") as info:
        load_tools(path, strict=True)
    assert info.value.line == 2


def test_non_utf8_jsonl_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"
    path.write_bytes(
        json.dumps(MCP_TOOL).encode() + b"\n\xff\xfe\n" + json.dumps(PLAIN_TOOL).encode()
    )
    tools, report = load_tools(path)
    assert len(tools) == 2
    assert report.errors[0].line == 2


@pytest.mark.parametrize(
    ("entry", "field", "fragment"),
    [
        ({"name": "has space", "description": "d"}, "name", "breaks the rule"),
        ({"name": "t"}, "description", "missing or empty"),
        (
            {"name": "t", "description": "d", "inputSchema": {"type": "array"}},
            "inputSchema",
            '"type": "object"',
        ),
        ({"name": "t", "description": "d", "color": "red"}, "color", "unknown key 'color'"),
        (
            {
                "name": "t",
                "description": "d",
                "parameters": {"type": "object"},
                "input_schema": {"type": "object"},
            },
            "input_schema",
            "give one argument schema",
        ),
        (
            {"type": "function", "function": {"name": "t", "description": "d"}, "extra": 1},
            "extra",
            "unknown key 'extra'",
        ),
        ({"name": "t", "description": "d", "body": 3}, "body", "must be a string"),
    ],
)
def test_deviations_warn_lenient_and_raise_strict(
    entry: dict[str, Any], field: str, fragment: str
) -> None:
    tools, report = parse_tools([entry], source="inline.json")
    assert len(tools) == 1
    (warning,) = report.warnings
    assert warning.field == f"[0].{field}" and fragment in warning.message
    with pytest.raises(SkillParseError, match=r"inline\.json") as info:
        parse_tools([entry], source="inline.json", strict=True)
    assert fragment in info.value.detail


def test_missing_description_falls_back_to_title_then_name() -> None:
    tools, _ = parse_tools([{"name": "a", "title": "Alpha tool"}, {"name": "b"}])
    assert [t.description for t in tools] == ["Alpha tool", "b"]


@pytest.mark.parametrize(
    ("entry", "field", "fragment"),
    [
        ("just a string", None, "must be a JSON object"),
        ({"description": "no name"}, "name", "`name` is missing"),
        ({"name": "", "description": "d"}, "name", "non-empty string"),
        ({"name": "t", "description": ["d"]}, "description", "must be a string"),
        ({"name": "t", "description": "d", "parameters": "x"}, "parameters", "JSON Schema object"),
        ({"type": "function", "function": "x"}, "function", "must be an object"),
    ],
)
def test_unloadable_tools_are_errors_naming_the_field(
    entry: Any, field: str | None, fragment: str
) -> None:
    tools, report = parse_tools({"tools": [PLAIN_TOOL, entry]}, source="t.json")
    assert [t.name for t in tools] == ["lookup-docs"]
    (error,) = report.errors
    assert error.field == (f"tools[1].{field}" if field else "tools[1]")
    assert fragment in error.message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ('{"other": 1}', "must hold a list of tools"),
        ('{"tools": {}}', "must be a list of tools"),
        ('"text"', "must hold a list of tools"),
        ('{"jsonrpc": "2.0", "error": {"code": -1, "message": "denied"}}', "JSON-RPC error"),
        ('[{"name": "t", "description": "d", "inputSchema": {"x": NaN}}]', "NaN is not allowed"),
        ('[{"name": "t", "description": "d", "inputSchema": {"x": 1e999}}]', "overflows"),
    ],
)
def test_unparseable_json_file_is_an_error_in_both_modes(
    tmp_path: Path, text: str, fragment: str
) -> None:
    path = tmp_path / "tools.json"
    path.write_text(text)
    for strict in (False, True):
        with pytest.raises(SkillParseError, match=fragment):
            load_tools(path, strict=strict)
