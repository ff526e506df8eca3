"""CSV files: found, checked, their encoding and delimiter settled, decoded to text."""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeVar

from syncd.config import CsvSource
from syncd.errors import SourceError
from syncd.sources.csv.records import _DECODE_CHUNK, AUTO, FALLBACK_ENCODING, UTF8_EVIDENCE, _Table

T = TypeVar("T")


def _read_file(path: Path, setting: str, settings: CsvSource, consume: Callable[[_Table], T]) -> T:
    """Open a CSV file in its encoding for ``consume`` to read; whole-file problems raise.

    With encoding ``auto`` a byte-order mark decides; without one the file is read as UTF-8,
    and read again from the start as GB18030 if it is not UTF-8.
    """
    _check_file(path, setting)
    if settings.encoding.strip().casefold() != AUTO:
        encoding = _encoding_named(settings.encoding)
        if not encoding.startswith("utf") and _plainly_utf8(path):
            raise SourceError(
                f"{path}: the file is UTF-8 (its text beyond ASCII decodes as UTF-8), but "
                f"source.csv.encoding is {settings.encoding!r}: read so, every name would be "
                "garbled; set source.csv.encoding to 'utf-8' or 'auto'"
            )
        try:
            return _consume(path, encoding, settings.delimiter, consume)
        except UnicodeDecodeError as exc:
            raise _undecodable(path, [encoding]) from exc
    marked = _encoding_from_bom(path)
    if marked is not None:  # a byte-order mark settles the question
        try:
            return _consume(path, marked, settings.delimiter, consume)
        except UnicodeDecodeError as exc:
            raise _undecodable(path, [marked]) from exc
    try:
        return _consume(path, "utf-8", settings.delimiter, consume)
    except UnicodeDecodeError:
        pass
    fault = _first_undecodable(path, "utf-8")
    if fault is not None and fault.non_ascii_before >= UTF8_EVIDENCE:
        raise SourceError(
            f"{path}: not valid UTF-8 at line {fault.line} (byte offset {fault.offset}), although "
            "the text before it is UTF-8: the file looks damaged. If it is in another encoding, "
            "set source.csv.encoding"
        )
    try:
        return _consume(path, FALLBACK_ENCODING, settings.delimiter, consume)
    except UnicodeDecodeError as exc:
        raise _undecodable(path, ["utf-8", FALLBACK_ENCODING]) from exc


def _plainly_utf8(path: Path) -> bool:
    """Whether a file has a UTF-8 BOM, or decodes as UTF-8 with text beyond ASCII."""
    try:
        data = path.read_bytes()
    except OSError:
        return False  # _consume opens it again and says why it cannot
    if data.startswith(codecs.BOM_UTF8):
        return True
    try:
        return _count_non_ascii(data.decode("utf-8")) >= UTF8_EVIDENCE
    except UnicodeDecodeError:
        return False


def _check_file(path: Path, setting: str) -> None:
    try:
        info = path.stat()
    except FileNotFoundError as exc:
        raise SourceError(f"{path}: file not found ({setting})") from exc
    except PermissionError as exc:
        raise SourceError(f"{path}: cannot be read (permission denied)") from exc
    except OSError as exc:
        raise SourceError(f"{path}: cannot be read: {exc.strerror}") from exc
    if stat.S_ISDIR(info.st_mode):
        raise SourceError(f"{path}: is a directory, not a CSV file ({setting})")
    if stat.S_ISREG(info.st_mode) and info.st_size == 0:
        raise SourceError(f"{path}: the file is empty (0 bytes); it needs at least a header")


def _encoding_named(name: str) -> str:
    try:
        found = codecs.lookup(name.strip()).name
    except LookupError as exc:
        raise SourceError(
            f"source.csv.encoding: {name!r} is not an encoding Python knows "
            "(try 'auto', 'utf-8', 'gb18030')"
        ) from exc
    return "utf-8-sig" if found == "utf-8" else found  # a BOM is not part of the first cell


def _encoding_from_bom(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            start = fh.read(4)
    except OSError:
        return None  # _consume opens it again and says why it cannot
    if start.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"  # Excel's "Unicode text" export
    return None


def _consume(path: Path, encoding: str, delimiter: str, consume: Callable[[_Table], T]) -> T:
    try:
        # newline="": the csv module handles line ends itself, quoted newlines included.
        with open(path, encoding=encoding, newline="") as fh:
            opened = os.fstat(fh.fileno())
            found = consume(_Table(path, fh, delimiter))
            _unchanged(path, opened, os.fstat(fh.fileno()))
            return found
    except PermissionError as exc:
        raise SourceError(f"{path}: cannot be read (permission denied)") from exc
    except IsADirectoryError as exc:
        raise SourceError(f"{path}: is a directory, not a CSV file") from exc
    except OSError as exc:
        raise SourceError(f"{path}: reading failed: {exc.strerror or exc}") from exc


def _unchanged(path: Path, opened: os.stat_result, read: os.stat_result) -> None:
    """A file another program wrote to while it was read (an export still being written, a
    copy still arriving) may have been read cut short at a line's end, where nothing in its
    text shows it: its people past the cut would read as leavers. Its size or modification
    time when read to its end must be those it had when opened."""
    if (opened.st_size, opened.st_mtime_ns) == (read.st_size, read.st_mtime_ns):
        return
    raise SourceError(
        f"{path}: the file changed while it was read ({opened.st_size} bytes when opened, "
        f"{read.st_size} when read to its end): another program may still be writing it, so "
        "what was read may be cut short, and nothing of it is used. Run again once it is "
        "complete; have the program that writes it write another name and rename it when done"
    )


@dataclass(frozen=True, slots=True)
class _DecodeFault:
    offset: int  # bytes from the start of the file
    line: int
    non_ascii_before: int  # characters beyond ASCII decoded before the fault


def _first_undecodable(path: Path, encoding: str) -> _DecodeFault | None:
    """Where a file first fails to decode, read again in chunks (only after a decode error)."""
    try:
        with path.open("rb") as fh:
            return _decode_fault(fh, encoding)
    except OSError as exc:
        raise SourceError(f"{path}: reading failed: {exc.strerror or exc}") from exc


def _decode_fault(fh: BinaryIO, encoding: str) -> _DecodeFault | None:
    """The first fault in decoding a file, reading it in chunks."""
    offset = lines = non_ascii = 0
    pending = b""
    while True:
        chunk = fh.read(_DECODE_CHUNK)
        data = pending + chunk
        try:
            good, pending = data.decode(encoding), b""
        except UnicodeDecodeError as exc:
            # A character cut by the chunk's end is completed by the next chunk.
            if chunk and exc.end == len(data):
                good, pending = data[: exc.start].decode(encoding), data[exc.start :]
            else:
                before = data[: exc.start].decode(encoding)
                return _DecodeFault(
                    offset + exc.start,
                    lines + before.count("\n") + 1,
                    non_ascii + _count_non_ascii(before),
                )
        offset += len(data) - len(pending)
        lines += good.count("\n")
        non_ascii += _count_non_ascii(good)
        if not chunk:
            return None


def _count_non_ascii(text: str) -> int:
    return len(text) - len(text.encode("ascii", "ignore"))


def _undecodable(path: Path, encodings: list[str]) -> SourceError:
    faults = []
    for encoding in encodings:
        encoding = "utf-8" if encoding == "utf-8-sig" else encoding
        fault = _first_undecodable(path, encoding)
        where = f"line {fault.line} (byte offset {fault.offset})" if fault else "its end"
        faults.append(f"not {encoding.upper()} at {where}")
    hint = "save it as UTF-8" if len(encodings) > 1 else "check source.csv.encoding"
    return SourceError(f"{path}: the file cannot be decoded: {'; '.join(faults)}; {hint}")
