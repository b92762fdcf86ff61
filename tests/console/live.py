"""The console served by a real uvicorn on a loopback port, in a thread of the test."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 and yield its base URL; stopped afterwards."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    started = threading.Event()

    original = server.startup

    async def startup(sockets: Any = None) -> None:
        await original(sockets=sockets)
        started.set()

    server.startup = startup  # type: ignore[method-assign]

    def run() -> None:
        try:
            server.run(sockets=[sock])
        finally:
            started.set()  # a server that failed to start ends the wait too

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    started.wait()
    if not server.started:
        raise RuntimeError("the console's server did not start (see the log above)")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join()
        sock.close()
