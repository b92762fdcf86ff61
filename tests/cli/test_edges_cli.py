"""Bad values at the command line's edges -- numbers, paths, ids -- through the console entry
point: exit status 2 and one line naming the option or file, never a traceback, never a figure
(``NaN`` included) printed from input that does not define it."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from maitred.depth.payoff import DepthTask
from maitred.depth.rules import Ranked
from maitred.lab.depth.tasks import write_tasks
from maitred.lab.domains.sitecare import skills_dir

from .conftest import CallMain, Sitecare


def _one_error_line(code: int, out: str, err: str, expected: str) -> None:
    assert code == 2, (out, err)
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and expected in lines[0], err


def _tasks(path: Path, n: int = 30) -> Path:
    rng = random.Random(3)
    names = [f"s{i}" for i in range(12)]
    tasks = []
    for i in range(n):
        picked = rng.sample(names, 6)
        ranked = tuple(Ranked(s, round(1 - j / 10, 3), 1.0 + j % 3) for j, s in enumerate(picked))
        tasks.append(DepthTask(f"t{i}", ranked, frozenset(picked[:2])))
    write_tasks(tasks, path)
    return path


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    return _tasks(tmp_path / "tasks.jsonl")


def _depth(tasks: Path, *extra: str) -> list[str]:
    return ["eval", "depth", "--train", str(tasks), "--test", str(tasks), "--no-noise",
            "--json", "--boot", "20", *extra]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (("--lambda", "inf"), "--lambda must be a finite number, got inf"),
        (("--lambda", "1e400"), "--lambda must be a finite number, got inf"),
        (("--grid", "--lambdas", "0.1,nan"), "--lambdas must be comma-separated finite"),
        (("--grid", "--dispersions", "inf"), "--dispersions must be comma-separated finite"),
        (("--sufficiency-guard", "nan"), "--sufficiency-guard must be a finite number"),
    ],
)
def test_a_number_that_is_not_finite_is_refused(
    call_main: CallMain, tasks: Path, extra: tuple[str, ...], expected: str
) -> None:
    _one_error_line(*call_main(*_depth(tasks, *extra)), expected)


@pytest.mark.parametrize("extra", [("--lambda", "nan"), ("--boot", "0"), ("--lambda", "-1")])
def test_a_number_out_of_range_is_exit_2_without_figures(
    call_main: CallMain, tasks: Path, extra: tuple[str, ...]
) -> None:
    code, out, err = call_main(*_depth(tasks, *extra))  # was a traceback / "lambda": NaN
    _one_error_line(code, out, err, f"Invalid value for '{extra[0]}'")
    assert "(see '" in err and "eval depth -h')" in err


def test_an_unknown_option_is_one_line_naming_it(call_main: CallMain, tasks: Path) -> None:
    _one_error_line(*call_main(*_depth(tasks, "--bogus")), "No such option: --bogus")


def test_figures_are_never_printed_as_nan(call_main: CallMain, tasks: Path) -> None:
    code, out, err = call_main(*_depth(tasks, "--lambda", "0.05"))
    assert code == 0, err
    assert json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))


@pytest.fixture
def queries(tmp_path: Path) -> Path:
    path = tmp_path / "q.jsonl"
    rows = [
        {"id": "a", "text": "connect my custom domain", "gold": ["connect-domain"]},
        {"id": "b", "text": "cancel my subscription", "gold": ["cancel-subscription"]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _routing(queries: Path, *extra: str) -> list[str]:
    return ["eval", "routing", "-s", str(skills_dir()), "-q", str(queries), "-m", "bm25",
            "--json", *extra]  # fmt: skip


@pytest.mark.parametrize("under", [False, True])
def test_a_cache_dir_that_is_a_file_is_refused(
    call_main: CallMain, queries: Path, tmp_path: Path, under: bool
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    where = blocker / "sub" if under else blocker
    expected = f"lies under the file {blocker}" if under else f"{blocker} is a file"
    _one_error_line(*call_main(*_routing(queries, "--cache-dir", str(where))), expected)


def test_maitred_cache_dir_naming_a_file_is_refused(
    call_main: CallMain, queries: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "cache-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("MAITRED_CACHE_DIR", str(blocker))
    args = ["depth", "make-tasks", "-s", str(skills_dir()), "-q", "x.jsonl", "-o", "t.jsonl"]
    _one_error_line(*call_main(*args), "$MAITRED_CACHE_DIR")


def test_a_repeated_query_id_refuses_the_file_naming_line_and_id(
    call_main: CallMain, queries: Path
) -> None:
    with queries.open("a", encoding="utf-8") as f:
        f.write("{not json\n")
        f.write(json.dumps({"id": "a", "text": "rain in Lyon", "gold": ["connect-domain"]}) + "\n")
    code, out, err = call_main(*_routing(queries))
    assert code == 2 and out == ""  # no figures
    lines = err.splitlines()
    assert lines[0].startswith(f"skipped: {queries}:3: not valid JSON")  # still reported
    assert lines[-1] == (
        f"error: {queries}:4: query id 'a' repeats line 1; refusing to score a file whose ids "
        "are not unique: give each query its own id"
    )


def test_an_output_path_that_cannot_be_written_is_one_line(
    call_main: CallMain, queries: Path, tmp_path: Path
) -> None:
    out = tmp_path / "no-such-folder" / "tasks.jsonl"
    args = ["depth", "make-tasks", "-s", str(skills_dir()), "-q", str(queries), "-m", "bm25",
            "--cache-dir", str(tmp_path / "cache"), "-o", str(out)]  # fmt: skip
    code, _, err = call_main(*args)
    assert code == 2 and "Traceback" not in err
    assert err.splitlines()[-1] == f"error: {out}: No such file or directory"


def test_a_repeated_task_id_refuses_the_task_file(call_main: CallMain, tasks: Path) -> None:
    first = tasks.read_text(encoding="utf-8").splitlines()[0]
    with tasks.open("a", encoding="utf-8") as f:
        f.write(first + "\n")  # t0 again, on line 31
    code, out, err = call_main(*_depth(tasks))
    assert code == 2 and out == ""
    assert err.splitlines()[-1] == (
        f"error: {tasks}:31: task id 't0' repeats line 1; refusing to score a file whose ids "
        "are not unique: give each task its own id"
    )


def test_an_id_option_that_is_not_utf8_is_refused_before_any_work(
    call_main: CallMain, site: Sitecare
) -> None:
    args = ["route", "connect my domain", "--account", "acc-\udcff", "--json",
            "--skills", str(site.skills), "--state", site.state, "--tables", str(site.tables),
            "--method", "bm25", "--cache-dir", str(site.cache)]  # fmt: skip
    # undecodable argv bytes arrive as lone surrogates (was a UnicodeEncodeError traceback)
    _one_error_line(*call_main(*args), "--account holds bytes that are not UTF-8 text")
    args[1] = "connect my domain \udcff"  # free text: still routed, the byte replaced
    args[3] = "acc-000001"
    code, out, err = call_main(*args)
    assert code == 0 and "undecodable byte(s) replaced" in err
    assert json.loads(out)["account"] == "acc-000001"


def test_report_on_a_file_that_is_no_decision_log_is_one_line(
    call_main: CallMain, tmp_path: Path
) -> None:
    garbage = tmp_path / "log.sqlite"
    garbage.write_text("not a database\n", encoding="utf-8")  # was a DuckDB traceback
    args = ["report", "--log", str(garbage), "--out", str(tmp_path / "out")]
    _one_error_line(*call_main(*args), f"cannot open the decision log {garbage}")
