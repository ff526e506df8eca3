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
UNITS_SETTINGS = Path("/etc/syncd/syncd.toml")  # their SYNCD_CONFIG=
CONFIG_LINE = "Environment=SYNCD_CONFIG="
# What ProtectHome=yes makes inaccessible to a service (systemd.exec(5)).
PROTECTED_HOMES = (Path("/home"), Path("/root"), Path("/run/user"))


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


def unit_files_in(
    folder: Path, start: Path = UNITS_START, settings: Path = UNITS_SETTINGS
) -> list[NewFile]:
    """The shipped units for ``folder``, each ``ExecStart=`` naming ``start``: the syncd
    that writes them, wherever it is installed; ``SYNCD_CONFIG=`` names ``settings``, the
    settings file written with them (absolute: a unit has no working directory)."""
    if not folder.is_dir():
        raise ConfigError(f"--units {folder}: not a folder")
    config = f"{CONFIG_LINE}{settings.absolute()}\n"
    return [
        NewFile(
            folder / unit.name,
            unit.read_text(encoding="utf-8")
            .replace(f"={UNITS_START} ", f"={start} ")
            .replace(f"{CONFIG_LINE}{UNITS_SETTINGS}\n", config),
            UNIT_MODE,
        )
        for unit in unit_files()
    ]


def hidden_by_protect_home(*paths: Path) -> list[tuple[Path, Path]]:
    """The paths the units name that ``ProtectHome=yes`` (in every shipped unit) hides from
    the service, each with the home folder it is under: a pipx or ``pip install --user``
    syncd, or settings in a home folder. The service would fail to start (203/EXEC) or
    to read its settings."""
    hidden = []
    for path in paths:
        for seen in dict.fromkeys((path.absolute(), path.resolve())):
            home = next((h for h in PROTECTED_HOMES if seen.is_relative_to(h)), None)
            if home is not None:
                hidden.append((path, home))
                break
    return hidden


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
