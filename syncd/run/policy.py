"""What the settings let a sync do, as the planner and the guards take it: the policy
(leavers, exclusions, matching) and the guards' limits with this run's overrides."""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncd.config import Settings
from syncd.plan import DatePolicy, Limits, Policy

if TYPE_CHECKING:
    from syncd.run.runner import RunRequest


def policy_of(settings: Settings) -> Policy:
    s = settings.sync
    return Policy(
        leaver_policy=s.leaver_policy,
        remove_after_days=s.remove_after_days,
        exclude_usernames=tuple(s.exclude.usernames),
        exclude_departments=tuple(s.exclude.departments),
        username_change=s.username_change,
        match_by=s.match_by,
        extended_fields=dict(s.extended_fields),
        same_person=frozenset(s.same_person),
        dates=DatePolicy(
            time_zone=s.dates.time_zone,
            create_days_before_start=s.dates.create_days_before_start,
            before_start=s.dates.before_start,
        ),
    )


def limits_of(settings: Settings, request: RunRequest) -> Limits:
    """The guards' limits, and what this run is allowed past them: the one-shot overrides,
    or a saved plan's counts (they were reviewed: they stand for the overrides)."""
    s, saved = settings.sync, request.saved
    return Limits(
        max_removals=s.max_removals,
        max_removal_ratio=s.max_removal_ratio,
        allow_removals=request.allow_removals if saved is None else saved.removals,
        max_reactivations=s.max_reactivations,
        max_reactivation_ratio=s.max_reactivation_ratio,
        max_updates=s.max_updates,
        max_update_ratio=s.max_update_ratio,
        max_field_changes=s.max_field_changes,
        max_field_change_ratio=s.max_field_change_ratio,
        allow_reactivations=request.allow_reactivations if saved is None else saved.reactivations,
        allow_updates=request.allow_updates if saved is None else saved.updates,
    )
