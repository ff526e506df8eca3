"""Users (D3) and text messages (B) against the emulator over HTTP."""

from __future__ import annotations

import pytest
from platform_helpers import person

from syncd.emulator import RunningEmulator
from syncd.errors import PlatformError
from syncd.platform import PlatformClient


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
