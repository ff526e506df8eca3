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

A review holds for the situation reviewed, once; the counts must not stand for overrides
elsewhere. So the changes' fingerprint holds why each change gives access (an unlock that
repairs another admin's lock is not one that lets a former employee back in:
``access_of``); a plan applied is recorded in the state database and refused the second
time; and a plan whose review did not show a block the guards make whatever the number
(``always_blocked``: access for people called departed by a read that cannot tell who is)
is refused when that block is there now. A file edited by hand is refused: each part its
review rests on must give the digest it was saved with (``parts_fingerprint``), its counts
must be those of its listed changes, and its listed changes and counts those of the plan
made now.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from syncd.config import Settings, platform_of
from syncd.errors import ConfigError
from syncd.model import Directory, Kind
from syncd.plan import (
    SHOWN_ORDER,
    Action,
    Change,
    GuardDecision,
    Limits,
    Note,
    Plan,
    Policy,
    Snapshot,
    access_of,
    always_blocked,
    department_hash,
    department_paths,
    employee_hash,
    reactivations,
    updates,
)

FORMAT = 1
NAME = "saved_plan"  # the guard's name
APPLIED = "saved_plan applied"  # the state database's cursor of a plan applied, then its identity


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
    reactivations: int = 0
    updates: int = 0
    listed: str = ""  # the listed changes' digest, without their sentences (_listing)
    # What the guards blocked whatever the number when it was reviewed (always_blocked).
    always: tuple[str, ...] = ()

    @property
    def identity(self) -> str:
        """What tells this plan from any other: the dry run that made it, its changes."""
        return f"{APPLIED} {self.run_id} {self.changes}"


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


def changes_fingerprint(plan: Plan, snapshot: Snapshot) -> str:
    """The changes themselves, in order, with the values each writes, and why: what the
    guard on access granted counts each under (``access_of``: "locked on the platform by
    someone else" or "back in the source, called departed before"), its lock's reason,
    the values it frees. Not the sentence: one counts the days a person has been locked,
    and a plan saved one day would be stale the next with nothing changed."""
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
                access_of(c, snapshot),
                c.lock_reason,
                c.frees,
            ],
            ensure_ascii=False,
            sort_keys=True,
        )
        for c in plan.changes
    )


# The parts of a saved plan its review rests on: each has a digest in the file, which the
# file read back must give (``parts_fingerprint``), so a part edited by hand is named.
REVIEWED = (
    "fingerprints",  # those of what the plan was made from and of its changes
    "run_id",
    "removals",
    "reactivations",
    "updates",
    "counts",
    "always_blocked",
    "changes",
)


def parts_fingerprint(document: Mapping[str, Any]) -> dict[str, str]:
    """A digest of each reviewed part of a saved plan's document (REVIEWED), as JSON
    gives it back. Not a signature: it finds a file edited by hand, a part changed and the
    rest left; what is applied is checked against the plan made now all the same."""
    parts = dict(document)
    prints = parts.get("fingerprints")
    if isinstance(prints, dict):  # not the digests of the parts themselves
        parts["fingerprints"] = {k: v for k, v in prints.items() if k != "parts"}
    return {
        key: _digest([json.dumps(parts.get(key), ensure_ascii=False, sort_keys=True)])
        for key in REVIEWED
    }


def _listing(documents: Iterable[Mapping[str, Any]]) -> str:
    """The digest of the changes as the file lists them (``Change.as_document``, as JSON
    gives them back) without their sentences (one may count days): what the plan made now
    must list too."""
    return _digest(
        json.dumps(
            {k: v for k, v in d.items() if k != "message"}, ensure_ascii=False, sort_keys=True
        )
        for d in documents
    )


def _documents(changes: Iterable[Change]) -> list[dict[str, Any]]:
    """The changes as the file lists them: plain JSON, read back as it would be."""
    listed: list[dict[str, Any]] = json.loads(
        json.dumps([c.as_document() for c in changes], ensure_ascii=False, default=str)
    )
    return listed


def reviewed_counts(plan: Plan, snapshot: Snapshot) -> dict[str, int]:
    """The counts a saved plan's review stands for, as the guards count them: they stand
    for --allow-removals, --allow-reactivations and --allow-updates (syncd.run.policy)."""
    return {
        "removals": plan.removals,
        "reactivations": reactivations(plan, snapshot).total,
        "updates": updates(plan, snapshot)[0],
    }


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
    limits: Limits,
) -> None:
    """Save a dry run's plan for review and ``syncd apply`` (mode 0600: it holds people's data).

    ``always_blocked`` keeps what the guards blocked whatever the number, for ``check``:
    a plan stands for an override of those only if its review showed them."""
    document: dict[str, Any] = {
        "syncd_plan": FORMAT,
        "created": datetime.now(UTC).astimezone().isoformat(timespec="seconds"),
        "run_id": run_id,
        "target": target_of(settings),
        "fingerprints": {
            "source": source_fingerprint(directory, policy),
            "snapshot": snapshot_fingerprint(snapshot),
            "changes": changes_fingerprint(plan, snapshot),
        },
        **reviewed_counts(plan, snapshot),
        "counts": {f"{k.value} {a.value}": n for (k, a), n in _in_order(plan)},
        "guards": [{"name": g.name, "passed": g.passed, "message": g.message} for g in guards],
        "always_blocked": always_blocked(plan, directory, snapshot, limits),
        "notes": [{"kind": n.kind, "key": n.key, "message": n.message} for n in plan.notes],
        "changes": _documents(plan.changes),
        "departments": department_paths(plan.changes),
    }
    document["fingerprints"]["parts"] = parts_fingerprint(document)
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
    """A saved plan, checked for shape and against itself; a file that is not one, or was
    edited by hand, is a clear error naming the file and the part that is wrong."""
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
    part = _Parts(path, document)
    prints = part.mapping("fingerprints")
    listed = part.changes()
    saved = SavedPlan(  # each part of the type it must be, before it is compared
        path,
        part.number("run_id"),
        part.text("created"),
        {str(k): str(v) for k, v in part.mapping("target").items()},
        part.text("source", prints, "fingerprints.source"),
        part.text("snapshot", prints, "fingerprints.snapshot"),
        part.text("changes", prints, "fingerprints.changes"),
        len(listed),
        part.number("removals"),
        part.number("reactivations"),
        part.number("updates"),
        _listing(listed),
        tuple(part.texts("always_blocked")),
    )
    counts = part.counts()
    recorded = part.mapping("parts", prints, "fingerprints.parts")
    found = parts_fingerprint(document)
    for key in REVIEWED:
        if recorded.get(key) != found[key]:
            raise part.edited(key, "it does not give the fingerprint it was saved with")
    if dict(counts) != Counter(f"{c['kind']} {c['action']}" for c in listed):
        raise part.edited("counts", "they are not those of its listed changes")
    return saved


class _Parts:
    """The parts of a saved plan's document, each of the type it must be: a damaged one is
    an error naming the file, the key and what it holds."""

    def __init__(self, path: Path, document: Mapping[str, Any]) -> None:
        self.path, self.document = path, document

    def _get(self, key: str, within: Mapping[str, Any] | None, named: str | None) -> Any:
        within = self.document if within is None else within
        if key not in within:
            raise ConfigError(
                f"plan file {self.path}: {named or key} is missing; make the plan again with "
                "syncd sync --dry-run --save-plan FILE"
            )
        return within[key]

    def _wrong(self, named: str, value: Any, wanted: str) -> ConfigError:
        return ConfigError(
            f"plan file {self.path}: {named} is {type(value).__name__} {value!r:.40}, not "
            f"{wanted}; was it edited? make the plan again with syncd sync --dry-run --save-plan"
        )

    def edited(self, named: str, why: str) -> ConfigError:
        return ConfigError(
            f"plan file {self.path}: {named}: {why}; it was edited by hand, not applied: what "
            "was reviewed is not what it says. Make the plan again with syncd sync --dry-run "
            "--save-plan FILE"
        )

    def text(
        self, key: str, within: Mapping[str, Any] | None = None, named: str | None = None
    ) -> str:
        value = self._get(key, within, named)
        if not isinstance(value, str):
            raise self._wrong(named or key, value, "a string")
        return value

    def number(self, key: str) -> int:
        """A count or an id: a whole number, not negative (a bool is not one)."""
        value = self._get(key, None, None)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self._wrong(key, value, "a whole number of 0 or more")
        return value

    def mapping(
        self, key: str, within: Mapping[str, Any] | None = None, named: str | None = None
    ) -> Mapping[str, Any]:
        value = self._get(key, within, named)
        if not isinstance(value, dict):
            raise self._wrong(named or key, value, "an object")
        return value

    def texts(self, key: str) -> list[str]:
        value = self._get(key, None, None)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._wrong(key, value, "a list of strings")
        return value

    def counts(self) -> Mapping[str, int]:
        counts = self.mapping("counts")
        for kind, n in counts.items():
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise self._wrong(f"counts.{kind}", n, "a whole number of 1 or more")
        return counts

    def changes(self) -> Sequence[Mapping[str, Any]]:
        value = self._get("changes", None, None)
        if not isinstance(value, list):
            raise self._wrong("changes", value, "a list")
        for n, change in enumerate(value):
            if not isinstance(change, dict):
                raise self._wrong(f"changes[{n}]", change, "an object")
            for key in ("kind", "action"):
                if not isinstance(change.get(key), str):
                    raise self._wrong(f"changes[{n}].{key}", change.get(key), "a string")
        return value


# ---------------------------------------------------------------- the check


def check(
    saved: SavedPlan,
    settings: Settings,
    plan: Plan,
    now: Situation,
    applied: Mapping[str, Any] | None,
) -> tuple[GuardDecision, Note | None]:
    """Whether the plan made now is the saved one, and what moved since it was made.

    The same changes are applied even if the source or the snapshot moved (what was
    reviewed is exactly what is sent): the note returned says so, for the screen and the
    report. Different changes are refused, naming what moved; so is a plan applied
    before (``applied``: its record, ``applied_record`` read back), one whose counts are not the
    plan's made now, and one whose review did not show a block the guards make now
    whatever the number (the counts would stand for an override nobody reviewed).
    """
    made = f"the plan saved in {saved.path} (dry run {saved.run_id}, {saved.created})"
    again = f"review a new one: syncd sync --dry-run --save-plan {saved.path}"
    if dict(saved.target) != target_of(settings):
        refused = f"{made} is for {saved.target}, not for these settings: not applied"
        return GuardDecision(NAME, False, refused), None
    if applied is not None:
        refused = (
            f"{made} was applied already, by run {applied.get('run')} at {applied.get('at')}: "
            f"a saved plan is applied once, not again; {again}"
        )
        return GuardDecision(NAME, False, refused), None
    moved = _moved(saved, now)
    if changes_fingerprint(plan, now.snapshot) != saved.changes:
        n = len(plan.changes)
        other = ", other changes or the same made for other reasons" if n == saved.count else ""
        stale = (
            f"{made} is stale: {moved or 'the platform changed'} since it was made, and the plan "
            f"made now differs ({n} changes against {saved.count}{other}); {again}"
        )
        return GuardDecision(NAME, False, stale), None
    unlike = _not_as_reviewed(saved, plan, now)
    if unlike is not None:
        return GuardDecision(NAME, False, f"{made}: {unlike}: not applied; {again}"), None
    fresh = reviewed_counts(plan, now.snapshot)
    counted = (
        f"{fresh['removals']} removals, {fresh['reactivations']} re-activations "
        f"and {fresh['updates']} updates reviewed"
    )
    reviewed = GuardDecision(
        NAME, True, f"{made}: the same {len(plan.changes)} changes are planned now, {counted}"
    )
    if not moved:
        return reviewed, None
    return reviewed, Note(
        NAME, "", f"{moved} since the plan was made; the changes are the same: applying"
    )


@dataclass(frozen=True)
class Situation:
    """What a plan is made from now, to compare with what the saved one was made from."""

    directory: Directory
    snapshot: Snapshot
    policy: Policy
    limits: Limits


def _not_as_reviewed(saved: SavedPlan, plan: Plan, now: Situation) -> str | None:
    """Why the same changes are not what was reviewed, or None: the file lists others or
    other counts than the plan made now has (edited by hand), or a block the guards make
    whatever the number is there now and the review did not show it."""
    if _listing(_documents(plan.changes)) != saved.listed:
        return "the changes it lists are not those planned now (was it edited?)"
    for key, n in reviewed_counts(plan, now.snapshot).items():
        if (said := getattr(saved, key)) != n:
            return f"it says {key} {said}, the plan made now has {n} (was it edited?)"
    unseen = [
        b
        for b in always_blocked(plan, now.directory, now.snapshot, now.limits)
        if b not in saved.always
    ]
    if unseen:
        return (
            "its review did not show what the guards now block whatever the number "
            f"({'; '.join(unseen)}), and its counts do not stand for an override of that"
        )
    return None


# ---------------------------------------------------------------- applied once


def applied_record(saved: SavedPlan, run_id: int) -> str:
    """What the state database keeps of a plan being applied, under ``saved.identity`` (a
    cursor of its own, a line for each plan applied): the run, when, the file. The runner
    writes it before anything is sent, so a file is applied once whatever happens after
    (a run that dies halfway moved the state database anyway); ``check`` is given it back.
    This module stays pure: the runner does the reading and the writing."""
    at = datetime.now(UTC).astimezone().isoformat(timespec="seconds")
    return json.dumps({"run": run_id, "at": at, "file": str(saved.path)}, ensure_ascii=False)


def _moved(saved: SavedPlan, now: Situation) -> str:
    """What moved since the plan was made, in words ("the source changed"), or ""."""
    source = source_fingerprint(now.directory, now.policy) != saved.source
    state = snapshot_fingerprint(now.snapshot) != saved.snapshot
    named = [w for w, moved in (("the source", source), ("the state database", state)) if moved]
    if not named:
        return ""
    return f"{' and '.join(named)} changed" + (" (a run applied changes)" if state else "")
