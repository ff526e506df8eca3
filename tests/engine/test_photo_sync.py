"""Photos from a CSV source's folder to the emulator over HTTP: uploaded once per digest, set as
avatars, sent again only when they change; a photo that cannot be used spares its person."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from syncd.errors import EXIT_OK, EXIT_PARTIAL
from syncd.plan import Action
from tests.engine.company import World
from tests.support.images import jpeg, png

UPLOAD = "POST /v1/medias/images"
AVATAR = "POST /users/{user_id}/avatar"


def photo_folder(world: World) -> Path:
    """Turn photos on for this world (files named by the source id) and return the folder."""
    folder = world.folder / "photos"
    folder.mkdir(exist_ok=True)
    world.more_settings = [
        "[source.photos]",
        "enabled = true",
        'folder = "photos"',
        'named_by = "id"',
    ]
    return folder


def photo_calls(world: World) -> dict[str, int]:
    requests = world.emulator.stats()["requests"]
    return {k: requests.get(k, 0) for k in (UPLOAD, AVATAR)}


def avatars(world: World) -> dict[str, str | None]:
    """Username -> the media id set as the avatar (None: none set)."""
    return {e["username"]: e.get("avatar") for e in world.emulator.state()["employees"]}


def media_by_digest(world: World) -> dict[str, str]:
    return {m["digest"]: m["id"] for m in world.emulator.state()["media"]}


def md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def stored_photos(world: World) -> dict[str, str]:
    with sqlite3.connect(world.folder / "state" / "syncd.db") as db:
        return dict(db.execute("SELECT source_id, digest FROM photos").fetchall())


def test_photos_are_uploaded_once_set_as_avatars_and_not_sent_again(world: World) -> None:
    folder = photo_folder(world)
    photos = {"E1": jpeg("ann"), "E2": png(200), "E3": jpeg("cat"), "E4": jpeg("dan")}
    for key, data in photos.items():
        suffix = "png" if data.startswith(b"\x89PNG") else "jpg"
        (folder / f"{key}.{suffix}").write_bytes(data)

    result = world.sync()

    assert (result.outcome, result.exit_code) == ("ok", EXIT_OK), result.error
    assert photo_calls(world) == {UPLOAD: 4, AVATAR: 4}
    media = media_by_digest(world)
    assert set(media) == {md5(d) for d in photos.values()}
    expected = {"ann": "E1", "bob": "E2", "cat": "E3", "dan": "E4"}
    assert avatars(world) == {
        **{u: media[md5(photos[k])] for u, k in expected.items()},
        "eve": None,  # no file named E5: her photo is rejected, she is synced
    }
    assert stored_photos(world) == {k: md5(d) for k, d in photos.items()}

    # Nothing changed: no photo is planned, no photo call is made.
    before = world.emulator.stats()["requests"]
    result = world.sync()
    assert result.plan is not None and result.plan.changes == ()
    assert world.emulator.stats()["requests"].get(UPLOAD) == before[UPLOAD]
    assert world.emulator.stats()["requests"].get(AVATAR) == before[AVATAR]


def test_one_changed_photo_costs_one_upload_and_one_avatar(world: World) -> None:
    folder = photo_folder(world)
    for key in ("E1", "E2", "E3"):
        (folder / f"{key}.jpg").write_bytes(jpeg(key))
    world.sync()
    calls = photo_calls(world)

    (folder / "E2.jpg").write_bytes(jpeg("bob, new haircut"))
    result = world.sync()

    assert result.exit_code == EXIT_OK, result.error
    assert result.plan is not None
    assert [(c.action, c.display, c.reason) for c in result.plan.changes] == [
        (Action.PHOTO, "bob", "changed in the source")
    ]
    change = result.plan.changes[0]
    assert change.before == {"photo": md5(jpeg("E2"))}
    assert change.after is not None and change.after["photo"] == md5(jpeg("bob, new haircut"))
    assert photo_calls(world) == {UPLOAD: calls[UPLOAD] + 1, AVATAR: calls[AVATAR] + 1}
    assert avatars(world)["bob"] == media_by_digest(world)[md5(jpeg("bob, new haircut"))]


def test_a_broken_image_rejects_the_photo_not_the_person(world: World) -> None:
    folder = photo_folder(world)
    (folder / "E1.jpg").write_bytes(jpeg("ann"))
    (folder / "E2.jpg").write_bytes(b"<html>not found</html>")  # saved from a browser
    (folder / "E3.png").write_bytes(b"GIF89a" + b"\x00" * 20)  # a GIF named .png
    (folder / "E4.jpg").write_bytes(b"")

    result = world.sync()

    assert (result.outcome, result.exit_code) == ("ok", EXIT_OK), result.error
    assert world.platform().same_as(world.company.expected())  # everyone is synced
    assert result.directory is not None
    rejected = {r.username: (r.kind.value, r.where, r.reason) for r in result.directory.rejected}
    assert set(rejected) == {"bob", "cat", "dan", "eve"}
    assert rejected["bob"][:2] == ("photo", str(folder / "E2.jpg"))
    assert "neither JPEG nor PNG" in rejected["bob"][2]
    assert "a GIF image" in rejected["cat"][2]
    assert "empty" in rejected["dan"][2]
    assert rejected["eve"][1] == str(folder / "E5")
    assert "no file named E5" in rejected["eve"][2]
    assert all(r.endswith("the person is synced without it") for _, _, r in rejected.values())
    assert photo_calls(world) == {UPLOAD: 1, AVATAR: 1}
    assert avatars(world)["ann"] is not None

    # The rejected rows are recorded with the run, kind "photo".
    with sqlite3.connect(world.folder / "state" / "syncd.db") as db:
        kinds = db.execute("SELECT DISTINCT kind FROM rejected_rows").fetchall()
    assert kinds == [("photo",)]


def test_a_photo_cut_short_is_rejected_before_it_costs_a_call(world: World) -> None:
    folder = photo_folder(world)
    (folder / "E1.jpg").write_bytes(jpeg("ann", padding=400)[:200])  # its header, half a file
    (folder / "E2.png").write_bytes(png(200)[:-12])  # no IEND chunk
    (folder / "E3.jpg").write_bytes(jpeg("cat") + b"\x00" * 16)  # padded after FFD9: whole

    for _ in range(2):  # and no run sends them to be refused: nothing to send again
        result = world.sync()
        assert (result.outcome, result.exit_code) == ("ok", EXIT_OK), result.error
        assert photo_calls(world) == {UPLOAD: 1, AVATAR: 1}

    assert world.platform().same_as(world.company.expected())  # everyone is synced
    assert result.directory is not None
    rejected = {r.username: r.reason for r in result.directory.rejected}
    assert rejected["ann"] == (
        "the photo of ann: a JPEG image cut short: it does not end with the end-of-image "
        "marker FFD9 (a copy or an export that stopped part-way?); the person is synced without it"
    )
    assert "a PNG image cut short: it does not end with the IEND chunk" in rejected["bob"]
    assert set(avatars(world).items()) >= {("ann", None), ("bob", None)}
    assert avatars(world)["cat"] == media_by_digest(world)[md5(jpeg("cat") + b"\x00" * 16)]


def test_people_sharing_a_photo_upload_it_once(world: World) -> None:
    folder = photo_folder(world)
    logo = png(10, 20, 30)
    for key in ("E1", "E2", "E3", "E4", "E5"):
        (folder / f"{key}.png").write_bytes(logo)

    world.sync()

    assert photo_calls(world) == {UPLOAD: 1, AVATAR: 5}
    assert len(world.emulator.state()["media"]) == 1
    assert set(avatars(world).values()) == {media_by_digest(world)[md5(logo)]}


def test_photos_are_off_by_default(world: World) -> None:
    folder = world.folder / "photos"
    folder.mkdir()
    (folder / "E1.jpg").write_bytes(jpeg("ann"))
    result = world.sync()
    assert result.exit_code == EXIT_OK
    assert result.plan is not None
    assert not [c for c in result.plan.changes if c.action is Action.PHOTO]
    assert photo_calls(world) == {UPLOAD: 0, AVATAR: 0}
    assert set(avatars(world).values()) == {None}


def test_a_photo_the_platform_refuses_fails_alone_and_is_sent_next_run(world: World) -> None:
    folder = photo_folder(world)
    for key in ("E1", "E2"):
        (folder / f"{key}.jpg").write_bytes(jpeg(key))
    world.sync()  # ann and bob have their photos
    (folder / "E1.jpg").write_bytes(jpeg("ann again"))
    (folder / "E3.jpg").write_bytes(jpeg("cat"))
    world.emulator.set_faults(
        scripted=[{"match": "/avatar", "fault": "error", "status": 202012, "message": "no way"}]
    )

    result = world.sync()

    assert (result.outcome, result.exit_code) == ("partial", EXIT_PARTIAL)
    assert result.applied is not None
    assert result.applied.counts[("employee", "photo", "failed")] == 1
    assert result.applied.counts[("employee", "photo", "ok")] == 1
    # Whichever photo failed is planned again, and only it.
    result = world.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert result.plan is not None and len(result.plan.changes) == 1
    assert stored_photos(world) == {
        "E1": md5(jpeg("ann again")),
        "E2": md5(jpeg("E2")),
        "E3": md5(jpeg("cat")),
    }


def test_a_new_account_gets_the_photo_the_old_one_had(world: World) -> None:
    world.sync_settings.update(username_change="remove_and_create", max_removal_ratio=1.0)
    folder = photo_folder(world)
    (folder / "E2.jpg").write_bytes(jpeg("bob"))
    world.sync()
    world.company.person("bob")["username"] = "robert"

    result = world.sync()

    assert result.exit_code == EXIT_OK, result.error
    assert result.plan is not None
    photo = [c for c in result.plan.changes if c.action is Action.PHOTO]
    assert [(c.display, c.reason) for c in photo] == [("robert", "new account")]
    assert avatars(world)["robert"] == media_by_digest(world)[md5(jpeg("bob"))]
    assert photo_calls(world) == {UPLOAD: 2, AVATAR: 2}
    assert len(world.emulator.state()["media"]) == 1  # the same digest: stored once


def test_a_dry_run_plans_photos_and_sends_none(world: World) -> None:
    folder = photo_folder(world)
    (folder / "E1.jpg").write_bytes(jpeg("ann"))
    result = world.sync(dry_run=True)
    assert result.plan is not None
    photo = [c for c in result.plan.changes if c.action is Action.PHOTO]
    assert [c.message for c in photo] == [
        f"set the photo of employee ann ({folder / 'E1.jpg'}, JPEG, {len(jpeg('ann'))} bytes): "
        "new account"
    ]
    assert photo_calls(world) == {UPLOAD: 0, AVATAR: 0}
    assert stored_photos(world) == {}


@pytest.mark.parametrize("where", ["missing", "file"])
def test_a_photo_folder_that_is_not_there_stops_the_read(world: World, where: str) -> None:
    photo_folder(world).rmdir()
    if where == "file":
        (world.folder / "photos").write_text("not a folder")
    result = world.sync()
    assert result.exit_code == 3
    assert result.error is not None and "source.photos.folder" in result.error
    assert world.platform().people == {}
