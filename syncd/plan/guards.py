"""Safety checks on a plan, made before anything is sent: too many removals, a shrunken source."""

from __future__ import annotations

from dataclasses import dataclass

from syncd.model import Directory, Kind
from syncd.plan.actions import Action
from syncd.plan.values import Plan, Snapshot


@dataclass(frozen=True, slots=True)
class GuardDecision:
    name: str
    passed: bool
    message: str
    overridden: bool = False


@dataclass(frozen=True)
class Limits:
    max_removals: int = 50
    max_removal_ratio: float = 0.10
    allow_removals: int | None = None  # --allow-removals N: this run may remove up to N


def check_guards(
    p: Plan, directory: Directory, snapshot: Snapshot, limits: Limits
) -> list[GuardDecision]:
    """Safety checks on the plan; the run stops if any decision did not pass."""
    removals = p.removals
    override = limits.allow_removals is not None and removals <= limits.allow_removals
    how = f"rerun with --allow-removals {removals} if this is intended"
    decisions = [_removal_guard(p, snapshot, limits, override, how)]
    shrink = _shrink_guard(directory, snapshot, limits, override, how)
    if shrink is not None:
        decisions.append(shrink)
    return decisions


def _removal_guard(
    p: Plan, snapshot: Snapshot, limits: Limits, override: bool, how: str
) -> GuardDecision:
    removals = p.removals
    synced = len(snapshot.employees) + len(snapshot.departments)
    ratio = limits.max_removal_ratio
    too_many = removals > limits.max_removals or (synced > 0 and removals / synced > ratio)
    message = (
        f"{removals} removal{'' if removals == 1 else 's'} planned (locks, removals, department "
        f"deletions); the limits are {limits.max_removals} and {ratio:.0%} of {synced} synced "
        "records"
    )
    # Departments are few beside people: over all records, deleting most of them would pass.
    departments = len(snapshot.departments)
    deletes = p.counts()[(Kind.DEPARTMENT, Action.DELETE)]
    if deletes:
        message += f", and {ratio:.0%} of {departments} synced departments ({deletes} to delete)"
        too_many = too_many or (departments > 0 and deletes / departments > ratio)
    return GuardDecision(
        "max_removals",
        not too_many or override,
        message + (f": {how}" if too_many else ""),
        overridden=too_many and override,
    )


def _shrink_guard(
    directory: Directory, snapshot: Snapshot, limits: Limits, override: bool, how: str
) -> GuardDecision | None:
    if not directory.complete:
        return None
    # People already locked because they are missing are not expected back: counted, they
    # would make every later read look shrunken, with nothing left to remove.
    missing = sum(1 for s in snapshot.employees.values() if s.locked and s.lock_reason == "missing")
    known = len(snapshot.employees) - missing
    if known <= 0:
        return None
    read = len(directory.employees)
    empty = read == 0
    shrunk = read < known * (1 - limits.max_removal_ratio)
    message = f"the source returned {read} employees, {known} were synced before"
    if missing:
        message += f" (not counting {missing} locked as missing from earlier reads)"
    if empty or shrunk:
        message += ": the source looks empty or broken; " + how
    return GuardDecision(
        "source_shrink",
        not (empty or shrunk) or override,
        message,
        overridden=(empty or shrunk) and override,
    )
