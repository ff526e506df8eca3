"""What a source tells a preview about each person it reads (``syncd check --preview``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from syncd.mapping import Get
from syncd.model import Employee


@dataclass(frozen=True)
class Outcome:
    """A person as the source's reader left them: an Employee, or why not."""

    employee: Employee | None
    reason: str | None = None  # why rejected, or left out
    left_out: bool = False  # by the row filter


class Tracer(Protocol):
    def start(self, own: Mapping[str, tuple[str, ...]]) -> None:
        """The attributes each field reads when no rule makes it (field -> names)."""

    def record(self, where: str, get: Get, outcome: Outcome) -> None:
        """One person read: where (file:line or DN), their attributes, the outcome."""
