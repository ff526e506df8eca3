"""The pure side of issue 25: which updates free a value first, which known problems are tried
again, and which import failures are a value another account holds."""

from __future__ import annotations

from typing import Any

from syncd.executor.holders import refused_field
from syncd.model import Employee, Kind
from syncd.plan import Action, Change, KnownProblem
from syncd.plan.unique_values import frees, retries

WRITTEN: dict[str, dict[str, Any]] = {
    "E1": {"mobile": "138 0000 0001", "email": "ann@acme.example"},
    "E2": {"mobile": "13800000002", "email": "bob@acme.example"},
    "E3": {"mobile": "13800000003", "email": "cat@acme.example"},
}


def update(key: str, **values: str | None) -> Change:
    e = Employee(key, key.lower(), key, **values)  # type: ignore[arg-type]
    return Change(
        Kind.EMPLOYEE, Action.UPDATE, key, e.username, e, hash="h", written=WRITTEN.get(key)
    )


def create(key: str, **values: str | None) -> Change:
    e = Employee(key, key.lower(), key, **values)  # type: ignore[arg-type]
    return Change(
        Kind.EMPLOYEE, Action.CREATE, key, e.username, e, hash="h", written=WRITTEN.get(key)
    )


def hasher(e: Employee) -> str:
    return f"{e.mobile}|{e.email}"


def test_a_swap_frees_both_values_first_and_sets_no_new_one_yet() -> None:
    changes = [
        update("E1", mobile="13800000002", email="bob@acme.example"),
        update("E2", mobile="13800000001", email="ann@acme.example"),
    ]
    freed = frees(changes, hasher)
    assert [(c.key, c.frees) for c in freed] == [
        ("E1", ("mobile", "email")),
        ("E2", ("mobile", "email")),
    ]
    assert all(c.record.mobile is None and c.record.email is None for c in freed)  # type: ignore[union-attr]
    assert all(c.hash == "None|None" for c in freed)


def test_values_compare_as_the_platform_does_and_kept_values_are_not_freed() -> None:
    # ann keeps her mobile (spelled otherwise) and gives her e-mail to a new hire, in
    # another letter case; bob's new mobile nobody held.
    changes = [
        update("E1", mobile="13800000001", email="ann2@acme.example"),
        create("E9", email="ANN@acme.example"),
        update("E2", mobile="13900000000", email="bob@acme.example"),
    ]
    freed = frees(changes, hasher)
    assert [(c.key, c.frees) for c in freed] == [("E1", ("email",))]
    assert freed[0].record.mobile == "138 0000 0001"  # type: ignore[union-attr]


def test_a_first_sync_or_a_value_nobody_else_wants_frees_nothing() -> None:
    assert frees([create("E1", mobile="1"), create("E2", mobile="1")], hasher) == []
    assert frees([update("E1", mobile="13911111111")], hasher) == []


def test_a_known_problem_is_tried_again_when_the_holder_lets_go() -> None:
    held_by_bob = KnownProblem("E3", "mobile", "13800000002", "bob", "E2")
    foreign = KnownProblem("E1", "email", "x@acme.example", "outsider", None)
    problems = {"E3": (held_by_bob,), "E1": (foreign,)}
    assert retries(problems, [], []) == {}
    # bob's update in this run gives the number up: cat is tried again in the same run.
    assert retries(problems, [], [update("E2", mobile="13900000000")]) == {"E3": [held_by_bob]}
    # The platform says the outsider no longer holds the address.
    assert retries(problems, [("E1", "email")], []) == {"E1": [foreign]}
    # Someone whose own update is planned sends the value anyway.
    assert retries(problems, [("E1", "email")], [update("E1", mobile="1")]) == {}


def test_refusals_of_a_value_another_account_holds_are_told_from_other_failures() -> None:
    assert refused_field("mobile already used by another employee") == "mobile"
    assert refused_field("email already used by another employee") == "email"
    assert refused_field("E-mail address is already taken") == "email"
    assert refused_field("invalid mobile: 12") is None
    assert refused_field("username already exists") is None
    assert refused_field(None) is None
