"""A state database that is not the platform's, or is behind it: refused, found, rebuilt.

- ``check_binding``: a state database is bound to the platform it was first used with
  (``snapshot.lineage``); pointed at another base URL, domain, organization or
  application it refuses, naming both, before anything is read or sent.
- ``check_continuity``: on the first complete read after a state database was made,
  restored from an older backup or lost (``lineage.checked`` is false), the platform's
  records that syncd wrote — departments with a ``serial_no``, people with an
  ``extension_id`` (both are source ids) — are compared with the snapshot and the source.
  Those neither knows would never be locked or removed (people who left while the state
  was lost): the run stops and says to run ``syncd state rebuild``. Records the source
  still names are adopted by the run as on any first run, so a state lost with nobody
  gone meanwhile needs nothing.
  A person is known by the source id their account carries, never by its username: the
  former holder of a recycled username is found too.
- ``behind``: ``last-run`` is a hint, not the evidence. On every read, an account the
  read came upon (changed since the database's people cursor, or in a whole listing)
  that carries a source id neither the database nor the source knows, placed in one of
  the database's departments, marks the database unchecked: a new host given the nightly
  backup, a state directory rolled back with its ``last-run``, a copy, are all compared
  with the platform before anything is planned.
- ``rebuild``: takes those records into the snapshot (with their lock state and the
  fields that tell who holds them) so the next sync plans them as leavers, the guards
  weighing them as usual (an adoption counts as held: ``syncd.plan.guards``).

What this cannot see: a platform record another program gave an ``extension_id`` or a
``serial_no`` looks like syncd's; ``syncd state accept`` records that the state is
complete as it is, and the people the check found stay the platform's, left alone and
never counted again (``lineage.others``). Run ids: a database rolled back together with
``last-run`` continues from its own newest run, so the ids given since may be given again
(nothing syncd holds outside the state directory records them).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from syncd import snapshot as store
from syncd.clock import now_ms
from syncd.config import PlatformSettings, Settings, platform_of
from syncd.errors import StateError
from syncd.model import Directory, identifying, serial_no
from syncd.plan import PlatformNode, PlatformView, Snapshot, rekeys
from syncd.plan.values import PlatformMark, matches_any
from syncd.platform import PlatformClient
from syncd.snapshot import sql
from syncd.spelling import look_alike
from syncd.survey.view import listing_parts

log = logging.getLogger("syncd.rebuild")

SHOWN = 10  # records named in an error message


# ---------------------------------------------------------------- binding


def identity_of(settings: PlatformSettings) -> dict[str, str]:
    """What makes a platform this one: where it is, the domain, organization, application."""
    url = urlsplit(settings.base_url.strip())
    base = f"{url.scheme.lower()}://{url.netloc.lower()}{url.path.rstrip('/')}"
    return {
        "base_url": base,
        "domain_id": settings.domain_id,
        "org_code": settings.org_code,
        "client_id": settings.client_id,
    }


def _shown(identity: Mapping[str, Any]) -> str:
    return ", ".join(
        f"{k} {identity.get(k)!r}" for k in ("base_url", "domain_id", "org_code", "client_id")
    )


def check_binding(state: store.StateStore, settings: Settings) -> None:
    """Bind the state database to the settings' platform on first use; refuse another."""
    current = identity_of(platform_of(settings))
    bound = state.bound_identity()
    if bound is None:
        state.bind(current)
        return
    if bound != current:
        raise StateError(
            f"state database {state.describe()} belongs to another platform: it was "
            f"used with {_shown(bound)}; the settings name {_shown(current)}. Synced here, "
            "every record it holds would be taken for deleted on this platform. For another "
            "platform, give it its own platform.state_dir; if it is the same platform under "
            "a new address or application, run `syncd state rebind`"
        )


def rebind(
    state: store.StateStore, settings: Settings
) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """Bind the state database to the settings' platform; (the old identity, the new)."""
    old = state.bound_identity()
    new = identity_of(platform_of(settings))
    state.bind(new)
    return old, new


# ---------------------------------------------------------------- what the state lost


@dataclass(frozen=True)
class Unknown:
    """Records syncd wrote on the platform that neither the snapshot nor the source knows."""

    departments: list[tuple[str, PlatformNode, str]]  # source id, node, name path
    people: list[dict[str, Any]]  # list-form employee records
    # People the snapshot holds whose account the platform has under another id (deleted
    # and made again since the backup was taken, perhaps under a new username): (source
    # id, the account's id now, its username, the fields that tell who holds it).
    moved: list[tuple[str, int, str, dict[str, str]]] = field(default_factory=list)
    # The same for departments: (source id, the node's id now).
    moved_departments: list[tuple[str, int]] = field(default_factory=list)
    # People whose source id the source holds under their username for another person
    # (the name and a mobile or work number differ: an HR number handed on): what differs.
    handed_on: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.departments or self.people)

    def lines(self) -> list[str]:
        lines = [
            f"department {path} (serial_no {node.serial_no})" for _, node, path in self.departments
        ]
        for r in self.people:
            state = " (locked)" if _locked(r) else ""
            other = self.handed_on.get(str(r.get("extension_id")))
            if other is not None:
                state += f" (the source's record under it shows another person: {other})"
            lines.append(
                f"person {r.get('username')} (extension_id {r.get('extension_id')}){state}"
            )
        return lines


_ESCAPED = re.compile(r"~([0-9A-F]{2})")


def source_id_of(serial: str) -> str:
    """The source id a ``serial_no`` was made from (``model.serial_no`` undone)."""
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), serial)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _locked(record: Mapping[str, Any]) -> bool:
    return record.get("locked") is True or record.get("disabled") is True


def unknown_records(
    client: PlatformClient,
    view: PlatformView,
    snapshot: Snapshot,
    directory: Directory,
    settings: Settings,
    others: Collection[str] = (),
) -> Unknown:
    """The platform's syncd-written records the snapshot and the source do not know
    (``view`` must list every node: a complete read's; ``snapshot`` must hold everyone),
    less the people ``syncd state accept`` said are another program's (``others``).

    A person is known by the source id their account carries, never by its username: an
    account whose ``extension_id`` names a record neither holds is unknown even where the
    source gives its username to someone else (a recycled username: that account is the
    former holder's, who left while the state database was behind); one whose source id
    the source holds under another username is unknown too (the person's account from
    before the source renamed them: a new account would be made beside it), and so is one
    whose source id and username the source holds for another person (``_handed_on``)."""
    assert not snapshot.partial, "a continuity check goes over everyone syncd holds"
    people: list[dict[str, Any]] = []
    moved: list[tuple[str, int, str, dict[str, str]]] = []
    handed_on: dict[str, str] = {}
    if view.employee_count > 0:
        records = _everyone(client, view, platform_of(settings).concurrency)
        people, moved, handed_on = _unknown_people(records, snapshot, directory, settings)
        people = [r for r in people if r["extension_id"] not in others]
    return Unknown(
        _unknown_departments(view, snapshot, directory),
        people,
        moved,
        _moved_departments(view, snapshot),
        handed_on,
    )


def _unknown_departments(
    view: PlatformView, snapshot: Snapshot, directory: Directory
) -> list[tuple[str, PlatformNode, str]]:
    """Nodes with a ``serial_no`` neither the snapshot nor the source knows, by name path."""
    known_serials = {serial_no(k) for k in (*snapshot.departments, *directory.departments)}
    paths = view.name_paths()
    departments = [
        (source_id_of(n.serial_no), n, paths.get(n.id, n.name))
        for n in view.nodes.values()
        if n.serial_no and n.id != view.root_id and n.serial_no not in known_serials
    ]
    return sorted(departments, key=lambda d: d[2])


def _moved_departments(view: PlatformView, snapshot: Snapshot) -> list[tuple[str, int]]:
    """syncd's departments whose node is gone and made again under another id."""
    by_serial = {serial_no(k): d for k, d in snapshot.departments.items()}
    return [
        (by_serial[n.serial_no].source_id, n.id)
        for n in view.nodes.values()
        if n.serial_no in by_serial
        and n.id != by_serial[n.serial_no].node_id
        and by_serial[n.serial_no].node_id not in view.nodes  # gone, not a duplicate
    ]


def _marked(record: Mapping[str, Any]) -> tuple[str, str] | None:
    """A record's (extension_id, username), when it carries a source id: syncd's mark."""
    extension_id, username = record.get("extension_id"), record.get("username")
    if not isinstance(extension_id, str) or not extension_id or not isinstance(username, str):
        return None
    return extension_id, username


def _unknown_people(
    records: Iterable[dict[str, Any]],
    snapshot: Snapshot,
    directory: Directory,
    settings: Settings,
) -> tuple[list[dict[str, Any]], list[tuple[str, int, str, dict[str, str]]], dict[str, str]]:
    """The records whose source id neither the snapshot nor the source knows (excluded
    usernames aside), the snapshot's people whose account was made again, and what shows
    another person in the source's record under an account's id (``_handed_on``)."""
    known_ids = set(snapshot.employees)
    excluded = tuple(settings.sync.exclude.usernames)
    people: list[dict[str, Any]] = []
    # source id -> other accounts carrying it
    again: dict[str, list[tuple[int, str, dict[str, str]]]] = {}
    listed: set[object] = set()  # every account's id
    handed_on: dict[str, str] = {}
    for record in records:
        listed.add(record.get("id"))
        marked = _marked(record)
        if marked is None:
            continue
        extension_id, username = marked
        synced, account = snapshot.employees.get(extension_id), record.get("id")
        if synced is not None and isinstance(account, int) and account != synced.employee_id:
            again.setdefault(extension_id, []).append((account, username, identifying(record)))
        if extension_id in known_ids:
            continue
        if directory.names(extension_id, username):
            shown = _handed_on(extension_id, record, directory, settings.sync.same_person)
            if shown is None:
                continue
            handed_on[extension_id] = shown
        if not (excluded and matches_any(username, excluded)):
            people.append(record)
    people.sort(key=lambda r: str(r.get("username")))
    return people, _made_again(snapshot, again, listed), handed_on


def _handed_on(
    source_id: str, account: Mapping[str, Any], directory: Directory, accepted: Collection[str]
) -> str | None:
    """What shows another person than the ``account``'s (its fields) in the source's record
    under the account's own source id and username (the name differs, and a mobile or work
    number differs or none agrees, as an adoption weighs it: ``rekeys.adoption_conflict``),
    unless ``sync.same_person`` names the id; None if nothing does. An HR number and a
    username handed on to a new hire while the state database was behind: the account is
    its former holder's, who left, and the record's adoption is refused, so it is unknown."""
    e = directory.employees.get(source_id)
    if e is None or e.id in accepted:
        return None
    found = rekeys.evidence(e, account)
    return found.describe() if found.not_the_one_written else None


def _made_again(
    snapshot: Snapshot,
    again: Mapping[str, list[tuple[int, str, dict[str, str]]]],
    listed: Collection[object],
) -> list[tuple[str, int, str, dict[str, str]]]:
    """The synced people whose account is gone from the platform while one other account,
    and only one, carries their source id: theirs, made again since the state database
    was written (under a new username too, when the source renamed them meanwhile), with
    the fields that tell who holds it now (``syncd.model.identifying``). Not when the old
    account is still there (the platform holds two), nor under a username another of
    syncd's people holds in any spelling: that one is weighed by the plan."""
    if not again:  # the usual check: nothing to look up (100,000 spellings at scale)
        return []
    employees = snapshot.employees
    held = {look_alike(e.username): k for k, e in employees.items()}
    found = []
    for source_id, accounts in again.items():
        if len(accounts) != 1 or employees[source_id].employee_id in listed:
            continue
        account, username, fields = accounts[0]
        if held.get(look_alike(username), source_id) == source_id:
            found.append((source_id, account, username, fields))
    return found


def follow_moved(
    state: store.StateStore, snapshot: Snapshot, unknown: Unknown
) -> dict[str, dict[str, str]]:
    """Point the snapshot at the accounts and nodes its records have now: a database
    restored from before one was deleted and made again kept the old id, which every lock,
    unlock and update would be sent to, and fail, run after run. Their hash is emptied,
    so the next plan compares them with the source (as after an adoption). The fields
    syncd remembers writing stay (drift is put back from them), and the fields that tell
    who holds each account now, by its username, are returned for this run's plan
    (``PlatformView.followed``): the database's may be another person's, given the key
    since (an HR number handed on), and the account's own outweigh them
    (syncd.plan.holds)."""
    moved, nodes = unknown.moved, unknown.moved_departments
    if not moved and not nodes:
        return {}
    with state.write() as conn:
        if moved:
            sql.run(
                conn,
                "UPDATE employees SET employee_id = ?, username = ?, hash = '' WHERE source_id = ?",
                [(account, username, k) for k, account, username, _ in moved],
            )
        if nodes:
            sql.run(
                conn,
                "UPDATE departments SET node_id = ?, hash = '' WHERE source_id = ?",
                [(node, source_id) for source_id, node in nodes],
            )
    if isinstance(snapshot.departments, dict):
        for source_id, node in nodes:
            synced = snapshot.departments[source_id]
            snapshot.departments[source_id] = synced._replace(node_id=node, hash="")
    everyone = snapshot.employees  # everyone's: a continuity check loads them all
    if isinstance(everyone, dict):
        for source_id, account, username, _ in moved:
            everyone[source_id] = everyone[source_id]._replace(
                employee_id=account, username=username, hash=""
            )
    log.warning(
        "state database %s: %d people's accounts and %d departments' nodes were made again "
        "since it was written; following them: %s",
        state.describe(),
        len(moved),
        len(nodes),
        ", ".join(f"{source_id} (id {new})" for source_id, new, *_ in [*moved, *nodes][:SHOWN]),
    )
    return {username: fields for _, _, username, fields in moved}


def _everyone(
    client: PlatformClient, view: PlatformView, concurrency: int
) -> Iterable[dict[str, Any]]:
    """Every employee record the organization lists, in parts (``view.listing_parts``)."""
    parts = listing_parts(view.root_id, view.nodes)
    seen: set[object] = set()
    with ThreadPoolExecutor(max(concurrency, 1), thread_name_prefix="listing") as pool:
        for records in pool.map(lambda p: client.employee_listing(p[0], recursion=p[1]), parts):
            for record in records:
                if record.get("deleted") is True or record.get("id") in seen:
                    continue
                seen.add(record.get("id"))
                yield record


def check_continuity(
    state: store.StateStore,
    client: PlatformClient,
    view: PlatformView,
    snapshot: Snapshot,
    directory: Directory,
    settings: Settings,
) -> dict[str, dict[str, str]]:
    """On a complete read of an unchecked state database: stop if the platform holds
    records syncd wrote that would be orphaned, else record the check as passed; what
    tells who holds each account followed (``follow_moved``), by username."""
    if not directory.complete or not view.complete_listing:
        return {}  # an incremental read makes nobody a leaver: checked at the next full read
    others = state.others()
    unknown = unknown_records(client, view, snapshot, directory, settings, others)
    if unknown:
        state.set_found([r["extension_id"] for r in unknown.people])
        lines = unknown.lines()
        more = f" and {len(lines) - SHOWN} more" if len(lines) > SHOWN else ""
        raise StateError(
            f"state database {state.describe()} is behind the platform: it holds "
            f"{_count(len(unknown.people), 'person', 'people')} and "
            f"{_count(len(unknown.departments), 'department', 'departments')} that "
            "syncd wrote (their extension_id or serial_no is a source id), which neither this "
            "state database nor the source knows (or whose source id the source gives another "
            "person now): people who left while the state database "
            "was lost or restored from an older backup, who would stay active for ever. "
            f"{'; '.join(lines[:SHOWN])}{more}. See them with `syncd state rebuild --dry-run`, "
            "take them back with `syncd state rebuild` (the next sync locks or removes them "
            "as leavers); if another program wrote them, `syncd state accept` leaves them alone"
        )
    followed = follow_moved(state, snapshot, unknown)
    state.set_checked("checked", now_ms())
    return followed


# ---------------------------------------------------------------- rebuilding


def adopt(state: store.StateStore, unknown: Unknown, at_ms: int) -> None:
    """Take the unknown records into the snapshot: departments by serial_no, people by
    extension_id, with their lock state; hashes empty, so the next run compares them."""
    departments = [
        {
            "source_id": source_id,
            "node_id": node.id,
            "name_path": path,
            "fields": "{}",
            "hash": "",
            "adopted": True,
        }
        for source_id, node, path in unknown.departments
    ]
    people = [
        {
            "source_id": r["extension_id"],
            "username": r["username"],
            "employee_id": r.get("id"),
            "fields": _identifying(r),
            "hash": "",
            "adopted": True,
            "locked": _locked(r),
            # Locked and gone from the source: a leaver whose grace period starts again now
            # (the lock's own date was lost with the state).
            "lock_reason": "missing" if _locked(r) else None,
            "locked_since": at_ms if _locked(r) else None,
        }
        for r in unknown.people
    ]
    with state.transaction() as tx:
        tx.upsert_departments(departments)
        tx.upsert_employees(people)
    state.set_checked("rebuilt", at_ms)


def _identifying(record: Mapping[str, Any]) -> str:
    """The fields of a taken-back account that tell who holds it (name, mobile, work
    number), kept as if syncd had written them: a new record given its username is then
    weighed against the account's own holder (``syncd.plan.rekeys``), not against nothing."""
    return json.dumps(identifying(record), ensure_ascii=False, sort_keys=True)


def rebuild_state(settings: Settings, *, dry_run: bool) -> Unknown:
    """``syncd state rebuild``: read the source (completely) and the platform, and take
    into the state database what syncd wrote there that it lost (unless ``dry_run``)."""
    from syncd.run.lock import run_lock
    from syncd.sources import read_source

    with store.StateStore.open(settings.database, settings.database_url) as state:
        check_binding(state, settings)
        with (
            run_lock(settings.state_dir, "state rebuild"),
            PlatformClient(platform_of(settings), state.tokens) as client,
        ):
            directory = read_source(settings)
            if not directory.complete:
                raise StateError(
                    "the source read was not complete (rejected rows that name nobody, or an "
                    "incremental read): a rebuild needs a complete read to tell who left"
                )
            snapshot = state.load_snapshot()
            view = platform_view(client)
            unknown = unknown_records(client, view, snapshot, directory, settings)
            if not dry_run:
                adopt(state, unknown, now_ms())
                follow_moved(state, snapshot, unknown)
                log.info(
                    "state rebuilt: %d departments and %d people taken back from the platform",
                    len(unknown.departments),
                    len(unknown.people),
                )
        return unknown


def platform_view(client: PlatformClient) -> PlatformView:
    """The root and every node: what a rebuild compares the snapshot with."""
    root = client.root()
    nodes = {
        n.id: PlatformNode(
            n.id, n.name or "", n.parent_org_id, n.serial_no or None, employees=n.employee_count
        )
        for n in client.page_orgs()
    }
    return PlatformView(
        root.id, root.name or "", nodes, True, employee_count=root.all_employee_count or 0
    )


def accept(settings: Settings) -> int:
    """``syncd state accept``: the state database is complete as it is (the people the
    last check found are another program's or installation's, stay the platform's, and
    are never counted as syncd's again). How many people were accepted so."""
    with store.StateStore.open(settings.database, settings.database_url) as state:
        return state.accept_found(now_ms())


# ---------------------------------------------------------------- evidence, every read


def behind(
    state: store.StateStore,
    view: PlatformView,
    snapshot: Snapshot,
    directory: Directory,
    settings: Settings,
) -> list[PlatformMark]:
    """Evidence that the state database is behind the platform, whatever ``last-run`` says
    (a database copied to a new host without it, or rolled back with it): accounts the
    read came upon (changed since the database's people cursor, or in a whole listing:
    ``view.marked``) placed in a department the database holds, carrying a source id the
    source does not know, and not accepted as another's, that the database either holds
    no record of, or holds under another username whose account was deleted (the account
    was made again under a new one); or carrying a source id and username the source
    gives another person now (``_handed_on``), that the database holds no record of.
    Found, the database is marked unchecked, so a complete read compares it with the
    platform before anything is planned (``check_continuity``: it follows an account made
    again); none found, nothing is written."""
    ours = {d.node_id for d in snapshot.departments.values() if d.node_id is not None}
    ours.discard(view.root_id)  # another program's people are placed at the root too
    excluded, accepted = tuple(settings.sync.exclude.usernames), settings.sync.same_person
    candidates = [
        m
        for m in view.marked
        if not _named(m, directory, accepted)
        and ours.intersection(m.org_ids)
        and not (excluded and matches_any(m.username, excluded))
    ]
    if not candidates:
        return []
    unknown = state.unknown_ids({m.extension_id for m in candidates})
    unknown -= state.others()
    found = [m for m in candidates if m.extension_id in unknown]
    again = [m for m in candidates if _made_again_as(snapshot, view, m)]
    if found or again:
        told = [f"no record of {_marks(found)}"] if found else []
        told += [f"an old username for {_marks(again)}"] if again else []
        log.warning(
            "state database %s is behind the platform: it holds %s, placed in its "
            "departments; it is compared with the platform before anything is planned",
            state.describe(),
            " and ".join(told),
        )
        state.set_unchecked()
    return [*found, *again]


def _named(mark: PlatformMark, directory: Directory, accepted: Collection[str]) -> bool:
    """Whether the source names the marked account: holds its source id under its username,
    for the person it shows (``_handed_on``)."""
    return directory.names(mark.extension_id, mark.username) and not _handed_on(
        mark.extension_id, mark.identifying, directory, accepted
    )


def _made_again_as(snapshot: Snapshot, view: PlatformView, mark: PlatformMark) -> bool:
    """Whether the database holds the mark's source id under another username whose
    account was deleted on the platform: the account made again since, under a username
    the source gave meanwhile."""
    synced = snapshot.employees.get(mark.extension_id)
    if synced is None or synced.username == mark.username:
        return False
    return synced.username in view.deleted


def _marks(marks: Sequence[PlatformMark]) -> str:
    return ", ".join(f"{m.username} (extension_id {m.extension_id})" for m in marks[:SHOWN])
