"""Planning people: creates, updates, adoptions, username changes, locks, leavers and drift.

Drift: a person syncd holds who was deleted on the platform is recreated if active in the
source (forgotten otherwise); one changed there (fields, positions, lock state) is put
back to the source's truth, and the report lists each drift with the platform's values
as the change's ``before``.
"""

from __future__ import annotations

from itertools import filterfalse
from typing import Any, Literal

from syncd.model import Directory, Employee, Kind, RejectedRow, State
from syncd.plan import rekeys
from syncd.plan.actions import Action
from syncd.plan.adoption import adopted_by_key, claimed_elsewhere, held_before, platform_person
from syncd.plan.departed_aside import lock_departed_aside
from syncd.plan.drift import PeopleDrift
from syncd.plan.fields import employee_hasher
from syncd.plan.holds import Holds, hold, someone_else_back
from syncd.plan.messages import department_names, unsure_rows
from syncd.plan.moved_breaks import spare_moved_statuses
from syncd.plan.schedule import EffectiveDates
from syncd.plan.usernames import username_changed
from syncd.plan.values import (
    ACCESS_KEPT,
    DAY_MS,
    ROW_REJECTED,
    Change,
    Note,
    PlatformEmployee,
    PlatformPerson,
    PlatformView,
    Policy,
    Snapshot,
    SyncedEmployee,
    access_kept,
    departed_rows_kept,
    kept_for_rows,
    matches_any,
    people,
    renumbered_kept,
)
from syncd.spelling import difference, look_alike, look_alikes, nfc, shown_pair

# When an account's lock agrees with the source, as (state read, locked as syncd knows
# it, locked on the platform): locked in both for someone departed, unlocked in both for
# someone active. Any other triple is a lock or an unlock to plan. A set, asked without
# a call of a function of its own: the planner asks it of everyone, every run.
LOCK_IN_STEP = frozenset({(State.DEPARTED, True, True), (State.ACTIVE, False, False)})


class EmployeePlanner:
    def __init__(
        self,
        directory: Directory,
        snapshot: Snapshot,
        view: PlatformView,
        policy: Policy,
        notes: list[Note],
        now_ms: int,
        holds: Holds | None = None,
    ) -> None:
        self.directory = directory
        # Updates that would hand an account to another person: not made (syncd.plan.holds).
        self.held = holds.held if holds is not None else {}
        self.held_written = holds.written if holds is not None else {}
        # Records whose username changed, left a conflict, weighed as the updates are, with
        # the username of the account under their key (Draft.username_changes).
        self.username_changes: list[tuple[Employee, str]] = []
        # People for whom nothing is sent through the account under their username (held,
        # someone else back, the account not theirs): not even a photo (plan_photos).
        self.untouched: set[str] = set()
        self.snapshot = snapshot
        self.view = view
        self.policy = policy
        self.notes = notes
        self.now_ms = now_ms
        self.replaced: list[Change] = []  # old accounts of changed usernames, removed first
        self.never_synced_departed = 0
        # People the source says have left whose usernames' accounts are not theirs
        # (not_theirs): neither locked nor removed, so they keep their access.
        self.access_kept = 0
        # People missing from the source kept active for a rejected row that may be theirs
        # (rejected_holds): they may have left, and keep their access until it is fixed.
        self.kept_for_rows = 0
        # Departed rows under the ids of people an active row may show elsewhere: nobody
        # locked for them (usernames.username_changed), so whoever they are keeps access.
        self.departed_kept = 0
        # Departed records whose username a row under another id gives, maybe theirs under
        # a new id (renumbered): nobody locked for them, so they keep access.
        self.renumbered_kept = 0
        self.upserts: list[Change] = []
        self.unlocks: list[Change] = []
        self.locks: list[Change] = []
        self.removes: list[Change] = []
        self._by_username: dict[str, SyncedEmployee] | None = None  # made when first needed
        self._holders: dict[str, tuple[Employee, ...]] | None = None  # (source_holders)
        self.drift = PeopleDrift(snapshot, view)
        self.hash = employee_hasher(policy.extended_fields)
        self.names = department_names(directory, snapshot, view.root_name)
        self.weighed: set[str] = set()  # usernames whose platform record was looked at
        self.forgets: list[Change] = []  # deleted on the platform, not wanted back
        self.source_index: dict[str, tuple[str, ...]] | None = None  # match_by value -> ids
        self.removal_due: int | None = None  # the next grace period to end (Plan.removal_due)
        # Old records whose username a new source id holds but may not take over: leavers.
        self.released: set[str] = set()
        # Rejected rows by the look-alike key of their username, and whether they keep each
        # missing record they name as it is (rejected_holds): made when first needed.
        self._rejected: dict[str, tuple[RejectedRow, ...]] | None = None
        self._rejected_weighed: dict[str, bool] = {}
        # Active records syncd holds that give another username now, by its look-alike key
        # (claimed_holds): made when first needed.
        self._claims: dict[str, tuple[Employee, ...]] | None = None
        self.dates = EffectiveDates(policy, snapshot, now_ms)  # start and end dates

    def synced_holder(self, username: str) -> SyncedEmployee | None:
        """The synced record that holds this username in any spelling (syncd.spelling)."""
        if self._by_username is None:
            employees = list(self.snapshot.employees.values())
            keys = look_alikes([s.username for s in employees])
            self._by_username = dict(zip(keys, employees, strict=True))
        return self._by_username.get(look_alike(username))

    def change(
        self, action: Action, e: Employee | None, synced: SyncedEmployee | None, **kw: Any
    ) -> Change:
        key = e.id if e is not None else synced.source_id  # type: ignore[union-attr]
        username = e.username if e is not None else synced.username  # type: ignore[union-attr]
        target = synced.employee_id if synced is not None else None
        return Change(
            Kind.EMPLOYEE,
            action,
            key,
            username,
            e,
            target_id=kw.pop("target_id", target),
            extended_fields=self.policy.extended_fields,
            departments=self.names,
            **kw,
        )

    def run(self) -> tuple[list[Change], ...]:
        excluded, dated_before = self.policy.exclude_usernames, self.dates.held_dates()
        synced_of = self.snapshot.employees.get
        for e in self.directory.employees.values():
            if excluded and matches_any(e.username, excluded):
                continue
            synced = synced_of(e.id)
            if e.start_date or e.end_date or (dated_before and e.id in dated_before):
                dated = self.dates.effective(e, synced, self._taken)
                if dated is None:
                    continue  # a future hire: scheduled
                e = dated
            if synced is None:
                self._plan_new(e, self.synced_holder(e.username))
                continue
            if synced.matched_by is not None:
                # Adopted by another key: the account keeps the platform's username.
                e = e._replace(username=synced.username)
            self.plan_synced(e, synced)
        self._plan_leavers()
        lock_departed_aside(self)
        spare_moved_statuses(self)
        self._plan_unread_drift()
        self.dates.unread(self)
        if self.access_kept:
            self.notes.append(Note(ACCESS_KEPT, "", access_kept(self.access_kept)))
        if self.kept_for_rows:
            self.notes.append(Note(ACCESS_KEPT, "", kept_for_rows(self.kept_for_rows)))
        if self.departed_kept:
            self.notes.append(Note(ACCESS_KEPT, "", departed_rows_kept(self.departed_kept)))
        if self.renumbered_kept:
            self.notes.append(Note(ACCESS_KEPT, "", renumbered_kept(self.renumbered_kept)))
        if self.never_synced_departed:
            self.notes.append(
                Note(
                    "skipped",
                    "",
                    f"{people(self.never_synced_departed)} departed in the source "
                    "but never synced: not created",
                )
            )
        return self.replaced, self.upserts, self.unlocks, self.locks, self.removes, self.forgets

    def plan_synced(self, e: Employee, synced: SyncedEmployee) -> None:
        if synced.username != e.username and nfc(synced.username) == e.username:
            # The same username, synced in another normalization (NFD): the same account,
            # which keeps its spelling, since the platform matches usernames exactly.
            e = e._replace(username=synced.username)
        view = self.view  # as a rule, nobody was deleted or changed on the platform
        gone = bool(view.deleted) and self.drift.gone(synced)
        if synced.username != e.username and not gone:
            # A change of letter case too: the platform's import matches usernames exactly,
            # so an update would make a second account and leave the first one active.
            username_changed(self, e, synced)
            return
        if gone:
            self.weighed.add(synced.username)
            if synced.username != e.username:
                self._renamed_and_deleted(e, synced)
                return
            self._deleted_on_platform(e, synced)
            return
        found = self.drift.found(synced) if view.changed else None
        if found is not None and self.not_theirs(synced, found):
            return
        wanted = self.hash(e)
        if (
            not view.changed
            and wanted == synced.hash
            and (e.state, synced.locked, synced.locked) in LOCK_IN_STEP
        ):
            return  # as a rule: nothing changed, in the source or on the platform
        if synced.locked and wanted != synced.hash and someone_else_back(self, e, synced):
            return
        if e.id in self.held:
            hold(self, e, synced)
            return
        self._plan_update(e, synced, wanted, found)
        self.plan_lock_state(e, synced.locked, synced, found)

    def source_holders(self) -> dict[str, tuple[Employee, ...]]:
        """The source's records by the look-alike key of their username: made when a hold
        first needs it."""
        if self._holders is None:
            self._holders = {}
            for other in self.directory.employees.values():
                key = look_alike(other.username)
                self._holders[key] = (*self._holders.get(key, ()), other)
        return self._holders

    def unweighed_since(self) -> int | None:
        """The earliest change on the platform to one of syncd's people that was not weighed
        (see Plan.unweighed_since); excluded people are not syncd's to put back."""
        excluded = self.policy.exclude_usernames
        stamps = [
            found.last_modified
            for username, found in self.view.changed.items()
            if username not in self.weighed
            and found.last_modified is not None
            and not (excluded and matches_any(username, excluded))
        ]
        return min(stamps, default=None)

    def _plan_update(
        self, e: Employee, synced: SyncedEmployee, wanted: str, found: PlatformEmployee | None
    ) -> None:
        """An update when the source changed since syncd wrote, or the platform did."""
        if self.view.changed:
            self.weighed.add(synced.username)
        drift = self.drift.differences(synced, found) if found is not None else {}
        if not drift:
            if wanted != synced.hash:
                self.upserts.append(self.change(Action.UPDATE, e, synced, hash=wanted))
            return
        changed = ", ".join(drift)
        self.notes.append(
            Note("drift", e.id, f"{e.username}: {changed} changed on the platform; putting back")
        )
        self.upserts.append(
            self.change(
                Action.UPDATE,
                e,
                synced,
                hash=wanted,
                reason=f"drift: {changed} changed on the platform",
                platform_before=self.drift.before(synced, drift),
            )
        )

    def plan_lock_state(
        self,
        e: Employee,
        locked: bool,
        synced: SyncedEmployee | None,
        found: PlatformEmployee | None = None,
        **kw: Any,
    ) -> None:
        """Lock or unlock as the source says: ``locked`` is what syncd knows; ``found``,
        when the person changed on the platform, what the platform holds now."""
        there = locked if found is None else found.locked
        if (e.state, locked, there) in LOCK_IN_STEP:
            return
        if e.state is State.DEPARTED and synced is not None and self.renumbered(synced, there):
            return
        if e.state is State.DEPARTED:
            reason, why = self.dates.lock_reason(e.id) or ("departed in the source", None)
            kw.setdefault("lock_reason", why)
            if locked:
                reason += "; unlocked on the platform"
                self.relocking(e.id, e.username)
            self.locks.append(self.change(Action.LOCK, e, synced, reason=reason, **kw))
        else:
            reason = self.dates.unlock_reasons.get(e.id, "active in the source again")
            if not locked:
                reason = "locked on the platform; active in the source"
                self._drift_note(e.id, f"{e.username} was locked on the platform; unlocking")
            self.unlocks.append(self.change(Action.UNLOCK, e, synced, reason=reason, **kw))

    def _drift_note(self, key: str, message: str) -> None:
        self.notes.append(Note("drift", key, message))

    def relocking(self, key: str, username: str) -> None:
        """Tell that an account syncd holds locked was unlocked on the platform and is
        locked again."""
        self._drift_note(key, f"{username} was unlocked on the platform; locking again")

    def _deleted_on_platform(self, e: Employee, synced: SyncedEmployee) -> None:
        """Someone else deleted the account: made again if active, else let go of."""
        if e.state is State.DEPARTED:
            self._forget(synced, "deleted on the platform; departed in the source: not recreated")
            return
        self._drift_note(e.id, f"{e.username} was deleted on the platform: recreating the account")
        wanted = self.hash(e)
        self.upserts.append(
            self.change(Action.CREATE, e, None, hash=wanted, reason="deleted on the platform")
        )

    def _renamed_and_deleted(self, e: Employee, synced: SyncedEmployee) -> None:
        """Someone else deleted the account of a person the source renamed: there is
        nothing left to lock, rename or replace (a lock or a removal would fail at every
        run). The old record is let go of and the person planned as any record not synced
        yet: an account under the new username is weighed (adopted only on evidence:
        syncd may have made it before the state database was put back; another person's
        is a conflict), else made for someone active and never for someone departed."""
        if e.state is State.DEPARTED:
            self._deleted_on_platform(e, synced)  # let go of, never made again
        else:
            renamed = "username changed in the source from {} to {}".format(
                *shown_pair(synced.username, e.username)
            )
            self._forget(synced, f"deleted on the platform; {renamed}: planned as a new record")
        holder = self.synced_holder(e.username)  # their own old record, for a look-alike
        self._plan_new(e, None if holder and holder.source_id == synced.source_id else holder)

    def _forget(self, synced: SyncedEmployee, why: str) -> None:
        self._drift_note(synced.source_id, f"{synced.username}: {why}")
        self.forgets.append(self.change(Action.FORGET, None, synced, reason=why))

    def _plan_unread_drift(self) -> None:
        """People an incremental read did not return who changed or were deleted on the
        platform: put back as syncd last wrote them, which is the source's truth as far as
        it knows (recreated, unless departed)."""
        if self.directory.complete or not (self.view.changed or self.view.deleted):
            return
        for username in sorted(self.view.deleted):
            unread = self._unread(username)
            if unread is None:
                continue
            e, synced = unread
            self.weighed.add(username)
            if synced.locked and e.state is State.ACTIVE:  # a leaver, held locked
                self._forget(synced, "deleted on the platform while locked: not recreated")
            else:
                self._deleted_on_platform(e, synced)
        for found in self.view.changed.values():
            unread = self._unread(found.username)
            if unread is None:
                continue
            e, synced = unread
            if self.not_theirs(synced, found):
                continue
            self._plan_update(e, synced, synced.hash, found)
            if synced.locked and not found.locked:
                record = e if e.state is State.DEPARTED else None
                self.relocking(e.id, e.username)
                reason = "unlocked on the platform"
                self.locks.append(self.change(Action.LOCK, record, synced, reason=reason))
            elif found.locked and not synced.locked:
                self._drift_note(e.id, f"{e.username} was locked on the platform; unlocking")
                reason = "locked on the platform"
                self.unlocks.append(self.change(Action.UNLOCK, e, synced, reason=reason))

    def _unread(self, username: str) -> tuple[Employee, SyncedEmployee] | None:
        """A person syncd holds that the read did not return (read ones are planned with
        the rest), as syncd last wrote them."""
        synced = self.synced_holder(username)
        if synced is None or synced.username != username:
            return None
        excluded = self.policy.exclude_usernames
        if synced.source_id in self.directory.employees or (
            excluded and matches_any(username, excluded)
        ):
            return None
        e = self.drift.as_written(synced, self.policy.extended_fields)
        return None if e is None else (e, synced)

    def _plan_new(self, e: Employee, holder: SyncedEmployee | None) -> None:
        wanted = self.hash(e)
        if holder is not None:
            # The username belongs to a record syncd knows under another source id.
            read = holder.source_id in self.directory.employees
            if (read and self.reclaimed(holder) != e) or not self.directory.complete:
                self.notes.append(
                    Note(
                        "conflict",
                        e.id,
                        f"username {e.username} is already synced for source id "
                        f"{holder.source_id}; not changed until one of them gives it up",
                    )
                )
                return
            if holder.username != e.username and nfc(holder.username) == e.username:
                e = e._replace(username=holder.username)  # only normalized otherwise
                wanted = self.hash(e)
            if holder.username != e.username:
                # The platform matches usernames exactly: "Bob" would be a second account.
                theirs, ours = shown_pair(holder.username, e.username)
                self.notes.append(
                    Note(
                        "conflict",
                        e.id,
                        f"username {ours} differs only in "
                        f"{difference(holder.username, e.username)} from {theirs}, synced for "
                        f"source id {holder.source_id}: the "
                        "platform matches usernames exactly, so it cannot be the same account; "
                        "not changed until the source spells it as before",
                    )
                )
                # Not this record's account; whether its holder, gone from the source, is
                # a leaver is weighed as for the same spelling (syncd.plan.rekeys): a
                # look-alike username never keeps a former employee's access.
                if rekeys.weigh(e, holder, self.snapshot, self.view)[2]:
                    self.released.add(holder.source_id)
                return
            if not self._rekey(e, holder):
                if (marked := rekeys.marked_for(e, holder, self.view)) is not None:
                    self.adopt(e, platform_person(marked), wanted, f"it carries source id {e.id}")
                return
            # That source id is gone and this one took its place: the same account, re-keyed.
            self.upserts.append(
                self.change(
                    Action.UPDATE,
                    e,
                    holder,
                    hash=wanted,
                    reason=f"source id changed from {holder.source_id}",
                    previous_key=holder.source_id,
                )
            )
            self.plan_lock_state(e, holder.locked, holder)
            return
        if self.view.by_key and adopted_by_key(self, e):
            return
        person = self.view.people.get(look_alike(e.username))
        if person is not None and person.username != e.username:
            if nfc(person.username) == e.username:
                # The platform's account spells it in NFD: the same username, kept so.
                e = e._replace(username=person.username)
                wanted = self.hash(e)
            else:
                # The platform matches usernames exactly: sending this one would make a
                # second account beside the one that differs only in letter case or
                # invisible characters.
                theirs, ours = shown_pair(person.username, e.username)
                self.notes.append(
                    Note(
                        "conflict",
                        e.id,
                        f"the platform has an account '{theirs}', which differs from "
                        f"'{ours}' only in {difference(person.username, e.username)}: "
                        "neither adopted nor created",
                    )
                )
                return
        if person is None:
            if e.state is State.DEPARTED:
                self.never_synced_departed += 1
                return
            early = self.dates.created_early(self, e)  # a lock until the start day, if early
            self.upserts.append(self.change(Action.CREATE, e, None, hash=wanted, lock_reason=early))
            return
        self.adopt(e, person, wanted, "matched by username")

    def adopt(self, e: Employee, account: PlatformPerson, wanted: str, why: str) -> None:
        """Adopt the platform's account for ``e`` (``why``: what names it theirs) where that
        is safe (may_adopt), its lock brought in step with the record."""
        if not self.may_adopt(e, account):
            return
        self.upserts.append(
            self.change(
                Action.UPDATE,
                e,
                None,
                hash=wanted,
                target_id=account.id,
                reason=f"adopting the platform's account ({why})",
                platform_before=held_before(account),
            )
        )
        self.plan_lock_state(e, account.locked, None, target_id=account.id)

    def _taken(self, e: Employee) -> bool:
        """Whether an account syncd or the platform holds may be this person's (re-key,
        adoption): then nothing is made for them before their start day."""
        if self.view.by_key or self.synced_holder(e.username) is not None:
            return True
        return look_alike(e.username) in self.view.people

    def may_adopt(self, e: Employee, account: PlatformPerson, key: str = "username") -> bool:
        """Whether adopting this platform account, matched by ``key``, for ``e`` is safe:
        nothing it holds shows another person, and a locked one is adopted only where a
        mobile or work number shows it is theirs (syncd.plan.rekeys.adoption_conflict),
        departed or not (a departed record that adopted it would unlock it on coming back);
        and no account the evidence names another's holder of
        (``syncd.plan.adoption.claimed_elsewhere``). If not, a conflict note says why."""
        note = claimed_elsewhere(e, account, self.snapshot.seen.get(look_alike(e.username), ()))
        if note is None:
            note = rekeys.adoption_conflict(e, account, key)
        if note is not None:
            self.notes.append(note)
        return note is None

    def _rekey(self, e: Employee, holder: SyncedEmployee) -> bool:
        """Whether ``e`` takes over ``holder``'s account (see syncd.plan.rekeys); if not, a
        conflict note says why, and the holder may be a leaver."""
        taken, note, release = rekeys.weigh(e, holder, self.snapshot, self.view)
        if note is not None:
            self.notes.append(note)
        if release:
            self.released.add(holder.source_id)
        return taken

    def _plan_leavers(self) -> None:
        directory = self.directory
        if not directory.leavers_known:
            if directory.complete and (self.snapshot.employees or self.snapshot.departments):
                why = unsure_rows(directory.leavers_unknown_because())
                self.notes.append(
                    Note(
                        "leavers",
                        "",
                        "leavers not looked for and departments not deleted: some rejected rows "
                        "could not be identified or may hide other rows, or a part of the "
                        f"source was not read ({why}), so nobody and no department absent from "
                        "this read is treated as gone",
                    )
                )
            return
        protected = directory.rejected_keys(Kind.EMPLOYEE)
        rekeyed: set[str] | None = None  # made when someone is missing, if ever
        excluded = self.policy.exclude_usernames
        held = self.snapshot.employees
        # Those this read does not name, in the snapshot's order: picked out in C.
        for key in filterfalse(directory.employees.__contains__, held):
            synced = held[key]
            if rekeyed is None:
                rekeyed = self._rekeyed_usernames()
            folded = look_alike(synced.username)
            if synced.source_id in protected or self.rejected_holds(synced):
                # Deleted on the platform while the row is rejected: the record goes (nothing
                # is sent), and the person is made again once the row is read.
                if self.drift.gone(synced):
                    self._forget(synced, ROW_REJECTED)
                continue
            if folded in rekeyed and synced.source_id not in self.released:
                continue
            if self.claimed_holds(synced):
                continue
            if excluded and matches_any(synced.username, excluded):
                continue
            self.plan_leaver(synced)

    def rejected_holds(
        self,
        synced: SyncedEmployee,
        absent: str = rekeys.MISSING,
        tally: Literal["missing", "departed"] | None = "missing",
    ) -> bool:
        """Whether rejected rows that name this person's username (in any spelling) keep
        their record as it is (syncd.plan.rekeys.weigh_rejected); weighed once. The person
        is missing from the read, or ``absent`` says how else the read would let them go (a
        departed row under their id that gives another username, a row there showing
        another person or giving another username). An active account kept is counted
        (``tally``) for the note that sums them up: a leaver's note, missing or departed."""
        rows = self._rejected_giving(synced.username)
        if not rows:
            return False
        weighed = self._rejected_weighed.get(synced.source_id)
        if weighed is not None:
            return weighed
        held, note = rekeys.weigh_rejected(synced, rows, self.snapshot, absent)
        self._rejected_weighed[synced.source_id] = held
        if note is None:
            return held
        self.notes.append(note)
        if held and not synced.locked:
            self._count_kept(tally)
        return held

    def _rejected_giving(self, username: str) -> tuple[RejectedRow, ...]:
        """The rejected rows that give this username, in any spelling (indexed once)."""
        if self._rejected is None:
            self._rejected = self.directory.rejected_by_username()
        return self._rejected.get(look_alike(username), ())

    def renumbered(self, synced: SyncedEmployee, locked_there: bool) -> bool:
        """Whether a row set aside under another id that gives this leaver's username may be
        theirs under a new id (HR numbering a person anew and leaving the old record
        departed: a contractor made an employee, a rehire): unless its name, mobile and
        work number show two people (rekeys.weigh_rejected), nothing is locked for the
        departure, and while the account is unlocked (``locked_there``: on the platform)
        the run says so."""
        rows = self._rejected_giving(synced.username)
        others = tuple(r for r in rows if r.key != synced.source_id)
        if not others:
            return False
        held, note = rekeys.weigh_rejected(synced, others, self.snapshot, "departed")
        if held and note is not None:
            self.notes.append(note)
            self.renumbered_kept += not locked_there
        return held

    def _count_kept(self, tally: Literal["missing", "departed"] | None) -> None:
        """One more active account kept for a rejected row, for the note that sums up
        ``tally``'s kind of leaver (none: nobody would have been let go)."""
        if tally == "departed":
            self.departed_kept += 1
        elif tally == "missing":
            self.kept_for_rows += 1

    def claimed_holds(self, synced: SyncedEmployee) -> bool:
        """Whether an active record of another source id syncd holds, that now gives this
        missing person's username, keeps their record as it is (rekeys.claiming_row)."""
        found = self.claimed(synced, synced_only=True)
        if found is None:
            return False
        self.notes.append(rekeys.claimed_missing(synced, *found))
        if not synced.locked:
            self.kept_for_rows += 1
        return True

    def claimed(
        self, synced: SyncedEmployee, *, synced_only: bool = False
    ) -> tuple[Employee, rekeys.Evidence] | None:
        """An active record of another source id (``synced_only``: one syncd holds) that
        gives this person's username and may be their row (rekeys.claiming_row)."""
        if self._claims is None:
            self._claims = self._claimed_usernames()
        # Never the person's own record: it is listed only under another username's key.
        rows = tuple(
            e
            for e in self._claims.get(look_alike(synced.username), ())
            if not synced_only or e.id in self.snapshot.employees
        )
        return rekeys.claiming_row(synced, rows, self.snapshot) if rows else None

    def reclaimed(self, synced: SyncedEmployee) -> Employee | None:
        """The row of a source id syncd holds nothing under that takes over this person's
        account although their own id is read: the row under their id gives another
        username and shows another person than syncd wrote there, while this one gives
        the account's username and shows the person syncd wrote (a re-key taken as for
        anyone missing: ``rekeys.weigh``). The account follows the evidence; the
        row under their id gets an account of its own at the next run. None unless one
        such row alone does so, in a complete read (a duplicate may be unread otherwise)."""
        own = self.directory.employees.get(synced.source_id)
        if (
            own is None
            or not self.directory.complete
            or synced.source_id in self.policy.same_person
            or look_alike(own.username) == look_alike(synced.username)
        ):
            return None
        if self._claims is None:
            self._claims = self._claimed_usernames()
        rows = [
            e
            for e in self._claims.get(look_alike(synced.username), ())
            if e.id not in self.snapshot.employees and nfc(e.username) == nfc(synced.username)
        ]
        written = self.snapshot.written(Kind.EMPLOYEE, synced.source_id)
        if len(rows) != 1 or not rekeys.evidence(own, written).not_the_one_written:
            return None
        return rows[0] if rekeys.weigh(rows[0], synced, self.snapshot, self.view)[0] else None

    def _claimed_usernames(self) -> dict[str, tuple[Employee, ...]]:
        """Active records whose username is not the one syncd synced under their id (a new
        id's included), by the look-alike key of the username they give."""
        synced = self.snapshot.employees
        claims: dict[str, tuple[Employee, ...]] = {}
        for e in self.directory.employees.values():
            s = synced.get(e.id)
            if e.state is not State.ACTIVE or (s is not None and s.username == e.username):
                continue
            key = look_alike(e.username)
            if s is None or key != look_alike(s.username):
                claims[key] = (*claims.get(key, ()), e)
        return claims

    def not_theirs(self, synced: SyncedEmployee, found: PlatformEmployee) -> bool:
        """Whether the platform's account under a person's username is, by the evidence, not
        the account syncd holds for them: it carries another record's source id (a state
        database restored from before the username went to someone else, another
        installation's or program's account), or it is another account than the one syncd
        wrote, made again without a source id, whose name, mobile and work number do not
        show it is theirs (syncd.plan.rekeys: someone deleted theirs and gave the username
        to another). Then nothing is sent for the person through it, whatever the source
        says (no update, lock, unlock or removal: updates and removals go by username), and
        a conflict says so. The change stays unweighed, so the people's cursor stays before
        it and every run reads that evidence again until it changes (Plan.unweighed_since)."""
        why = self._someone_elses(synced, found)
        if why is None:
            return False
        self.untouched.add(synced.source_id)
        read = self.directory.employees.get(synced.source_id)
        if read is not None:
            where, spared = "is in the source", "neither updated, locked nor unlocked"
        else:
            where, spared = "is missing from the source", "neither locked nor removed"
        if (read is None and self.directory.complete) or (
            read is not None and read.state is State.DEPARTED
        ):
            self.access_kept += 1  # they left: whatever account is theirs stays as it is
        message = (
            f"source id {synced.source_id} {where}, but the platform's account "
            f"{synced.username} (id {found.id}) {why}: it is not the account syncd holds for "
            f"{synced.source_id}, so it is {spared} for it. The state database is behind the "
            "platform (restored from an older backup?) or another program wrote the account; "
            "`syncd state rebuild --dry-run` compares them"
        )
        self.notes.append(Note("conflict", synced.source_id, message))
        return True

    def _holder_of(self, synced: SyncedEmployee, found: PlatformEmployee) -> str | None:
        """The source id of another person whose account, by the evidence, is the one found
        under this person's username (another id than syncd wrote for them): one syncd holds
        in that very account, or one the source gives that username, whose mark it carries
        (adopted as on a first run). None: it may be theirs."""
        mark = found.extension_id
        if mark is None or not synced.another_account(found.id, mark):
            return None
        other = self.snapshot.employees.get(mark)
        if other is not None:
            return mark if other.employee_id == found.id else None
        return mark if self.directory.names(mark, found.username) else None

    def _someone_elses(self, synced: SyncedEmployee, found: PlatformEmployee) -> str | None:
        """What shows the account found under a person's username is someone else's, or None
        (see not_theirs)."""
        if found.extension_id == synced.source_id:
            return None
        if found.extension_id is not None:
            return f"carries source id {found.extension_id}"
        if synced.employee_id is None or found.id == synced.employee_id:
            return None  # the account syncd wrote: a source id cleared is drift
        written = self.snapshot.written(Kind.EMPLOYEE, synced.source_id)
        evidence = rekeys.compared(found.fields, written)
        if evidence.same_person:
            return None  # made again for them
        return (
            f"was made again (syncd wrote id {synced.employee_id}) without a source id, and "
            f"nothing in it shows it is theirs ({evidence.describe()})"
        )

    def _rekeyed_usernames(self) -> set[str]:
        """Usernames (as look-alike keys) held by source records syncd never synced: a missing
        record whose username is among them is being re-keyed (or is in a conflict), not
        gone. A username another synced record took over protects nobody."""
        synced = self.snapshot.employees
        return {
            look_alike(e.username) for e in self.directory.employees.values() if e.id not in synced
        }

    def plan_leaver(self, synced: SyncedEmployee, gone: str = "missing from the source") -> None:
        """Lock or remove a person gone from the source as the leaver policy says (``gone``:
        why they are, the changes' reason)."""
        found = self.drift.found(synced)
        if found is not None and (holder := self._holder_of(synced, found)) is not None:
            # Their username went to another's account since (a database put back from
            # before, then rebuilt): theirs is not on the platform under it, and nothing is
            # sent through the username, which names the other person's account.
            why = f"{gone}; {synced.username} is now {holder}'s account"
            self._forget(synced, why)
            return
        if found is not None and self.not_theirs(synced, found):
            return
        if self.view.changed:
            self.weighed.add(synced.username)
        if self.drift.gone(synced):
            self._forget(synced, f"{gone} and deleted on the platform")
            return
        policy = self.policy.leaver_policy
        if synced.locked and found is not None and not found.locked and policy != "remove":
            # Unlocked on the platform while syncd holds them locked as gone: lock again
            # (the grace period still runs from the first lock).
            self.relocking(synced.source_id, synced.username)
            reason = f"{gone}; unlocked on the platform"
            self.locks.append(self.change(Action.LOCK, None, synced, reason=reason))
            return
        if policy == "remove":
            self.removes.append(self.change(Action.REMOVE, None, synced, reason=gone))
            return
        if not synced.locked:
            grace = (
                "" if policy == "lock" else f" (removed after {self.policy.remove_after_days} days)"
            )
            self.locks.append(self.change(Action.LOCK, None, synced, reason=f"{gone}{grace}"))
            return
        if policy == "lock_then_remove" and synced.locked_since is not None:
            due = synced.locked_since + self.policy.remove_after_days * DAY_MS
            if due > self.now_ms:
                self.removal_due = min(due, self.removal_due or due)
            else:
                days = (self.now_ms - synced.locked_since) // DAY_MS
                self.removes.append(
                    self.change(
                        Action.REMOVE,
                        None,
                        synced,
                        reason=f"{gone}, locked {days} days ago",
                    )
                )
