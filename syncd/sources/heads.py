"""Department heads: the person a department names as its head is ``chief`` there.

A department names its head (AD's ``managedBy`` on the OU, an HR departments file's
head column); that person's position in that department becomes the platform's
``chief``. Heads are read anew on every read, so a new head takes the flag and the one
before loses it (their position is written again without it). A head who has no position
in the department is given none: a position made up would place a person where HR does
not; it is told as a problem naming the department and the person, and nothing is set.
Pure: no I/O.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from syncd.model import Employee


def with_heads(
    people: Sequence[tuple[str, Employee]],
    heads: Mapping[str, str],
    department_name: Callable[[str], str],
    *,
    complete: bool = True,
) -> tuple[list[tuple[str, Employee]], list[str]]:
    """The people with ``chief`` set on their positions in the departments they head, and
    the problems found. ``heads``: department id -> the head's source id; ``complete``:
    the read holds everyone (a head not among the people read is then a problem)."""
    at = {e.id: n for n, (_, e) in enumerate(people)}
    headed: dict[str, set[str]] = defaultdict(set)  # person id -> the departments they head
    problems: list[str] = []
    for department_id, person_id in sorted(heads.items()):
        n = at.get(person_id)
        place = f"department {department_name(department_id)!r} ({department_id})"
        if n is None:
            if complete:
                problems.append(
                    f"{place}: its head {person_id!r} is not among the people read: "
                    "no head is set there"
                )
            continue
        e = people[n][1]
        if not any(p.department_id == department_id for p in e.positions):
            problems.append(
                f"{place}: its head {e.username!r} ({person_id}) has no position there: "
                "none is made up, no head is set there"
            )
            continue
        headed[person_id].add(department_id)
    out = list(people)
    for person_id, departments in headed.items():
        n = at[person_id]
        where, e = out[n]
        positions = tuple(
            replace(p, chief=True) if p.department_id in departments else p for p in e.positions
        )
        out[n] = (where, e._replace(positions=positions))
    return out, problems
