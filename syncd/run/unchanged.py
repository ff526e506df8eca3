"""A run made from the same inputs as the last run that planned nothing plans nothing.

``plan()`` is a pure function of the directory, the snapshot, the platform's view, the
policy and the clock (which counts only when a locked leaver's grace period ends). A run
that planned no change from a complete read, every guard passed, leaves a ``Memo``: a
digest of its source files and settings and a digest of the view it planned against.
The next run skips reading the source and planning when

- the source digest is the same (the files' bytes, the settings, this syncd's code);
- no real run planned a change since (the snapshot is as that run left it);
- no grace period has ended since;
- the platform, read as every run reads it (every node, every username, the people
  changed since the cursor), gives the same view digest.

Anything else, or ``sync.skip_unchanged = false``, reads and plans as usual. Only a CSV
source without photos has such a digest: an LDAP directory must be read to know it is
unchanged, and photos are files of their own. Such a run reports what the memo's run
read and decided (its counts, rejected rows, notes and guards), from that run's record.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import syncd
from syncd import snapshot as store
from syncd.config import Settings, platform_of
from syncd.plan import GuardDecision, Note, Plan, PlatformView, Scheduled, Snapshot

log = logging.getLogger("syncd.unchanged")

CURSOR = "plan.unchanged"
_CODE = Path(syncd.__file__).parent


@dataclass(frozen=True)
class Memo:
    """What a run that planned nothing leaves for the next one."""

    run_id: int
    source: str  # source_digest
    view: str  # view_digest
    newcomers: tuple[str, ...]  # usernames looked up on the platform to adopt (view.people)
    employees: int  # the snapshot's size then: a cheap check that nobody edited it since
    departments: int
    removal_due: int | None  # Plan.removal_due


def replayed(
    state: store.StateStore, memo: Memo
) -> tuple[Plan, list[GuardDecision], dict[str, Any]]:
    """The memo's run's plan (its notes, and one saying it was not made again), guards and
    source counts, as its record holds them."""
    summary = state.run_summary(memo.run_id)
    notes = [Note(**n) for n in summary.get("notes", ()) if n.get("kind") != "recovery"]
    notes.append(
        Note(
            "source",
            "",
            f"source unchanged since run {memo.run_id}, which planned nothing, and so is the "
            "platform: the source was not read and nothing was planned again",
        )
    )
    guards = [GuardDecision(**g) for g in summary.get("guards", ())]
    source = {**summary.get("source", {}), "unchanged_since": memo.run_id}
    # What the clock will do, as that run found it (nothing of it is due before the memo).
    scheduled = tuple(
        Scheduled(i["key"], i["display"], i["action"], int(i["at_ms"]), i["message"])
        for i in (summary.get("scheduled") or {}).get("items", ())
        if "at_ms" in i
    )
    return Plan((), tuple(notes), scheduled=scheduled), guards, source


def source_digest(settings: Settings) -> str | None:
    """The source's files and the settings that shape its read and its plan, with this
    syncd's code; None where the source cannot be digested without reading it."""
    # Several sources ([[sources]]): digested when every one is CSV, with the join.
    sources = [settings.source] if settings.source is not None else list(settings.sources)
    files = []
    for source in sources:
        if source.kind != "csv" or source.csv is None or source.photos.enabled:
            return None
        files += [source.csv.employees, source.csv.departments]
    if not settings.sync.skip_unchanged:
        return None
    platform = platform_of(settings)
    h = hashlib.blake2b(digest_size=16)
    for text in (
        _code_stamp(),
        *map(repr, sources),  # the lookup tables of mapping rules are read into it
        repr(settings.join),
        repr(settings.sync),  # the policy and the guards' limits
        platform.base_url,
        platform.org_code,
    ):
        h.update(text.encode())
        h.update(b"\0")
    try:
        for path in files:
            if path is not None:
                with path.open("rb") as handle:
                    h.update(hashlib.file_digest(handle, "blake2b").digest())
    except OSError:
        return None  # the read says what is wrong with the file
    return h.hexdigest()


@functools.cache  # a process runs one syncd: the daemon stamps it once
def _code_stamp() -> str:
    """Each module of this syncd, by size and time: planning code changed, plans may too."""
    stamps = []
    for path in sorted(_CODE.rglob("*.py")):
        st = path.stat()
        stamps.append(f"{path.relative_to(_CODE)} {st.st_size} {st.st_mtime_ns}")
    return "\n".join(stamps)


def view_digest(view: PlatformView) -> str:
    """Everything in the view that planning reads. The view holds only the records of
    syncd's people that differ from what syncd wrote, whatever their stamps (a platform
    whose clock was set back stamps changes before the cursor): a run that planned
    nothing saw none but those it could not weigh."""
    changed = [
        (u, p.id, p.locked, sorted(p.fields.items()), p.positions, p.last_modified)
        for u, p in view.changed.items()
    ]
    parts: Iterable[object] = (
        view.root_id,
        view.root_name,
        view.complete_listing,
        view.employee_count > 0,  # whether anyone could be adopted
        sorted(view.nodes.items()),
        sorted(view.people.items()),
        sorted(changed),
        sorted(view.by_key.items()),
        sorted(view.deleted),
    )
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(repr(part).encode())
        h.update(b"\0")
    return h.hexdigest()


def recall(
    state: store.StateStore, digest: str | None, snapshot: Snapshot, now_ms: int
) -> Memo | None:
    """The memo that still stands for a source with this digest, if any."""
    if digest is None:
        return None
    memo = _load(state.cursor(CURSOR))
    if memo is None or memo.source != digest:
        return None
    if memo.removal_due is not None and memo.removal_due <= now_ms:
        return None
    if (memo.employees, memo.departments) != (snapshot.headcount, len(snapshot.departments)):
        return None
    if state.applied_since(memo.run_id):
        return None
    return memo


def remember(state: store.StateStore, memo: Memo) -> None:
    document = asdict(memo)
    with state.transaction() as tx:
        tx.set_cursor(CURSOR, json.dumps(document, ensure_ascii=False))


def _load(text: str | None) -> Memo | None:
    if not text:
        return None
    try:
        d = json.loads(text)
        return Memo(
            run_id=int(d["run_id"]),
            source=str(d["source"]),
            view=str(d["view"]),
            newcomers=tuple(str(u) for u in d["newcomers"]),
            employees=int(d["employees"]),
            departments=int(d["departments"]),
            removal_due=None if d["removal_due"] is None else int(d["removal_due"]),
        )
    except (ValueError, KeyError, TypeError):
        log.warning("the record of the last unchanged run is damaged: reading the source")
        return None
