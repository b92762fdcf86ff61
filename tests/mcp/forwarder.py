"""A small round-robin TCP forwarder for tests: what a load balancer does, and no more.

Each accepted connection goes to the next backend in turn; a backend that refuses the
connection is skipped for the next one (a load balancer's redispatch), so a replica that was
killed stops receiving connections at once. Bytes are copied both ways until either side
closes. Benchmarks use a real load balancer (HAProxy, ``benchmarks/replicas.py``); this is for
tests, which must not need one installed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Sequence


class Forwarder:
    """Round-robin over ``backends`` (``(host, port)``); :meth:`start` binds a free port."""

    def __init__(self, backends: Sequence[tuple[str, int]]) -> None:
        self.backends = list(backends)
        self.turn = 0
        #: connections forwarded, per backend index
        self.served: Counter[int] = Counter()
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        for _ in range(len(self.backends)):
            index = self.turn % len(self.backends)
            self.turn += 1
            host, port = self.backends[index]
            try:
                streams = await asyncio.open_connection(host, port)
            except OSError:
                continue  # that replica is gone: the next one
            self.served[index] += 1
            return streams
        return None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream = await self._open()
        if upstream is None:
            writer.close()
            return
        up_reader, up_writer = upstream
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except asyncio.CancelledError:  # the forwarder is closing: drop the connection
            for end in (writer, up_writer):
                end.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, OSError):
            writer.close()
