"""What a change does to a record on the platform."""

from __future__ import annotations

from enum import StrEnum


class Action(StrEnum):
    CREATE = "create"
    ADOPT = "adopt"  # found on the platform as it should be: recorded, nothing sent
    UPDATE = "update"
    MOVE = "move"
    UNLOCK = "unlock"
    LOCK = "lock"
    REMOVE = "remove"
    DELETE = "delete"
    # Gone from the platform (deleted there) and not wanted back: the snapshot lets go of
    # the record; nothing is sent.
    FORGET = "forget"
    # A person's photo set as their avatar (uploaded through the media API when new).
    PHOTO = "photo"


REMOVING = frozenset({Action.LOCK, Action.REMOVE, Action.DELETE})
