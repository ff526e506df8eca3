"""Sources turn what the company has (CSV exports, LDAP, Active Directory) into a Directory.

A source never talks to the platform. It either returns a whole Directory (with the
rows it rejected and why) or raises SourceError: a read that fails part-way never
passes for a complete one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncd.config import Settings, SourceSettings
from syncd.config.sources import (
    FIELD_NAMES,
    JoinSettings,
    deciders,
    key_of,
    key_setting,
    normalizing,
)
from syncd.errors import ConfigError, SourceError
from syncd.model import Directory
from syncd.plan.join import Joined, JoinRules, KeyNotHeld, SourceRead, join

if TYPE_CHECKING:
    from collections.abc import Mapping

    from syncd.plan.values import SyncedEmployee
    from syncd.sources._trace import Count, Tracer


def read_directory(
    settings: SourceSettings,
    *,
    since: str | None = None,
    trace: Tracer | None = None,
    count: Count | None = None,
    synced_names: Mapping[str, str] | None = None,
) -> Directory:
    """Read the configured source, by its mapping rules, with people's photos when enabled.

    ``since`` asks an LDAP source for changes after that mark; ``trace`` is told of every
    person read (the preview); ``count`` how many were read so far, now and then;
    ``synced_names``: the name syncd last wrote for each department, by id (a look-alike
    sibling made beside one is set aside, not the department: ``build_directory``).
    """
    photos = settings.photos if settings.photos.enabled else None
    if settings.kind == "csv":
        from syncd.sources.csv import read_csv

        assert settings.csv is not None
        directory = read_csv(
            settings.csv,
            mapping=settings.mapping,
            trace=trace,
            count=count,
            synced_names=synced_names,
        )
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
        synced_names=synced_names,
    )


def describe(settings: SourceSettings) -> str:
    """Where the source reads from, for reports: never a secret."""
    if settings.kind == "csv":
        assert settings.csv is not None
        files = [settings.csv.employees, settings.csv.departments]
        return "csv:" + ",".join(str(f) for f in files if f is not None)
    assert settings.ldap is not None
    return "ldap:" + ",".join(settings.ldap.urls)


def expects_status(settings: SourceSettings, read: Directory) -> bool:
    """Whether the source's settings have it say who is departed: a CSV file's status
    column named (read or not), an LDAP directory whose read has a status (its
    departed_filter, AD's flags: settings only, never the data)."""
    if settings.kind == "csv":
        assert settings.csv is not None
        return settings.csv.columns.status is not None
    return read.status_read


# ---------------------------------------------------------------- several sources


def read_source(
    settings: Settings,
    *,
    since: str | None = None,
    count: Count | None = None,
    synced: Mapping[str, SyncedEmployee] | None = None,
    synced_names: Mapping[str, str] | None = None,
) -> Directory:
    """The settings' source read: [source] as it is, or every [[sources]] entry joined
    (``synced``: the snapshot's people, see syncd.plan.join.join; ``synced_names``: see
    ``read_directory``).

    Several sources are read in full each time (``since`` applies to one LDAP source)."""
    if settings.source is not None:
        return read_directory(settings.source, since=since, count=count, synced_names=synced_names)
    return read_joined(settings, count=count, synced=synced, synced_names=synced_names).directory


def read_joined(
    settings: Settings,
    *,
    count: Count | None = None,
    traces: Mapping[str, Tracer] | None = None,
    explain: bool = False,
    synced: Mapping[str, SyncedEmployee] | None = None,
    synced_names: Mapping[str, str] | None = None,
) -> Joined:
    """Each [[sources]] entry read as it would be alone, then joined (syncd.plan.join).

    A source that cannot be read stops the read, naming the source: nothing is planned
    from some sources' word alone, so nobody becomes a leaver for want of one. A source
    none of whose records holds its key is a settings error (ConfigError, exit 3) naming
    the source and the setting: a key field the source does not fill would set everyone
    aside, not join them."""
    join_settings = settings.join or JoinSettings()
    reads = []
    done = 0
    for source in settings.sources:

        def counted(n: int, before: int = done) -> None:
            if count is not None:
                count(before + n)

        try:
            directory = read_directory(
                source,
                trace=(traces or {}).get(source.name),
                count=counted,
                synced_names=synced_names,
            )
        except SourceError as exc:
            raise SourceError(f"source {source.name!r}: {exc}") from exc
        done += len(directory.employees)
        reads.append(
            SourceRead(
                source.name,
                directory,
                key=key_of(join_settings, source.name),
                required=source.role == "required",
                normalize=normalizing(join_settings, source.name),
                expects_status=expects_status(source, directory),
            )
        )
    try:
        return join(reads, join_rules(settings), explain=explain, synced=synced)
    except KeyNotHeld as exc:
        setting = key_setting(join_settings, exc.source)
        raise ConfigError(
            f"{setting} = {exc.key!r}: no record of source {exc.source!r} holds it (none of "
            f"its {exc.records} records has a value there): name the field that source "
            f"fills with the join key (join.keys.{exc.source}), or map it"
        ) from exc


def join_rules(settings: Settings) -> JoinRules:
    """The [join] settings as the join takes them: model fields, every source named."""
    join_settings = settings.join or JoinSettings()
    precedence = {
        FIELD_NAMES.get(name, name): deciders(join_settings, settings.sources, name)
        for name in join_settings.precedence
    }
    clear = frozenset(FIELD_NAMES.get(name, name) for name in join_settings.clear)
    return JoinRules(precedence=precedence, missing=join_settings.missing, clear=clear)


def source_kind(settings: Settings) -> str:
    """csv or ldap for one source; joined for several ([[sources]]: every read is full)."""
    return settings.source.kind if settings.source is not None else "joined"


def describe_sources(settings: Settings) -> str:
    """Where the settings' sources read from, for reports: never a secret."""
    if settings.source is not None:
        return describe(settings.source)
    return " + ".join(f"{s.name}={describe(s)}" for s in settings.sources)
