"""Media (section E): files kept once per digest, and users' avatars (section I).

An upload's digest is the MD5 of its bytes, computed here: a ``file_digest`` given with
it must be that digest (the emulator's rule where the platform documents none), and a
digest already held answers the media id it has, storing nothing again. An image upload
(``/medias/images``) must be an image by its first bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from syncd.emulator.codes import NO_SUCH_MEDIA, ApiError, bad_request
from syncd.emulator.people import Employee, Staff

IMAGE_SIGNATURES = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a", b"BM")
FIRST_MEDIA = 1


@dataclass(slots=True)
class Media:
    id: str
    name: str
    digest: str
    content: bytes
    content_type: str
    timestamp: int

    def info(self) -> dict[str, Any]:
        """The media info record."""
        return {
            "id": self.id,
            "name": self.name,
            "digest": self.digest,
            "state": 0,
            "size": len(self.content),
            "timestamp": self.timestamp,
            "metadata": {"content_type": self.content_type},
        }


def no_such_media(reference: str) -> ApiError:
    return ApiError(NO_SUCH_MEDIA, f"no such media: {reference}")


def decode_content(value: Any) -> bytes:
    """``file_content``: the file's bytes in base64."""
    if not isinstance(value, str) or not value:
        raise bad_request("file_content is required (the file's bytes, base64)")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise bad_request("file_content is not valid base64") from exc


def is_image(content: bytes) -> bool:
    if content.startswith(IMAGE_SIGNATURES):
        return True
    return content[:4] == b"RIFF" and content[8:12] == b"WEBP"


class MediaStore:
    """Every file uploaded, by id and by digest (one copy per digest)."""

    def __init__(self, items: Iterable[Media] = (), next_id: int = FIRST_MEDIA) -> None:
        self.next_id = next_id
        self._by_id: dict[str, Media] = {}
        self._by_digest: dict[str, Media] = {}
        for media in items:
            self._by_id[media.id] = media
            self._by_digest[media.digest] = media

    def __iter__(self) -> Iterator[Media]:
        return iter(self._by_id.values())

    def store(
        self, name: str, content: bytes, declared: str, content_type: str, stamp: int
    ) -> Media:
        """Keep a file, or answer the one held under its digest."""
        digest = hashlib.md5(content, usedforsecurity=False).hexdigest()
        if declared and declared.strip().lower() != digest:
            raise bad_request("file_digest does not match the file's content (MD5)")
        held = self._by_digest.get(digest)
        if held is not None:
            return held
        media = Media(f"{self.next_id:024x}", name, digest, content, content_type, stamp)
        self.next_id += 1
        self._by_id[media.id] = media
        self._by_digest[digest] = media
        return media

    def find(self, reference: str, by: str = "ID") -> Media:
        """A file by id, or by digest (``type=DIGEST``)."""
        kind = by.upper() or "ID"
        if kind not in ("ID", "DIGEST"):
            raise bad_request("type must be ID or DIGEST")
        table = self._by_digest if kind == "DIGEST" else self._by_id
        media = table.get(reference.lower() if kind == "DIGEST" else reference)
        if media is None:
            raise no_such_media(reference)
        return media

    def view(self) -> list[dict[str, Any]]:
        return [m.info() for m in self]

    def dump(self) -> dict[str, Any]:
        return {
            "next_id": self.next_id,
            "items": [
                {
                    "id": m.id,
                    "name": m.name,
                    "digest": m.digest,
                    "content": base64.b64encode(m.content).decode("ascii"),
                    "content_type": m.content_type,
                    "timestamp": m.timestamp,
                }
                for m in self
            ],
        }

    @classmethod
    def load(cls, data: dict[str, Any]) -> MediaStore:
        items = [
            Media(
                str(m["id"]),
                str(m["name"]),
                str(m["digest"]),
                base64.b64decode(m["content"]),
                str(m["content_type"]),
                int(m["timestamp"]),
            )
            for m in data.get("items", ())
        ]
        return cls(items, int(data.get("next_id", FIRST_MEDIA)))


class UserIds:
    """Employees by user id, learnt again whenever a user id is not where it was."""

    def __init__(self) -> None:
        self._staff: Staff | None = None
        self._ids: dict[str, int] = {}

    def find(self, staff: Staff, user_id: str) -> Employee | None:
        employee = self._known(staff, user_id)
        if employee is None:
            self._staff = staff
            self._ids = {e.user_id: e.id for e in staff}
            employee = self._known(staff, user_id)
        return employee

    def _known(self, staff: Staff, user_id: str) -> Employee | None:
        if self._staff is not staff or user_id not in self._ids:
            return None
        employee = staff.find(self._ids[user_id])
        return employee if employee is not None and employee.user_id == user_id else None
