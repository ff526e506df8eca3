"""People's photos at the source: read and checked with the people, fetched again to be sent.

A read keeps of each photo only its digest, size, type and origin (``model.Photo``): the
bytes are hashed and let go, so a company's photos are never in memory at once. A photo
that cannot be used (a missing or unreadable file, not a JPEG or PNG, over the size
limit) is a rejected row of kind ``photo``, and its person is read without a photo.

- CSV: a folder of image files named by a field's value (``named_by``, the work number by
  default) with any extension, in any letter case: ``photos/10023.jpg``. The folder is
  listed once per read.
- LDAP: an attribute of the person's entry (``jpegPhoto``; Active Directory's
  ``thumbnailPhoto``), read in the same search as the rest (see ``ldap.mapping``). A
  person without the attribute has no photo, and that is no problem.

When a photo is sent, ``PhotoReader`` reads its bytes again from where the read found
them (the file; the entry, by DN) and checks them again: what is sent is what is there
then, and its digest is what the snapshot records.
"""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from syncd.config import LdapSource, PhotoSettings, SourceSettings
from syncd.errors import SourceError
from syncd.logs import register_secret
from syncd.model import Directory, Employee, Kind, Photo, RejectedRow
from syncd.photos import PhotoLimits, PhotoUnavailable, photo_of, too_big

if TYPE_CHECKING:
    from syncd.sources.ldap.connection import Session

DEFAULT_ATTRIBUTE = {"openldap": "jpegPhoto", "active_directory": "thumbnailPhoto"}


def limits_of(settings: PhotoSettings) -> PhotoLimits:
    return PhotoLimits(settings.max_bytes, tuple(settings.types))


def photo_attribute(settings: PhotoSettings, ldap: LdapSource) -> str:
    return settings.attribute or DEFAULT_ATTRIBUTE[ldap.flavor]


class PhotoCheck:
    """Checks each photo a read finds; one that cannot be used becomes a rejected row."""

    def __init__(self, settings: PhotoSettings, rejected: list[RejectedRow]) -> None:
        self.limits = limits_of(settings)
        self.rejected = rejected

    def photo(self, data: bytes, origin: str, key: str, username: str) -> Photo | None:
        found = photo_of(data, origin, self.limits)
        if isinstance(found, str):
            self.reject(origin, key, username, found)
            return None
        return found

    def reject(self, where: str, key: str, username: str, problem: str) -> None:
        reason = f"the photo of {username or key}: {problem}; the person is synced without it"
        self.rejected.append(RejectedRow(where, reason, Kind.PHOTO, key or None, username or None))


# ---------------------------------------------------------------- CSV: a folder of files


def with_photo_files(directory: Directory, settings: PhotoSettings) -> Directory:
    """The directory with each person's photo from the folder, and the photos rejected."""
    assert settings.folder is not None  # the settings' validator requires it for CSV
    files = _listing(settings.folder)
    rejected: list[RejectedRow] = []
    check = PhotoCheck(settings, rejected)
    employees: dict[str, Employee] = {}
    for key, e in directory.employees.items():
        name = getattr(e, settings.named_by)
        photo = None
        if name:
            photo = _photo_file(files.get(name.casefold(), []), name, settings, check, e)
        employees[key] = e if photo is None else e._replace(photo=photo)
    if not rejected and all(e.photo is None for e in employees.values()):
        return directory
    return replace(directory, employees=employees, rejected=(*directory.rejected, *rejected))


def _listing(folder: Path) -> dict[str, list[Path]]:
    """The folder's files by name without extension, in any letter case (hidden ones left out)."""
    files: dict[str, list[Path]] = {}
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith(".") or not entry.is_file():
                    continue
                stem = entry.name.rsplit(".", 1)[0] if "." in entry.name else entry.name
                files.setdefault(stem.casefold(), []).append(Path(entry.path))
    except FileNotFoundError as exc:
        raise SourceError(f"{folder}: folder not found (source.photos.folder)") from exc
    except NotADirectoryError as exc:
        raise SourceError(f"{folder}: not a folder (source.photos.folder)") from exc
    except OSError as exc:
        raise SourceError(
            f"{folder}: cannot be read: {exc.strerror} (source.photos.folder)"
        ) from exc
    return files


def _photo_file(
    found: list[Path], name: str, settings: PhotoSettings, check: PhotoCheck, e: Employee
) -> Photo | None:
    assert settings.folder is not None
    if not found:
        where = str(settings.folder / name)
        check.reject(
            where, e.id, e.username, f"no file named {name} (any extension) in {settings.folder}"
        )
        return None
    if len(found) > 1:
        names = ", ".join(sorted(p.name for p in found))
        check.reject(
            str(found[0]), e.id, e.username, f"{len(found)} files could be it ({names}): keep one"
        )
        return None
    try:
        data = _read(found[0], check.limits)
    except PhotoUnavailable as exc:
        check.reject(str(found[0]), e.id, e.username, str(exc))
        return None
    return check.photo(data, str(found[0]), e.id, e.username)


def _read(path: Path, limits: PhotoLimits) -> bytes:
    """A photo file's bytes; one over the size limit is refused before it is read."""
    try:
        with path.open("rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise PhotoUnavailable("not a regular file")
            problem = too_big(info.st_size, limits)
            if problem is not None:
                raise PhotoUnavailable(problem)
            return fh.read(limits.max_bytes + 1)
    except FileNotFoundError as exc:
        raise PhotoUnavailable("the file is gone") from exc
    except OSError as exc:
        raise PhotoUnavailable(f"cannot be read: {exc.strerror or exc}") from exc


# ---------------------------------------------------------------- fetching, to send


class PhotoReader:
    """Reads photos' bytes again when they are sent, from their file or their entry (on one
    LDAP connection, opened at the first photo): the photo as it is then, and its bytes."""

    def __init__(self, settings: SourceSettings) -> None:
        self.limits = limits_of(settings.photos)
        self._entries: _Entries | None = None
        if settings.kind == "ldap":
            assert settings.ldap is not None
            self._entries = _Entries(settings.ldap, photo_attribute(settings.photos, settings.ldap))

    def __call__(self, photo: Photo) -> tuple[Photo, bytes]:
        """Raises PhotoUnavailable when the bytes cannot be had or used."""
        if self._entries is None:
            data = _read(Path(photo.origin), self.limits)
        else:
            data = self._entries.photo(photo.origin)
        found = photo_of(data, photo.origin, self.limits)
        if isinstance(found, str):
            raise PhotoUnavailable(f"{photo.origin}: {found}")
        return found, data

    def close(self) -> None:
        if self._entries is not None:
            self._entries.close()


def photo_reader(settings: SourceSettings) -> PhotoReader | None:
    """What reads photos to send them; None when photos are not enabled."""
    return PhotoReader(settings) if settings.photos.enabled else None


class _Entries:
    """A person's photo attribute, read by DN on a connection of its own."""

    def __init__(self, settings: LdapSource, attribute: str) -> None:
        self.settings = settings
        self.attribute = attribute
        self._session: Session | None = None

    def photo(self, dn: str) -> bytes:
        from syncd.sources.ldap.dn import dn_key
        from syncd.sources.ldap.wire import Search

        search = Search(
            step=f"read the photo of {dn}",
            base=dn,
            filter="(objectClass=*)",
            attributes=(self.attribute,),
            page_size=1,
        )
        data = None
        try:
            # Read to the end, never left half-read: the connection's next search follows.
            for found, values in self._connected().wire.entries(search):
                if data is None and dn_key(found) == dn_key(dn):
                    data = values[0]
        except SourceError as exc:
            raise PhotoUnavailable(str(exc)) from exc
        if not data:
            raise PhotoUnavailable(f"{dn}: the entry has no {self.attribute} any more")
        if isinstance(data, tuple):  # several values (ldap.wire.Several): which is unknown
            raise PhotoUnavailable(f"{dn}: {self.attribute} has {len(data)} photos now")
        return data

    def _connected(self) -> Session:
        if self._session is None:
            from syncd.sources.ldap.connection import connect

            secret = self.settings.bind_password
            password = secret.get_secret_value() if secret else None
            register_secret(password)
            self._session = connect(self.settings, password)
        return self._session

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
