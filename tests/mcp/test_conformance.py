"""The official MCP conformance suite, run directly against a reference server and through
`maitred mcp` in front of it: every check that passes directly must pass through the gateway.

``@modelcontextprotocol/conformance`` (0.1.16, npm) is a client that drives a server through
every server scenario of the specification (``conformance list --server``) and grades each
check ``SUCCESS``, ``FAILURE``, ``WARNING`` or ``INFO``. ``make conformance-deps`` (a
prerequisite of ``make test``; the fixture below runs it too, so a test run by hand installs it
the first time) puts it and a node >= 22 into ``.cache/conformance``. The suite's own
everything-server is not in its npm package, so the reference is ours
(``conformance/reference_server.mjs``, on the MCP TypeScript SDK the suite ships with).

The gateway under test is the real thing: ``maitred mcp`` over streamable HTTP with a bearer
token, the reference as its one upstream (``url:``), no contracts. The suite sends no
``Authorization`` header, so it reaches the gateway through ``token_proxy.py``, which adds the
token and passes every other header on as sent (``Host`` and ``Origin`` too, so the suite's
DNS-rebinding scenario tests the gateway's own check).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.mcp.conftest import Process, child_env, sha256

pytestmark = pytest.mark.slow  # node, the gateway and a proxy run as subprocesses

ROOT = Path(__file__).resolve().parents[2]
HOME = ROOT / ".cache" / "conformance"
NODE = HOME / "node_modules" / ".bin" / "node"
SUITE = HOME / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
REFERENCE = Path(__file__).with_name("conformance") / "reference_server.mjs"
PROXY = Path(__file__).with_name("token_proxy.py")
TOKEN = "tok-conformance-9d2e"


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


def run_suite(node: Path, url: str, out: Path) -> Checks:
    """Every scenario (``--suite all``) against ``url``; the checks each one saved."""
    ran = subprocess.run(
        [str(node), str(SUITE), "server", "--url", url, "--suite", "all", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
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


@pytest.fixture
def reference(node: Path) -> Iterator[str]:
    """The reference server on a free loopback port; its MCP URL."""
    env = {**os.environ, "CONFORMANCE_HOME": str(HOME)}
    server = Process([str(node), str(REFERENCE)], env, r"reference server: (http://\S+)")
    try:
        yield server.match.group(1)
    finally:
        server.stop()


@pytest.fixture
def gateway(tmp_path: Path, reference: str) -> Iterator[str]:
    """``maitred mcp`` over HTTP in front of the reference, behind the token proxy; the URL
    the suite is given."""
    (tmp_path / "accounts.json").write_text('{"acc-1": {"account": {}}}', encoding="utf-8")
    config = tmp_path / "gateway.yaml"
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
    proxy = Process(
        [sys.executable, str(PROXY), served.match.group(1), TOKEN],
        child_env(),
        r"token proxy: (http://\S+)",
    )
    try:
        yield f"{proxy.match.group(1)}/mcp"
    finally:
        proxy.stop()
        served.stop()


def test_every_check_that_passes_directly_passes_through_the_gateway(
    node: Path,
    reference: str,
    gateway: str,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    direct = run_suite(node, reference, tmp_path / "direct")
    through = run_suite(node, gateway, tmp_path / "gateway")
    counts = (
        f"MCP conformance 0.1.16: {len(direct.passed())}/{len(direct.status)} checks pass "
        f"directly, {len(through.passed() & direct.passed())}/{len(direct.passed())} of those "
        f"through maitred mcp ({len(through.scenarios())} graded scenarios)"
    )
    print(counts)
    record_property("conformance", counts)
    assert through.scenarios() == direct.scenarios()  # the same scenarios ran and were graded
    # the reference is meant to pass every graded check; a miss there would weaken the test
    assert not direct.failed(), sorted(direct.failed())
    lost = sorted(direct.passed() - through.passed())
    assert not lost, f"{counts}; fail only through the gateway: {lost}"
