"""A changed username: the platform cannot rename an account, so a synced person whose
username the source changed is a conflict, or their old account is replaced."""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncd.model import Employee, Kind, State
from syncd.plan.actions import Action
from syncd.plan.holds import hold, may_be_hidden
from syncd.plan.rekeys import claimed_while_read, evidence
from syncd.plan.values import Note, SyncedEmployee, matches_any
from syncd.spelling import difference, look_alike, shown_pair

if TYPE_CHECKING:
    from syncd.plan.employees import EmployeePlanner


def username_changed(planner: EmployeePlanner, e: Employee, synced: SyncedEmployee) -> None:
    """A synced person whose username the source changed: the platform cannot rename an
    account, so a conflict by default, or the old account removed and a new one made
    (``sync.username_change = "remove_and_create"``)."""
    changed = "username changed in the source from {} to {}".format(
        *shown_pair(synced.username, e.username)
    )
    if (taker := planner.reclaimed(synced)) is not None:
        # The account goes to the row that shows its person (re-keyed there, as planned
        # for that row): nothing is sent for this one until it has an account of its own.
        planner.untouched.add(e.id)
        planner.notes.append(_handed_back(planner, e, synced, taker, changed))
        return
    if e.state is State.DEPARTED:
        # Replacing a departed person's account would remove it, and a new account is
        # never made for someone departed: the old one stays, locked, until they return.
        if not synced.locked and _spared(planner, e, synced):
            return
        planner.notes.append(
            Note(
                "skipped",
                e.id,
                f"{changed}: departed, so the old account stays under its username, locked",
            )
        )
        _keep_under_old_username(planner, e, synced)
        return
    holder = planner.synced_holder(e.username)
    if holder is not None and holder.source_id != e.id:
        # Its account is another person's until that record gives the username up.
        planner.notes.append(
            Note(
                "conflict",
                e.id,
                f"{changed}, which is synced for source id {holder.source_id}: the old "
                "account is left alone until the other record gives the username up",
            )
        )
        return
    if look_alike(synced.username) == look_alike(e.username):
        # Only letter case or invisible characters differ: the same username to a person's
        # eye, so never a new account, even under remove_and_create (one key per person).
        planner.notes.append(
            Note(
                "conflict",
                e.id,
                f"{changed}, which differs only in {difference(synced.username, e.username)}: "
                "the platform matches usernames exactly and a look-alike is never made a "
                "second account; the old account is left alone until the source spells it "
                "as before",
            )
        )
        return
    if e.id in planner.held:
        hold(planner, e, synced)  # another person given the key: syncd.plan.holds
        return
    # Weighed as the updates are: a record showing another person is no rename.
    planner.username_changes.append((e, synced.username))
    if planner.policy.username_change != "remove_and_create":
        planner.notes.append(
            Note(
                "conflict",
                e.id,
                f"{changed}: the platform cannot rename an account; the old account is left "
                'alone (set sync.username_change = "remove_and_create" to replace it)',
            )
        )
        return
    if edge := _moved_edge(synced.username, e.username, planner.directory.username_edges):
        # A line break moved across the row's edge reads its first or last field so: the
        # row is still its person's, the username is not (the row before or after it took
        # or gave the rest).
        planner.notes.append(
            Note(
                "conflict",
                e.id,
                f"{changed}, which is the old one with characters cut or added at its {edge}, "
                f"and the username is the {FIELD[edge]} field of its row: a line break moved "
                "across the row's edge reads it so. The old account is not replaced on this "
                "row's word and is left alone (if the change is real, delete the old account "
                "on the platform: an account is then made under the new username)",
            )
        )
        return
    shown = planner.drift.found(synced)
    if shown is not None and planner.not_theirs(synced, shown):
        return  # the account under the old username is another record's, by the platform
    if (found := planner.claimed(synced)) is not None:
        # An active row under another id may be this account's person (rows under each
        # other's ids): replacing the account would remove theirs.
        planner.notes.append(claimed_while_read(e, synced, *found, departed=False))
        return
    if planner.rejected_holds(synced, f"has a row giving the username {e.username}", None):
        return  # a rejected row under another id may be this account's person
    excluded = planner.policy.exclude_usernames
    if excluded and matches_any(synced.username, excluded):
        # Replacing the account would remove one the settings protect.
        planner.notes.append(
            Note(
                "skipped",
                e.id,
                f"{changed}: the old account is excluded by settings, so it is neither "
                "removed nor replaced",
            )
        )
        return
    # Removed before the new account is made: its email and mobile must be free again.
    planner.replaced.append(
        planner.change(Action.REMOVE, None, synced, reason=f"username changed to {e.username}")
    )
    wanted = planner.hash(e)
    planner.upserts.append(
        planner.change(
            Action.CREATE,
            e,
            None,
            hash=wanted,
            reason=f"username changed from {shown_pair(synced.username, e.username)[0]}",
        )
    )


FIELD = {"start": "first", "end": "last"}  # the username's field at each edge of its row


def _moved_edge(old: str, new: str, edges: frozenset[str]) -> str | None:
    """The edge of its rows a username is at (``Directory.username_edges``) where the new
    one is the old with characters cut or added (in any letter case or normalization), as
    a moved line break reads it: "user2" as "ser2" or "activeuser2" at the start, as
    "use" or "user2E" at the end. None as a rule."""
    if not edges:
        return None
    short, long = sorted((look_alike(old), look_alike(new)), key=len)
    if "start" in edges and long.endswith(short):
        return "start"
    return "end" if "end" in edges and long.startswith(short) else None


def _keep_under_old_username(planner: EmployeePlanner, e: Employee, synced: SyncedEmployee) -> None:
    """A departed person's account, kept under the username syncd wrote though the row
    gives another (the platform cannot rename an account, and nobody departed gets a new
    one): planned as anyone synced is, under that username. So it is locked, and its other
    fields follow the row: a mobile or an e-mail address the row gave up is freed for
    whoever the source gives it now, rather than held by a locked account for good. Only
    where the row bears the name syncd wrote: a row that gives another username and
    another name may be anyone's under a wrong id (a misplaced id, an HR number handed
    on), so nothing of it is written, and the account is only locked (again, if unlocked
    on the platform)."""
    found = planner.drift.found(synced)
    if found is not None and planner.not_theirs(synced, found):
        return  # nothing is sent through another record's account, not even a lock
    kept = e._replace(username=synced.username)
    if "name" not in evidence(e, planner.snapshot.written(Kind.EMPLOYEE, synced.source_id)).agree:
        planner.plan_lock_state(kept, synced.locked, synced, found)
        return
    planner.plan_synced(kept, synced)


def _spared(planner: EmployeePlanner, e: Employee, synced: SyncedEmployee) -> bool:
    """Whether a departed row under the id of an active account, giving another username,
    leaves the account as it is: an active row under another id may be its person (rows
    under each other's ids); or, unless the row shows the person syncd wrote there by a
    re-key's evidence (the name and a mobile or work number agree, none differs: a
    namesake's row is not evidence), the account's person is weighed as anyone missing
    is: a rejected row may be theirs, or rows rejected may hide anyone's."""
    if (found := planner.claimed(synced)) is not None:
        planner.notes.append(claimed_while_read(e, synced, *found, departed=True))
        planner.departed_kept += 1
        return True
    written = planner.snapshot.written(Kind.EMPLOYEE, synced.source_id)
    return not evidence(e, written).same_person and (
        planner.rejected_holds(
            synced, f"has a departed row giving the username {e.username}", "departed"
        )
        or may_be_hidden(planner, e, synced)
    )


def _handed_back(
    planner: EmployeePlanner, e: Employee, synced: SyncedEmployee, taker: Employee, changed: str
) -> Note:
    written = planner.snapshot.written(Kind.EMPLOYEE, synced.source_id)
    return Note(
        "skipped",
        e.id,
        f"{changed}, and the row shows another person than the one syncd wrote for "
        f"{e.id} ({evidence(e, written).describe()}), while the row of source id {taker.id} "
        f"shows that person ({evidence(taker, written).describe()}): the account "
        f"{synced.username} is re-keyed to {taker.id}, and {e.id} gets an account of its "
        "own at the next run",
    )
