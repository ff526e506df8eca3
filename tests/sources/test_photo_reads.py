"""People's photos read from a real slapd (jpegPhoto) and from a CSV source's folder; read
again to be sent; and a whole LDAP sync with photos into the emulator over HTTP."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from syncd.config import (
    CsvSource,
    LdapSource,
    PhotoSettings,
    SourceSettings,
    load_settings,
    source_of,
)
from syncd.errors import ConfigError, SourceError
from syncd.model import Directory, Employee, Kind, Photo, RejectedRow
from syncd.photos import PhotoUnavailable
from syncd.run.runner import RunRequest, run_sync
from syncd.sources import read_directory
from syncd.sources.ldap import read_ldap
from syncd.sources.photos import PhotoReader
from tests.support.images import jpeg, png
from tests.support.slapd import Slapd

SettingsFactory = Callable[..., LdapSource]
ON = PhotoSettings(enabled=True)


def md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def people(directory: Directory) -> dict[str, Employee]:
    return {e.username: e for e in directory.employees.values()}


def photo_rows(directory: Directory) -> dict[str | None, RejectedRow]:
    return {r.username: r for r in directory.rejected if r.kind is Kind.PHOTO}


def set_photo(slapd: Slapd, dn: str, data: bytes | None, attribute: str = "jpegPhoto") -> None:
    if data is None:
        slapd.modify(f"dn: {dn}\nchangetype: modify\ndelete: {attribute}\n")
        return
    value = base64.b64encode(data).decode()
    slapd.modify(f"dn: {dn}\nchangetype: modify\nreplace: {attribute}\n{attribute}:: {value}\n")


def dn_of(base: str, username: str) -> str:
    places = {
        "alice": "ou=Backend,ou=R&D,ou=Head Office",
        "carol": "ou=Frontend,ou=R&D,ou=Head Office",
        "dave": "ou=Sales,ou=Head Office",
    }
    return f"uid={username},{places[username]},{base}"


# ---------------------------------------------------------------- LDAP


def test_jpeg_photos_are_read_with_the_people(
    slapd: Slapd, acme: str, ldap_settings: SettingsFactory
) -> None:
    set_photo(slapd, dn_of(acme, "alice"), jpeg("alice"))
    set_photo(slapd, dn_of(acme, "carol"), png(1, 2, 3))
    set_photo(slapd, dn_of(acme, "dave"), b"Content-Type: text/html\n\n<p>oops</p>")

    directory = read_ldap(ldap_settings(), photos=ON)

    everyone = people(directory)
    assert everyone["alice"].photo == Photo(
        md5(jpeg("alice")), len(jpeg("alice")), "jpeg", dn_of(acme, "alice")
    )
    carol = everyone["carol"].photo
    assert carol is not None and (carol.type, carol.digest) == ("png", md5(png(1, 2, 3)))
    # A broken image: the photo is rejected, with the DN and why; dave is read all the same.
    assert everyone["dave"].photo is None
    row = photo_rows(directory)["dave"]
    assert (row.where, row.key) == (dn_of(acme, "dave"), everyone["dave"].id)
    assert "neither JPEG nor PNG" in row.reason
    # No attribute, no photo, and nothing to say about it.
    assert everyone["bob"].photo is None and "bob" not in photo_rows(directory)
    assert len(directory.employees) == 8
    assert directory.leavers_known  # a rejected photo names its person


def test_photos_are_not_read_unless_enabled(
    slapd: Slapd, acme: str, ldap_settings: SettingsFactory
) -> None:
    set_photo(slapd, dn_of(acme, "alice"), jpeg("alice"))
    directory = read_ldap(ldap_settings())
    assert all(e.photo is None for e in directory.employees.values())
    assert directory.rejected == ()


def test_size_type_and_attribute_are_settings(
    slapd: Slapd, acme: str, ldap_settings: SettingsFactory
) -> None:
    set_photo(slapd, dn_of(acme, "alice"), jpeg("alice", padding=5000))
    set_photo(slapd, dn_of(acme, "carol"), png(9))
    set_photo(slapd, dn_of(acme, "dave"), jpeg("dave"), attribute="audio")

    limited = PhotoSettings(enabled=True, max_bytes=4096, types=["jpeg"])
    directory = read_ldap(ldap_settings(), photos=limited)

    rows = photo_rows(directory)
    assert "over source.photos.max_bytes (4,096)" in rows["alice"].reason
    assert "a PNG image; source.photos.types allows JPEG" in rows["carol"].reason
    assert people(directory)["dave"].photo is None  # jpegPhoto is the attribute read

    directory = read_ldap(ldap_settings(), photos=PhotoSettings(enabled=True, attribute="audio"))
    dave = people(directory)["dave"].photo
    assert dave is not None and dave.digest == md5(jpeg("dave"))
    assert people(directory)["alice"].photo is None


def test_a_photo_is_read_again_by_dn_when_it_is_sent(
    slapd: Slapd, acme: str, ldap_settings: SettingsFactory
) -> None:
    dn = dn_of(acme, "alice")
    set_photo(slapd, dn, jpeg("first"))
    read = people(read_ldap(ldap_settings(), photos=ON))["alice"].photo
    assert read is not None
    source = SourceSettings(kind="ldap", ldap=ldap_settings(), photos=ON)
    reader = PhotoReader(source)
    try:
        assert reader(read) == (read, jpeg("first"))
        set_photo(slapd, dn, jpeg("changed since the read"))
        now, data = reader(read)  # what is sent is what is there now
        assert (now.digest, data) == (md5(jpeg("changed since the read")), data)
        set_photo(slapd, dn, None)
        with pytest.raises(PhotoUnavailable, match="has no jpegPhoto any more"):
            reader(read)
        with pytest.raises(PhotoUnavailable, match="does not exist"):
            reader(Photo(read.digest, read.size, "jpeg", f"uid=gone,{acme}"))
        set_photo(slapd, dn, b"\x00" * 10)
        with pytest.raises(PhotoUnavailable, match="neither JPEG nor PNG"):
            reader(read)
        set_photo(slapd, dn, jpeg("back again"))  # the connection is still good
        assert reader(read)[1] == jpeg("back again")
    finally:
        reader.close()


def test_an_ldap_sync_sends_only_the_photos_that_change(
    slapd: Slapd,
    acme: str,
    emulator: Any,
    tmp_path: Path,
) -> None:
    for name in ("alice", "carol", "dave"):
        set_photo(slapd, dn_of(acme, name), jpeg(name))
    config = tmp_path / "syncd.toml"
    config.write_text(
        f'state_dir = "{tmp_path / "state"}"\n'
        f'[source]\nkind = "ldap"\n[source.ldap]\nurls = ["{slapd.url}"]\n'
        f'bind_dn = "{slapd.bind_dn}"\nbind_password = "{slapd.password}"\n'
        f'users_base = "{acme}"\n'
        "[source.photos]\nenabled = true\n"
        f'[platform]\nbase_url = "{emulator.base_url}"\ndomain_id = "acme"\norg_code = "acme"\n'
        'client_id = "syncd"\nclient_secret = "demo-secret"\norg_id = "acme"\n'
        "retry_backoff = 0.01\n"
    )
    config.chmod(0o600)
    settings = load_settings(config)
    upload, avatar = "POST /v1/medias/images", "POST /users/{user_id}/avatar"

    def calls() -> tuple[int, int]:
        requests = emulator.stats()["requests"]
        return requests.get(upload, 0), requests.get(avatar, 0)

    first = run_sync(settings, RunRequest())
    assert first.exit_code == 0, first.error
    assert calls() == (3, 3)
    media = {m["digest"]: m["id"] for m in emulator.state()["media"]}
    held = {e["username"]: e.get("avatar") for e in emulator.state()["employees"]}
    assert held["alice"] == media[md5(jpeg("alice"))]

    second = run_sync(settings, RunRequest())
    assert second.exit_code == 0 and second.plan is not None and second.plan.changes == ()
    assert calls() == (3, 3)

    set_photo(slapd, dn_of(acme, "carol"), jpeg("carol, retaken"))
    for request in (RunRequest(read="incremental"), RunRequest()):
        result = run_sync(settings, request)
        assert result.exit_code == 0, result.error
    assert calls() == (4, 4)  # the change read sent it; the full read after, nothing
    held = {e["username"]: e.get("avatar") for e in emulator.state()["employees"]}
    assert (
        held["carol"]
        == {m["digest"]: m["id"] for m in emulator.state()["media"]}[md5(jpeg("carol, retaken"))]
    )


# ---------------------------------------------------------------- CSV


def csv_source(tmp_path: Path, rows: str, **photos: Any) -> SourceSettings:
    (tmp_path / "employees.csv").write_text(
        "id,username,name,department,sn\n" + rows, encoding="utf-8"
    )
    (tmp_path / "departments.csv").write_text("id,name,parent_id\nD1,Head Office,\n")
    folder = tmp_path / "photos"
    folder.mkdir(exist_ok=True)
    return SourceSettings(
        kind="csv",
        csv=CsvSource(
            employees=tmp_path / "employees.csv", departments=tmp_path / "departments.csv"
        ),
        photos=PhotoSettings(enabled=True, folder=folder, **photos),
    )


ROWS = (
    "E1,ann,Ann,D1,10023\n"
    "E2,bob,Bob,D1,10024\n"
    "E3,cat,Cat,D1,10025\n"
    "E4,dan,Dan,D1,10026\n"
    "E5,eve,Eve,D1,\n"  # no work number: no photo, and nothing to say
    "E6,fay,Fay,D1,10028\n"
)


def test_csv_photos_are_files_named_by_the_work_number(tmp_path: Path) -> None:
    source = csv_source(tmp_path, ROWS)
    folder = tmp_path / "photos"
    (folder / "10023.jpg").write_bytes(jpeg("ann"))
    (folder / "10024.JPEG").write_bytes(jpeg("bob"))  # any extension, any case
    (folder / "10025.jpg").write_bytes(jpeg("cat"))
    (folder / "10025.png").write_bytes(png(5))  # two candidates: neither is taken
    (folder / ".10026.jpg").write_bytes(jpeg("hidden"))  # hidden files are not photos
    (folder / "10028").mkdir()  # nor are folders
    (folder / "99999.jpg").write_bytes(jpeg("nobody"))  # a file for nobody: left alone

    directory = read_directory(source)

    everyone = people(directory)
    assert everyone["ann"].photo == Photo(
        md5(jpeg("ann")), len(jpeg("ann")), "jpeg", str(folder / "10023.jpg")
    )
    bob = everyone["bob"].photo
    assert bob is not None and bob.origin == str(folder / "10024.JPEG")
    rows = photo_rows(directory)
    assert set(rows) == {"cat", "dan", "fay"}
    assert "2 files could be it (10025.jpg, 10025.png)" in rows["cat"].reason
    assert rows["dan"].where == str(folder / "10026")
    assert "no file named 10026 (any extension)" in rows["dan"].reason
    assert "no file named 10028" in rows["fay"].reason
    assert all(rows[u].key == everyone[str(u)].id for u in rows)
    assert everyone["eve"].photo is None
    assert len(directory.employees) == 6


def test_csv_photos_named_by_another_field_within_the_size_limit(tmp_path: Path) -> None:
    source = csv_source(tmp_path, ROWS, named_by="username", max_bytes=1000)
    folder = tmp_path / "photos"
    (folder / "ann.png").write_bytes(png(1))
    (folder / "bob.jpg").write_bytes(jpeg("bob", padding=2000))
    directory = read_directory(source)
    assert people(directory)["ann"].photo is not None
    size = len(jpeg("bob", padding=2000))
    assert f"is {size:,} bytes, over source.photos.max_bytes (1,000)" in (
        photo_rows(directory)["bob"].reason
    )


def test_a_csv_photo_is_read_again_when_it_is_sent(tmp_path: Path) -> None:
    source = csv_source(tmp_path, ROWS)
    path = tmp_path / "photos" / "10023.jpg"
    path.write_bytes(jpeg("ann"))
    read = people(read_directory(source))["ann"].photo
    assert read is not None
    reader = PhotoReader(source)
    path.write_bytes(png(7))
    assert reader(read) == (Photo(md5(png(7)), len(png(7)), "png", str(path)), png(7))
    path.unlink()
    with pytest.raises(PhotoUnavailable, match="the file is gone"):
        reader(read)


def test_a_csv_photo_folder_is_required_and_must_be_a_folder(tmp_path: Path) -> None:
    config = tmp_path / "syncd.toml"
    config.write_text(
        '[source]\nkind = "csv"\n[source.csv]\nemployees = "e.csv"\ndepartments = "d.csv"\n'
        "[source.photos]\nenabled = true\n"
        '[platform]\nbase_url = "http://127.0.0.1:1"\ndomain_id = "acme"\norg_code = "acme"\n'
        'client_id = "syncd"\nclient_secret = "x"\norg_id = "acme"\n'
    )
    config.chmod(0o600)
    with pytest.raises(ConfigError, match=r"source\.photos\.folder is not set"):
        load_settings(config)
    config.write_text(config.read_text().replace("enabled = true", 'enabled = true\nfolder = "p"'))
    assert source_of(load_settings(config)).photos.folder == tmp_path / "p"  # beside the file

    source = csv_source(tmp_path, ROWS)
    (tmp_path / "photos").rmdir()
    with pytest.raises(SourceError, match="photos: folder not found"):
        read_directory(source)
