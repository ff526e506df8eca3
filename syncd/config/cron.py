"""Crontab expressions as apscheduler triggers, with crontab's weekday numbers.

In a crontab 0 and 7 are Sunday and 1-5 is Monday to Friday; apscheduler 3 counts from
Monday = 0, so "1-5" would run Tuesday to Saturday. The weekday field is rewritten as
day names before apscheduler sees it.
"""

from __future__ import annotations

from datetime import tzinfo

from apscheduler.triggers.cron import CronTrigger

DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def cron_trigger(
    expression: str, *, jitter: int | None = None, timezone: tzinfo | str | None = None
) -> CronTrigger:
    """A trigger for "minute hour day month weekday"; ValueError says what is wrong."""
    fields = expression.split()
    if len(fields) != 5:
        raise ValueError(f"expected 5 fields (minute hour day month weekday), got {len(fields)}")
    minute, hour, day, month, weekday = fields
    return CronTrigger(
        minute=minute,
        hour=hour,
        day=day,
        month=month,
        day_of_week=weekdays(weekday),
        jitter=jitter or None,
        timezone=timezone,
    )


def weekdays(field: str) -> str:
    """A crontab weekday field as apscheduler day names: "1-5" -> "mon,tue,wed,thu,fri"."""
    if field == "*":
        return "*"
    days: set[int] = set()
    for part in field.lower().split(","):
        days |= _expand(part)
    return ",".join(DAY_NAMES[d] for d in sorted(days))


def _expand(part: str) -> set[int]:
    span, slash, step_text = part.partition("/")
    step = _number(step_text, "step") if slash else 1
    if step < 1:
        raise ValueError(f"weekday step in {part!r} must be at least 1")
    if span == "*":
        first, last = 0, 6
    elif "-" in span:
        low, high = span.split("-", 1)
        first, last = _day(low), _day(high)
    else:
        first = _day(span)
        last = 6 if slash else first  # "1/2": from Monday to the end of the week
    if first > last:
        raise ValueError(f"weekday range {span!r} runs backwards")
    return {d % 7 for d in range(first, last + 1, step)}  # 7 is Sunday again


def _day(text: str) -> int:
    if text in DAY_NAMES:
        return DAY_NAMES.index(text)
    day = _number(text, "weekday")
    if not 0 <= day <= 7:
        raise ValueError(f"weekday {text!r} is not 0-7 (0 and 7: Sunday)")
    return day


def _number(text: str, what: str) -> int:
    if not text.isdigit():
        raise ValueError(f"{what} {text!r} is not a number or a day name (sun..sat)")
    return int(text)
