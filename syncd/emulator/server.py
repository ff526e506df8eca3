"""Running the emulator: in the foreground (``syncd emulator``) or in a background thread."""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import httpx
import uvicorn

from syncd.emulator.app import create_app
from syncd.emulator.options import EmulatorOptions
from syncd.errors import StateError

START_TIMEOUT_SECONDS = 15.0


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind and listen ourselves, so port 0 yields a free port with no race to reuse it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only when
    # the listening socket says TCP; without it every answer stalls ~40 ms (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def app_for(options: EmulatorOptions) -> Any:
    try:
        return create_app(options)
    except ValueError as error:
        raise StateError(f"emulator state file {options.state_file}: {error}") from error


class _Server(uvicorn.Server):
    """A uvicorn server that says when its start-up is over, successful or not."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.startup_over = threading.Event()

    def run_on(self, sock: socket.socket) -> None:
        try:
            self.run(sockets=[sock])
        finally:
            self.startup_over.set()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets=sockets)
        finally:
            self.startup_over.set()


def serve(options: EmulatorOptions) -> None:
    """Serve until interrupted (SIGINT/SIGTERM); the state file is saved on the way out."""
    app = app_for(options)
    sock = bind_socket(options.host, options.port)
    # The Date header is the emulator's clock's (its middleware's), not uvicorn's.
    config = uvicorn.Config(
        app, log_level=options.log_level, http="h11", loop="asyncio", date_header=False
    )
    print(
        f"platform emulator for organization {options.org_code!r} at {url_of(sock)} "
        f"(control endpoints under /_emulator)",
        file=sys.stderr,
        flush=True,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


@dataclass
class RunningEmulator:
    """An emulator serving in this process, with helpers for its control endpoints."""

    base_url: str
    options: EmulatorOptions
    client: httpx.Client

    def control(self, method: str, path: str, body: Any = None) -> Any:
        """Call a /_emulator endpoint and return its result (RuntimeError if it fails)."""
        response = self.client.request(method, f"/_emulator/{path}", json=body)
        answer = response.json()
        if response.status_code != 200 or answer.get("status") != 0:
            raise RuntimeError(f"/_emulator/{path}: {answer.get('message', response.text)}")
        return answer["result"]

    def state(self) -> dict[str, Any]:
        result: dict[str, Any] = self.control("GET", "state")
        return result

    def stats(self) -> dict[str, Any]:
        result: dict[str, Any] = self.control("GET", "stats")
        return result

    def callers(self, since_ms: int = 0) -> dict[str, Any]:
        """Requests by caller (syncd's X-Syncd-Instance: host/pid), and each caller's
        writes that arrived at ``since_ms`` (wall clock) or later."""
        result: dict[str, Any] = self.control("GET", f"callers?since_ms={since_ms}")
        return result

    def set_faults(self, **rules: Any) -> dict[str, Any]:
        """Replace the fault settings, e.g. ``set_faults(http_500_rate=0.2, seed=7)``."""
        result: dict[str, Any] = self.control("POST", "faults", rules)
        return result

    def reset(self, data: bool = True) -> None:
        self.control("POST", "reset", {"data": data})

    def save(self) -> dict[str, Any]:
        result: dict[str, Any] = self.control("POST", "save")
        return result

    def advance_clock(self, seconds: float) -> int:
        """Move the emulator's clock forward; returns its new time in ms."""
        result: dict[str, Any] = self.control("POST", "clock", {"advance_ms": int(seconds * 1000)})
        return int(result["now"])

    def set_clock_back(self, seconds: float) -> int:
        """Step the emulator's clock back; returns its new time in ms."""
        result: dict[str, Any] = self.control("POST", "clock", {"back_ms": int(seconds * 1000)})
        return int(result["now"])

    def token_request(self) -> dict[str, str]:
        """A valid body for POST /v1/token."""
        return self.options.token_request()

    def issue_token(self) -> str:
        """A fresh access token (which invalidates the previous one, as on the platform)."""
        answer = self.client.post("/v1/token", json=self.token_request()).json()
        if answer["status"] != 0:
            raise RuntimeError(f"/v1/token: {answer['message']}")
        return str(answer["result"]["access_token"])


@contextmanager
def serve_in_thread(
    options: EmulatorOptions | None = None, timeout: float = START_TIMEOUT_SECONDS
) -> Iterator[RunningEmulator]:
    """Serve on ``options.host`` (port 0: a free port) in a daemon thread until the block ends."""
    options = options or EmulatorOptions()
    app = app_for(options)
    sock = bind_socket(options.host, options.port)
    # log_config=None: leave the host process's logging alone (uvicorn's records propagate).
    config = uvicorn.Config(
        app,
        log_level=options.log_level,
        log_config=None,
        access_log=False,
        http="h11",
        loop="asyncio",
        date_header=False,  # the emulator's clock says the Date (see FaultMiddleware)
    )
    server = _Server(config)
    thread = threading.Thread(
        target=server.run_on, args=(sock,), name=f"emulator-{options.org_code}", daemon=True
    )
    thread.start()
    try:
        if not server.startup_over.wait(timeout) or not server.started:
            raise RuntimeError("the platform emulator did not start; see the log")
        port = sock.getsockname()[1]
        with httpx.Client(base_url=url_of(sock), timeout=30.0) as client:
            yield RunningEmulator(url_of(sock), replace(options, port=port), client)
    finally:
        server.should_exit = True
        thread.join(timeout)
        sock.close()
