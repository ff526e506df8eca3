"""Planning photos: a person's photo is set when its digest differs from the one syncd set.

Pure, like the rest of the plan: the source gave each photo's digest and where its bytes
are (``model.Photo``); the snapshot, the digest syncd last set for each person. Nothing
is read here: the executor fetches the bytes of the photos planned, and only those.

A photo is planned for an active person whose account is on the platform or is made or
updated by this plan, when the digest differs from the one recorded, or always when the
account is new (a new account has no avatar, whatever an older one had). A person
without a photo in the source keeps whatever avatar the platform has: there is no call
to take one away. Departed people's photos wait until they are back.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from syncd.model import Directory, Employee, Kind, State
from syncd.plan.actions import Action
from syncd.plan.values import Change, Snapshot, matches_any
from syncd.spelling import nfc


def plan_photos(
    directory: Directory,
    snapshot: Snapshot,
    upserts: Sequence[Change],
    excluded: Sequence[str],
    untouched: Collection[str] = (),
) -> list[Change]:
    """The photos to set, after the people's creates and updates (``upserts``); none for
    the people nothing is sent for through the account under their username
    (``untouched``: held as another person, or the account is not theirs)."""
    accounts = {c.key: c for c in upserts if isinstance(c.record, Employee)}
    changes: list[Change] = []
    for e in directory.employees.values():
        photo = e.photo
        if photo is None or e.state is not State.ACTIVE or e.id in untouched:
            continue
        upsert = accounts.get(e.id)
        account = e.username if upsert is None else upsert.display  # as the platform spells it
        if upsert is None:
            synced = snapshot.employees.get(e.id)
            # The same username in another normalization (NFD) is the same account.
            if synced is None or nfc(synced.username) != e.username:
                continue  # no account of theirs, or a username conflict: not theirs to set
            account = synced.username
        if excluded and matches_any(e.username, excluded):
            continue
        new_account = upsert is not None and upsert.action is Action.CREATE
        before = None if new_account else snapshot.photos.get(e.id)
        if before == photo.digest:
            continue
        if new_account:
            reason = "new account"
        else:
            reason = "first photo" if before is None else "changed in the source"
        changes.append(
            Change(
                Kind.EMPLOYEE,
                Action.PHOTO,
                e.id,
                account,
                photo,
                hash=photo.digest,
                platform_before=None if before is None else {"photo": before},
                reason=reason,
            )
        )
    return changes
