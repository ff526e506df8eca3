"""Sources turn what the company has (CSV exports, LDAP, Active Directory) into a Directory.

A source never talks to the platform. It either returns a whole Directory (with the
rows it rejected and why) or raises SourceError: a read that fails part-way never
passes for a complete one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncd.config import SourceSettings
from syncd.model import Directory

if TYPE_CHECKING:
    from syncd.sources._trace import Count, Tracer


def read_directory(
    settings: SourceSettings,
    *,
    since: str | None = None,
    trace: Tracer | None = None,
    count: Count | None = None,
) -> Directory:
    """Read the configured source, by its mapping rules, with people's photos when enabled.

    ``since`` asks an LDAP source for changes after that mark; ``trace`` is told of every
    person read (the preview); ``count`` how many were read so far, now and then.
    """
    photos = settings.photos if settings.photos.enabled else None
    if settings.kind == "csv":
        from syncd.sources.csv import read_csv

        assert settings.csv is not None
        directory = read_csv(settings.csv, mapping=settings.mapping, trace=trace, count=count)
        if photos is None:
            return directory
        from syncd.sources.photos import with_photo_files

        return with_photo_files(directory, photos)
    from syncd.sources.ldap import read_ldap

    assert settings.ldap is not None
    return read_ldap(
        settings.ldap,
        since=since,
        mapping=settings.mapping,
        trace=trace,
        photos=photos,
        count=count,
    )


def describe(settings: SourceSettings) -> str:
    """Where the source reads from, for reports: never a secret."""
    if settings.kind == "csv":
        assert settings.csv is not None
        files = [settings.csv.employees, settings.csv.departments]
        return "csv:" + ",".join(str(f) for f in files if f is not None)
    assert settings.ldap is not None
    return "ldap:" + ",".join(settings.ldap.urls)
