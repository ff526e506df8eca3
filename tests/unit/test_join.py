"""The join of several sources (syncd.plan.join): by key, by precedence, never a leaver for
want of a source. Plain values in, plain values out; the generated tests spread random
people over sources with gaps, duplicate keys, empty keys and partial reads."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.model import (
    Department,
    Directory,
    Employee,
    Kind,
    Position,
    RejectedRow,
    State,
    build_directory,
)
from syncd.plan.join import JoinRules, SourceRead, join, key_value

TREE = [("deps.csv:2", Department("D1", "Head Office")), ("deps.csv:3", Department("D2", "R&D"))]


def person(id: str, sn: str | None, **fields: object) -> Employee:
    values: dict[str, object] = {"username": "", "name": ""} | fields
    return Employee(id, sn=sn, **values)  # type: ignore[arg-type]


def directory(*people: Employee, tree: bool = True, **options: object) -> Directory:
    items = [(f"f.csv:{n}", e) for n, e in enumerate(people, 2)]
    d = build_directory(TREE if tree else [], [], **options)  # type: ignore[arg-type]
    # Records as a source read them (some lack a username: the join fills it).
    return Directory(d.departments, {e.id: e for _, e in items}, d.rejected, d.complete)


HR = "hr"
AD = "ad"


def hr_ad(hr: Directory, ad: Directory, **rules: object) -> Directory:
    precedence = {
        "name": (HR,),
        "positions": (HR,),
        "state": (HR,),
        "username": (AD,),
        "email": (AD, HR),
    }
    joined = join(
        [SourceRead(HR, hr), SourceRead(AD, ad)],
        JoinRules(precedence=precedence, **rules),  # type: ignore[arg-type]
    )
    return joined.directory


def test_people_are_joined_on_the_key_and_each_field_comes_by_precedence() -> None:
    hr = directory(
        person("h1", "100", name="Ann Lee", positions=(Position("D2", primary=True),),
               email="ann@hr.example", username="hr-ann"),
    )  # fmt: skip
    ad = directory(
        person("g1", "100", username="ann", name="A. Lee", email="ann@corp.example",
               mobile="13800000001", state=State.DEPARTED),
    )  # fmt: skip
    d = hr_ad(hr, ad)
    ann = d.employees["100"]
    assert (ann.id, ann.username, ann.name) == ("100", "ann", "Ann Lee")
    assert ann.email == "ann@corp.example"  # AD first
    assert ann.mobile == "13800000001"  # not named: every source in order; HR has none
    assert ann.state is State.ACTIVE  # HR decides status
    assert ann.positions == (Position("D2", primary=True),)
    assert set(d.departments) == {"D1", "D2"}  # HR's tree


def test_a_field_falls_to_the_next_source_when_the_first_has_no_value() -> None:
    hr = directory(person("h1", "100", name="Ann", email="ann@hr.example"))
    ad = directory(person("g1", "100", username="ann"))
    assert hr_ad(hr, ad).employees["100"].email == "ann@hr.example"


def test_under_wait_a_person_one_source_lacks_is_neither_synced_nor_a_leaver() -> None:
    hr = directory(person("h1", "100", name="Ann"), person("h2", "200", name="Bob"))
    ad = directory(person("g1", "100", username="ann"), person("g9", "900", username="zed"))
    d = hr_ad(hr, ad, missing="wait")
    assert set(d.employees) == {"100"}
    assert d.leavers_known  # the others are kept as they are, not unknown
    held = d.rejected_keys(Kind.EMPLOYEE)
    assert {"200", "900"} <= held
    bob = next(r for r in d.rejected if r.key == "200")
    assert bob.where.startswith("hr: ") and "waiting for source 'ad'" in bob.reason


def test_under_partial_a_person_one_source_lacks_is_synced_with_what_is_known() -> None:
    hr = directory(person("h1", "100", name="Ann", username="ann"))
    ad = directory(person("g9", "900", username="zed", name="Zed"))
    d = join(
        [SourceRead(HR, hr), SourceRead(AD, ad)],
        JoinRules(precedence={"name": (HR, AD), "username": (AD, HR)}, missing="partial"),
    ).directory
    assert {e.username for e in d.employees.values()} == {"ann", "zed"}
    # With HR alone deciding names, Zed has none: rejected by that reason, kept as he is.
    d = hr_ad(hr, ad, missing="partial")
    assert "900" not in d.employees and "900" in d.rejected_keys(Kind.EMPLOYEE)
    assert "100" not in d.employees  # AD alone decides usernames: Ann has none yet


def test_a_person_the_status_source_says_departed_is_taken_even_while_waiting() -> None:
    hr = directory(person("h1", "100", name="Ann", state=State.DEPARTED, username="ann"))
    ad = directory()
    d = join(
        [SourceRead(HR, hr), SourceRead(AD, ad)],
        JoinRules(precedence={"state": (HR,)}, missing="wait"),
    ).directory
    assert d.employees["100"].state is State.DEPARTED  # to be locked


def test_a_leaver_whose_account_is_gone_keeps_the_username_syncd_gave_them() -> None:
    from syncd.plan.values import SyncedEmployee

    hr = directory(person("h1", "100", name="Ann", state=State.DEPARTED))
    synced = {"100": SyncedEmployee("100", "ann", 7, "hash")}
    d = join(
        [SourceRead(HR, hr), SourceRead(AD, directory())],
        JoinRules(precedence={"state": (HR,), "username": (AD,)}),
        synced=synced,
    ).directory
    assert d.employees["100"].username == "ann" and d.employees["100"].state is State.DEPARTED
    without = hr_ad(hr, directory())  # nothing synced: no username, set aside (kept)
    assert "100" not in without.employees and "100" in without.rejected_keys(Kind.EMPLOYEE)


def test_two_records_of_one_source_with_one_key_are_set_aside_and_kept() -> None:
    hr = directory(person("h1", "100", name="Ann"), person("h2", "100", name="Another"))
    ad = directory(person("g1", "100", username="ann"))
    d = hr_ad(hr, ad)
    assert "100" not in d.employees
    assert "100" in d.rejected_keys(Kind.EMPLOYEE)
    row = next(r for r in d.rejected if r.key == "100")
    assert row.where == "hr: people 'h1', 'h2'" and "held by 2 records" in row.reason


def test_a_record_without_a_key_is_set_aside_by_its_username() -> None:
    hr = directory(person("h1", "100", name="Ann"))
    ad = directory(person("g1", "100", username="ann"), person("g2", None, username="bob"))
    d = hr_ad(hr, ad)
    row = next(r for r in d.rejected if r.username == "bob")
    assert row.key is None and "no join key" in row.reason and row.where == "ad: person 'g2'"
    assert d.leavers_known  # it names its person: bob is kept, nobody else is unknown


def test_a_partial_read_of_any_source_makes_nobody_a_leaver() -> None:
    hr = directory(person("h1", "100", name="Ann"))
    whole = directory(person("g1", "100", username="ann"))
    assert hr_ad(hr, whole).leavers_known
    cut = Directory(
        whole.departments,
        whole.employees,
        (RejectedRow("ad.csv:9", "9 fields", may_hide_rows=True),),
    )
    assert not hr_ad(hr, cut).leavers_known
    delta = Directory(whole.departments, whole.employees, complete=False)
    assert not hr_ad(hr, delta).complete
    unread = Directory(whole.departments, whole.employees, warnings=("domain b not read",))
    assert not hr_ad(hr, unread).leavers_known


def test_a_row_another_source_rejected_keeps_its_person_as_they_are() -> None:
    hr = directory(person("h1", "100", name="Ann"))
    ad = Directory(
        {},
        {"g1": person("g1", "100", username="ann")},
        (RejectedRow("uid=ann2,dc=x", "bad mobile", username="ann"),),
    )
    d = hr_ad(hr, ad, missing="partial")
    assert "100" not in d.employees and "100" in d.rejected_keys(Kind.EMPLOYEE)


def test_keys_are_compared_as_their_field_is() -> None:
    e = person("x", None, email=" Ann@Corp.Example ", extra=(("employeeID", " 7 "),))
    assert key_value(e, "email") == "ann@corp.example"
    assert key_value(e, "extra.employeeID") == "7"
    assert key_value(e, "sn") is None


# ---------------------------------------------------------------- generated


KEYS = [f"k{n}" for n in range(8)]
SOURCES = ["s0", "s1", "s2"]


@dataclass(frozen=True)
class Case:
    reads: list[SourceRead]
    rules: JoinRules
    partial: bool  # some read could not say who is gone


@st.composite
def cases(draw: st.DrawFn) -> Case:
    count = draw(st.integers(2, 3))
    names = SOURCES[:count]
    reads = []
    partial = False
    for s, name in enumerate(names):
        people = []
        for n, key in enumerate(KEYS):
            copies = draw(st.sampled_from([0, 0, 1, 1, 1, 2]))  # gaps and duplicate keys
            for c in range(copies):
                sn = None if draw(st.integers(0, 15)) == 0 else key
                people.append(
                    person(
                        f"{name}-{n}-{c}",
                        sn,
                        username=draw(st.sampled_from(["", f"u{n}", f"u{n}"])),
                        name=draw(st.sampled_from(["", f"{name} name {n}"])),
                        email=draw(st.sampled_from([None, f"{key}@{name}.example"])),
                        state=draw(st.sampled_from([State.ACTIVE] * 4 + [State.DEPARTED])),
                        positions=(Position("D1", primary=True),) if s == 0 else (),
                    )
                )
        broken = draw(st.sampled_from(["none"] * 5 + ["incremental", "cut", "domain"]))
        partial = partial or broken != "none"
        d = directory(*people, tree=(s == 0), complete=broken != "incremental")
        if broken == "cut":
            d = Directory(
                d.departments, d.employees, (RejectedRow("x.csv:3", "cut", may_hide_rows=True),)
            )
        if broken == "domain":
            d = Directory(d.departments, d.employees, warnings=("a domain was not read",))
        required = draw(st.booleans()) or s == 0
        reads.append(SourceRead(name, d, key="sn", required=required))
    fields = ["name", "email", "username", "state", "positions"]
    precedence = {
        f: tuple(draw(st.permutations(names))[: draw(st.integers(1, count))])
        for f in fields
        if draw(st.booleans())
    }
    if "positions" in precedence:
        precedence["positions"] = ("s0", *[n for n in precedence["positions"] if n != "s0"])
    missing = draw(st.sampled_from(["wait", "partial"]))
    return Case(reads, JoinRules(precedence, missing), partial)  # type: ignore[arg-type]


def _records(case: Case, key: str) -> dict[str, list[Employee]]:
    return {r.name: [e for e in r.directory.employees.values() if e.sn == key] for r in case.reads}


@settings(max_examples=300, deadline=None)
@given(cases())
def test_nobody_active_is_locked_or_removed_for_want_of_a_source(case: Case) -> None:
    """Someone some source still has, and no source says departed, is synced active, kept as
    they are (a rejected key), or the read says it cannot tell who left."""
    joined = join(case.reads, case.rules, explain=True)
    d = joined.directory
    if case.partial:
        assert not d.leavers_known
    held = d.rejected_keys(Kind.EMPLOYEE)
    for key in KEYS:
        records = [e for found in _records(case, key).values() for e in found]
        if not records or any(e.state is State.DEPARTED for e in records):
            continue
        e = d.employees.get(key)
        assert (e is not None and e.state is State.ACTIVE) or key in held or not d.leavers_known


@settings(max_examples=300, deadline=None)
@given(cases())
def test_the_join_pairs_one_key_and_honours_precedence(case: Case) -> None:
    joined = join(case.reads, case.rules, explain=True)
    assert join(case.reads, case.rules).directory == joined.directory  # the compiled merge
    names = [r.name for r in case.reads]
    by_name = {r.name: r for r in case.reads}
    for key, e in joined.directory.employees.items():
        assert e.id == key
        members = joined.members[key]
        for source, own_id in members.items():  # every record joined holds this key
            assert by_name[source].directory.employees[own_id].sn == key
        records = {s: by_name[s].directory.employees[i] for s, i in members.items()}
        for f in ("name", "email", "username", "state"):
            order = case.rules.precedence.get(f, tuple(names))
            values = [getattr(records[s], f) for s in order if s in records]
            given_values = [v for v in values if v not in (None, "")]
            if given_values:
                assert getattr(e, f) == given_values[0]
            else:  # no source in the order has them: the model's default
                assert getattr(e, f) in (None, State.ACTIVE)
            if f != "state" and given_values:
                assert joined.origins[key][f] == next(
                    s for s in order if s in records and getattr(records[s], f) == given_values[0]
                )
        if case.rules.missing == "wait" and e.state is State.ACTIVE:
            required = [r.name for r in case.reads if r.required]
            assert all(s in members for s in required)  # nobody created before every source
