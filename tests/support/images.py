"""Small images for the photo tests, made here: a real PNG, and bytes that are a JPEG by its
markers (start of image, a JFIF segment, end of image) with a payload of the caller's."""

from __future__ import annotations

import struct
import zlib


def png(red: int, green: int = 0, blue: int = 0, size: int = 2) -> bytes:
    """A ``size`` x ``size`` PNG of one colour (8-bit RGB), valid to any decoder."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes((red, green, blue)) * size
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * size))
        + chunk(b"IEND", b"")
    )


def jpeg(payload: str | bytes, padding: int = 0) -> bytes:
    """Bytes a JPEG begins and ends with, around ``payload`` (and ``padding`` more bytes)."""
    data = payload.encode() if isinstance(payload, str) else payload
    jfif = b"\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    return b"\xff\xd8" + jfif + data + b"\x00" * padding + b"\xff\xd9"
