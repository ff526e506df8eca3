"""Adopting a platform account: only on evidence that names the person.

- By another key on a first run (``sync.match_by``: e-mail, mobile, work number): the one
  platform account holding a person's value is theirs, unless its name, mobile or work
  number shows another person (``syncd.plan.rekeys.adoption_conflict``: a match column
  shifted by a row); a value two hold is a conflict.
- Evidence over memory (``syncd.plan.rekeys.marked_for``): an account under a username
  syncd holds for another record that carries this record's source id is this record's.
- Evidence over memory (``claimed_elsewhere``): an account whose ``extension_id`` names
  another source record (a former holder of a recycled username, hired and gone while the
  state database was restored from a backup; another installation's person on a shared
  platform), or whose username syncd's history holds for another source id, is never
  adopted, whatever the username says: adopting it would hand that person's account, with
  its history, to someone else. The conflict is reported and nobody is changed, as Entra
  Connect's "soft match" refuses an object whose immutable id names another.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from syncd.model import Employee, match_index, match_value
from syncd.plan.actions import Action
from syncd.plan.unique_values import UNIQUE
from syncd.plan.values import Note, PlatformEmployee, PlatformPerson

if TYPE_CHECKING:
    from syncd.plan.employees import EmployeePlanner


def adopted_by_key(planner: EmployeePlanner, e: Employee) -> bool:
    """Adopt the one platform account holding this person's ``sync.match_by`` value (a
    first run); a value two people or two accounts hold is a conflict. Whether the
    person was dealt with here (adopted, or in a conflict)."""
    key = planner.policy.match_by
    value = match_value(key, getattr(e, key))
    if value is None:
        return False
    if planner.source_index is None:
        planner.source_index = match_index(planner.directory, key)
    sharing = planner.source_index.get(value, ())
    accounts = planner.view.by_key.get(value, ())
    if len(sharing) > 1 or len(accounts) > 1:
        names = ", ".join(a.username for a in accounts)
        holders = (
            f"{len(sharing)} people in the source"
            if len(sharing) > 1
            else f"{len(accounts)} accounts on the platform ({names})"
        )
        planner.notes.append(
            Note(
                "conflict",
                e.id,
                f"{e.username}: {holders} hold {key} {value}: neither adopted nor created "
                "until it is unique",
            )
        )
        return True
    if not accounts:
        return False
    account = accounts[0]
    if not planner.may_adopt(e, account, key):
        return True
    pinned = e._replace(username=account.username)
    before = {**held_before(account), "matched_by": key}
    planner.upserts.append(
        planner.change(
            Action.UPDATE,
            pinned,
            None,
            hash=planner.hash(pinned),
            target_id=account.id,
            reason=f"adopting the platform's account {account.username} (matched by {key})",
            platform_before=before,
        )
    )
    planner.plan_lock_state(pinned, account.locked, None, target_id=account.id)
    return True


def platform_person(found: PlatformEmployee) -> PlatformPerson:
    """An account read because it changed on the platform, as adoption weighs one."""
    fields = found.fields
    return PlatformPerson(
        found.id,
        found.username,
        found.locked,
        email=fields.get("email"),
        mobile=fields.get("mobile"),
        sn=fields.get("sn"),
        extension_id=found.extension_id,
        name=fields.get("name"),
    )


def held_before(account: PlatformPerson) -> dict[str, Any]:
    """What an adoption changes: the account as the platform holds it, with the unique
    values it holds (a mobile, an e-mail address), so that another person's update in the
    same run that wants one is sent after the adoption frees it (plan.unique_values)."""
    before: dict[str, Any] = {
        "username": account.username,
        "locked": account.locked,
        "employee_id": account.id,
    }
    for name in UNIQUE:
        if value := getattr(account, name):
            before[name] = value
    return before


def claimed_elsewhere(
    e: Employee, account: PlatformPerson, seen: Collection[str] = ()
) -> Note | None:
    """A conflict note when the evidence names someone else as this account's holder: its
    ``extension_id`` is another source id, or syncd's history (``seen``: the source ids it
    ever wrote under this username) holds it for another; None when nothing does."""
    other = account.extension_id
    if other is not None and other != e.id:
        return Note(
            "conflict",
            e.id,
            f"{e.username}: the platform's account {account.username} (id {account.id}) "
            f"carries extension_id {other}, another record's (a former holder of the "
            "username, or another installation's person): neither adopted nor created; "
            "nobody is changed until the evidence names the person",
        )
    others = sorted(set(seen) - {e.id})
    if other is None and others:
        return Note(
            "conflict",
            e.id,
            f"{e.username}: syncd wrote the platform's account {account.username} (id "
            f"{account.id}) for source id {', '.join(others)} before: a recycled username; "
            "neither adopted nor created; nobody is changed until the evidence names the person",
        )
    return None
