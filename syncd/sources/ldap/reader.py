"""One read: the OU tree (or department paths), the departed, then the people, and the new mark.

Identity is the immutable ``entryUUID`` (OpenLDAP) or ``objectGUID`` (AD), so a moved or
renamed entry is the same person or department. A read either returns a whole Directory
or raises SourceError naming the server and the step that failed.

Incremental reads (``since``): only people changed after the mark are read
(``modifyTimestamp`` or ``uSNChanged``; other domains of an AD forest by the Global
Catalog's own mark, see forest.py); for ``ou_tree`` every department is still read.
Deletions cannot be seen in a delta: only a full read finds leavers.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from syncd._gc import collection_paused
from syncd.config import LdapSource, PhotoSettings
from syncd.logs import register_secret
from syncd.mapping import Rules, SourceMapping
from syncd.model import Department, Directory, Employee, RejectedRow, build_directory
from syncd.sources import active_directory as ad
from syncd.sources._paths import DepartmentPaths
from syncd.sources._trace import Count, Tracer, counted
from syncd.sources.heads import with_heads
from syncd.sources.ldap.connection import Session, connect
from syncd.sources.ldap.dn import dn_key
from syncd.sources.ldap.forest import Forest, root_dse
from syncd.sources.ldap.groups import group_tags
from syncd.sources.ldap.mapping import PeopleReader, Placement
from syncd.sources.ldap.shape import (
    GENERALIZED_TIME,
    OPENLDAP_CHANGE_ATTRIBUTE,
    Shape,
    entry_id,
    parenthesized,
    value_problem,
)
from syncd.sources.ldap.tree import OuTree, ou_tree
from syncd.sources.ldap.values import one_value
from syncd.sources.ldap.wire import Search
from syncd.sources.photos import PhotoCheck, photo_attribute

log = logging.getLogger(__name__)


def read_ldap(
    settings: LdapSource,
    *,
    since: str | None = None,
    mapping: SourceMapping | None = None,
    trace: Tracer | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    count: Count | None = None,
    photos: PhotoSettings | None = None,
    synced_names: Mapping[str, str] | None = None,
) -> Directory:
    """A Directory of the OU tree (or department paths) and the people under ``users_base``.

    ``mapping``: the rules (source.mapping); ``trace`` is told of every person read;
    ``clock`` says when "now" is for account expiry; ``count`` how many people were read;
    ``photos``: read people's photos; ``synced_names``: see ``build_directory``.
    """
    password = settings.bind_password.get_secret_value() if settings.bind_password else None
    register_secret(password)
    rules = Rules(mapping) if mapping is not None and not mapping.empty else None
    attribute = photo_attribute(photos, settings) if photos is not None else None
    shape = Shape.from_settings(settings, rules, photo_attribute=attribute)
    forest = Forest(connect(settings, password), settings, password)
    try:
        # What a read returns lives on: frozen, the collector never goes over it (it
        # took a pass over every value made as soon as it was enabled again: 0.1 s at 100,000).
        with collection_paused(freeze=True):
            return _read(
                forest,
                settings,
                shape,
                since,
                _Read(clock().replace(microsecond=0), trace, count, photos, synced_names),
            )
    finally:
        forest.close()


@dataclass(frozen=True)
class _Read:
    now: datetime  # account expiry is checked against this moment
    trace: Tracer | None
    count: Count | None = None
    photos: PhotoSettings | None = None
    synced_names: Mapping[str, str] | None = None  # see build_directory


@dataclass(frozen=True)
class _Delta:
    """What a read selects, and what its new mark is made from."""

    changed_filter: str  # "" for a full read
    since: str | None  # the mark given, when it is used
    controller: str = ""  # AD: the domain controller read from
    usn_before: int | None = None  # AD: its highestCommittedUSN before the read
    expiry_checked: datetime | None = None  # AD: when the read that made the mark checked expiry
    catalog: ad.CatalogMark | None = None  # AD: the Global Catalog's own, from the mark


def _read(
    forest: Forest, settings: LdapSource, shape: Shape, since: str | None, read: _Read
) -> Directory:
    session = forest.session
    delta = _plan_delta(session, shape, since)
    forest.catalog_since = delta.catalog
    departed = _departed_ids(forest, settings, shape, delta.changed_filter)

    departments: list[tuple[str, Department]] = []
    rejected: list[RejectedRow] = []
    placement: Placement
    if settings.departments_from == "ou_tree":
        tree = ou_tree(forest, settings, shape, rejected)
        departments = tree.departments
        placement = tree
    else:
        placement = DepartmentPaths(settings.department_path_separator)

    now = ad.filetime(read.now)
    photos = PhotoCheck(read.photos, rejected) if read.photos is not None else None
    people = PeopleReader(
        shape, departed, placement, rejected, expired_before=now, trace=read.trace, photos=photos
    )
    started = time.monotonic()
    search = Search(
        step=f"search users under {settings.users_base}",
        base=settings.users_base,
        filter=shape.users_filter,
        attributes=shape.attributes,
        page_size=settings.page_size,
        changed=delta.changed_filter,
    )
    entries = counted(forest.entries(search), read.count)
    employees = [people.employee(dn, values) for dn, values in entries]
    if delta.changed_filter and shape.flavor == "active_directory":
        employees += _expired_since(forest, search, people, delta, now, {dn for dn, _ in employees})
    elapsed = time.monotonic() - started
    if isinstance(placement, DepartmentPaths):
        departments = placement.departments()
    people_read, problems = _with_groups_and_heads(
        forest,
        settings,
        shape,
        [(dn, e) for dn, e in employees if e is not None],
        (placement, departments, not delta.changed_filter),
    )
    cursor = _new_mark(shape, delta, people.highest_change, elapsed, read.now, forest.catalog_mark)
    directory = build_directory(
        departments,
        people_read,
        rejected=rejected,
        complete=not delta.changed_filter,
        source=_describe_source(session.url, settings.users_base),
        cursor=cursor,
        filtered=people.filtered,
        warnings=[*forest.warnings, *problems],
        one_read=True,
        unread=forest.unread,
        status_read=_reads_status(settings, shape),
        synced_names=read.synced_names,
        departments_from_people=settings.departments_from != "ou_tree",
    )
    log.info(
        "read %s from %s: %d departments, %d people, %d rejected, %d left out, mark %s",
        "all" if directory.complete else f"changes since {since}",
        session.url,
        len(directory.departments),
        len(directory.employees),
        len(directory.rejected),
        directory.filtered,
        cursor,
    )
    return directory


def _reads_status(settings: LdapSource, shape: Shape) -> bool:
    """Whether the read says who is departed: AD's account flags, or the departed_filter."""
    return (
        bool(settings.departed_filter)
        or shape.account_control_slot is not None
        or shape.expires_slot is not None
    )


def _with_groups_and_heads(
    forest: Forest,
    settings: LdapSource,
    shape: Shape,
    people_read: list[tuple[str, Employee]],
    where: tuple[Placement, list[tuple[str, Department]], bool],
) -> tuple[list[tuple[str, Employee]], list[str]]:
    """The people with the tags their groups give and the heads their departments name,
    and the problems the heads raise (``where``: the placement, the departments, whether
    the read is whole)."""
    placement, departments, whole = where
    problems: list[str] = []
    heads = isinstance(placement, OuTree) and bool(placement.heads or placement.problems)
    if not (settings.group_tags or heads):
        return people_read, problems
    by_dn = {dn_key(dn): e.id for dn, e in people_read}
    if settings.group_tags:
        people_read = _with_tags(people_read, group_tags(forest, settings, shape, by_dn))
    if heads:
        assert isinstance(placement, OuTree)
        people_read, problems = _with_heads(people_read, placement, by_dn, departments, whole)
    return people_read, problems


def _with_tags(
    people: list[tuple[str, Employee]], tags: dict[str, tuple[tuple[str, str], ...]]
) -> list[tuple[str, Employee]]:
    """Each person with the tags their groups give (none: no tags syncd sets)."""
    return [(dn, e._replace(tags=tags.get(e.id, ()))) for dn, e in people]


def _with_heads(
    people: list[tuple[str, Employee]],
    tree: OuTree,
    by_dn: dict[str, str],
    departments: list[tuple[str, Department]],
    complete: bool,
) -> tuple[list[tuple[str, Employee]], list[str]]:
    """``chief`` on the positions of the people the OUs name as their heads."""
    names = {d.id: d.name for _, d in departments}
    heads: dict[str, str] = {}
    problems = list(tree.problems)
    for department_id, head in tree.heads.items():
        person = by_dn.get(dn_key(head))
        if person is not None:
            heads[department_id] = person
        elif complete:
            problems.append(
                f"department {names.get(department_id, department_id)!r} ({department_id}): "
                f"its head {head} is not among the people read: no head is set there"
            )
    found, more = with_heads(people, heads, lambda d: names.get(d, d), complete=complete)
    return found, problems + more


def _expired_since(
    forest: Forest,
    search: Search,
    people: PeopleReader,
    delta: _Delta,
    now: int,
    seen: set[str],
) -> list[tuple[str, Employee | None]]:
    """AD, incremental read: the people whose account expired since the mark's read.

    An expiry passing changes nothing in the directory, so no change read finds it: this
    search does, for the window from the previous read's check (all expired accounts when
    the mark has no time) to now.
    """
    since = ad.filetime(delta.expiry_checked) if delta.expiry_checked else None
    expired = replace(
        search,
        step=f"search users whose account expired under {search.base}",
        filter=f"(&{search.filter}{ad.expired_filter(since, now)})",
        changed="",
    )
    return [people.employee(dn, v) for dn, v in forest.entries(expired) if dn not in seen]


def _describe_source(url: str, base: str) -> str:
    return f"{url.rstrip('/')}/{base}"  # an LDAP URL of the base (RFC 4516, unescaped)


def _plan_delta(session: Session, shape: Shape, since: str | None) -> _Delta:
    if shape.flavor != "active_directory":
        if since is None:
            return _Delta("", None)
        if not GENERALIZED_TIME.match(since):
            raise session.fail(
                "read changes", f"the mark {since!r} is not a generalized time (YYYYMMDDHHMMSSZ)"
            )
        return _Delta(f"({OPENLDAP_CHANGE_ATTRIBUTE}>={since})", since)

    controller, usn_before = root_dse(session)
    if usn_before is None:
        log.warning(
            "%s publishes no highestCommittedUSN: the mark will be the highest uSNChanged read",
            session.url,
        )
    if since is None:
        return _Delta("", None, controller, usn_before)
    try:
        previous = ad.UsnMark.parse(since)
    except ValueError as exc:
        raise session.fail("read changes", str(exc)) from exc
    if previous.controller != controller:
        # USNs are counted per controller: a mark from another one says nothing here.
        log.info(
            "the mark %s is from another domain controller: reading everything from %s",
            since,
            controller,
        )
        return _Delta("", None, controller, usn_before)
    return _Delta(
        previous.changed_filter(),
        since,
        controller,
        usn_before,
        previous.checked,
        previous.catalog,
    )


def _new_mark(
    shape: Shape,
    delta: _Delta,
    highest: str | None,
    elapsed: float,
    now: datetime,
    catalog: ad.CatalogMark | None,
) -> str | None:
    """The mark the next delta starts from; never earlier than the one given."""
    if shape.flavor == "active_directory":
        if delta.usn_before is not None:
            return str(ad.UsnMark(delta.usn_before, delta.controller, now, catalog))
        if highest is None:
            return delta.since
        return str(ad.UsnMark(int(highest), delta.controller, now, catalog))
    if highest is None:
        return delta.since
    # A paged read is no snapshot: an entry read early and changed later may carry an
    # older timestamp than one read at the end. Pulling the mark back by the read's own
    # duration makes the next delta re-read that window rather than miss it.
    mark = _minus_seconds(highest, math.ceil(elapsed) + 1)
    return max(mark, delta.since) if delta.since else mark


def _minus_seconds(generalized_time: str, seconds: int) -> str:
    moment = datetime.strptime(generalized_time[:14], "%Y%m%d%H%M%S") - timedelta(seconds=seconds)
    return moment.strftime("%Y%m%d%H%M%SZ")


def _departed_ids(
    forest: Forest, settings: LdapSource, shape: Shape, changed: str
) -> frozenset[str]:
    """Ids of the people ``departed_filter`` matches, evaluated by the server."""
    if not settings.departed_filter:
        return frozenset()
    id_slots = shape.fields["id"]
    search = Search(
        step="search departed users",
        base=settings.users_base,
        filter=f"(&{shape.users_filter}{parenthesized(settings.departed_filter)})",
        attributes=tuple(shape.attributes[slot] for slot in id_slots),
        page_size=settings.page_size,
        changed=changed,
    )
    ids: set[str] = set()
    for dn, values in forest.entries(search):
        try:
            # Several ids are no id: the people search rejects that person (values.py).
            named = zip(search.attributes, values, strict=False)
            raw = next((found for a, v in named if (found := one_value(v, a, "the id"))), None)
            if raw is None:
                continue
            ids.add(entry_id(raw, guid=shape.guid_ids))
        except ValueError as exc:  # UnicodeDecodeError included
            # One entry must not stop the read: the people search reads it again and
            # rejects it for the same id, with its username, so it is kept as it is.
            log.warning(
                "%s: %s: the id cannot be read (%s); the person is rejected",
                search.step,
                dn,
                value_problem(exc),
            )
    return frozenset(ids)
