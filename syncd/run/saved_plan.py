"""Approve, then apply: a plan saved by a dry run, and the check that applies exactly it.

``syncd sync --dry-run --save-plan FILE`` writes the plan as JSON for review: each change
with its sentence and its fields before and after (departments named by source id, and
``departments`` mapping those to their name paths), the counts in the order changes are
applied, the notes, the guards, the removals it holds, and fingerprints of what it was
made from (the source as read, the state database's snapshot) and of the changes.

``syncd apply FILE`` reads the source, the snapshot and the platform again and plans
anew; only if that plan is the saved one, change for change, is it applied (the saved
removal, re-activation and update counts stand for ``--allow-removals``,
``--allow-reactivations`` and ``--allow-updates``: they were reviewed). Otherwise the
guard ``saved_plan`` stops the run (exit 2) and says what moved since: the source, the
state database (a run applied changes), or the platform. The same changes made from a source or a
snapshot that moved are applied, with a note saying so.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from syncd.config import Settings, platform_of
from syncd.errors import ConfigError
from syncd.model import Directory, Kind
from syncd.plan import (
    SHOWN_ORDER,
    Action,
    GuardDecision,
    Note,
    Plan,
    Policy,
    Snapshot,
    department_hash,
    department_paths,
    employee_hash,
    reactivations,
    updates,
)

FORMAT = 1
NAME = "saved_plan"  # the guard's name


@dataclass(frozen=True)
class SavedPlan:
    """What ``apply`` needs of a saved plan file to check and apply it."""

    path: Path
    run_id: int
    created: str
    target: Mapping[str, str]
    source: str
    snapshot: str
    changes: str
    count: int
    removals: int
    reactivations: int = 0  # a file saved before these were counted: none reviewed
    updates: int = 0


# ---------------------------------------------------------------- fingerprints


def _digest(lines: Iterable[str]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for line in lines:
        h.update(line.encode())
        h.update(b"\n")
    return h.hexdigest()


def source_fingerprint(directory: Directory, policy: Policy) -> str:
    """What the source said: every department and person (by content hash), rejected rows."""
    extended = policy.extended_fields
    departments = directory.departments
    employees = directory.employees
    return _digest(
        [
            "complete" if directory.complete else "incremental",
            *(f"d {k} {department_hash(departments[k])}" for k in sorted(departments)),
            *(
                f"e {k} {employee_hash(employees[k], extended)} {employees[k].state}"
                for k in sorted(employees)
            ),
            *(f"r {r.kind} {r.where} {r.key} {r.reason}" for r in directory.rejected),
        ]
    )


def snapshot_fingerprint(snapshot: Snapshot) -> str:
    """What syncd recorded it wrote, and where: a run applying changes moves it."""
    departments = snapshot.departments
    employees = snapshot.employees
    return _digest(
        [
            *(f"d {k} {departments[k].node_id} {departments[k].hash}" for k in sorted(departments)),
            *(
                f"e {k} {e.username} {e.employee_id} {e.hash} {e.locked} {e.locked_since}"
                for k, e in sorted(employees.items())
            ),
        ]
    )


def changes_fingerprint(plan: Plan) -> str:
    """The changes themselves, in order, with the values each writes."""
    return _digest(
        json.dumps(
            [
                c.kind.value,
                c.action.value,
                c.key,
                c.display,
                c.new_path,
                c.target_id,
                c.hash,
                c.previous_key,
                c.before,
                c.after,
            ],
            ensure_ascii=False,
            sort_keys=True,
        )
        for c in plan.changes
    )


def target_of(settings: Settings) -> dict[str, str]:
    """Where a plan applies: the platform, the organization, the state database."""
    p = platform_of(settings)
    return {"base_url": p.base_url, "org_code": p.org_code, "database": str(settings.database)}


# ---------------------------------------------------------------- the file


def write(
    path: Path,
    *,
    run_id: int,
    settings: Settings,
    plan: Plan,
    guards: Iterable[GuardDecision],
    directory: Directory,
    snapshot: Snapshot,
    policy: Policy,
) -> None:
    """Save a dry run's plan for review and ``syncd apply`` (mode 0600: it holds people's data)."""
    document = {
        "syncd_plan": FORMAT,
        "created": datetime.now(UTC).astimezone().isoformat(timespec="seconds"),
        "run_id": run_id,
        "target": target_of(settings),
        "fingerprints": {
            "source": source_fingerprint(directory, policy),
            "snapshot": snapshot_fingerprint(snapshot),
            "changes": changes_fingerprint(plan),
        },
        "removals": plan.removals,
        "reactivations": reactivations(plan, snapshot).total,
        "updates": updates(plan, snapshot)[0],
        "counts": {f"{k.value} {a.value}": n for (k, a), n in _in_order(plan)},
        "guards": [{"name": g.name, "passed": g.passed, "message": g.message} for g in guards],
        "notes": [{"kind": n.kind, "key": n.key, "message": n.message} for n in plan.notes],
        "changes": [c.as_document() for c in plan.changes],
        "departments": department_paths(plan.changes),
    }
    text = json.dumps(document, ensure_ascii=False, indent=1, default=str)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    except OSError as exc:
        raise ConfigError(f"--save-plan {path}: cannot write it: {exc.strerror}") from exc


def _in_order(plan: Plan) -> list[tuple[tuple[Kind, Action], int]]:
    """The plan's counts by kind and action, in the order they are applied and shown."""
    rank = {action: n for n, action in enumerate(SHOWN_ORDER)}
    counts = plan.counts()
    return sorted(counts.items(), key=lambda c: (rank.get(c[0][1], len(rank)), c[0][0]))


def read(path: Path) -> SavedPlan:
    """A saved plan, checked for shape; a file that is not one is a clear error."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"plan file {path}: cannot read it: {exc.strerror}") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"plan file {path}: not JSON; was it saved by --save-plan?") from exc
    if not isinstance(document, dict) or document.get("syncd_plan") != FORMAT:
        raise ConfigError(
            f"plan file {path}: not a plan saved by this syncd (format {FORMAT}); make it again "
            "with syncd sync --dry-run --save-plan FILE"
        )
    try:
        prints = document["fingerprints"]
        return SavedPlan(
            path,
            int(document["run_id"]),
            str(document["created"]),
            {str(k): str(v) for k, v in document["target"].items()},
            str(prints["source"]),
            str(prints["snapshot"]),
            str(prints["changes"]),
            len(document["changes"]),
            int(document["removals"]),
            int(document.get("reactivations", 0)),
            int(document.get("updates", 0)),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"plan file {path}: a required part is missing or damaged") from exc


# ---------------------------------------------------------------- the check


def check(
    saved: SavedPlan,
    settings: Settings,
    plan: Plan,
    directory: Directory,
    snapshot: Snapshot,
    policy: Policy,
) -> tuple[GuardDecision, Note | None]:
    """Whether the plan made now is the saved one, and what moved since it was made.

    The same changes are applied even if the source or the snapshot moved (what was
    reviewed is exactly what is sent): the note returned says so, for the screen and the
    report. Different changes are refused, naming what moved.
    """
    made = f"the plan saved in {saved.path} (dry run {saved.run_id}, {saved.created})"
    if dict(saved.target) != target_of(settings):
        refused = f"{made} is for {saved.target}, not for these settings: not applied"
        return GuardDecision(NAME, False, refused), None
    moved = _moved(saved, directory, snapshot, policy)
    if changes_fingerprint(plan) == saved.changes:
        same = f"{made}: the same {saved.count} changes are planned now"
        counted = (
            f"{saved.removals} removals, {saved.reactivations} re-activations and "
            f"{saved.updates} updates reviewed"
        )
        reviewed = GuardDecision(NAME, True, f"{same}, {counted}")
        if not moved:
            return reviewed, None
        return reviewed, Note(
            NAME, "", f"{moved} since the plan was made; the changes are the same: applying"
        )
    stale = (
        f"{made} is stale: {moved or 'the platform changed'} since it was made, and the plan "
        f"made now differs ({len(plan.changes)} changes against {saved.count}); review a new "
        f"one: syncd sync --dry-run --save-plan {saved.path}"
    )
    return GuardDecision(NAME, False, stale), None


def _moved(saved: SavedPlan, directory: Directory, snapshot: Snapshot, policy: Policy) -> str:
    """What moved since the plan was made, in words ("the source changed"), or ""."""
    source = source_fingerprint(directory, policy) != saved.source
    state = snapshot_fingerprint(snapshot) != saved.snapshot
    named = [w for w, moved in (("the source", source), ("the state database", state)) if moved]
    if not named:
        return ""
    return f"{' and '.join(named)} changed" + (" (a run applied changes)" if state else "")
