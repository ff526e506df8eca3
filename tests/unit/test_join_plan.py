"""The join judged by the real planner: a company synced from several sources, then read
again with random gaps, duplicate keys, empty keys and partial reads. Whatever the damage,
nobody any source still names (and none says departed) is locked or removed, and no
department is deleted while a read could not say what is gone."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.model import Department, Directory, Employee, Kind, Position, RejectedRow, State
from syncd.plan import REMOVING, Policy, plan
from syncd.plan.join import JoinRules, KeyNotHeld, SourceRead, join
from tests.engine.plan_world import NOW, synced
from tests.support.examples import examples

KEYS = [f"k{n}" for n in range(6)]
NAMES = ["hr", "ad", "acquired"]
TREE = {"D1": Department("D1", "Head Office"), "D2": Department("D2", "R&D", "D1")}


def record(source: str, n: int, copy: int, key: str | None, departed: bool) -> Employee:
    place = (Position("D2" if n % 2 else "D1", primary=True),) if source == "hr" else ()
    return Employee(
        f"{source}-{n}-{copy}",
        f"user{n}",
        f"Person {n}",
        place,
        email=f"user{n}@{source}.example",
        sn=key,
        state=State.DEPARTED if departed else State.ACTIVE,
    )


def source_read(source: str, people: list[Employee], *, partial: str = "") -> SourceRead:
    rejected: tuple[RejectedRow, ...] = ()
    warnings: tuple[str, ...] = ()
    if partial == "cut":
        rejected = (RejectedRow(f"{source}.csv:9", "9 fields", may_hide_rows=True),)
    unread: tuple[str, ...] = ()
    if partial == "domain":
        warnings, unread = ("the domain b was not read",), ("the domain b",)
    if partial == "warning":  # a head outside their department: told, not partial
        warnings = ("department 'R&D' (D2): its head has no position there",)
    d = Directory(
        TREE if source == "hr" else {},
        {e.id: e for e in people},
        rejected,
        complete=partial != "incremental",
        warnings=warnings,
        unread=unread,
    )
    return SourceRead(source, d, key="sn", required=source != "acquired")


@dataclass(frozen=True)
class Damage:
    reads: list[SourceRead]
    named: frozenset[str]  # keys some source still has a record of
    departed: frozenset[str]  # keys some source says departed
    rules: JoinRules
    broken: bool  # some read could not say who is gone (a warning alone is not that)


def whole(count: int) -> list[SourceRead]:
    return [
        source_read(s, [record(s, n, 0, key, False) for n, key in enumerate(KEYS)])
        for s in NAMES[:count]
    ]


@st.composite
def damage(draw: st.DrawFn, count: int) -> Damage:
    reads, named, departed = [], set(), set()
    broken = False
    for source in NAMES[:count]:
        people = []
        partial = draw(st.sampled_from(["", "", "", "", "cut", "domain", "incremental", "warning"]))
        broken = broken or partial not in ("", "warning")
        for n, key in enumerate(KEYS):
            for copy in range(draw(st.sampled_from([0, 1, 1, 1, 2]))):
                gone = draw(st.integers(0, 9)) == 0
                left = draw(st.integers(0, 7)) == 0
                named.add(key)
                if left:
                    departed.add(key)
                if partial not in ("", "warning") and draw(st.booleans()):
                    continue  # in the source, but hidden by what kept the read partial
                people.append(record(source, n, copy, None if gone else key, left))
        reads.append(source_read(source, people, partial=partial))
    rules = JoinRules(
        {"positions": ("hr",), "username": (*NAMES[1:count], "hr")},
        draw(st.sampled_from(["wait", "partial"])),
    )
    return Damage(reads, frozenset(named), frozenset(departed), rules, broken)


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(2, 3).flatmap(lambda count: st.tuples(st.just(count), damage(count))))
def test_no_active_person_is_locked_or_removed_for_want_of_a_source(
    case: tuple[int, Damage],
) -> None:
    count, after = case
    before = join(whole(count), after.rules).directory
    assert set(before.employees) == set(KEYS)  # everyone synced from every source
    snapshot, view = synced(before)

    try:
        now = join(after.reads, after.rules, synced=snapshot.employees).directory
    except KeyNotHeld as exc:  # every record of a source lost its key: a settings error
        assert all(
            e.sn is None
            for r in after.reads
            if r.name == exc.source
            for e in r.directory.employees.values()
        )
        return
    changes = plan(now, snapshot, view, Policy(leaver_policy="lock"), NOW).changes

    for c in changes:
        if c.kind is Kind.EMPLOYEE and c.action in REMOVING:
            # Only someone no source names any more, or someone a source says left.
            assert c.key not in after.named or c.key in after.departed, c.message
        if c.kind is Kind.DEPARTMENT and c.action in REMOVING:
            assert now.leavers_known
    assert (
        now.leavers_known or after.broken or any(not r.directory.leavers_known for r in after.reads)
    )  # a warning alone never keeps leavers unknown
    if after.broken:
        removing = [c for c in changes if c.kind is Kind.EMPLOYEE and c.action in REMOVING]
        assert all(c.key in after.departed for c in removing)
