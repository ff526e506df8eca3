"""What a change does to a record on the platform."""

from __future__ import annotations

from collections.abc import Mapping
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

# The order counts are shown in everywhere (the screen, a saved plan, reports, the chart):
# the order changes are applied in. Forgetting sends nothing: it is not counted.
SHOWN_ORDER = ("create", "adopt", "update", "move", "photo", "unlock", "lock", "remove", "delete")


def in_order(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    """(action, count) in ``SHOWN_ORDER``, the actions with none left out."""
    return [(action, counts[action]) for action in SHOWN_ORDER if counts.get(action)]
