"""Effective dates: when a person's start and end dates take effect, in the settings' zone.

Pure: a date is a calendar day in ``sync.dates.time_zone`` (IANA, through zoneinfo), and
each moment syncd acts at is an instant in milliseconds since the epoch.

- **The end** of a day is the first instant from which that zone's calendar never shows
  the day again: the next midnight (its first time, where clocks set back from 01:00
  repeat it); where clocks skip midnight, the instant the next day begins. An end date locks the
  person at the first run at or after the end of that day, never before.
- **The start** of a day is the end of the day before it: a start date unlocks (or
  creates) the person at the first run from then on.
- **The window**: a future hire is created ``create_days_before_start`` calendar days
  before the start of the start day (locked until then, or not created before the
  start, per ``before_start``).

A start date after the end date is a re-hire: the end date is the earlier employment's.
An end date of 9999-12-31 (HR systems' "no end") is no end date.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, NamedTuple
from zoneinfo import ZoneInfo

DAY = dt.timedelta(days=1)
_NO_END = dt.date(9999, 12, 31)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

# Lock reasons the snapshot keeps for locks made by dates (syncd.snapshot: lock_reason).
NOT_STARTED = "not_started"  # created before the start day, locked until then
ENDED = "ended"  # the end date passed


@dataclass(frozen=True)
class DatePolicy:
    """``[sync.dates]`` as the planner takes it."""

    time_zone: str = "UTC"
    create_days_before_start: int = 0
    before_start: Literal["locked", "not_created"] = "locked"


class Scheduled(NamedTuple):
    """A change the clock will make: shown in plans and reports, never counted as done."""

    key: str  # source id
    display: str  # username
    action: str  # create, unlock, lock
    at_ms: int  # the first run from this instant makes it
    message: str  # one sentence: what, when (local time and zone), and why


@lru_cache(maxsize=64)
def zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def _ms(moment: dt.datetime) -> int:
    return (moment - _EPOCH) // dt.timedelta(milliseconds=1)


@lru_cache(maxsize=4096)
def day_end_ms(day: dt.date, time_zone: str) -> int:
    """The first instant after which ``day`` is never again the date in ``time_zone``."""
    tz = zone(time_zone)
    following = day + DAY
    # fold=0: where midnight comes twice (clocks set back from 01:00), its first time, when
    # the next day has begun; where it is skipped (set forward), the offset before the gap,
    # which makes the instant the next day begins.
    return _ms(dt.datetime(following.year, following.month, following.day, tzinfo=tz))


def day_start_ms(day: dt.date, time_zone: str) -> int:
    """The first instant from which ``day`` (or a later one) is the date in ``time_zone``."""
    if day <= dt.date.min + DAY:
        return _ms(dt.datetime(1, 1, 3, tzinfo=dt.UTC))  # long ago, whatever the zone
    return day_end_ms(day - DAY, time_zone)


@lru_cache(maxsize=4096)  # the same few instants for many people: their days' midnights
def local_time(at_ms: int, time_zone: str) -> str:
    """An instant as the zone's wall clock: ``2027-01-01 00:00 Europe/Paris``."""
    moment = _EPOCH + dt.timedelta(milliseconds=at_ms)
    return f"{moment.astimezone(zone(time_zone)):%Y-%m-%d %H:%M} {time_zone}"


def parse_day(text: str | None) -> dt.date | None:
    """A date as the model holds it (ISO ``YYYY-MM-DD``, checked by the source), or None."""
    return dt.date.fromisoformat(text) if text else None


class Timeline(NamedTuple):
    """One person's dates as instants (None: no such date)."""

    start: int | None  # the start of the start day
    window: int | None  # when a future hire is created: the start less the days before
    end: int | None  # the end of the end day (a re-hire's earlier end date included)
    rehire: bool  # the start date is after the end date

    def ended(self, now_ms: int) -> bool:
        """Past the end date, and not (yet) back by a later start date."""
        if self.end is None or now_ms < self.end:
            return False
        return not (self.rehire and self.start is not None and now_ms >= self.start)

    def before_start(self, now_ms: int) -> bool:
        return self.start is not None and now_ms < self.start

    def in_window(self, now_ms: int) -> bool:
        return self.window is not None and now_ms >= self.window


@lru_cache(maxsize=65536)  # people share dates: 100,000 have a few thousand pairs
def timeline(start_date: str | None, end_date: str | None, policy: DatePolicy) -> Timeline:
    start_day, end_day = parse_day(start_date), parse_day(end_date)
    if end_day is not None and end_day >= _NO_END:
        end_day = None  # 9999-12-31: HR systems' "no end date"
    name = policy.time_zone
    start = window = end = None
    if start_day is not None:
        start = day_start_ms(start_day, name)
        days = min(policy.create_days_before_start, (start_day - dt.date.min).days - 1)
        early = start_day - dt.timedelta(days=max(days, 0))
        window = day_start_ms(early, name)
    if end_day is not None:
        end = day_end_ms(end_day, name)
    rehire = start_day is not None and end_day is not None and start_day > end_day
    return Timeline(start, window, end, rehire)
