"""``syncd init``: a commented settings file for one kind of source, and the systemd units.

Files are created, never replaced: a path that exists already (a file, a folder, a link)
stops the command before anything is written, with the path named.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from importlib.metadata import version
from pathlib import Path

from syncd.data import SETTINGS_TEMPLATE, unit_files
from syncd.errors import ConfigError


class SourceKind(StrEnum):
    CSV = "csv"
    OPENLDAP = "openldap"
    ACTIVE_DIRECTORY = "active_directory"


TITLES = {
    SourceKind.CSV: "CSV exports of an HR system",
    SourceKind.OPENLDAP: "OpenLDAP",
    SourceKind.ACTIVE_DIRECTORY: "Active Directory",
}
SETTINGS_MODE = 0o600
UNIT_MODE = 0o644
UNITS_START = Path("/opt/syncd/bin/syncd")  # the shipped units' ExecStart=: README's install


@dataclass(frozen=True)
class NewFile:
    path: Path
    text: str
    mode: int


def settings_text(source: SourceKind) -> str:
    """The settings file for this kind of source: placeholders to replace, no secrets."""
    import jinja2  # here: every command imports this module, one writes settings

    environment = jinja2.Environment(
        autoescape=False,  # noqa: S701 - TOML, not HTML; every value is syncd's own
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    template = environment.from_string(SETTINGS_TEMPLATE.read_text(encoding="utf-8"))
    return template.render(
        source=source.value,
        kind="csv" if source is SourceKind.CSV else "ldap",
        title=TITLES[source],
        version=version("syncd"),
    )


def settings_file(path: Path, source: SourceKind) -> NewFile:
    if path.is_dir():
        raise ConfigError(f"{path} is a folder: name the settings file, e.g. {path / 'syncd.toml'}")
    return NewFile(path, settings_text(source), SETTINGS_MODE)


def unit_files_in(folder: Path, start: Path = UNITS_START) -> list[NewFile]:
    """The shipped units for ``folder``, each ``ExecStart=`` naming ``start``: the syncd
    that writes them, wherever it is installed."""
    if not folder.is_dir():
        raise ConfigError(f"--units {folder}: not a folder")
    return [
        NewFile(
            folder / unit.name,
            unit.read_text(encoding="utf-8").replace(f"={UNITS_START} ", f"={start} "),
            UNIT_MODE,
        )
        for unit in unit_files()
    ]


def create(files: Sequence[NewFile]) -> None:
    """Write every file, or none when one of them exists already or has no folder."""
    for new in files:
        if new.path.exists() or new.path.is_symlink():
            raise _taken(new.path)
        if not new.path.parent.is_dir():
            raise ConfigError(f"{new.path}: folder {new.path.parent} does not exist")
    for new in files:
        try:
            fd = os.open(new.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, new.mode)
        except FileExistsError as exc:  # made since the check above
            raise _taken(new.path) from exc
        except OSError as exc:
            raise ConfigError(f"{new.path}: cannot create it: {exc.strerror}") from exc
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(fd, new.mode)  # exactly this mode, whatever the umask
            handle.write(new.text)


def _taken(path: Path) -> ConfigError:
    return ConfigError(
        f"{path} already exists: syncd init never overwrites a file; "
        "name another path, or move that file away first"
    )
