"""Counterfactual replay on a real sitecare log: cohorts, both menus, errors, the log rows."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from urllib.error import URLError

import pytest

from maitred.build import PipelineOptions, build_pipeline
from maitred.errors import MissingExtraError
from maitred.lab.domains import sitecare
from maitred.log import open_log
from maitred.messages import read_messages
from maitred.replay import MenuItem, OpenAICompatibleModel, ThreadFanout, replay, sample
from maitred.skills import load_catalog


@pytest.fixture(scope="module")
def log_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("replay")
    db, msgs, log = root / "accounts.sqlite", root / "messages.jsonl", root / "log.sqlite"
    sitecare.write_accounts(db, 150, seed=3, as_of=int(time.time()))
    sitecare.write_messages(msgs, 400, 150, seed=3)
    options = PipelineOptions(method="bm25", top_k=3, min_score=4.0, family=True)
    with open_log(log) as handle:
        pipeline = build_pipeline(
            [str(sitecare.skills_dir())],
            f"sqlite:///{db}",
            options,
            tables=sitecare.TABLES,
            log=handle,
        )
        pipeline.run(read_messages(msgs))
    return log


class FirstOnMenu:
    """A test double: always picks the first skill it is shown."""

    name = "first-on-menu"

    def choose(self, conversation: Sequence[str], menu: Sequence[MenuItem]) -> str | None:
        assert conversation, "the replayed message is always included"
        return menu[0].name if menu else None


class Broken:
    """A test double whose endpoint refuses every other conversation."""

    name = "broken"

    def choose(self, conversation: Sequence[str], menu: Sequence[MenuItem]) -> str | None:
        if len(conversation[-1]) % 2:
            raise URLError("connection refused")
        return None


@pytest.fixture(scope="module")
def catalog():  # type: ignore[no-untyped-def]
    return load_catalog([str(sitecare.skills_dir())])


def test_risk_cohort_only_has_blocked_turns_and_is_seeded(log_path: Path) -> None:
    with open_log(log_path, read_only=True) as log:
        a = sample(log, "risk", 25, seed=1)
        b = sample(log, "risk", 25, seed=1)
        r = sample(log, "random", 25, seed=1)
    assert [t.turn_id for t in a] == [t.turn_id for t in b]
    assert a and all(t.blocked for t in a)
    assert len({t.turn_id for t in a}) == len(a)
    assert all(t.candidates for t in r)


def test_replay_counts_match_the_log(log_path: Path, catalog) -> None:  # type: ignore[no-untyped-def]
    with open_log(log_path) as log:
        report = replay(log, ThreadFanout(FirstOnMenu(), catalog), cohort="risk", n=30, seed=2)
        data = report.to_json()
        rows = log.query(
            "SELECT turn_id, pick_all, picked_blocked FROM replays WHERE replay_id = ?",
            (report.replay_id,),
        )
        turns = sample(log, "risk", 30, seed=2)
    # menus are in name order and the double picks the first: blocked exactly when the gate
    # blocked the alphabetically first candidate
    expected = sum(sorted(t.candidates)[0] in t.blocked for t in turns)
    assert data["picked_blocked"] == expected == sum(bool(r[2]) for r in rows)
    assert data["sampled"] == len(rows) == len(turns)
    lo, hi = data["picked_blocked_ci"]
    assert lo <= data["picked_blocked_rate"] <= hi
    for o in report.outcomes:
        assert (
            o.pick_gated is None
            or o.pick_gated not in {t.blocked for t in turns if t.turn_id == o.turn_id}.pop()
        )


def test_model_errors_are_recorded_and_the_replay_goes_on(
    log_path: Path,
    catalog,  # type: ignore[no-untyped-def]
) -> None:
    with open_log(log_path) as log:
        report = replay(
            log, ThreadFanout(Broken(), catalog, workers=2), cohort="random", n=40, seed=4
        )
        turns = sample(log, "random", 40, seed=4)
        errors = log.query(
            "SELECT COUNT(*) FROM replays WHERE replay_id = ? AND error LIKE '%refused%'",
            (report.replay_id,),
        )[0][0]
    data = report.to_json()
    refused = sum(len(t.conversation[-1]) % 2 for t in turns)
    assert data["sampled"] == len(turns) > refused
    assert data["errors"] == errors == refused > 0
    assert data["answered"] == len(turns) - refused


@pytest.fixture()
def endpoint() -> Iterator[tuple[str, list[dict[str, object]]]]:
    seen: list[dict[str, object]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            name = body["tools"][-1]["function"]["name"]
            answer = {
                "choices": [
                    {
                        "message": {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "id": "1",
                                    "type": "function",
                                    "function": {"name": name, "arguments": "{}"},
                                }
                            ],
                        }
                    }
                ]
            }
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1", seen
    finally:
        server.shutdown()


def test_openai_compatible_endpoint(endpoint: tuple[str, list[dict[str, object]]]) -> None:
    url, seen = endpoint
    model = OpenAICompatibleModel(url, "test-model")
    menu = [MenuItem("a-skill", "does a"), MenuItem("b-skill", "does b")]
    assert model.choose(["hello"], menu) == "b-skill"
    assert model.choose(["hello"], []) is None  # nothing to offer, nothing asked
    assert len(seen) == 1 and seen[0]["model"] == "test-model"
    assert [t["function"]["name"] for t in seen[0]["tools"]] == ["a-skill", "b-skill"]  # type: ignore[index,union-attr]


@pytest.mark.model
def test_local_smollm2_picks_from_the_menu() -> None:
    """``--model local`` on whichever runtime is installed: llama.cpp (``make replay-deps``)
    or, as ``make install`` leaves it, the native extra's likelihood pick on the same GGUF."""
    from maitred.replay.models import local_model

    try:
        model = local_model()
    except MissingExtraError as exc:  # neither the native extra nor llama-cpp-python
        pytest.skip(str(exc))
    menu = [
        MenuItem("request-refund", "Refund the last payment."),
        MenuItem("connect-domain", "Connect a custom domain to the site."),
    ]
    assert model.choose(["I want my money back for last month"], menu) == "request-refund"
    assert model.choose(["please connect my domain example.com to my site"], menu) == (
        "connect-domain"
    )


@pytest.mark.slow
def test_replay_fans_out_over_a_local_ray_cluster(
    log_path: Path, endpoint: tuple[str, list[dict[str, object]]]
) -> None:
    ray = pytest.importorskip("ray", reason="needs the ray extra")
    from maitred.replay import ModelSpec, RayFanout

    url, seen = endpoint
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        # each actor builds its own model from the spec (the test endpoint): every turn is
        # answered through Ray and comes back in sampling order (a replay where every call
        # failed is refused: tests/replay/test_replay_refusals.py)
        spec = ModelSpec("m", (str(sitecare.skills_dir()),), url)
        with open_log(log_path) as log:
            report = replay(log, RayFanout("auto", spec, workers=2), cohort="risk", n=6, seed=5)
            turns = sample(log, "risk", 6, seed=5)
    finally:
        ray.shutdown()
    assert [o.turn_id for o in report.outcomes] == [t.turn_id for t in turns]
    data = report.to_json()
    assert data["errors"] == 0 and data["answered"] == len(turns) > 0
    assert len(seen) == 2 * len(turns)  # both menus of every turn were asked
