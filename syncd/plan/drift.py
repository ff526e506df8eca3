"""People drift: how a person's platform record differs from what syncd last wrote for them.

Only what the platform's employee list form carries is compared (name, email, mobile,
work number, gender, sort order, senior, positions), and only where syncd wrote it: a
field the source leaves empty is the platform's to fill. Positions are compared by node
id, each with its primary and chief flags and its job title (a primary position without
a title of its own takes the person's), as the executor sends them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from syncd.model import Employee, Kind, State
from syncd.plan.fields import employee_from_fields
from syncd.plan.values import DEPARTED, PlatformEmployee, PlatformView, Snapshot, SyncedEmployee

Positions = tuple[tuple[int, bool, bool, str], ...]


def written_positions(
    written: Mapping[str, Any], node_of: Callable[[str], int | None], root_id: int
) -> Positions | None:
    """The positions syncd sent, by node id; None if a department's node is not known."""
    places = written.get("positions") or []
    title = written.get("job_title") or ""
    if not places:
        return ((root_id, True, False, title),)
    primary = next((n for n, p in enumerate(places) if p.get("primary")), 0)
    found = []
    for n, p in enumerate(places):
        department = p.get("department")
        node = root_id if department is None else node_of(department)
        if node is None:
            return None
        own = p.get("job_title") or (title if n == primary else "")
        found.append((node, n == primary, bool(p.get("chief")), own or ""))
    return tuple(sorted(found))


def person_drift(
    written: Mapping[str, Any],
    found: PlatformEmployee,
    node_of: Callable[[str], int | None],
    root_id: int,
) -> dict[str, Any]:
    """Fields whose platform value differs from what syncd wrote: field -> the platform's value.

    Positions come back as the platform holds them, (org_id, primary, chief, job_title).
    """
    drift = {
        name: there
        for name, there in found.fields.items()
        if name in _SAME and not _SAME[name](there, written.get(name))
    }
    expected = written_positions(written, node_of, root_id)
    if expected is not None and tuple(sorted(found.positions)) != expected:
        drift["positions"] = found.positions
    return drift


def differs(
    written: Mapping[str, Any] | None,
    locked: bool,
    found: PlatformEmployee,
    node_of: Callable[[str], int | None],
    root_id: int,
) -> bool:
    """Whether planning would find drift in this record: its lock state is not the one
    syncd knows, or a field or position is not what syncd last wrote (``person_drift``).
    A record that does not differ plans exactly as one not read at all."""
    return found.locked != locked or bool(person_drift(written or {}, found, node_of, root_id))


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _same_text(there: Any, wrote: Any) -> bool:
    return _text(there) == _text(wrote)


# Field -> whether the platform's value (first) agrees with what syncd wrote (second). A
# gender or sort order syncd never wrote is the platform's own.
_SAME: dict[str, Callable[[Any, Any], bool]] = {
    "name": _same_text,
    "email": _same_text,
    "mobile": _same_text,
    "sn": _same_text,
    "gender": lambda there, wrote: not wrote or _text(there).upper() == str(wrote).upper(),
    "sort_order": lambda there, wrote: wrote is None or there == wrote,
    "senior": lambda there, wrote: bool(there) == bool(wrote),
    # Only the properties syncd wrote: the platform's list form gives each with its values.
    "properties": lambda there, wrote: (
        not wrote or all(_properties(there).get(k) == v for k, v in wrote.items())
    ),
}


def _properties(there: Any) -> dict[str, str]:
    """The platform's ``[{data_schema_id, values}]`` as syncd writes it: id -> first value."""
    found = {}
    for p in there if isinstance(there, list) else ():
        if isinstance(p, dict) and p.get("values"):
            found[str(p.get("data_schema_id"))] = str(p["values"][0])
    return found


class PeopleDrift:
    """What the platform view says about the people syncd holds."""

    def __init__(self, snapshot: Snapshot, view: PlatformView) -> None:
        self.snapshot = snapshot
        self.view = view
        self._departments: dict[int, str] | None = None  # node id -> source id, when asked

    def gone(self, synced: SyncedEmployee) -> bool:
        """Deleted on the platform."""
        return synced.username in self.view.deleted

    def found(self, synced: SyncedEmployee) -> PlatformEmployee | None:
        """Their platform record, when they changed there since the last run."""
        return self.view.changed.get(synced.username)

    def differences(self, synced: SyncedEmployee, found: PlatformEmployee) -> dict[str, Any]:
        written = self.snapshot.written(Kind.EMPLOYEE, synced.source_id) or {}
        return person_drift(written, found, self._node_of, self.view.root_id)

    def before(self, synced: SyncedEmployee, drift: Mapping[str, Any]) -> dict[str, Any]:
        """What syncd wrote, with the fields changed on the platform as they are there now."""
        before = dict(self.snapshot.written(Kind.EMPLOYEE, synced.source_id) or {})
        before.update(drift)
        if "properties" in drift:
            before["properties"] = _properties(drift["properties"])
        if "positions" in drift:
            before["positions"] = [
                {
                    "department": self._department_of(org_id),
                    "job_title": title or None,
                    "primary": primary,
                    "chief": chief,
                }
                for org_id, primary, chief, title in drift["positions"]
            ]
        return before

    def as_written(
        self, synced: SyncedEmployee, extended_fields: Mapping[str, str]
    ) -> Employee | None:
        """The person as syncd last wrote them (departed if syncd locked them as departed);
        None when nothing is recorded."""
        written = self.snapshot.written(Kind.EMPLOYEE, synced.source_id)
        if written is None:
            return None
        departed = synced.locked and synced.lock_reason == DEPARTED
        state = State.DEPARTED if departed else State.ACTIVE
        return employee_from_fields(synced.source_id, written, extended_fields, state)

    def _node_of(self, department_id: str) -> int | None:
        synced = self.snapshot.departments.get(department_id)
        return None if synced is None else synced.node_id

    def _department_of(self, node_id: int) -> str | None:
        """A node's source department (None: the root); unknown nodes by their id."""
        if self._departments is None:
            self._departments = {d.node_id: k for k, d in self.snapshot.departments.items()}
        if node_id == self.view.root_id:
            return None
        return self._departments.get(node_id, f"node {node_id}")
