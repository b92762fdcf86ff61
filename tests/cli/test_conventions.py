"""The command-line conventions (docs/cli.md), checked on every command.

The tree of commands is walked from the real app, so a command added later is checked too.
Nothing here runs a pipeline: help is rendered, and arguments are parsed with
``make_context``, which stops before the command's body.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.main import get_command
from typer.testing import CliRunner

from maitred import __version__
from maitred.cli import replay_cmd
from maitred.cli._conventions import rewrite_aliases
from maitred.cli.main import app

# Commands (space-separated paths) that still spell the catalog otherwise, because their
# modules were being edited elsewhere when the shared SKILLS_OPT landed. Each entry must still
# break the rule (the test below says when one is stale); the lead empties this list when the
# module adopts `skills: list[str] = SKILLS_OPT` from maitred.cli._common.
CATALOG_SPELLING_PENDING: set[str] = set()
# Commands whose options with a None default do not yet say in their help what happens then
# (same reason; the lead adopts LOG_OPT / the help texts of maitred.cli._common).
DEFAULT_HELP_PENDING: set[str] = set()

PYTHON_TYPES = re.compile(r"<(bool|int|float|str|path|list\[|tuple|text|int range|float range)")


def _walk(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _walk(sub, (*path, name))


TREE = list(_walk(get_command(app)))
COMMANDS = [(path, cmd) for path, cmd in TREE if not hasattr(cmd, "commands")]


def _ids(items: list[tuple[tuple[str, ...], Any]]) -> list[str]:
    return [" ".join(path) or "maitred" for path, _ in items]


def _help(*args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.stdout


def _parse(path: tuple[str, ...], args: list[str]) -> dict[str, Any]:
    """The parameters ``maitred PATH ARGS`` would call its command with (body not run)."""
    command = dict(TREE)[path]
    with command.make_context(path[-1], list(args)) as ctx:
        return dict(ctx.params)


@pytest.mark.parametrize(("path", "command"), TREE, ids=_ids(TREE))
def test_help_shows_no_python_types(path: tuple[str, ...], command: Any) -> None:
    text = _help(*path)
    assert not PYTHON_TYPES.search(text), PYTHON_TYPES.search(text)
    assert "x>=" not in text and "x<=" not in text  # bounds read as words
    usage = next(line for line in text.splitlines() if "Usage:" in line)
    assert "{" not in usage  # click's ARG / [ARG], not typer's {arg}


@pytest.mark.parametrize(("path", "command"), TREE, ids=_ids(TREE))
def test_dash_h_is_help_on_every_command_and_group(path: tuple[str, ...], command: Any) -> None:
    short = CliRunner().invoke(app, [*path, "-h"], terminal_width=200)
    assert short.exit_code == 0, short.output
    assert short.stdout == _help(*path)
    assert "-h" in short.stdout


def test_version_prints_the_package_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"maitred {__version__}"


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=_ids(COMMANDS))
def test_the_catalog_is_spelled_skills(path: tuple[str, ...], command: Any) -> None:
    catalog = [
        p
        for p in command.params
        if p.name in {"skills", "catalog"}
        or "--catalog" in p.opts
        or ("--domain" in p.opts and p.type_descriptor.is_path)
    ]
    where = " ".join(path)
    spelled = all(p.opts[:2] == ["--skills", "-s"] for p in catalog)
    if where in CATALOG_SPELLING_PENDING:
        assert not spelled, f"{where} now spells --skills: remove it from the pending list"
        return
    assert spelled, f"{where}: the catalog option is {[p.opts for p in catalog]}"


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=_ids(COMMANDS))
def test_options_without_a_value_default_say_what_happens(
    path: tuple[str, ...], command: Any
) -> None:
    where = " ".join(path)
    silent = [
        p.opts[0]
        for p in command.params
        if isinstance(p, typer.core.TyperOption)
        and not p.required
        and not p.is_flag
        and not p.hidden
        and p.default is None
        and "default" not in (p.help or "")
    ]
    if where in DEFAULT_HELP_PENDING:
        return
    assert not silent, f"{where}: say the default in the help of {silent}"


@pytest.mark.parametrize(
    ("path", "args", "name", "value"),
    [
        (("parity",), ["--domain", "d"], "skills", Path("d")),
        (("parity",), ["-d", "d"], "skills", Path("d")),
        (("depth", "make-tasks"), ["--catalog", "c", "-q", "q", "-o", "o"], "skills", ["c"]),
        (("depth", "make-tasks"), ["-c", "c", "-q", "q", "-o", "o"], "skills", ["c"]),
        (("depth", "make-tasks"), ["--catalog=c", "-q", "q", "-o", "o"], "skills", ["c"]),
        (("native", "index"), ["-c", "a", "--catalog", "b"], "skills", ["a", "b"]),
        (("replay",), ["-s", "x", "--n", "7"], "n", 7),
        (("depth", "domain-queries"), ["--domain", "airline", "--n", "9", "-o", "o"], "n", 9),
    ],
)
def test_old_spellings_still_parse(
    path: tuple[str, ...], args: list[str], name: str, value: Any
) -> None:
    assert _parse(path, args)[name] == value


@pytest.mark.parametrize(
    ("path", "old"),
    [
        (("parity",), "--domain"),
        (("parity",), "-d"),
        (("depth", "make-tasks"), "--catalog"),
        (("native", "rollout"), "--catalog"),
        (("replay",), "--n "),
        (("replay",), "--api-key "),
        (("depth", "domain-queries"), "--n "),
    ],
)
def test_old_spellings_are_absent_from_help(path: tuple[str, ...], old: str) -> None:
    assert old not in _help(*path)


def test_an_old_spelling_prints_one_deprecation_line() -> None:
    lines: list[str] = []
    out = rewrite_aliases(
        ["--catalog", "a", "--catalog=b", "-q", "q"], {"--catalog": "--skills"}, lines.append
    )
    assert out == ["--skills", "a", "--skills=b", "-q", "q"]
    assert len(lines) == 1 and "--catalog" in lines[0] and "use --skills" in lines[0]


def test_tokens_after_double_dash_are_never_rewritten() -> None:
    out = rewrite_aliases(["-c", "a", "--", "-c"], {"-c": "-s"}, lambda line: None)
    assert out == ["-s", "a", "--", "-c"]


def test_a_command_own_domain_name_is_not_an_alias() -> None:
    params = _parse(("depth", "domain-queries"), ["--domain", "airline", "-o", "o"])
    assert params["domain"] == "airline"


def test_parity_with_the_old_domain_spelling_runs_and_warns_on_stderr() -> None:
    result = CliRunner().invoke(app, ["parity", "--domain", "no/such/folder"])
    assert "--domain is an old spelling of --skills" in result.stderr
    assert "--skills no/such/folder: no such folder" in str(result.exception)


def test_a_bound_still_holds_after_it_moved_into_words() -> None:
    result = CliRunner().invoke(app, ["parity", "--skills", ".", "--fixtures", "0"])
    assert result.exit_code == 2
    assert "--fixtures" in result.stderr
    assert "(at least 1)" in _help("parity")


def test_replay_reads_the_key_from_the_named_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MY_KEY", "from-env")
    assert replay_cmd._api_key("", "MY_KEY") == "from-env"
    assert capsys.readouterr().err == ""


def test_replay_inline_key_still_works_but_warns(capsys: pytest.CaptureFixture[str]) -> None:
    assert replay_cmd._api_key("inline", "UNSET_VARIABLE_FOR_TEST") == "inline"
    assert "shell history" in capsys.readouterr().err
    assert _parse(("replay",), ["-s", "x", "--api-key", "k"])["api_key"] == "k"


def test_help_says_what_a_missing_log_or_clock_means() -> None:
    assert "MAITRED_LOG" in _help("report") and "maitred-decisions.sqlite" in _help("report")
    assert "the pack's own clock" in _help("actions", "check")
    assert "MAITRED_API_KEY" in _help("replay")  # the default variable name, not a key
