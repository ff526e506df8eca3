"""Users (D3) and text messages (B) against the emulator over HTTP."""

from __future__ import annotations

import httpx
import pytest

from syncd.emulator import RunningEmulator
from syncd.errors import PlatformError
from syncd.platform import PlatformClient
from tests.platform.platform_helpers import Connect
from tests.support.payloads import person


def test_users_reads_every_page(client: PlatformClient) -> None:
    names = [f"user{i}" for i in range(5)]
    client.import_employees([person(n) for n in names])
    users = list(client.users(page_size=2))
    assert sorted(u["username"] for u in users) == names
    assert client.calls["GET /v1/users"] == 3


def test_users_are_read_to_the_total_when_the_platform_caps_its_pages(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    names = [f"user{i}" for i in range(7)]
    client.import_employees([person(n) for n in names])
    emulator.set_faults(page_cap=3)
    assert sorted(u["username"] for u in client.users(page_size=5)) == names
    assert client.calls["GET /v1/users"] == 3


def test_users_pages_asked_at_a_time_come_in_order(client: PlatformClient) -> None:
    names = [f"user{i:02}" for i in range(11)]
    client.import_employees([person(n) for n in names])
    one_by_one = [u["username"] for u in client.users(page_size=2)]
    assert sorted(one_by_one) == names
    asked = client.calls["GET /v1/users"]
    assert [u["username"] for u in client.users(page_size=2, concurrency=3)] == one_by_one
    assert client.calls["GET /v1/users"] - asked == 6


def test_users_pages_at_a_time_follow_a_capped_first_page(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    names = [f"user{i}" for i in range(7)]
    client.import_employees([person(n) for n in names])
    emulator.set_faults(page_cap=3)
    assert sorted(u["username"] for u in client.users(page_size=5, concurrency=4)) == names
    assert client.calls["GET /v1/users"] == 3  # pages of 3: 0, 3, 6


class ShortPageTransport(httpx.BaseTransport):
    """Real HTTP to the emulator; the page starting at ``skip`` is asked for one record only,
    as a platform whose page size varies might answer."""

    def __init__(self, skip: int) -> None:
        self._skip = str(skip)
        self._inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/users" and request.url.params.get("skip") == self._skip:
            request.url = request.url.copy_set_param("limit", "1")
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


def test_a_short_page_among_those_asked_at_a_time_skips_no_one(
    client: PlatformClient, connect: Connect
) -> None:
    names = [f"user{i:02}" for i in range(10)]
    client.import_employees([person(n) for n in names])
    shortened = connect(transport=ShortPageTransport(skip=3))
    read = [u["username"] for u in shortened.users(page_size=3, concurrency=3)]
    assert read == [u["username"] for u in client.users(page_size=3)]  # each once, in order


def test_users_since_refresh_time(client: PlatformClient, emulator: RunningEmulator) -> None:
    client.import_employees([person("ann")])
    cursor = emulator.state()["now"]
    emulator.advance_clock(1)
    client.import_employees([person("bob")])
    assert [u["username"] for u in client.users(refresh_time=cursor)] == ["bob"]


def test_send_text(client: PlatformClient, emulator: RunningEmulator) -> None:
    client.import_employees([person("ann"), person("bob")])
    plan = client.send_text(["ann", "bob"], "sync finished")
    assert plan["oks"] == 2 and plan["client_ids"] == ["ann", "bob"]
    [message] = emulator.state()["messages"]
    assert message["type"] == "TEXT"
    assert message["body"] == {"content": "sync finished", "dest_type": "P2P"}


def test_send_text_to_nobody_known_raises_202012(client: PlatformClient) -> None:
    with pytest.raises(PlatformError) as caught:
        client.send_text(["ghost"], "hello")
    assert caught.value.status == 202012
    assert caught.value.endpoint == "POST /app/mbox"
