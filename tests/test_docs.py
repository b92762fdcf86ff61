"""The documentation's examples run as written, and the configuration reference is generated
from the config models (``docs/hooks/config_reference.py``, run by every ``make docs``)."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import typing
from pathlib import Path
from types import ModuleType

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), re.S)


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "config_reference", DOCS / "hooks" / "config_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _dataclasses(model: type) -> list[type]:
    """The model and every dataclass reachable from its fields' types."""
    found: list[type] = []
    todo = [model]
    while todo:
        cls = todo.pop()
        if cls in found:
            continue
        found.append(cls)
        for tp in typing.get_type_hints(cls).values():
            stack = [tp]
            while stack:
                t = stack.pop()
                stack += typing.get_args(t)
                if isinstance(t, type) and dataclasses.is_dataclass(t):
                    todo.append(t)
    return found


def test_the_library_example_runs(capsys: object) -> None:
    namespace: dict[str, object] = {}
    exec(compile(_blocks("library.md")[0], "docs/library.md", "exec"), namespace)
    turn = namespace["turn"]
    exposed = turn.exposed  # type: ignore[attr-defined]
    blocked = {p.skill for p in turn.record.blocked}  # type: ignore[attr-defined]
    # acc-1 is on the free plan: the domain skills are recalled but the gate hides them
    assert "connect-domain" in blocked and "connect-domain" not in exposed
    assert exposed, "something the free account can do is still offered"
    decision = namespace["decision"]
    assert decision.code == "TOOL_NOT_OFFERED"  # type: ignore[attr-defined]
    assert decision.turn_id == turn.turn_id  # type: ignore[attr-defined]


def test_the_procedure_example_compiles() -> None:
    (block,) = [b for b in _blocks("contracts.md") if "def run(" in b]
    namespace: dict[str, object] = {}
    exec(compile(block, "docs/contracts.md", "exec"), namespace)
    assert "registered_recently" in namespace and callable(namespace["run"])


def test_the_config_reference_names_every_field_of_both_models() -> None:
    # the config modules import the service's and the gateway's stacks, as `make docs` does
    pytest.importorskip("starlette", reason="needs the serve extra: pip install 'maitred[serve]'")
    pytest.importorskip("fastmcp", reason="needs the mcp extra: pip install 'maitred[mcp]'")
    from maitred.gateway.config import GatewayConfig
    from maitred.serve.config import ServeConfig

    page = _hook().render()
    for command, model in (("serve", ServeConfig), ("mcp", GatewayConfig)):
        section = page.split(f"{{#{command}}}", 1)[1].split("\n## ", 1)[0]
        for cls in _dataclasses(model):
            table = section.split(f"{{#{command}-{cls.__name__.lower()}}}", 1)[1]
            table = table.split("\n### ", 1)[0]
            rows = re.findall(r"^\| `(\w+)` \|", table, re.M)
            assert rows == [f.name for f in dataclasses.fields(cls)], cls.__name__


def test_a_field_added_to_a_model_is_documented_with_no_edit_to_the_generator() -> None:
    @dataclasses.dataclass(frozen=True)
    class Knobs:
        """Knobs of a made-up block.

        Attributes:
            depth: how deep to go,
                in metres.
        """

        depth: int = 3
        #: what to call it
        label: str = "x"
        mode: typing.Literal["fast", "slow"] = "slow"
        size: float | None = None

    text = "\n".join(_hook()._class_section(Knobs, "demo"))
    assert "| `depth` | integer | `3` | how deep to go, in metres. |" in text
    assert "| `label` | string | `x` | what to call it |" in text
    assert "| `mode` | `fast` \\| `slow` | `slow` |" in text
    assert "| `size` | number or `null` | `null` |" in text


def test_every_page_is_in_the_nav() -> None:
    nav = (DOCS.parent / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    listed = set(re.findall(r": ([\w/.-]+\.md)$", nav, re.M))
    assert pages <= listed and "reference/config.md" in listed, pages - listed


def test_a_field_typed_with_a_name_only_a_type_checker_imports_still_builds() -> None:
    @dataclasses.dataclass(frozen=True)
    class Late:
        """A block whose field's type is imported under TYPE_CHECKING only."""

        store: Store | None = None  # type: ignore[name-defined]  # noqa: F821

    text = "\n".join(_hook()._class_section(Late, "demo"))
    assert "| `store` | `Store | None` | `null` |" in text.replace("\\|", "|")
