"""The platform emulator over HTTPS, in a thread of the test process, with a given certificate."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from syncd.emulator import EmulatorOptions, create_app
from tests.support.waiting import DEADLINE


class _Server(uvicorn.Server):
    """Says when start-up is over, so the caller waits on an event, not on time."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.startup_over = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets=sockets)
        finally:
            self.startup_over.set()


@contextmanager
def serving_https(cert: Path, key: Path, timeout: float = DEADLINE) -> Iterator[str]:
    """Serve on a free port of 127.0.0.1 until the block ends; its ``https://`` base URL."""
    config = uvicorn.Config(
        create_app(EmulatorOptions()),
        host="127.0.0.1",
        port=0,
        log_config=None,
        access_log=False,
        log_level="warning",
        ssl_certfile=str(cert),
        ssl_keyfile=str(key),
        http="h11",
        loop="asyncio",
    )
    server = _Server(config)
    thread = threading.Thread(target=server.run, daemon=True, name="https-emulator")
    thread.start()
    try:
        assert server.startup_over.wait(timeout) and server.started
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"https://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
