"""The pure parts of tags and heads: what is sent, how it reads, the fields and hashes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from syncd.model import Employee, Kind, Position, State
from syncd.plan import Action, Change, employee_fields
from syncd.plan.fields import employee_from_fields, employee_hash
from syncd.plan.tags import tag_pairs, tags_text, tags_to_send
from syncd.report.wording import field_value
from syncd.sources.heads import with_heads

Tag = tuple[str, str]
TAGS = st.frozensets(st.sampled_from([("T", "a"), ("T", "b"), ("D", "c"), ("V", "x")]))


@given(platform=TAGS, had=TAGS, wanted=TAGS)
def test_what_is_sent_keeps_every_tag_syncd_did_not_set_and_holds_what_it_wants(
    platform: frozenset[Tag], had: frozenset[Tag], wanted: frozenset[Tag]
) -> None:
    sent = set(tags_to_send(platform, had, wanted))
    assert wanted <= sent
    assert platform - had <= sent  # never set by syncd: never taken away
    assert sent - wanted <= platform  # nothing else is added
    assert not (had - wanted) & sent  # what syncd set and no longer wants goes
    assert tags_to_send(sent, wanted, wanted) == sorted(sent)  # sent again: no change


def test_tag_pairs_read_both_shapes_and_pass_over_others() -> None:
    assert tag_pairs([["T", "a"], {"group": "D", "tag": "c"}, "x", ["only"], {"group": 1}]) == {
        ("T", "a"),
        ("D", "c"),
    }
    assert tags_text([["T", "b"], ["D", "c"]]) == "D: c, T: b"
    assert tags_text([]) == "none"


def person(**fields: object) -> Employee:
    return Employee("E1", "ann", "Ann", (Position("D1", primary=True),), **fields)  # type: ignore[arg-type]


def test_people_without_tags_keep_their_fields_and_hashes() -> None:
    plain, tagged = person(), person(tags=(("T", "a"),))
    assert "tags" not in employee_fields(plain, {})
    assert employee_fields(tagged, {})["tags"] == [["T", "a"]]
    assert employee_hash(plain, {}) != employee_hash(tagged, {})
    assert employee_hash(plain, {}) == employee_hash(plain._replace(tags=()), {})
    again = employee_from_fields("E1", employee_fields(tagged, {}), {}, State.ACTIVE)
    assert again.tags == (("T", "a"),)
    assert employee_hash(again, {}) == employee_hash(tagged, {})


def test_a_tag_change_reads_as_a_field_change() -> None:
    before = employee_fields(person(tags=(("T", "a"),)), {})
    change = Change(
        Kind.EMPLOYEE,
        Action.UPDATE,
        "E1",
        "ann",
        person(tags=(("D", "c"), ("T", "a"))),
        written=before,
    )
    assert "tags T: a → D: c, T: a" in change.message
    cleared = Change(Kind.EMPLOYEE, Action.UPDATE, "E1", "ann", person(), written=before)
    assert "tags T: a → none" in cleared.message


def test_a_head_is_chief_only_where_placed() -> None:
    ann = Employee("E1", "ann", "Ann", (Position("D1", primary=True), Position("D2")))
    bob = Employee("E2", "bob", "Bob", (Position("D2", primary=True),))
    people = [("r1", ann), ("r2", bob)]
    found, problems = with_heads(people, {"D2": "E1", "D3": "E2", "D4": "E9"}, str.lower)
    assert [p.chief for p in found[0][1].positions] == [False, True]
    assert [p.chief for p in found[1][1].positions] == [False]
    assert len(problems) == 2
    assert "'d3' (D3)" in problems[0] and "'bob' (E2)" in problems[0]
    assert "'E9'" in problems[1]
    # A delta read: a head not read is no problem (the person is kept as last written).
    assert with_heads(people, {"D4": "E9"}, str, complete=False)[1] == []


def test_reports_show_tags_as_people_read_them() -> None:
    assert field_value("tags", [["Teams", "A"], ["Duty", "On call"]], {}) == (
        "Duty: On call, Teams: A"
    )
    assert field_value("tags", [], {}) == "none"
    positions = [{"department": "D1", "job_title": "Lead", "primary": True, "chief": True}]
    assert field_value("positions", positions, {"D1": "Acme/Sales"}) == "Acme/Sales (Lead, head)"
