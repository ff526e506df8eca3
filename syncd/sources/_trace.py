"""What a source tells others as it reads: each person, for a preview (``syncd check
--preview``); how many so far, for a spinner (``counted``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from syncd.mapping import Get
from syncd.model import Employee

T = TypeVar("T")


@dataclass(frozen=True)
class Outcome:
    """A person as the source's reader left them: an Employee, or why not."""

    employee: Employee | None
    reason: str | None = None  # why rejected, or left out
    left_out: bool = False  # by the row filter


Count = Callable[[int], None]  # told how many people were read so far
COUNT_EVERY = 1000


def counted(items: Iterable[T], count: Count | None) -> Iterator[T]:
    """``items``, telling ``count`` how many went by, every COUNT_EVERY of them."""
    if count is None:
        yield from items
        return
    for n, item in enumerate(items, start=1):
        yield item
        if n % COUNT_EVERY == 0:
            count(n)


class Tracer(Protocol):
    def start(self, own: Mapping[str, tuple[str, ...]]) -> None:
        """The attributes each field reads when no rule makes it (field -> names)."""

    def record(self, where: str, get: Get, outcome: Outcome) -> None:
        """One person read: where (file:line or DN), their attributes, the outcome."""
