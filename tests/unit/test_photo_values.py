"""Photos as values: the image type by magic bytes, the checks, the digest (no I/O)."""

from __future__ import annotations

import hashlib

import pytest

from syncd.model import Photo
from syncd.photos import PhotoLimits, image_type, photo_fields, photo_of, too_big
from tests.support.images import jpeg, png

LIMITS = PhotoLimits(max_bytes=10_000)


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (jpeg("x"), "jpeg"),
        (png(1), "png"),
        (b"GIF89a\x01\x00", "gif"),
        (b"RIFF\x10\x00\x00\x00WEBPVP8 ", "webp"),
        (b"II*\x00\x08\x00", "tiff"),
        (b"\x89PNG\r\n\x1a\n", None),  # a signature cut short: no IHDR, not a PNG
        (b"\xff\xd8", None),  # SOI without a marker
        (b"", None),
        (b"<html>", None),
    ],
)
def test_image_types_by_magic_bytes(data: bytes, kind: str | None) -> None:
    assert image_type(data) == kind


def test_a_good_photo_has_the_md5_of_its_bytes() -> None:
    data = png(3)
    assert photo_of(data, "photos/1.png", LIMITS) == Photo(
        hashlib.md5(data, usedforsecurity=False).hexdigest(), len(data), "png", "photos/1.png"
    )


def test_what_is_refused_and_why() -> None:
    assert photo_of(b"", "x", LIMITS) == "the photo is empty (0 bytes)"
    big = jpeg("x", padding=10_000)
    assert photo_of(big, "x", LIMITS) == (
        f"the photo is {len(big):,} bytes, over source.photos.max_bytes (10,000)"
    )
    assert "neither JPEG nor PNG" in str(photo_of(b"%PDF-1.7", "x", LIMITS))
    only_jpeg = PhotoLimits(10_000, ("jpeg",))
    assert photo_of(png(1), "x", only_jpeg) == "a PNG image; source.photos.types allows JPEG"
    assert photo_of(b"GIF87a...", "x", LIMITS) == (
        "a GIF image; source.photos.types allows JPEG or PNG"
    )
    assert too_big(10_000, LIMITS) is None


def test_a_photo_as_a_change_records_it() -> None:
    assert photo_fields(Photo("abc", 12, "jpeg", "uid=a,dc=x")) == {
        "photo": "abc",
        "type": "jpeg",
        "size": 12,
        "from": "uid=a,dc=x",
    }
