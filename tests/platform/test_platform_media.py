"""Section E's media upload and section I's avatar, as syncd's client sends them, over HTTP."""

from __future__ import annotations

import base64
import hashlib
import json

import httpx

from syncd.emulator import RunningEmulator
from tests.platform.platform_helpers import Connect
from tests.support.images import jpeg
from tests.support.payloads import person


class RecordingTransport(httpx.BaseTransport):
    """The real transport, keeping every request sent."""

    def __init__(self) -> None:
        self._inner = httpx.HTTPTransport()
        self.sent: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.sent.append(request)
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


def test_an_upload_carries_what_section_e_requires_and_sets_the_avatar(
    connect: Connect, emulator: RunningEmulator
) -> None:
    data = jpeg("ann")
    digest = hashlib.md5(data, usedforsecurity=False).hexdigest()
    transport = RecordingTransport()
    client = connect(transport=transport)
    client.import_employees([person("ann")])
    (ann,) = [u for u in client.users() if u["username"] == "ann"]

    media_id = client.upload_image("ann.jpg", data, digest=digest, mime_type="image/jpeg")
    client.set_avatar(ann["user_id"], media_id)

    (upload,) = [r for r in transport.sent if r.url.path == "/v1/medias/images"]
    assert upload.method == "POST" and upload.url.params["access_token"]
    body = json.loads(upload.content)
    assert body == {
        "file_name": "ann.jpg",  # required
        "file_content": base64.b64encode(data).decode("ascii"),  # required
        "file_digest": digest,  # marks the file: an unchanged photo is never stored twice
        "file_type": "image/jpeg",
    }
    (stored,) = emulator.state()["media"]
    assert (stored["id"], stored["digest"], stored["name"]) == (media_id, digest, "ann.jpg")
    (employee,) = [e for e in emulator.state()["employees"] if e["username"] == "ann"]
    assert employee["avatar"] == media_id
