"""The service around the syncs: its schedule, the runs kept, its health, its metrics."""

# Pydantic copies a list or dict default for each instance; ruff sees that only through a
# base class in the same file, and Section is in section.py.
# ruff: noqa: RUF012

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator

from syncd.config.section import PositiveInt, Section


class ScheduleSettings(Section):
    """When ``syncd run`` syncs: every interval, or on a cron expression (local time).

    LDAP sources read incrementally on this schedule and fully on ``full_cron``; every
    CSV run is a full read. The first run starts with the daemon.
    """

    interval_minutes: PositiveInt = 15
    interval_seconds: PositiveInt | None = None  # replaces interval_minutes: for tests and demos
    cron: str | None = None  # replaces the interval: "*/10 7-20 * * 1-5"
    full_cron: str = "0 2 * * *"  # LDAP: the full read that finds leavers
    jitter_seconds: Annotated[int, Field(ge=0)] = 30  # each start delayed by 0..jitter
    misfire_grace_seconds: PositiveInt = 300  # a run this late still runs; later, it is skipped
    stop_timeout_seconds: PositiveInt = 60  # on stop, how long the current run may finish

    @field_validator("cron", "full_cron")
    @classmethod
    def _cron_parses(cls, value: str | None) -> str | None:
        if value is not None:
            from syncd.config.cron import (
                cron_trigger,  # apscheduler loads only when a cron is given
            )

            try:
                cron_trigger(value, timezone="UTC")
            except ValueError as exc:
                raise ValueError(f"not a cron expression: {exc}") from exc
        return value

    @property
    def interval(self) -> timedelta:
        if self.interval_seconds is not None:
            return timedelta(seconds=self.interval_seconds)
        return timedelta(minutes=self.interval_minutes)


class ReportSettings(Section):
    keep_days: Annotated[int, Field(ge=1)] = 90
    # Dry runs (--dry-run, --check: a monitoring check every few minutes) go sooner.
    dry_run_keep_days: Annotated[int, Field(ge=0)] = 7
    notify_usernames: list[str] = []  # admins told of failed or blocked runs


class StatusSettings(Section):
    """When ``syncd status`` (the container's health check) calls syncd unhealthy."""

    # No run finished ok (or partial: it sent what it could) for this long; 0: not checked.
    max_success_age_minutes: Annotated[int, Field(ge=0)] = 1440


class MetricsSettings(Section):
    enabled: bool = False
    host: str = "127.0.0.1"
    port: Annotated[int, Field(gt=0, lt=65536)] = 9464
    # A node-exporter textfile (.prom) written after every real `syncd sync`: metrics for
    # the timer-based setup, which has no daemon to scrape.
    textfile: Path | None = None

    @field_validator("textfile")
    @classmethod
    def _prom_file(cls, value: Path | None) -> Path | None:
        if value is not None and value.suffix != ".prom":
            raise ValueError("must end in .prom (node-exporter reads only those)")
        return value


def drift_seconds(lease_seconds: float) -> float:
    """Clock drift and scheduling allowed for between a fence check and a request leaving
    (leadership.Lease's margin, with one request's time)."""
    return max(lease_seconds / 10, 0.5)


class LeadershipSettings(Section):
    """Several instances sharing one state store (docs/ha.md): one holds the lease and
    writes to the platform, the others stand by and plan dry."""

    # How long a lease lasts unless renewed (every third of it): a standby takes over at
    # most this long (plus its next try, a third of it) after the leader died or froze.
    # 90 s: a write must be answered before the lease can pass on, and the platform's
    # default timeouts (10 s to connect, 30 s for the answer) must fit in it with room for
    # a renewal (Settings._lease_outlasts_a_request).
    lease_seconds: Annotated[int, Field(ge=3, le=3600)] = 90

    @property
    def drift_seconds(self) -> float:
        return drift_seconds(self.lease_seconds)

    def request_room(self) -> float:
        """How long one request may take at most for the fence to hold between two
        renewals: the lease less a renewal period (a third) less the drift margin, less
        the drift margin again (a renewal late by that much still comes in time)."""
        return self.lease_seconds * 2 / 3 - 2 * self.drift_seconds
