"""Planning photos with plain values: digests against the snapshot, after the people's
creates and updates, for active people whose account is syncd's; nothing else is read."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from syncd.model import Employee, Photo, Position, State, build_directory
from syncd.plan import (
    Action,
    Plan,
    PlatformView,
    Policy,
    Snapshot,
    SyncedEmployee,
    employee_hash,
    plan,
)
from syncd.run.saved_plan import changes_fingerprint

NOW = 1_800_000_000_000


def photo(name: str) -> Photo:
    return Photo(f"digest-of-{name}", 100, "jpeg", f"photos/{name}.jpg")


def person(id: str, username: str, **kw: Any) -> Employee:
    return Employee(id, username, username.title(), (Position(None, primary=True),), **kw)


def planned(
    people: list[Employee],
    snapshot: Snapshot | None = None,
    deleted: frozenset[str] = frozenset(),
    **policy: Any,
) -> Plan:
    """The plan for these people; ``deleted``: syncd's people deleted on the platform."""
    directory = build_directory([], [(f"employees.csv:{n}", e) for n, e in enumerate(people, 2)])
    view = PlatformView(1, "Acme", complete_listing=True, deleted=deleted)
    return plan(directory, snapshot or Snapshot(), view, Policy(**policy), NOW)


def synced(people: list[Employee], photos: dict[str, str]) -> Snapshot:
    """What a sync of these people left, with these photo digests recorded."""
    employees = {
        e.id: SyncedEmployee(e.id, e.username, n, employee_hash(e, {}))
        for n, e in enumerate(people, 1000)
    }
    return Snapshot(employees=employees, photos=photos)


def photos_of(p: Plan) -> list[tuple[str, str, str]]:
    return [(c.display, c.hash, c.reason) for c in p.changes if c.action is Action.PHOTO]


def test_a_first_sync_sets_photos_after_the_people_are_made() -> None:
    people = [
        person("e1", "ann", photo=photo("ann")),
        person("e2", "bob"),  # no photo
        person("e3", "cat", photo=photo("cat")),
    ]
    p = planned(people)
    assert [c.action for c in p.changes] == [Action.CREATE] * 3 + [Action.PHOTO] * 2
    assert photos_of(p) == [
        ("ann", "digest-of-ann", "new account"),
        ("cat", "digest-of-cat", "new account"),
    ]
    change = p.changes[3]
    assert change.before is None
    assert change.after == {
        "photo": "digest-of-ann",
        "type": "jpeg",
        "size": 100,
        "from": "photos/ann.jpg",
    }
    assert change.message == (
        "set the photo of employee ann (photos/ann.jpg, JPEG, 100 bytes): new account"
    )


def test_photos_come_before_locks_and_unlocks() -> None:
    people = [
        person("e1", "ann", photo=photo("ann"), state=State.DEPARTED),
        person("e2", "bob", photo=photo("bob")),
    ]
    snapshot = synced(people, {})
    snapshot = replace(
        snapshot,
        employees={**snapshot.employees, "e2": snapshot.employees["e2"]._replace(locked=True)},
    )
    p = planned(people, snapshot)
    assert [(c.action, c.display) for c in p.changes] == [
        (Action.PHOTO, "bob"),  # ann is departed: her photo waits until she is back
        (Action.UNLOCK, "bob"),
        (Action.LOCK, "ann"),
    ]


def test_only_a_changed_digest_is_planned() -> None:
    people = [person("e1", "ann", photo=photo("ann")), person("e2", "bob", photo=photo("bob"))]
    p = planned(people, synced(people, {"e1": "digest-of-ann", "e2": "digest-of-old-bob"}))
    assert photos_of(p) == [("bob", "digest-of-bob", "changed in the source")]
    assert p.changes[0].before == {"photo": "digest-of-old-bob"}
    assert len(p.changes) == 1  # the person's own fields did not change: no update


def test_a_person_synced_without_a_photo_gets_a_first_one() -> None:
    people = [person("e1", "ann", photo=photo("ann"))]
    assert photos_of(planned(people, synced(people, {}))) == [
        ("ann", "digest-of-ann", "first photo")
    ]


def test_no_photo_in_the_source_leaves_the_platform_alone() -> None:
    people = [person("e1", "ann")]
    assert planned(people, synced(people, {"e1": "digest-of-ann"})).changes == ()


def test_departed_excluded_and_conflicting_people_get_no_photo() -> None:
    people = [
        person("e1", "ann", photo=photo("ann"), state=State.DEPARTED),
        person("e2", "svc-bot", photo=photo("bot")),
        person("e3", "cathy", photo=photo("cat")),  # was "cat": a username conflict
    ]
    snapshot = synced([people[0], people[1], people[2]._replace(username="cat")], {})
    p = planned(people, snapshot, exclude_usernames=("svc-*",))
    assert photos_of(p) == []


def test_a_new_account_gets_the_photo_again_whatever_was_recorded() -> None:
    people = [person("e1", "ann", photo=photo("ann"))]
    # Deleted on the platform: the account is made again.
    p = planned(people, synced(people, {"e1": "digest-of-ann"}), deleted=frozenset({"ann"}))
    assert [c.action for c in p.changes] == [Action.CREATE, Action.PHOTO]
    assert photos_of(p) == [("ann", "digest-of-ann", "new account")]


def test_the_photo_is_kept_out_of_the_persons_hash_and_in_the_plans_fingerprint() -> None:
    ann = person("e1", "ann")
    assert employee_hash(ann._replace(photo=photo("ann")), {}) == employee_hash(ann, {})
    one = planned([ann._replace(photo=photo("ann"))])
    other = planned([ann._replace(photo=photo("another"))])
    assert changes_fingerprint(one, Snapshot()) != changes_fingerprint(other, Snapshot())
