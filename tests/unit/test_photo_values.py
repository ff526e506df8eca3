"""Photos as values: the image type by magic bytes, the checks, the digest (no I/O)."""

from __future__ import annotations

import hashlib

import pytest

from syncd.model import Photo
from syncd.photos import PhotoLimits, image_type, photo_fields, photo_of, too_big, whole
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


@pytest.mark.parametrize(
    ("kind", "data", "is_whole"),
    [
        ("jpeg", jpeg("x"), True),
        ("jpeg", jpeg("x") + b"\x00" * 40, True),  # padding after the end-of-image marker
        ("jpeg", jpeg("x", padding=40)[:-2], False),  # cut before FFD9: padding is no end
        ("jpeg", jpeg("x") + b"\x01", False),
        ("png", png(1), True),
        ("png", png(1)[:-1], False),
        ("png", png(1)[:-12], False),  # no IEND chunk at all
    ],
)
def test_an_image_is_whole_by_how_its_type_ends(kind: str, data: bytes, is_whole: bool) -> None:
    assert image_type(data) == kind
    assert whole(kind, data) is is_whole


def test_a_photo_cut_short_is_refused_with_what_it_lacks() -> None:
    cut = jpeg("portrait", padding=500)[:300]  # a valid header, the rest never written
    assert photo_of(cut, "x", LIMITS) == (
        "a JPEG image cut short: it does not end with the end-of-image marker FFD9 "
        "(a copy or an export that stopped part-way?)"
    )
    assert str(photo_of(png(9)[:-5], "x", LIMITS)).startswith(
        "a PNG image cut short: it does not end with the IEND chunk"
    )


def test_a_photo_as_a_change_records_it() -> None:
    assert photo_fields(Photo("abc", 12, "jpeg", "uid=a,dc=x")) == {
        "photo": "abc",
        "type": "jpeg",
        "size": 12,
        "from": "uid=a,dc=x",
    }
