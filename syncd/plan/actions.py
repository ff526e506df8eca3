"""What a change does to a record on the platform."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Protocol, TypeVar


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
# What takes access away or gives it back: a plan lists every one of these first, whatever
# its length limit (--show), so what a guard stops on is never hidden.
ACCESS = frozenset({Action.UNLOCK, *REMOVING})

# The order counts are shown in everywhere (the screen, a saved plan, reports, the chart):
# the order changes are applied in. Forgetting sends nothing: it is not counted.
SHOWN_ORDER = ("create", "adopt", "update", "move", "photo", "unlock", "lock", "remove", "delete")


def in_order(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    """(action, count) in ``SHOWN_ORDER``, the actions with none left out."""
    return [(action, counts[action]) for action in SHOWN_ORDER if counts.get(action)]


class _Acting(Protocol):
    @property
    def action(self) -> Action: ...


C = TypeVar("C", bound=_Acting)


def listed(changes: Sequence[C], show: int) -> list[C]:
    """The changes a plan lists: every lock, unlock, removal and deletion first, never cut;
    then the others in order, up to ``show`` changes in all (0: all of them)."""
    access = [c for c in changes if c.action in ACCESS]
    others = [c for c in changes if c.action not in ACCESS]
    if show:
        others = others[: max(show - len(access), 0)]
    return access + others
