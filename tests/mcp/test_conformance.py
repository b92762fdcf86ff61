"""The official MCP conformance suites, run directly against a reference server and through
`maitred mcp` in front of it: every check that passes directly must pass through the gateway.

``@modelcontextprotocol/conformance`` is a client that drives a server through the server
scenarios of the specification and grades each check ``SUCCESS``, ``FAILURE``, ``WARNING`` or
``INFO``. Two versions are pinned side by side (``conformance/package.json``):

* **0.1.16**, ``--suite all``: the handshake era (``initialize``, sessions), against
  ``conformance/reference_server.mjs`` (on the MCP TypeScript SDK the suite ships with);
* **0.2.0-alpha.12**, installed as ``conformance-next``, with ``--requirements 2025-11-25``
  (the handshake era, frozen at that revision's release, against the same reference) and
  ``--requirements 2026-07-28`` (the stateless revision: ``server/discover``, per-request
  ``_meta``, multi-round-trip input, ``subscriptions/listen``, caching hints), against
  ``conformance/reference_server.py`` (on FastMCP, which speaks both eras; the TypeScript SDK
  1.x speaks only the first).

``make conformance-deps`` (a prerequisite of ``make test``; the fixture below runs it too, so
a test run by hand installs it the first time) puts both and a node >= 22 into
``.cache/conformance``. The suite's own everything-server is not in its npm package, so the
references are ours.

The gateway under test is the real thing: ``maitred mcp`` over streamable HTTP with a bearer
token, the reference as its one upstream (``url:``), no contracts. The suite sends no
``Authorization`` header, so it reaches the gateway through ``token_proxy.py``, which adds the
token and passes every other header on as sent (``Host`` and ``Origin`` too, so the suite's
DNS-rebinding scenario tests the gateway's own check).

What a reference does not pass directly is named in :data:`UNSCORED` (the tasks extension,
which neither reference serves); what passes directly and not through is named, with why, in
:data:`NOT_THROUGH`. Nothing else may differ.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.mcp.conftest import Process, child_env, sha256

pytestmark = pytest.mark.slow  # node, the gateway and a proxy run as subprocesses

ROOT = Path(__file__).resolve().parents[2]
HOME = ROOT / ".cache" / "conformance"
NODE = HOME / "node_modules" / ".bin" / "node"
MODULES = HOME / "node_modules"
HERE = Path(__file__).with_name("conformance")
PROXY = Path(__file__).with_name("token_proxy.py")
TOKEN = "tok-conformance-9d2e"


@dataclass(frozen=True)
class Suite:
    """One pinned suite run one way, against one reference."""

    version: str
    package: str  # its folder under node_modules
    args: tuple[str, ...]  # what selects the scenarios
    reference: str  # "mjs" (TypeScript SDK, handshake era) or "py" (FastMCP, both eras)

    @property
    def cli(self) -> Path:
        return MODULES / self.package / "dist" / "index.js"

    def __str__(self) -> str:
        return f"{self.version} {' '.join(self.args)}"


SUITES = [
    Suite("0.1.16", "@modelcontextprotocol/conformance", ("--suite", "all"), "mjs"),
    Suite("0.2.0-alpha.12", "conformance-next", ("--requirements", "2025-11-25"), "mjs"),
    Suite("0.2.0-alpha.12", "conformance-next", ("--requirements", "2026-07-28"), "py"),
]
#: scenarios a reference does not serve, so they fail directly: run and reported by the suite,
#: never scored for a revision (the tasks extension, SEP-2663, is not served by either)
UNSCORED = re.compile(r"^tasks-")
#: checks that pass directly and, for a reason named here, not through the gateway
NOT_THROUGH = {
    ("server-sse-polling", "server-sse-disconnect-resume"): (
        "the reference closes its stream mid-call (SEP-1699); the gateway's upstream client "
        "resumes it with Last-Event-ID and the gateway answers on the client's open stream, "
        "so the client never sees a stream close to resume from (graded INFO, not FAILURE; "
        "a pending scenario of 2025-11-25, not scored)"
    ),
}


@pytest.fixture(scope="module")
def node() -> Path:
    """The node that runs the suite, installed by ``make conformance-deps`` where missing."""
    HOME.parent.mkdir(exist_ok=True)
    with open(HOME.parent / "conformance.lock", "w") as lock:  # pytest -n: one install at once
        fcntl.flock(lock, fcntl.LOCK_EX)
        made = subprocess.run(
            ["make", "-s", "conformance-deps"], cwd=ROOT, capture_output=True, text=True
        )
    if made.returncode != 0:
        pytest.fail(f"make conformance-deps failed:\n{made.stdout}{made.stderr}")
    return NODE


@dataclass(frozen=True)
class Checks:
    """One run of the suite: the status of every graded check, by (scenario, check id)."""

    status: dict[tuple[str, str], str]

    def passed(self) -> set[tuple[str, str]]:
        return {k for k, v in self.status.items() if v == "SUCCESS"}

    def failed(self) -> set[tuple[str, str]]:
        return {k for k, v in self.status.items() if v == "FAILURE"}

    def scenarios(self) -> set[str]:
        return {scenario for scenario, _ in self.status}


def run_suite(node: Path, suite: Suite, url: str, out: Path) -> Checks:
    """``suite``'s scenarios against ``url``; the checks each one saved."""
    ran = subprocess.run(
        [str(node), str(suite.cli), "server", "--url", url, *suite.args, "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "CONFORMANCE_HOME": str(HOME)},
    )
    status: dict[tuple[str, str], str] = {}
    for checks in sorted(out.glob("server-*/checks.json")):
        scenario = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", checks.parent.name)
        scenario = scenario.removeprefix("server-")
        for check in json.loads(checks.read_text(encoding="utf-8")):
            if check["status"] not in ("SUCCESS", "FAILURE"):
                continue  # INFO and WARNING grade nothing
            key = (scenario, str(check["id"]))
            if status.get(key) != "FAILURE":  # a check id seen twice fails if either failed
                status[key] = check["status"]
    assert status, f"the suite saved no checks:\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}"
    return Checks(status)


def start_reference(kind: str) -> Process:
    """A reference server on a free loopback port (its MCP URL in ``match.group(1)``)."""
    pattern = r"reference server: (http://\S+)"
    if kind == "mjs":
        env = {**os.environ, "CONFORMANCE_HOME": str(HOME)}
        return Process([str(NODE), str(HERE / "reference_server.mjs")], env, pattern)
    return Process([sys.executable, str(HERE / "reference_server.py")], child_env(), pattern)


@contextmanager
def gateway_in_front(root: Path, reference: str) -> Iterator[str]:
    """``maitred mcp`` over HTTP in front of ``reference``, behind the token proxy; the URL
    the suite is given."""
    (root / "accounts.json").write_text('{"acc-1": {"account": {}}}', encoding="utf-8")
    config = root / "gateway.yaml"
    config.write_text(
        "state: accounts.json\n"
        "log: gateway.sqlite\n"
        "server: {host: 127.0.0.1, port: 0}\n"
        f"tokens: [{{token_sha256: {sha256(TOKEN)}, tenant: conformance, account: acc-1}}]\n"
        f"upstreams: [{{name: reference, url: {json.dumps(reference)}}}]\n",
        encoding="utf-8",
    )
    args = [sys.executable, "-m", "maitred.cli.main", "mcp", "--config", str(config)]
    served = Process(args, child_env(), r"serving (http://\S+)/mcp")
    try:
        proxy = Process(
            [sys.executable, str(PROXY), served.match.group(1), TOKEN],
            child_env(),
            r"token proxy: (http://\S+)",
        )
        try:
            yield f"{proxy.match.group(1)}/mcp"
        finally:
            proxy.stop()
    finally:
        served.stop()


@pytest.mark.slow
@pytest.mark.parametrize("suite", SUITES, ids=str)
def test_every_check_that_passes_directly_passes_through_the_gateway(
    node: Path,
    suite: Suite,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    reference = start_reference(suite.reference)
    try:
        url = reference.match.group(1)
        direct = run_suite(node, suite, url, tmp_path / "direct")
        with gateway_in_front(tmp_path, url) as gateway:
            through = run_suite(node, suite, gateway, tmp_path / "gateway")
    finally:
        reference.stop()
    lost = sorted(direct.passed() - through.passed() - NOT_THROUGH.keys())
    counts = (
        f"MCP conformance {suite}: {len(direct.passed())}/{len(direct.status)} checks pass "
        f"directly, {len(through.passed() & direct.passed())}/{len(direct.passed())} of those "
        f"through maitred mcp ({len(through.scenarios())} graded scenarios)"
    )
    print(counts)
    record_property("conformance", counts)
    assert through.scenarios() == direct.scenarios()  # the same scenarios ran and were graded
    # the reference is meant to pass every check it serves; a miss there would weaken the test
    missed = sorted(k for k in direct.failed() if not UNSCORED.match(k[0]))
    assert not missed, missed
    assert not lost, f"{counts}; fail only through the gateway: {lost}"
