"""Headless Chromium driven through the DevTools protocol (websocket-client), for the report
tests and benchmarks/report_scale.py: open a page at a given width, read figures, type,
take screenshots.

Chromium prints the browser's DevTools address on stderr once it listens; the helper
reads it from there, then talks to one page over one WebSocket, with every call bounded
by ``timeout`` seconds. The browser runs in its own session with a fresh profile and is
killed by process group when the ``with`` block ends.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import websocket

from tests.support.waiting import scaled

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",  # tests may run as root, where the sandbox refuses to start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")


def chromium_path() -> str | None:
    found = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    return found


class DevToolsError(RuntimeError):
    """The browser answered a command with an error, or not in time."""


class _Connection:
    """One WebSocket to the browser: numbered commands, and the events received meanwhile."""

    def __init__(self, socket: websocket.WebSocket, timeout: float) -> None:
        self.socket = socket
        self.timeout = timeout
        self.events: list[dict[str, Any]] = []
        self._next = 0

    def call(self, method: str, params: dict[str, Any], session: str | None) -> dict[str, Any]:
        self._next += 1
        ident = self._next
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        self.socket.send(json.dumps(message))
        while True:
            answer = self.receive()
            if answer.get("id") == ident:
                if "error" in answer:
                    raise DevToolsError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            if "method" in answer:
                self.events.append(answer)

    def receive(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.socket.recv())
        except websocket.WebSocketTimeoutException:
            raise DevToolsError(f"no answer from the browser within {self.timeout} s") from None
        return data


class Page:
    """One browser tab: commands by name, events waited for by name."""

    def __init__(self, connection: _Connection, session: str) -> None:
        self._connection = connection
        self._session = session

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        return self._connection.call(method, params, self._session)

    def wait_for(self, event: str) -> dict[str, Any]:
        """The first ``event`` since the last wait for it (already received, or the next)."""
        events = self._connection.events
        for n, seen in enumerate(events):
            if seen["method"] == event:
                del events[: n + 1]
                return seen
        while True:
            answer = self._connection.receive()
            if answer.get("method") == event:
                events.clear()
                return answer
            if "method" in answer:
                events.append(answer)

    def open(self, url: str) -> None:
        """Navigate and wait for the load event."""
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (promises awaited), as JSON values."""
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise DevToolsError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def type_into(self, selector: str, text: str) -> None:
        """Focus an element and type ``text`` as a person would (input events included)."""
        self.evaluate(f"document.querySelector({json.dumps(selector)}).focus()")
        self.call("Input.insertText", text=text)

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=full_page)
        path.write_bytes(base64.b64decode(data["data"]))
        return path


@contextmanager
def browser_page(
    profile: Path,
    *,
    width: int = 1280,
    height: int = 900,
    scripts: bool = True,
    timeout: float = 120.0,
) -> Iterator[Page]:
    """A fresh headless Chromium with one page of ``width`` × ``height`` CSS pixels."""
    binary = chromium_path()
    if binary is None:
        raise FileNotFoundError("chromium is not installed (Debian package chromium)")
    command = [
        binary,
        *FLAGS,
        f"--user-data-dir={profile}",
        "--remote-debugging-port=0",
        "--remote-allow-origins=*",
        "about:blank",
    ]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    # A browser that never says where it listens is killed, which ends the read below.
    watchdog = threading.Timer(timeout, _kill, (process,))
    watchdog.start()
    try:
        address = _devtools_address(process)
        watchdog.cancel()
        socket = websocket.create_connection(address, timeout=timeout, suppress_origin=True)
        try:
            yield _attach(socket, width, height, scripts, timeout)
        finally:
            socket.close()
    finally:
        watchdog.cancel()
        _kill(process)


def _devtools_address(process: subprocess.Popen[str]) -> str:
    assert process.stderr is not None
    seen = []
    for line in process.stderr:
        found = _LISTENING.search(line)
        if found:
            # Keep draining stderr, or a chatty browser would block on a full pipe.
            threading.Thread(target=_drain, args=(process.stderr,), daemon=True).start()
            return found.group(1)
        seen.append(line)
    raise DevToolsError("chromium exited without a DevTools address:\n" + "".join(seen[-20:]))


def _drain(stream: Any) -> None:
    with suppress(ValueError, OSError):
        for _ in stream:
            pass


def _attach(
    socket: websocket.WebSocket, width: int, height: int, scripts: bool, timeout: float
) -> Page:
    connection = _Connection(socket, timeout)
    target = connection.call("Target.createTarget", {"url": "about:blank"}, None)
    attached = connection.call(
        "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, None
    )
    page = Page(connection, attached["sessionId"])
    page.call("Page.enable")
    page.call(
        "Emulation.setDeviceMetricsOverride",
        width=width,
        height=height,
        deviceScaleFactor=1,
        mobile=width < 600,
    )
    page.call("Emulation.setScrollbarsHidden", hidden=True)  # the page gets the whole width
    if not scripts:
        page.call("Emulation.setScriptExecutionDisabled", value=True)
    return page


def _kill(process: subprocess.Popen[str]) -> None:
    if process.poll() is not None:
        return
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(scaled(30))
