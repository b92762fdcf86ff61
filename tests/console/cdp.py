"""A small Chrome DevTools Protocol client: Debian's headless chromium, driven over its
websocket (``websockets``' sync client), for the console's browser tests and screenshots.

It opens one page, collects everything the page reports as an error (a console error, an
uncaught exception, a resource that failed to load), navigates and waits for the load event,
evaluates JavaScript, types keys and takes screenshots.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    """One browser tab, attached with a flat session."""

    def __init__(self, ws: ClientConnection, session: str) -> None:
        self.ws, self.session = ws, session
        self._ids = itertools.count(1000)
        self.errors: list[str] = []
        self._events: list[dict[str, Any]] = []

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command and return its result (events seen meanwhile are kept)."""
        mid = next(self._ids)
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params,
                                 "sessionId": self.session}))  # fmt: skip
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return dict(msg.get("result", {}))
            self._event(msg)

    def _event(self, msg: dict[str, Any]) -> None:
        method, params = msg.get("method", ""), msg.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(f"console: {params.get('args')}")
        elif method == "Runtime.exceptionThrown":
            self.errors.append(f"exception: {params.get('exceptionDetails')}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            self.errors.append(f"log: {entry.get('text')} {entry.get('url', '')}")
        self._events.append(msg)

    def wait_for(self, method: str) -> dict[str, Any]:
        """Wait for the next event ``method`` (one already received counts)."""
        for i, msg in enumerate(self._events):
            if msg.get("method") == method:
                del self._events[: i + 1]
                return dict(msg.get("params", {}))
        while True:
            msg = json.loads(self.ws.recv())
            self._event(msg)
            if msg.get("method") == method:
                self._events.clear()
                return dict(msg.get("params", {}))

    def go(self, url: str) -> None:
        """Navigate and wait for the page's load event."""
        self._events.clear()
        self.send("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def js(self, expression: str) -> Any:
        """Evaluate ``expression`` in the page and return its value (JSON-able)."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)  # fmt: skip
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def key(self, key: str, code: str = "", text: str = "", vk: int = 0) -> None:
        """Press and release one key (``text``: what it types)."""
        base = {"key": key, "code": code or key, "windowsVirtualKeyCode": vk}
        self.send("Input.dispatchKeyEvent", type="keyDown", text=text, **base)
        self.send("Input.dispatchKeyEvent", type="keyUp", **base)

    def type(self, text: str) -> None:
        self.send("Input.insertText", text=text)

    def enter_and_wait(self) -> None:
        """Press Enter (submitting the focused form) and wait for the new page's load."""
        self._events.clear()
        self.key("Enter", "Enter", "\r", 13)
        self.wait_for("Page.loadEventFired")

    def width(self, px: int, height: int = 900, mobile: bool = False) -> None:
        self.send("Emulation.setDeviceMetricsOverride", width=px, height=height,
                  deviceScaleFactor=1, mobile=mobile)  # fmt: skip

    def screenshot(self, path: Path) -> bytes:
        """A PNG of the whole page (beyond the viewport) at the current width."""
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        png = base64.b64decode(data["data"])
        path.write_bytes(png)
        return png


@contextmanager
def browser(profile: Path) -> Iterator[Page]:
    """A headless chromium with one page; closed afterwards."""
    assert CHROMIUM is not None, "needs Debian's chromium (make browser-deps installs it)"
    proc = subprocess.Popen(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = _devtools_url(proc)
        with connect(url, max_size=64 * 2**20, open_timeout=60) as ws:
            ws.send(json.dumps({"id": 1, "method": "Target.createTarget",
                                "params": {"url": "about:blank"}}))  # fmt: skip
            target = _reply(ws, 1)["targetId"]
            ws.send(json.dumps({"id": 2, "method": "Target.attachToTarget",
                                "params": {"targetId": target, "flatten": True}}))  # fmt: skip
            session = _reply(ws, 2)["sessionId"]
            page = Page(ws, session)
            for domain in ("Page", "Runtime", "Log"):
                page.send(f"{domain}.enable")
            yield page
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _reply(ws: ClientConnection, mid: int) -> dict[str, Any]:
    while True:
        msg = json.loads(ws.recv())
        if msg.get("id") == mid:
            return dict(msg["result"])


def _devtools_url(proc: subprocess.Popen[str]) -> str:
    """The browser's websocket, from the line chromium prints once it listens."""
    assert proc.stderr is not None
    lines: list[str] = []
    for line in proc.stderr:
        lines.append(line)
        found = re.search(r"DevTools listening on (ws://\S+)", line)
        if found:
            # keep draining stderr so chromium never blocks on a full pipe
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return found.group(1)
    raise RuntimeError("chromium exited before it listened: " + "".join(lines)[-2000:])
