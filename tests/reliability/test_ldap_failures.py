"""LDAP reads that fail after a good one: nothing is sent, the run says why, nobody goes.

A real slapd (this directory's own) holds 30 people in nested OUs; a first sync puts
them on the platform. Then the read goes wrong in one way per test: the server stops
between pages, the bind is refused, the filter matches nobody, the base DN is gone. The
platform must receive no write at all, and the run is recorded as failed (with the
source's error) or blocked by a guard.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

import syncd.sources.ldap.wire as ldap_source
from syncd.errors import EXIT_BLOCKED, EXIT_FAILED, EXIT_OK
from syncd.run.runner import RunRequest, run_sync
from tests.support.slapd import Slapd, synthetic_people_ldif

from .support import Rig, toml_value, writes

PEOPLE = 30
_bases = itertools.count(1)


def ldap_lines(server: Slapd, base: str, **overrides: Any) -> list[str]:
    values: dict[str, Any] = {
        "urls": [server.url],
        "bind_dn": server.bind_dn,
        "bind_password": server.password,
        "users_base": base,
        "page_size": 8,
        "connect_timeout": 5.0,
        "read_timeout": 10.0,
        **overrides,
    }
    return ["[source]", 'kind = "ldap"', "[source.ldap]"] + [
        f"{k} = {toml_value(v)}" for k, v in values.items()
    ]


@pytest.fixture
def ldap_rig(rig: Rig, ldap: Slapd) -> tuple[Rig, Slapd, str]:
    """A rig reading its own base on the slapd, synced once; emulator statistics reset."""
    name = f"reliability-{next(_bases)}"
    base = f"ou={name},{ldap.suffix}"
    ldap.add_ldif(
        f"dn: {base}\nobjectClass: organizationalUnit\nou: {name}\n\n"
        + synthetic_people_ldif(base, PEOPLE, divisions=2, teams=3)
    )
    rig.source_lines = ldap_lines(ldap, base)
    first = run_sync(rig.settings(), RunRequest())
    assert first.exit_code == EXIT_OK, first.error
    assert len(rig.emulator.state()["employees"]) == PEOPLE
    rig.emulator.reset(data=False)
    return rig, ldap, base


def platform_people(rig: Rig) -> dict[str, tuple[object, ...]]:
    return {
        e["username"]: (e["name"], e["locked"], tuple(p["org_id"] for p in e["positions"]))
        for e in rig.emulator.state()["employees"]
    }


def assert_nothing_sent(rig: Rig, before: dict[str, tuple[object, ...]]) -> None:
    assert writes(rig.emulator) == {}
    assert platform_people(rig) == before


def test_a_server_stopped_between_pages_sends_nothing(
    ldap_rig: tuple[Rig, Slapd, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rig, server, _ = ldap_rig
    before = platform_people(rig)
    send = ldap_source.send_page
    pages = [0]

    def stop_before_the_fourth_page(*args: Any) -> int:
        pages[0] += 1  # the departments' pages, then the people's: this is a person page
        if pages[0] == 4:
            server.stop()
        return send(*args)

    monkeypatch.setattr(ldap_source, "send_page", stop_before_the_fourth_page)
    result = run_sync(rig.settings(), RunRequest())

    assert (result.outcome, result.exit_code) == ("failed", EXIT_FAILED)
    assert result.error is not None and server.url in result.error
    assert re.search(r"search users under .*: page [2-9]: connection lost", result.error)
    assert_nothing_sent(rig, before)
    last = rig.runs()[-1]
    assert json.loads(last["summary"])["error"] == result.error


Change = Callable[[Slapd, str], dict[str, Any]]
CASES: list[tuple[str, Change, str, int]] = [
    (
        "bind refused",
        lambda s, b: {"bind_password": "not-the-password"},
        "bind",
        EXIT_FAILED,
    ),
    (
        "base DN gone",
        lambda s, b: {"users_base": f"ou=vanished,{s.suffix}"},
        "ou=vanished",
        EXIT_FAILED,
    ),
    (
        "filter matches nobody",
        lambda s, b: {"users_filter": "(&(objectClass=inetOrgPerson)(uid=nobody-at-all))"},
        "source looks empty or broken",
        EXIT_BLOCKED,
    ),
    (
        "filter matches a third",
        lambda s, b: {"users_filter": "(&(objectClass=inetOrgPerson)(uid=user00000*))"},
        "source looks empty or broken",
        EXIT_BLOCKED,
    ),
]


@pytest.mark.parametrize(
    ("change", "said", "exit_code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_bad_read_sends_nothing_and_says_why(
    ldap_rig: tuple[Rig, Slapd, str], change: Change, said: str, exit_code: int
) -> None:
    rig, server, base = ldap_rig
    before = platform_people(rig)
    rig.source_lines = ldap_lines(server, base, **change(server, base))

    result = run_sync(rig.settings(), RunRequest())

    assert result.exit_code == exit_code, result.error
    assert result.error is not None and said in result.error, result.error
    assert server.password not in result.error
    assert_nothing_sent(rig, before)
    if exit_code == EXIT_BLOCKED:
        assert result.plan is not None and result.plan.removals > 0  # what the guard stopped


def test_a_base_emptied_on_the_server_is_blocked(ldap_rig: tuple[Rig, Slapd, str]) -> None:
    """Every person deleted from the directory at once looks like a broken source."""
    rig, server, base = ldap_rig
    before = platform_people(rig)
    deletions = [
        f"dn: uid=user{i:06d},ou=Team {i % 2}-{(i // 2) % 3},ou=Division {i % 2},{base}\n"
        "changetype: delete\n"
        for i in range(PEOPLE)
    ]
    server.modify("\n".join(deletions))

    result = run_sync(rig.settings(), RunRequest())

    assert (result.outcome, result.exit_code) == ("blocked", EXIT_BLOCKED)
    assert_nothing_sent(rig, before)
