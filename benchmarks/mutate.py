"""One period of HR churn applied to a company: hires, leavers, moves, renames, departures.

``churn(company, 0.01)`` changes about 1% of the people: hires 25%, leavers 20%, moves
between departments 20%, renames 15%, departures 10%, returns 10%; and one department
is renamed and one (a leaf) moved under another parent.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

from benchmarks.generate import MAX_DEPTH, Company, new_person, renamed

SHARES = (
    ("hires", 0.25),
    ("leavers", 0.20),
    ("moves", 0.20),
    ("renames", 0.15),
    ("departures", 0.10),
    ("returns", 0.10),
)


def churn(company: Company, rate: float = 0.01, seed: int = 2) -> tuple[Company, Counter[str]]:
    """A changed copy of ``company`` and how many of each change were made."""
    rng = random.Random(seed)
    out = company.copy()
    total = max(len(SHARES), round(len(company.people) * rate))
    wanted = {kind: max(1, round(total * share)) for kind, share in SHARES}
    done: Counter[str] = Counter()
    active = sorted(p.id for p in company.people.values() if not p.departed)
    departed = sorted(p.id for p in company.people.values() if p.departed)
    picked = iter(rng.sample(active, min(len(active), sum(wanted.values()))))
    unit_ids = sorted(company.units)
    for kind in ("leavers", "moves", "renames", "departures"):
        for _ in range(wanted[kind]):
            person_id = next(picked, None)
            if person_id is None:
                break
            person = out.people[person_id]
            if kind == "leavers":
                del out.people[person_id]
            elif kind == "moves":
                others = [u for u in rng.sample(unit_ids, 2) if u != person.department]
                out.people[person_id] = replace(person, department=others[0])
            elif kind == "renames":
                out.people[person_id] = renamed(person, rng)
            else:
                out.people[person_id] = replace(person, departed=True)
            done[kind] += 1
    for person_id in rng.sample(departed, min(len(departed), wanted["returns"])):
        out.people[person_id] = replace(out.people[person_id], departed=False)
        done["returns"] += 1
    for _ in range(wanted["hires"]):
        hire = replace(new_person(out.next_person, rng, unit_ids), departed=False)
        out.people[hire.id] = hire
        out.next_person += 1
        done["hires"] += 1
    _rename_department(out, rng)
    _move_department(out, rng)
    done["department renames"] = done["department moves"] = 1
    return out, done


def _rename_department(company: Company, rng: random.Random) -> None:
    unit = company.units[rng.choice(sorted(company.units))]
    company.units[unit.id] = replace(unit, name=f"{unit.name} (renamed)")
    company._paths.clear()


def _move_department(company: Company, rng: random.Random) -> None:
    """A leaf department moved under another department that leaves it within MAX_DEPTH."""
    parents = {u.parent for u in company.units.values()}
    leaves = sorted(u for u in company.units if u not in parents and company.units[u].parent)
    if not leaves:
        return
    leaf = company.units[rng.choice(leaves)]
    targets = sorted(
        u.id
        for u in company.units.values()
        if u.id not in (leaf.id, leaf.parent) and company.depth(u.id) < MAX_DEPTH
    )
    if targets:
        company.units[leaf.id] = replace(leaf, parent=rng.choice(targets))
        company._paths.clear()
