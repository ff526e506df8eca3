"""Spellings end to end, from CSV files to the emulator over HTTP with a real state
database: a department re-exported in NFD, two rows with one username in NFC and NFD,
an account the platform holds in NFD; and the report's words for a change that cannot
be seen."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from syncd import snapshot as store
from syncd.config import Settings, platform_of
from syncd.errors import EXIT_OK
from syncd.platform import PlatformClient
from syncd.report.value import Item
from syncd.report.wording import detail_lines, readable
from syncd.run.runner import RunRequest, RunResult, run_sync
from tests.engine.company import PATHS_HEADER, World, employee

NFC_RENEE, NFD_RENEE = "ren\u00e9e", "rene\u0301e"
CAFE = "Caf\u00e9"
CAFE_NFD = unicodedata.normalize("NFD", CAFE)


def write(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def synced_ok(settings: Settings) -> RunResult:
    result = run_sync(settings, RunRequest())
    assert result.exit_code == EXIT_OK, result.error
    assert result.plan is not None
    return result


def test_an_nfd_re_export_of_a_department_makes_no_second_department(world: World) -> None:
    world.sync_settings["max_removal_ratio"] = 1.0
    rows = [
        f"E1,ann,Ann,Head Office/{CAFE},ann@acme.example,13800000001,active",
        "E2,bob,Bob,Head Office,bob@acme.example,13800000002,active",
    ]
    settings = world.paths_layout(rows)
    synced_ok(settings)
    nodes = world.platform().nodes
    assert sorted(name for name, _ in nodes.values()) == [CAFE, "Head Office"]

    # The HR system's next export spells the path decomposed (as macOS tools write it).
    write(
        world.folder / "employees.csv", [PATHS_HEADER, *(r.replace(CAFE, CAFE_NFD) for r in rows)]
    )
    again = synced_ok(settings)

    assert again.plan is not None and again.plan.changes == ()
    assert world.platform().nodes == nodes  # one Café, the same node, ann still in it
    assert world.platform().people["ann"][2] == f"Head Office~2F{CAFE}"  # its serial_no


def test_a_department_name_re_exported_in_nfd_is_not_renamed(world: World) -> None:
    world.company.unit("D4")["name"] = CAFE
    world.sync()
    world.company.unit("D4")["name"] = CAFE_NFD
    again = world.sync()
    assert again.exit_code == EXIT_OK and again.plan is not None
    assert again.plan.changes == ()
    assert world.platform().nodes["D4"][0] == CAFE


def test_nfc_and_nfd_usernames_in_one_file_make_no_account(world: World) -> None:
    world.company.employees += [
        employee("E6", NFC_RENEE, "D2", name="Ren\u00e9e Li"),
        employee("E7", NFD_RENEE, "D3", name="Ren\u00e9e Wu"),
    ]
    result = world.sync()
    assert result.exit_code == EXIT_OK and result.directory is not None
    assert sorted(world.platform().usernames) == ["ann", "bob", "cat", "dan", "eve"]
    assert sorted((r.key, r.reason) for r in result.directory.rejected) == [
        ("E6", f"username '{NFC_RENEE}' is used by 2 people"),
        ("E7", f"username '{NFC_RENEE}' is used by 2 people"),
    ]


def test_an_account_the_platform_holds_in_nfd_is_adopted_not_duplicated(world: World) -> None:
    settings = world.settings()
    engine = store.open_engine(settings.database)
    with PlatformClient(platform_of(settings), store.TokenStore(engine)) as client:
        root = client.root()
        # Made by hand, or by an earlier syncd that sent the source's spelling as it was.
        client.create_employee(
            {
                "username": NFD_RENEE,
                "name": "Renee",
                "positions": [{"org_id": root.id, "primary": True}],
            }
        )
    world.company.employees.append(employee("E6", NFC_RENEE, "D2", name="Renee"))

    first = world.sync()

    assert first.exit_code == EXIT_OK, first.error
    assert first.plan is not None
    renee = [c for c in first.plan.changes if c.key == "E6"]
    assert [(c.action.value, c.display) for c in renee] == [("update", NFD_RENEE)]
    assert sorted(u for u in world.platform().usernames if not u.isascii()) == [NFD_RENEE]
    assert world.platform().people[NFD_RENEE][1:3] == ("E6", "D2")
    again = world.sync()  # the snapshot holds the NFD spelling: the source's NFC is it
    assert again.plan is not None and again.plan.changes == ()


def test_the_report_writes_out_a_change_that_cannot_be_seen() -> None:
    item = Item(
        1,
        "employee",
        "E1",
        "jose",
        "update",
        before={"name": "Jose\u0301", "title": "Dev"},
        after={"name": "Jos\u00e9", "title": "Lead"},
    )
    assert detail_lines(item, readable({})) == [
        ("name", "Jose\\u0301", "Jos\u00e9"),
        ("title", "Dev", "Lead"),
    ]
