"""What a sync may do: leavers, the guards, exclusions, matching, drift."""

# Pydantic copies a list or dict default for each instance; ruff sees that only through a
# base class in the same file, and Section is in section.py.
# ruff: noqa: RUF012

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from syncd.config.dates import DateSettings
from syncd.config.section import Section
from syncd.model import MatchKey


class Exclusions(Section):
    """Records syncd never touches, matched as exact values or shell patterns (``svc-*``)."""

    usernames: list[str] = []
    departments: list[str] = []  # source ids or name paths below the root


class SyncSettings(Section):
    leaver_policy: Literal["lock", "remove", "lock_then_remove"] = "lock_then_remove"
    remove_after_days: Annotated[int, Field(ge=0)] = 30
    max_removals: Annotated[int, Field(ge=0)] = 50
    max_removal_ratio: Annotated[float, Field(ge=0, le=1)] = 0.10
    # Access granted (unlocks, accounts made anew for people held locked or removed, accounts
    # for people the source called departed: syncd.plan.guards) and updates of synced
    # people: a run is blocked only past both the count and the share.
    max_reactivations: Annotated[int, Field(ge=0)] = 3
    max_reactivation_ratio: Annotated[float, Field(ge=0, le=1)] = 0.01
    max_updates: Annotated[int, Field(ge=0)] = 100
    max_update_ratio: Annotated[float, Field(ge=0, le=1)] = 0.5
    # Whatever the updates' number: one field emptied, or replaced where it tells people
    # apart, for more people than both (a column renamed, left out or shifted: plan.guards).
    max_field_changes: Annotated[int, Field(ge=0)] = 3
    max_field_change_ratio: Annotated[float, Field(ge=0, le=1)] = 0.05
    exclude: Exclusions = Exclusions()
    username_change: Literal["conflict", "remove_and_create"] = "conflict"
    extended_fields: dict[str, str] = {}  # extra attribute name -> platform field
    # Source ids (a join's: the joined key) whose record is the person syncd wrote under
    # them though its name and its mobile or work number changed at once: updated, not held
    # as another person given their key.
    same_person: list[str] = []
    match_by: MatchKey = "username"  # a first run adopts platform accounts holding the same
    drift_check: bool = True
    skip_unchanged: bool = True  # see syncd.run.unchanged
    dates: DateSettings = DateSettings()  # [sync.dates]: start and end dates
