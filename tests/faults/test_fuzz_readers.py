"""Random bytes and truncated files for every file reader: each either reads what it can or
fails with a maitred error that names the file -- never another exception, never a hang.

One property per reader, over (a) arbitrary bytes and (b) a valid file cut at an arbitrary byte
(the shape of a half-written or half-copied file). Bad records that a reader skips are reported
through its ``on_error`` with the file's name.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maitred.actions.replay import load_trajectories
from maitred.cli._common import load_tables
from maitred.errors import InputError, MaitredError
from maitred.lab.depth.tasks import load_tasks
from maitred.log.base import open_log
from maitred.messages import read_messages
from maitred.recall.evaluate import load_queries, load_sets
from maitred.skills.catalog import load_catalog, validate
from maitred.skills.tools import load_tools
from maitred.state.memory import JsonStateProvider

FUZZ = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

VALID: dict[str, bytes] = {
    "messages.jsonl": b'{"id": "m1", "text": "connect my domain", "account": "a1"}\n'
    b'{"id": "m2", "text": "cancel my plan", "account": "a2"}\n',
    "trajectories.jsonl": b'{"id": "t1", "context": {}, "calls": [{"name": "get_user_details",'
    b' "arguments": {"user_id": "u1"}}]}\n',
    "queries.jsonl": b'{"id": "q1", "text": "weather tomorrow", "gold": ["get_weather"]}\n',
    "tools.json": json.dumps(
        {
            "tools": [
                {
                    "name": "get_weather",
                    "description": "The weather for a city.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                }
            ]
        }
    ).encode(),
    "tools.maitred.yaml": b"tools:\n  get_weather:\n    mutates: false\n    cost: 2\n",
    "SKILL.md": b"---\nname: fuzz-skill\ndescription: A skill to fuzz.\n---\n# Body\n",
    "maitred.yaml": b"cost: 1\nexit_predicates:\n  - name: on_free\n    expr: account.plan =="
    b' "free"\n    reads: [account.plan]\n',
    "state.json": b'{"a1": {"account": {"plan": "free"}}}',
    "tables.json": b'{"account": "accounts"}',
    "sets.json": b'{"sets": [{"name": "s", "catalog": ["tools.json"], "queries": "q.jsonl"}]}',
}


def _cut(name: str) -> st.SearchStrategy[bytes]:
    whole = VALID[name]
    return st.integers(0, len(whole)).map(lambda n: whole[:n])


def _inputs(name: str) -> st.SearchStrategy[bytes]:
    return st.one_of(st.binary(max_size=600), _cut(name))


def _write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def _names_the_file(exc: BaseException, path: Path) -> bool:
    return path.name in str(exc) or str(path.parent) in str(exc)


def _only_maitred_errors(call: Callable[[], Any], path: Path) -> None:
    try:
        call()
    except MaitredError as exc:
        assert _names_the_file(exc, path), f"{type(exc).__name__} does not name {path}: {exc}"


@pytest.fixture
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@FUZZ
@given(data=_inputs("messages.jsonl"))
def test_message_files(folder: Path, data: bytes) -> None:
    path = _write(folder, "messages.jsonl", data)
    bad: list[InputError] = []
    _only_maitred_errors(lambda: list(read_messages(path, on_error=bad.append)), path)
    assert all(e.path == str(path) for e in bad)


@FUZZ
@given(data=_inputs("trajectories.jsonl"))
def test_trajectory_files(folder: Path, data: bytes) -> None:
    path = _write(folder, "trajectories.jsonl", data)
    bad: list[InputError] = []
    _only_maitred_errors(lambda: load_trajectories(path, on_error=bad.append), path)
    assert all(e.path == str(path) for e in bad)


@FUZZ
@given(data=_inputs("queries.jsonl"))
def test_query_files(folder: Path, data: bytes) -> None:
    path = _write(folder, "queries.jsonl", data)
    bad: list[InputError] = []
    _only_maitred_errors(lambda: load_queries(path, on_error=bad.append), path)
    assert all(e.path == str(path) for e in bad)


@FUZZ
@given(data=st.binary(max_size=600))
def test_depth_task_files(folder: Path, data: bytes) -> None:
    path = _write(folder, "tasks.jsonl", data)
    bad: list[InputError] = []
    _only_maitred_errors(lambda: load_tasks(path, on_error=bad.append), path)
    assert all(e.path == str(path) for e in bad)


@FUZZ
@given(data=_inputs("tools.json"))
def test_tool_files(folder: Path, data: bytes) -> None:
    path = _write(folder, "tools.json", data)
    _only_maitred_errors(lambda: load_tools(path), path)


@FUZZ
@given(data=_inputs("tools.maitred.yaml"))
def test_tool_contract_sidecars(folder: Path, data: bytes) -> None:
    _write(folder, "tools.json", VALID["tools.json"])
    sidecar = _write(folder, "tools.maitred.yaml", data)
    _only_maitred_errors(lambda: load_catalog([folder / "tools.json"], strict=True), sidecar)


@FUZZ
@given(skill_md=_inputs("SKILL.md"), sidecar=_inputs("maitred.yaml"))
def test_skill_folders_validate_without_raising(
    folder: Path, skill_md: bytes, sidecar: bytes
) -> None:
    skill = folder / "fuzz-skill"
    skill.mkdir(exist_ok=True)
    _write(skill, "SKILL.md", skill_md)
    _write(skill, "maitred.yaml", sidecar)
    report = validate([folder])  # the validator never raises on malformed input
    assert set(report) >= {"errors", "warnings"}
    _only_maitred_errors(lambda: load_catalog([folder]), skill)


@FUZZ
@given(data=_inputs("state.json"))
def test_json_state_files(folder: Path, data: bytes) -> None:
    path = _write(folder, "state.json", data)

    def fetch() -> None:
        JsonStateProvider(path).fetch("a1", ["account.plan"])

    _only_maitred_errors(fetch, path)


@FUZZ
@given(data=_inputs("tables.json"))
def test_table_mapping_files(folder: Path, data: bytes) -> None:
    path = _write(folder, "tables.json", data)
    _only_maitred_errors(lambda: load_tables(path), path)


@FUZZ
@given(data=_inputs("sets.json"))
def test_routing_set_files(folder: Path, data: bytes) -> None:
    path = _write(folder, "sets.json", data)
    _only_maitred_errors(lambda: load_sets(path), path)


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.binary(min_size=1, max_size=2000))
def test_a_decision_log_path_holding_garbage(folder: Path, data: bytes) -> None:
    path = _write(folder, "log.sqlite", data)

    def opened() -> None:
        with open_log(path, read_only=True):
            pass

    _only_maitred_errors(opened, path)
