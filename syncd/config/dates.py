"""``[sync.dates]``: how start and end dates take effect (syncd.plan.schedule)."""

from __future__ import annotations

from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator

from syncd.config.section import Section


class DateSettings(Section):
    # The zone whose calendar days the dates name: an IANA name (Europe/Paris,
    # Asia/Shanghai). UTC by default, never the host's: a moved or containerised service
    # must not lock people at another hour.
    time_zone: str = "UTC"
    # A future hire is created this many days before the start day (0: on the day).
    create_days_before_start: Annotated[int, Field(ge=0, le=366)] = 0
    # Between creation and the start day: created and locked, or not created at all.
    before_start: Literal["locked", "not_created"] = "locked"

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        name = value.strip()
        try:
            if not name or name != value or name.startswith(("/", ".")):
                raise ValueError(value)
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(
                f"{value!r} is not a time zone: give an IANA name such as Europe/Paris, "
                "Asia/Shanghai or UTC"
            ) from exc
        return name
