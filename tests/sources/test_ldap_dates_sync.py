"""Effective dates in whole LDAP runs (a real slapd, the emulator over HTTP): an end date
recorded by a full read locks the person at its end even on an incremental read that does
not return them; a future hire is not created before their start."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from syncd.config import Settings
from syncd.run.runner import RunRequest, RunResult, run_sync
from tests.support.admin import AnotherAdmin
from tests.support.settings import ldap_run_settings
from tests.support.slapd import Slapd


def at(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp() * 1000)


def dated_settings(slapd: Slapd, base: str, emulator: Any, tmp_path: Path) -> Settings:
    return ldap_run_settings(
        slapd,
        base,
        emulator,
        tmp_path,
        ldap='[source.ldap.attributes]\nstart_date = "carLicense"\nend_date = "businessCategory"\n',
        more="[sync]\nmax_removal_ratio = 1.0\n"
        '[sync.dates]\ntime_zone = "Asia/Shanghai"\ncreate_days_before_start = 3\n',
    )


def run(settings: Settings, when: str, read: str = "full") -> RunResult:
    result = run_sync(settings, RunRequest(read=read, now_ms=at(when)))  # type: ignore[arg-type]
    assert result.exit_code == 0, result.error
    return result


def planned(result: RunResult) -> set[tuple[str, str]]:
    assert result.plan is not None
    return {(c.action.value, c.display) for c in result.plan.changes}


def test_a_recorded_end_date_locks_on_an_incremental_read_that_does_not_return_them(
    slapd: Slapd, acme: str, emulator: Any, tmp_path: Path
) -> None:
    slapd.add_ldif(
        f"dn: uid=judy,ou=Sales,ou=Head Office,{acme}\nobjectClass: inetOrgPerson\n"
        "uid: judy\ncn: Judy Last\nsn: Last\nbusinessCategory: 2026-12-31\n"
        "modifyTimestamp: 20200101000000Z\n\n"
        f"dn: uid=zoe,ou=Sales,ou=Head Office,{acme}\nobjectClass: inetOrgPerson\n"
        "uid: zoe\ncn: Zoe First\nsn: First\ncarLicense: 20270104000000Z\n"
        "modifyTimestamp: 20200101000000Z\n",
        relax=True,  # as acme.ldif: modified long before the runs (not in an incremental read)
    )
    # Someone changed now: the incremental mark moves past the others' 2020 stamps.
    slapd.add_ldif(
        f"dn: uid=kim,ou=Sales,ou=Head Office,{acme}\nobjectClass: inetOrgPerson\n"
        "uid: kim\ncn: Kim Now\nsn: Now\n"
    )
    settings = dated_settings(slapd, acme, emulator, tmp_path)
    admin = AnotherAdmin(emulator)

    first = run(settings, "2026-12-20T02:00")
    assert ("create", "judy") in planned(first) and ("create", "zoe") not in planned(first)
    assert first.plan is not None
    assert [(s.display, s.action) for s in first.plan.scheduled] == [
        ("judy", "lock"),
        ("zoe", "create"),
    ]
    assert first.plan.scheduled[0].message == (
        "lock at 2027-01-01 00:00 Asia/Shanghai (the end of 2026-12-31, the end date)"
    )
    run(settings, "2026-12-21T02:00")  # a second full read: the incremental mark is set

    # 23:59 in Shanghai on the 31st (15:59 UTC): judy is still active.
    assert planned(run(settings, "2026-12-31T15:59", "incremental")) == set()
    assert admin.employee("judy").get("locked") is not True

    result = run(settings, "2026-12-31T16:00", "incremental")
    assert result.directory is not None and not result.directory.complete
    assert "judy" not in {e.username for e in result.directory.employees.values()}
    assert planned(result) == {("lock", "judy")}
    assert admin.employee("judy").get("locked") is True

    # Zoe's window (3 days before her start) opened with the incremental read above, which
    # did not return her: the next full read creates her, locked until her first day.
    assert planned(run(settings, "2027-01-02T02:00")) == {("create", "zoe"), ("lock", "zoe")}
    assert admin.employee("zoe").get("locked") is True
    # Her first day begins at 16:00 UTC: unlocked by an incremental read that does not
    # return her either (her start date was recorded with her).
    assert planned(run(settings, "2027-01-03T15:59", "incremental")) == set()
    result = run(settings, "2027-01-03T16:00", "incremental")
    assert planned(result) == {("unlock", "zoe")}
    assert all(g.name != "max_reactivations" for g in result.guards)
    assert admin.employee("zoe").get("locked") is not True
