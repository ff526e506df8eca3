"""Photos: what an image is (by its magic bytes), whether it may be sent, and its digest.

An image is judged whole by how its type ends, without decoding it: a JPEG ends with
the end-of-image marker (FFD9; zero bytes of padding may follow), a PNG with its IEND
chunk (the only types the platform's avatars take). A file cut short (a copy or an
export that stopped) has its header and passes for an image by its first bytes: the
platform would refuse it, a call on every run.

Pure: the bytes come in from a source (a file, an LDAP attribute); nothing is read here.
The digest is the MD5 of the bytes in hex, the ``file_digest`` the platform's media API
marks a file with (its compress endpoint calls it "usually MD5"): the snapshot keeps
each person's, so a photo is sent again only when its bytes change.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from syncd.model import Photo

TYPES = ("jpeg", "png")  # what the platform's avatars take
MIME_TYPES = {"jpeg": "image/jpeg", "png": "image/png"}
EXTENSIONS = {"jpeg": "jpg", "png": "png"}
# Signatures of the image types recognised, to say what a refused file is. A JPEG starts
# with SOI and a marker; a PNG with its signature and the IHDR chunk's length and type.
_SIGNATURES = (
    (b"\xff\xd8\xff", "jpeg"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR", "png"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
    (b"BM", "bmp"),
)
_JPEG_END = b"\xff\xd9"  # EOI
_PNG_END = b"\x00\x00\x00\x00IEND\xaeB`\x82"  # the IEND chunk: no data, and its CRC


class PhotoUnavailable(Exception):
    """A photo whose bytes cannot be had, or cannot be used, when it is to be sent."""


@dataclass(frozen=True, slots=True)
class PhotoLimits:
    max_bytes: int
    types: Collection[str] = TYPES


def image_type(data: bytes) -> str | None:
    """The image type the bytes start with: jpeg, png, gif, tiff, bmp, webp; None if none."""
    for signature, kind in _SIGNATURES:
        if data.startswith(signature):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


def digest(data: bytes) -> str:
    """The platform's file_digest of these bytes (MD5: a content key, not a security check)."""
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def too_big(size: int, limits: PhotoLimits) -> str | None:
    """Why a photo of ``size`` bytes is refused, or None; known before the bytes are read."""
    if size == 0:
        return "the photo is empty (0 bytes)"
    if size > limits.max_bytes:
        return f"the photo is {size:,} bytes, over source.photos.max_bytes ({limits.max_bytes:,})"
    return None


def photo_of(data: bytes, origin: str, limits: PhotoLimits) -> Photo | str:
    """The photo these bytes make, or why they cannot be used."""
    problem = too_big(len(data), limits)
    if problem is not None:
        return problem
    kind = image_type(data)
    if kind is None:
        return "not an image: neither JPEG nor PNG by its first bytes (damaged, or another file)"
    if kind not in limits.types:
        allowed = " or ".join(t.upper() for t in limits.types)
        return f"a {kind.upper()} image; source.photos.types allows {allowed}"
    if not whole(kind, data):
        return (
            f"a {kind.upper()} image cut short: it does not {_ENDINGS[kind]} "
            "(a copy or an export that stopped part-way?)"
        )
    return Photo(digest(data), len(data), kind, origin)


_ENDINGS = {
    "jpeg": "end with the end-of-image marker FFD9",
    "png": "end with the IEND chunk",
}


def whole(kind: str, data: bytes) -> bool:
    """Whether the image ends as a whole one of its type does (see the module docstring)."""
    if kind == "jpeg":
        # Padding is rare: only then are the bytes copied, to strip it.
        return data.endswith(_JPEG_END) or (
            data[-1:] == b"\x00" and data.rstrip(b"\x00").endswith(_JPEG_END)
        )
    if kind == "png":
        return data.endswith(_PNG_END)
    return True  # other types are refused before: source.photos.types


def photo_fields(p: Photo) -> dict[str, Any]:
    """A photo as a change records it: its digest first (kept apart from the person's hash)."""
    return {"photo": p.digest, "type": p.type, "size": p.size, "from": p.origin}
