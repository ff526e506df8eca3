"""Section E (media uploads, info, download) and section I's avatar endpoint, over HTTP."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import httpx

from syncd.emulator import EmulatorOptions, RunningEmulator, serve_in_thread
from tests.support.images import jpeg, png
from tests.support.payloads import person

from .support import Api

IMAGES = "/v1/medias/images"


def upload(api: Api, data: bytes, **fields: Any) -> dict[str, Any]:
    body = {"file_name": "me.jpg", "file_content": base64.b64encode(data).decode(), **fields}
    return api.call("POST", IMAGES, json=body)


def md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def test_an_image_is_stored_once_per_digest(api: Api, emulator: RunningEmulator) -> None:
    first = upload(api, jpeg("ann"), file_digest=md5(jpeg("ann")), file_type="image/jpeg")
    again = upload(api, jpeg("ann"), file_name="copy.jpg")
    other = upload(api, png(1))

    assert first["status"] == again["status"] == other["status"] == 0
    assert isinstance(first["result"], str) and first["result"]  # the media id
    assert again["result"] == first["result"]
    assert other["result"] != first["result"]
    stored = emulator.state()["media"]
    assert [(m["id"], m["digest"], m["size"]) for m in stored] == [
        (first["result"], md5(jpeg("ann")), len(jpeg("ann"))),
        (other["result"], md5(png(1)), len(png(1))),
    ]
    assert emulator.stats()["requests"][f"POST {IMAGES}"] == 3


def test_info_and_download_by_id_or_digest(api: Api, client: httpx.Client) -> None:
    media_id = upload(api, png(9), file_type="image/png")["result"]
    info = api.ok("GET", f"/v1/medias/{media_id}/info")
    assert (info["id"], info["digest"], info["size"]) == (media_id, md5(png(9)), len(png(9)))
    assert api.ok("GET", f"/v1/medias/{md5(png(9))}/info", {"type": "DIGEST"})["id"] == media_id
    for path in (f"/v1/medias/{media_id}", f"/v1/medias/images/{media_id}"):
        answer = client.get(path, params={"access_token": api.token, "domain_id": "acme"})
        assert answer.content == png(9)
        assert answer.headers["content-type"] == "image/png"
    assert api.call("GET", "/v1/medias/nothing/info")["status"] == 204404


def test_uploads_that_are_refused(api: Api, emulator: RunningEmulator) -> None:
    assert upload(api, b"plain text")["message"] == "the file is not an image"
    wrong = upload(api, jpeg("a"), file_digest=md5(jpeg("b")))
    assert wrong["message"] == "file_digest does not match the file's content (MD5)"
    assert api.call("POST", IMAGES, json={"file_name": "x", "file_content": "%%"})["status"]
    assert api.call("POST", IMAGES, json={"file_content": "AAAA"})["status"]
    assert api.call("POST", IMAGES, params={"access_token": "stale"}, json={})["status"] == 10011
    assert emulator.state()["media"] == []


def test_a_multipart_upload(api: Api, client: httpx.Client) -> None:
    answer = client.post(
        IMAGES,
        params={"access_token": api.token, "file_digest": md5(jpeg("m")), "file_size": 23},
        files={"file": ("m.jpg", jpeg("m"), "image/jpeg")},
    ).json()
    assert answer["status"] == 0, answer
    assert api.ok("GET", f"/v1/medias/{answer['result']}/info")["name"] == "m.jpg"
    missing = client.post(
        IMAGES, params={"access_token": api.token}, files={"other": ("m.jpg", b"x")}
    ).json()
    assert missing["message"] == "the multipart body has no part named file"


def test_downloads_require_this_platforms_domain_id(api: Api, client: httpx.Client) -> None:
    media_id = upload(api, png(4))["result"]
    for path in (f"/v1/medias/{media_id}", f"/v1/medias/images/{media_id}"):
        for domain, refusal in (
            ({}, "missing required parameter: domain_id"),
            ({"domain_id": "elsewhere"}, "unknown domain_id"),
        ):
            answer = client.get(path, params={"access_token": api.token, **domain}).json()
            assert (answer["status"] != 0, answer["message"]) == (True, refusal), path
        found = client.get(path, params={"access_token": api.token, "domain_id": "acme"})
        assert found.content == png(4)


def test_a_multipart_file_upload_requires_its_digest_and_size(
    api: Api, client: httpx.Client, emulator: RunningEmulator
) -> None:
    data = jpeg("file")

    def post(path: str, **query: Any) -> dict[str, Any]:
        files = {"file": ("f.jpg", data, "image/jpeg")}
        params = {"access_token": api.token, **query}
        answer: dict[str, Any] = client.post(path, params=params, files=files).json()
        return answer

    digest, size = md5(data), len(data)
    assert post("/v1/medias", file_size=size)["message"] == (
        "missing required parameter: file_digest"
    )
    assert post("/v1/medias", file_digest=digest)["message"] == (
        "missing required parameter: file_size"
    )
    wrong = post("/v1/medias", file_digest=digest, file_size=size - 1)
    assert wrong["message"] == "file_size does not match the file's length"
    assert emulator.state()["media"] == []
    assert post(IMAGES)["status"] == 0  # optional for an image: nothing to check
    assert post("/v1/medias", file_digest=digest, file_size=size)["status"] == 0


def test_the_avatar_is_set_on_the_user_and_shown_in_the_employee_record(
    api: Api, emulator: RunningEmulator
) -> None:
    api.import_employees([person("ann"), person("bob")])
    ann = api.employee("ann")
    media_id = upload(api, jpeg("ann"))["result"]

    assert api.ok("POST", f"/users/{ann['user_id']}/avatar", json={"avatar": media_id}) == {}

    after = api.employee("ann")
    assert after["avatar"] == media_id
    assert after["last_modified"] > ann["last_modified"]  # a write like any other
    assert "avatar" not in api.employee("bob")
    api.import_employees([person("ann", name="Ann Renamed")])  # an update keeps the avatar
    assert api.employee("ann")["avatar"] == media_id
    assert emulator.stats()["requests"]["POST /users/{user_id}/avatar"] == 1

    assert api.call("POST", "/users/nobody/avatar", json={"avatar": media_id})["status"] == 202012
    unknown = api.call("POST", f"/users/{ann['user_id']}/avatar", json={"avatar": "nope"})
    assert unknown["status"] == 204404
    assert api.call("POST", f"/users/{ann['user_id']}/avatar", json={})["status"] != 0


def test_media_and_avatars_survive_a_restart(tmp_path: Path) -> None:
    options = EmulatorOptions(state_file=tmp_path / "state.json")
    with serve_in_thread(options) as running, httpx.Client(base_url=running.base_url) as client:
        api = Api(running, client)
        api.import_employees([person("ann")])
        media_id = upload(api, jpeg("kept"))["result"]
        api.ok("POST", f"/users/{api.employee('ann')['user_id']}/avatar", json={"avatar": media_id})
    with serve_in_thread(options) as running, httpx.Client(base_url=running.base_url) as client:
        api = Api(running, client)
        assert api.employee("ann")["avatar"] == media_id
        assert upload(api, jpeg("kept"))["result"] == media_id
        query = {"access_token": api.token, "domain_id": "acme"}
        assert client.get(f"/v1/medias/{media_id}", params=query).content == jpeg("kept")
