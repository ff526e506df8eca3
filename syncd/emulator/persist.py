"""Saving and loading the emulator's state file: JSON, replaced atomically."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def save_json(path: Path, data: dict[str, Any]) -> None:
    """Write to a temporary file beside ``path``, then rename it over: never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(data, stream, ensure_ascii=False, separators=(",", ":"))
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load_json(path: Path) -> dict[str, Any] | None:
    """The saved state, or None when there is no file yet."""
    try:
        with path.open(encoding="utf-8") as stream:
            data = json.load(stream)
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON: {error}") from error
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not an emulator state file")
    return data
