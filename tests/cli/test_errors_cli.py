"""Bad input through the console entry point: exit 2 and one clear line, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import CallMain, RoutedLog, Sitecare

#: (what the case sets up in tmp_path -> the arguments, text the one error line must contain)
Case = Callable[[Sitecare, Path], tuple[list[str], str]]


def _route(site: Sitecare, *, skills: Path | None = None, **override: str) -> list[str]:
    """`route ... --json` with the sitecare options, some replaced."""
    opts = {
        "--skills": str(skills or site.skills),
        "--state": site.state,
        "--tables": str(site.tables),
        "--method": "bm25",
        "--cache-dir": str(site.cache),
        **{f"--{k.replace('_', '-')}": v for k, v in override.items()},
    }
    args = ["route", "connect my domain", "--account", "acc-000001", "--json"]
    for name, value in opts.items():
        args += [name, value]
    return args


def _empty_skills(site: Sitecare, tmp: Path) -> tuple[list[str], str]:
    empty = tmp / "no-skills-here"
    empty.mkdir()
    return _route(site, skills=empty), f"no skills or tools found in {empty}"


def _unknown_method(site: Sitecare, tmp: Path) -> tuple[list[str], str]:
    return _route(site, method="bm42"), "unknown recall method 'bm42'; choose one of adaptive, bm25"


def _unknown_scheme(site: Sitecare, tmp: Path) -> tuple[list[str], str]:
    return _route(site, state="redis://localhost/0"), "unknown state provider 'redis://localhost/0'"


def _tables_not_a_mapping(site: Sitecare, tmp: Path) -> tuple[list[str], str]:
    # the brackets must survive: they once vanished as rich markup, naming another file
    tables = tmp / "tables[v2].yaml"
    tables.write_text("- account\n- billing\n", encoding="utf-8")
    return _route(site, tables=str(tables)), f"{tables}: expected a mapping"


def _tables_not_yaml(site: Sitecare, tmp: Path) -> tuple[list[str], str]:
    tables = tmp / "tables.yaml"
    tables.write_text("account: {table: [accounts\n", encoding="utf-8")
    return _route(site, tables=str(tables)), f"{tables}:2: not valid YAML"


def _tables_not_utf8(site: Sitecare, tmp: Path) -> tuple[list[str], str]:
    tables = tmp / "tables.yaml"
    tables.write_bytes(b"\xff\xfeaccount: accounts\n")
    return _route(site, tables=str(tables)), f"{tables}: cannot read the tables mapping"


def _tables_bad_spec(site: Sitecare, tmp: Path) -> tuple[list[str], str]:
    tables = tmp / "tables.yaml"
    tables.write_text("account: {tabel: accounts}\n", encoding="utf-8")
    return _route(site, tables=str(tables)), "root 'account': a table mapping needs `table`"


def _tables_missing(site: Sitecare, tmp: Path) -> tuple[list[str], str]:
    tables = tmp / "absent.yaml"
    return _route(site, tables=str(tables)), f"{tables}: cannot read the tables mapping"


def _missing_sqlite(site: Sitecare, tmp: Path) -> tuple[list[str], str]:
    db = tmp / "gone.sqlite"
    return _route(site, state=f"sqlite:///{db}"), f"no SQLite database at '{db}'"


def _missing_json_state(site: Sitecare, tmp: Path) -> tuple[list[str], str]:
    state = tmp / "state.json"
    args = _route(site, state=str(state))
    i = args.index("--tables")
    del args[i : i + 2]  # a JSON provider takes no tables
    return args, f"JSON state file '{state}' cannot be read"


def _unknown_format(site: Sitecare, tmp: Path) -> tuple[list[str], str]:
    return _route(site, format="yaml"), "unknown menu format 'yaml'"


def _eval_empty_catalog(site: Sitecare, tmp: Path) -> tuple[list[str], str]:
    empty = tmp / "empty-catalog"
    empty.mkdir()
    queries = tmp / "q.jsonl"
    queries.write_text('{"id": "1", "text": "hi", "gold": ["x"]}\n', encoding="utf-8")
    args = ["eval", "routing", "-s", str(empty), "-q", str(queries), "-m", "bm25", "--json"]
    return args, f"no skills or tools found in {empty}"


CASES: dict[str, Case] = {
    "empty-skills-dir": _empty_skills,
    "unknown-method": _unknown_method,
    "unknown-state-scheme": _unknown_scheme,
    "tables-not-a-mapping": _tables_not_a_mapping,
    "tables-not-yaml": _tables_not_yaml,
    "tables-not-utf8": _tables_not_utf8,
    "tables-bad-spec": _tables_bad_spec,
    "tables-missing": _tables_missing,
    "missing-sqlite-file": _missing_sqlite,
    "missing-json-state": _missing_json_state,
    "unknown-menu-format": _unknown_format,
    "eval-empty-catalog": _eval_empty_catalog,
}


def _assert_one_error_line(code: int, out: str, err: str, expected: str) -> None:
    assert code == 2, err
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert expected in lines[0]


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_bad_input_is_exit_2_and_one_line(
    call_main: CallMain, site: Sitecare, tmp_path: Path, case: Case
):
    args, expected = case(site, tmp_path)
    _assert_one_error_line(*call_main(*args), expected)


def test_missing_sqlite_state_is_never_created(call_main: CallMain, site: Sitecare, tmp_path: Path):
    args, _ = _missing_sqlite(site, tmp_path)
    assert call_main(*args)[0] == 2
    assert not (tmp_path / "gone.sqlite").exists()


def test_unknown_run_id_names_the_runs_there(call_main: CallMain, routed_log: RoutedLog):
    code, out, err = call_main("funnel", "--log", str(routed_log.log), "--run", "nope", "--json")
    _assert_one_error_line(code, out, err, "run 'nope' is not in the decision log")
    assert routed_log.funnel["run_id"] in err


def _console_script() -> Path:
    script = Path(sys.executable).parent / "maitred"
    if not script.exists():
        pytest.skip(f"no `maitred` console script beside {sys.executable}")
    return script


@pytest.mark.parametrize("name", ["empty-skills-dir", "missing-sqlite-file"])
def test_console_script_exit_2_one_line_on_a_narrow_terminal(
    site: Sitecare, tmp_path: Path, name: str
):
    """The installed `maitred` itself; COLUMNS=40 must not fold the message over lines."""
    args, expected = CASES[name](site, tmp_path)
    env = {**os.environ, "COLUMNS": "40", "MAITRED_CACHE_DIR": str(site.cache)}
    done = subprocess.run(
        [str(_console_script()), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
        check=False,
    )
    assert len(expected) > 40
    _assert_one_error_line(done.returncode, done.stdout, done.stderr, expected)
