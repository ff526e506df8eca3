"""The ASGI layer in front of the platform routes: statistics, injected faults, and the
``Date`` header of every answer (the emulator's clock).

A dropped connection is made with plain ASGI: the response starts with a Content-Length
larger than what is then sent, and the app returns; uvicorn then closes the connection
(flushing what was sent), so the client sees headers and a truncated body, and its HTTP
library fails with a protocol error (httpx: RemoteProtocolError).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from syncd.emulator.codes import INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, TOO_MANY_REQUESTS
from syncd.emulator.runtime import Runtime

API_PREFIXES = ("/v1/", "/app/", "/users/")  # /users/: the legacy avatar endpoint
NO_ROUTE = "(no route)"
PROMISED_LENGTH = b"1024"
CALLER_HEADER = b"x-syncd-instance"  # what a dropped-before response claims it will send


def caller_of(scope: Scope) -> str:
    """Who sent a request: syncd's ``X-Syncd-Instance`` header (host/pid), or "-"."""
    for name, value in scope.get("headers", ()):
        if name == CALLER_HEADER:
            return str(value.decode("latin-1"))
    return "-"


def is_api_path(path: str) -> bool:
    """Faults and statistics cover the platform API, never the control endpoints."""
    return path.startswith(API_PREFIXES)


class FaultMiddleware:
    def __init__(self, app: ASGIApp, runtime: Runtime, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.runtime = runtime
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            send = self.dated(send)
        if scope["type"] != "http" or not is_api_path(scope["path"]):
            await self.app(scope, receive, send)
            return
        method: str = scope["method"]
        template = self.template(scope)
        self.runtime.count_request(method, template)
        self.runtime.callers.arrived(caller_of(scope), method, template)
        decision = self.runtime.faults.decide(method, scope["path"])
        if decision.latency_ms:
            await asyncio.sleep(decision.latency_ms / 1000)
        match decision.action:
            case "pass":
                await self.app(scope, receive, send)
            case "http_500":
                await send_envelope(send, 500, INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE)
            case "http_429":
                retry_after = str(self.runtime.faults.settings.retry_after).encode()
                await send_envelope(
                    send,
                    429,
                    TOO_MANY_REQUESTS,
                    "too many requests",
                    [(b"retry-after", retry_after)],
                )
            case "down":
                await send_gateway_error(send, 503, b"503 Service Unavailable")
            case "drop_before":
                await self.drop_before(send)
            case "drop_after":
                await self.process_then_drop(scope, receive, send)
            case "error":
                await send_envelope(send, 200, *decision.error)

    def dated(self, send: Send) -> Send:
        """Every answer carries the emulator's clock as its ``Date`` (as a platform's web
        server says its own time): a clock stepped back shows there too."""

        async def with_date(message: Message) -> None:
            if message["type"] == "http.response.start":
                date = (b"date", self.runtime.state.clock.http_date())
                message = {**message, "headers": [*message.get("headers", ()), date]}
            await send(message)

        return with_date

    def template(self, scope: Scope) -> str:
        """The route template a request matches, e.g. ``/v1/admin/organizations/{code}``."""
        for route in self.routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return str(getattr(route, "path", NO_ROUTE))
        return NO_ROUTE

    async def drop_before(self, send: Send) -> None:
        """Drop the connection without processing the request."""
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", PROMISED_LENGTH),
                ],
            }
        )
        self.runtime.drop_filter.expect()

    async def process_then_drop(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Process the request fully (its changes stay), then drop the answer half-way."""
        messages: list[Message] = []

        async def capture(message: Message) -> None:
            messages.append(message)

        await self.app(scope, receive, capture)
        start = next(m for m in messages if m["type"] == "http.response.start")
        body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(max(len(body), 1)).encode()))
        await send({"type": "http.response.start", "status": start["status"], "headers": headers})
        partial = body[: len(body) // 2]
        await send({"type": "http.response.body", "body": partial, "more_body": True})
        self.runtime.drop_filter.expect()


async def send_envelope(
    send: Send,
    http_status: int,
    status: int,
    message: str,
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    body = json.dumps({"status": status, "message": message, "result": {}}).encode()
    await _send(send, http_status, b"application/json", body, headers)


async def send_gateway_error(send: Send, http_status: int, text: bytes) -> None:
    """A plain-text error page, as the load balancer in front of a down platform answers.

    Not an envelope: an envelope's non-zero status is the platform's verdict on the
    request, which the client does not retry.
    """
    await _send(send, http_status, b"text/plain; charset=utf-8", text)


async def _send(
    send: Send,
    http_status: int,
    content_type: bytes,
    body: bytes,
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    length = str(len(body)).encode()
    all_headers = [(b"content-type", content_type), (b"content-length", length), *headers]
    await send({"type": "http.response.start", "status": http_status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body})
