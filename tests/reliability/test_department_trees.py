"""Department trees a source should never send, and big ones it may: synced or rejected
as designed (README, "Sources"), never a crash, and the rest of the company still lands.
"""

from __future__ import annotations

import pytest

from syncd.errors import EXIT_OK
from syncd.plan import REMOVING
from tests.engine.company import Company, Platform, department, employee
from tests.support.runs import plan_of

from .support import Rig, assert_converged, query


def test_cycles_orphans_slashes_twins_and_a_50_level_chain(rig: Rig) -> None:
    # Enough people that two rejected ones stay within the shrink guard's 10%.
    rig.company.employees += [employee(f"E{n}", f"user{n}", "D3") for n in range(10, 40)]
    assert rig.sync().exit_code == EXIT_OK
    good = rig.company.expected()
    add_bad_trees_and_a_50_level_chain(rig.company)

    result = rig.sync()

    assert result.exit_code == EXIT_OK, result.error
    assert result.plan is not None
    assert [c.message for c in result.plan.changes if c.action in REMOVING] == []
    reasons = rejection_reasons(rig, result.run_id)
    assert_bad_departments_rejected(reasons)
    assert_people_in_bad_departments_rejected(reasons)
    assert_the_chain_landed_and_the_rest_is_as_it_was(rig.platform(), good)


def add_bad_trees_and_a_50_level_chain(company: Company) -> None:
    """Departments a source should never send, a synced one turned bad, a 50-level chain,
    and a person in each (cy, cz, or, sl, tw; deep at the chain's bottom)."""
    bad = [
        department("C1", "Loop A", "C2"),  # a cycle
        department("C2", "Loop B", "C1"),
        department("C3", "Under the loop", "C1"),
        department("O1", "Orphan", "D404"),  # an unknown parent
        department("S1", "Sales/Marketing", "D1"),  # a '/' in the name
        department("S2", "Below the slash", "S1"),
        department("T1", "Twins", "D1"),  # two siblings with the same name
        department("T2", "Twins", "D1"),
    ]
    chain = [department("L1", "Level 1", "D1")]
    chain += [department(f"L{n}", f"Level {n}", f"L{n - 1}") for n in range(2, 51)]
    company.departments += bad + chain
    company.unit("D4")["name"] = "Sales/Support"  # a synced department turns bad
    placed = {"C1": "cy", "C3": "cz", "O1": "or", "S2": "sl", "T1": "tw", "L50": "deep"}
    company.employees += [
        employee(f"E{100 + n}", user, dept) for n, (dept, user) in enumerate(placed.items())
    ]


def rejection_reasons(rig: Rig, run_id: int) -> dict[str, str]:
    """Key -> reason, of each row the run rejected."""
    rows = query(rig.database, "SELECT * FROM rejected_rows WHERE run_id = ?", run_id)
    return {r["key"]: r["reason"] for r in rows}


def assert_bad_departments_rejected(reasons: dict[str, str]) -> None:
    assert "cycle" in reasons["C1"] and "cycle" in reasons["C2"] and "cycle" in reasons["C3"]
    assert "unknown" in reasons["O1"]
    assert "contains '/'" in reasons["S1"] and "S1" in reasons["S2"]
    assert "ambiguous" in reasons["T1"] and "ambiguous" in reasons["T2"]
    assert "contains '/'" in reasons["D4"]


def assert_people_in_bad_departments_rejected(reasons: dict[str, str]) -> None:
    for person in ("E100", "E101", "E102", "E103", "E104", "E4", "E3"):  # E4 dan, E3 cat
        assert "department" in reasons[person], (person, reasons.get(person))


def assert_the_chain_landed_and_the_rest_is_as_it_was(platform: Platform, good: Platform) -> None:
    """The 50 levels and the person at the bottom landed; the rest is as it was."""
    assert platform.nodes["L50"] == ("Level 50", "L49")
    assert platform.people["deep"][2] == "L50"
    for key in ("C1", "C2", "C3", "O1", "S1", "S2", "T1", "T2"):
        assert key not in platform.nodes
    for user in ("cy", "cz", "or", "sl", "tw"):
        assert user not in platform.people
    assert platform.nodes["D4"] == good.nodes["D4"]  # not renamed, not deleted
    assert platform.people["dan"] == good.people["dan"]  # in the bad department: left alone
    assert not any(p[4] for p in platform.people.values())


def test_ten_thousand_sibling_departments(rig: Rig) -> None:
    rig.platform_options.update(batch_size=500)
    rig.company.departments += [department(f"S{n}", f"Team {n:05d}", "D1") for n in range(10_000)]
    rig.company.employees.append(employee("E9", "last", "S9999"))
    result = rig.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert_converged(rig)
    assert plan_of(rig.sync()).changes == ()


@pytest.mark.long
def test_a_thousand_levels_deep_chain_is_synced_or_rejected_without_a_crash(rig: Rig) -> None:
    rig.company.departments += [department("L1", "Level 1", "D1")]
    rig.company.departments += [department(f"L{n}", f"L{n}", f"L{n - 1}") for n in range(2, 1001)]
    result = rig.sync()
    assert result.exit_code in (EXIT_OK, 1), result.error
    assert rig.platform().people == rig.company.expected().people
