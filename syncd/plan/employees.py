"""Planning people: creates, updates, adoptions, username changes, locks and leavers."""

from __future__ import annotations

from typing import Any

from syncd.model import Directory, Employee, Kind, State
from syncd.plan.actions import Action
from syncd.plan.fields import employee_hash
from syncd.plan.values import (
    DAY_MS,
    Change,
    Note,
    PlatformView,
    Policy,
    Snapshot,
    SyncedEmployee,
    matches_any,
    people,
)


class EmployeePlanner:
    def __init__(
        self,
        directory: Directory,
        snapshot: Snapshot,
        view: PlatformView,
        policy: Policy,
        notes: list[Note],
        now_ms: int,
    ) -> None:
        self.directory = directory
        self.snapshot = snapshot
        self.view = view
        self.policy = policy
        self.notes = notes
        self.now_ms = now_ms
        self.replaced: list[Change] = []  # old accounts of changed usernames, removed first
        self.never_synced_departed = 0
        self.upserts: list[Change] = []
        self.unlocks: list[Change] = []
        self.locks: list[Change] = []
        self.removes: list[Change] = []
        self._by_username: dict[str, SyncedEmployee] | None = None  # made when first needed

    def _synced_holder(self, username: str) -> SyncedEmployee | None:
        """The synced record that holds this username, in any letter case."""
        if self._by_username is None:
            employees = self.snapshot.employees.values()
            self._by_username = {s.username.casefold(): s for s in employees}
        return self._by_username.get(username.casefold())

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
            lookup=self.snapshot.fields,
            extended_fields=self.policy.extended_fields,
            **kw,
        )

    def run(self) -> tuple[list[Change], ...]:
        excluded = self.policy.exclude_usernames
        for e in self.directory.employees.values():
            if excluded and matches_any(e.username, excluded):
                continue
            synced = self.snapshot.employees.get(e.id)
            if synced is None:
                self._plan_new(e, self._synced_holder(e.username))
            else:
                self._plan_synced(e, synced)
        self._plan_leavers()
        if self.never_synced_departed:
            self.notes.append(
                Note(
                    "skipped",
                    "",
                    f"{people(self.never_synced_departed)} departed in the source "
                    "but never synced: not created",
                )
            )
        return self.replaced, self.upserts, self.unlocks, self.locks, self.removes

    def _plan_synced(self, e: Employee, synced: SyncedEmployee) -> None:
        if synced.username != e.username:
            # A change of letter case too: the platform's import matches usernames exactly,
            # so an update would make a second account and leave the first one active.
            self._username_changed(e, synced)
            return
        wanted = employee_hash(e, self.policy.extended_fields)
        if wanted != synced.hash:
            self.upserts.append(self.change(Action.UPDATE, e, synced, hash=wanted))
        self._plan_lock_state(e, synced.locked, synced)

    def _plan_lock_state(
        self, e: Employee, locked: bool, synced: SyncedEmployee | None, **kw: Any
    ) -> None:
        if e.state is State.DEPARTED and not locked:
            self.locks.append(
                self.change(Action.LOCK, e, synced, reason="departed in the source", **kw)
            )
        elif e.state is State.ACTIVE and locked:
            self.unlocks.append(
                self.change(Action.UNLOCK, e, synced, reason="active in the source again", **kw)
            )

    def _plan_new(self, e: Employee, holder: SyncedEmployee | None) -> None:
        wanted = employee_hash(e, self.policy.extended_fields)
        if holder is not None:
            # The username belongs to a record syncd knows under another source id.
            if holder.source_id in self.directory.employees or not self.directory.complete:
                self.notes.append(
                    Note(
                        "conflict",
                        e.id,
                        f"username {e.username} is already synced for source id "
                        f"{holder.source_id}; not changed until one of them gives it up",
                    )
                )
                return
            if holder.username != e.username:
                # The platform matches usernames exactly: "Bob" would be a second account.
                self.notes.append(
                    Note(
                        "conflict",
                        e.id,
                        f"username {e.username} differs only in letter case from "
                        f"{holder.username}, synced for source id {holder.source_id}: the "
                        "platform matches usernames exactly, so it cannot be the same account; "
                        "not changed until the source spells it as before",
                    )
                )
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
            self._plan_lock_state(e, holder.locked, holder)
            return
        person = self.view.people.get(e.username.casefold())
        if person is not None and person.username != e.username:
            # The platform matches usernames exactly: sending this one would make a second
            # account beside the one that differs only in letter case.
            self.notes.append(
                Note(
                    "conflict",
                    e.id,
                    f"the platform has an account {person.username!r}, which differs from "
                    f"{e.username!r} only in letter case: neither adopted nor created",
                )
            )
            return
        if person is None:
            if e.state is State.DEPARTED:
                self.never_synced_departed += 1
                return
            self.upserts.append(self.change(Action.CREATE, e, None, hash=wanted))
            return
        before = {"username": person.username, "locked": person.locked, "employee_id": person.id}
        self.upserts.append(
            self.change(
                Action.UPDATE,
                e,
                None,
                hash=wanted,
                target_id=person.id,
                reason="adopting the platform's account (matched by username)",
                platform_before=before,
            )
        )
        self._plan_lock_state(e, person.locked, None, target_id=person.id)

    def _username_changed(self, e: Employee, synced: SyncedEmployee) -> None:
        changed = f"username changed in the source from {synced.username} to {e.username}"
        holder = self._synced_holder(e.username)
        if holder is not None and holder.source_id != e.id:
            # Its account is another person's until that record gives the username up.
            self.notes.append(
                Note(
                    "conflict",
                    e.id,
                    f"{changed}, which is synced for source id {holder.source_id}: the old "
                    "account is left alone until the other record gives the username up",
                )
            )
            return
        if self.policy.username_change != "remove_and_create":
            self.notes.append(
                Note(
                    "conflict",
                    e.id,
                    f"{changed}: the platform cannot rename an account; the old account is left "
                    'alone (set sync.username_change = "remove_and_create" to replace it)',
                )
            )
            return
        excluded = self.policy.exclude_usernames
        if excluded and matches_any(synced.username, excluded):
            # Replacing the account would remove one the settings protect.
            self.notes.append(
                Note(
                    "skipped",
                    e.id,
                    f"{changed}: the old account is excluded by settings, so it is neither "
                    "removed nor replaced",
                )
            )
            return
        # Removed before the new account is made: its email and mobile must be free again.
        self.replaced.append(
            self.change(Action.REMOVE, None, synced, reason=f"username changed to {e.username}")
        )
        wanted = employee_hash(e, self.policy.extended_fields)
        self.upserts.append(
            self.change(
                Action.CREATE,
                e,
                None,
                hash=wanted,
                reason=f"username changed from {synced.username}",
            )
        )

    def _plan_leavers(self) -> None:
        directory = self.directory
        if not directory.leavers_known:
            if directory.complete and (self.snapshot.employees or self.snapshot.departments):
                self.notes.append(
                    Note(
                        "leavers",
                        "",
                        "leavers not looked for and departments not deleted: some rejected rows "
                        "could not be identified, so nobody and no department absent from this "
                        "read is treated as gone",
                    )
                )
            return
        protected = directory.rejected_keys(Kind.EMPLOYEE)
        rekeyed: set[str] | None = None  # made when someone is missing, if ever
        excluded = self.policy.exclude_usernames
        for synced in self.snapshot.employees.values():
            if synced.source_id in directory.employees:
                continue
            if rekeyed is None:
                rekeyed = self._rekeyed_usernames()
            folded = synced.username.casefold()
            if synced.source_id in protected or folded in protected or folded in rekeyed:
                continue
            if excluded and matches_any(synced.username, excluded):
                continue
            self._plan_leaver(synced)

    def _rekeyed_usernames(self) -> set[str]:
        """Usernames (casefolded) held by source records syncd never synced: a missing
        record whose username is among them is being re-keyed (or is in a conflict), not
        gone. A username another synced record took over protects nobody."""
        synced = self.snapshot.employees
        return {
            e.username.casefold() for e in self.directory.employees.values() if e.id not in synced
        }

    def _plan_leaver(self, synced: SyncedEmployee) -> None:
        policy = self.policy.leaver_policy
        if policy == "remove":
            self.removes.append(
                self.change(Action.REMOVE, None, synced, reason="missing from the source")
            )
            return
        if not synced.locked:
            grace = (
                "" if policy == "lock" else f" (removed after {self.policy.remove_after_days} days)"
            )
            self.locks.append(
                self.change(Action.LOCK, None, synced, reason=f"missing from the source{grace}")
            )
            return
        if policy == "lock_then_remove" and synced.locked_since is not None:
            due = synced.locked_since + self.policy.remove_after_days * DAY_MS
            if due <= self.now_ms:
                days = (self.now_ms - synced.locked_since) // DAY_MS
                self.removes.append(
                    self.change(
                        Action.REMOVE,
                        None,
                        synced,
                        reason=f"missing from the source, locked {days} days ago",
                    )
                )
