"""Requests that interleave: an update whose body arrives after another request ran.

The emulator serves requests on one event loop; a route may be suspended only while it
reads the request body. Here the body is held back until another request has finished,
through the in-process ASGI transport: its first pull of the body is the moment the
route awaits it, a synchronisation point real HTTP cannot show the client.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx

from syncd.emulator import EmulatorOptions, create_app
from tests.support.payloads import dept, person

from .support import ORG

Send = Callable[..., Awaitable[dict[str, Any]]]


async def held_back_update(
    client: httpx.AsyncClient,
    path: str,
    token: str,
    body: dict[str, Any],
    meanwhile: Callable[[], Awaitable[None]],
) -> dict[str, Any]:
    """POST ``body`` to ``path``, running ``meanwhile`` while the route waits for the body."""
    reading = asyncio.Event()
    done = asyncio.Event()

    async def content() -> AsyncIterator[bytes]:
        reading.set()
        await done.wait()
        yield json.dumps(body).encode()

    update = asyncio.create_task(
        client.post(
            path,
            params={"access_token": token},
            content=content(),
            headers={"content-type": "application/json"},
        )
    )
    await reading.wait()
    await meanwhile()
    done.set()
    answer: dict[str, Any] = (await update).json()
    return answer


async def scenario(
    run: Callable[[httpx.AsyncClient, Send, str], Awaitable[None]],
) -> None:
    app = create_app(EmulatorOptions())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://emulator") as client:
        answer = await client.post("/v1/token", json=EmulatorOptions().token_request())
        token = answer.json()["result"]["access_token"]

        async def send(method: str, path: str, body: Any = None) -> dict[str, Any]:
            response = await client.request(method, path, params={"access_token": token}, json=body)
            result: dict[str, Any] = response.json()
            return result

        await run(client, send, token)


def test_an_employee_removed_while_their_update_was_read_stays_removed() -> None:
    async def run(client: httpx.AsyncClient, send: Send, token: str) -> None:
        imported = await send("POST", f"{ORG}/import-orgs", [dept("Sales")])
        sales = imported["result"]["successes"]["Acme/Sales"]
        people = await send("POST", f"{ORG}/import-employees", [person("ann", "Acme/Sales")])
        ann = people["result"]["successes"]["ann"]

        async def remove_ann() -> None:
            removed = await send(
                "POST", f"{ORG}/import-employees", [{**person("ann"), "ops": "REMOVE"}]
            )
            assert removed["result"]["successes"] == {"ann": ann}

        update = await held_back_update(
            client, f"{ORG}/employees/{ann}", token, {"name": "Ann B"}, remove_ann
        )
        assert update["status"] == 202012  # no matching employee, not a ghost update
        deleted = await send("DELETE", f"{ORG}/{sales}")
        assert deleted["status"] == 0  # no ghost member keeps Sales from being deleted

    asyncio.run(scenario(run))


def test_a_node_deleted_while_its_update_was_read_stays_deleted() -> None:
    async def run(client: httpx.AsyncClient, send: Send, token: str) -> None:
        imported = await send("POST", f"{ORG}/import-orgs", [dept("Sales")])
        sales = imported["result"]["successes"]["Acme/Sales"]

        async def delete_sales() -> None:
            assert (await send("DELETE", f"{ORG}/{sales}"))["status"] == 0

        update = await held_back_update(
            client, f"{ORG}/{sales}", token, {"name": "Sales & Marketing"}, delete_sales
        )
        assert update["status"] == 208502
        assert (await send("GET", f"{ORG}/{sales}"))["status"] == 208502  # still gone

    asyncio.run(scenario(run))
