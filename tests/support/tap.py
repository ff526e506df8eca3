"""A TCP proxy on 127.0.0.1 in front of a server (PostgreSQL, the platform emulator) that
can stop a client process as a given request passes, or go silent.

- ``freeze_on(pattern, pid)``: the first chunk the client sends, from then on, that holds
  ``pattern`` (an SQL statement's text in PostgreSQL's Query or Parse message, a path in
  an HTTP request line) is forwarded to the server, and then the client process is
  stopped (SIGSTOP): it is frozen waiting for the answer to that statement or request,
  inside whatever transaction it had open. ``fired`` is set then.
- ``silence()``: from then on nothing is forwarded in either direction and nothing more is
  read, and no connection is closed: the client's kernel still acknowledges what it sends
  (the proxy's sockets do), as with a server frozen or a network that drops packets
  without a reset. A new connection is accepted and then ignored the same way.

Every connection the client makes through the proxy is watched (a pool's several). The
proxy's threads are daemons and ``close()`` ends them: nothing outlives the test.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from contextlib import suppress
from typing import Self

CHUNK = 65536


class Tap:
    """A proxy from ``port`` (a free one of 127.0.0.1) to ``upstream`` on 127.0.0.1."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.fired = threading.Event()
        self._silent = threading.Event()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._armed: tuple[bytes, int] | None = None
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, name="tap-accept", daemon=True).start()

    def freeze_on(self, pattern: bytes, pid: int) -> None:
        """Stop ``pid`` as the next chunk holding ``pattern`` passes to the server."""
        with self._lock:
            self.fired.clear()
            self._armed = (pattern, pid)

    def silence(self) -> None:
        """Forward nothing more and read nothing more; close nothing."""
        self._silent.set()

    def close(self) -> None:
        self._closed.set()
        self._silent.set()
        with self._lock:
            sockets, self._sockets = [self._listener, *self._sockets], []
        for sock in sockets:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._silent.is_set():
                self._keep(client)  # accepted (the kernel did), never answered
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                client.close()
                continue
            self._keep(client)
            self._keep(server)
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _keep(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)

    def _pump(self, source: socket.socket, target: socket.socket, from_client: bool) -> None:
        tail = b""  # the end of the last chunk: a pattern split between two chunks
        while True:
            try:
                chunk = source.recv(CHUNK)
            except OSError:
                chunk = b""
            if self._silent.is_set():
                self._closed.wait()  # hold the connection open, silent, until the test ends
                return
            if not chunk:
                with suppress(OSError):
                    target.shutdown(socket.SHUT_WR)
                return
            try:
                target.sendall(chunk)
            except OSError:
                return
            if from_client:
                self._watch(tail + chunk)
                tail = chunk[-256:]

    def _watch(self, seen: bytes) -> None:
        with self._lock:
            armed = self._armed
            if armed is None or armed[0] not in seen:
                return
            self._armed = None
        with suppress(ProcessLookupError):
            os.kill(armed[1], signal.SIGSTOP)
        self.fired.set()
