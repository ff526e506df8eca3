"""An overridden guard is shown as overridden, never with the "rerun with" of a blocked one."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import syncd.plan.guards as guards
from syncd.report.wording import guard_message, guard_verdict

# Every override flag the guards name, read from their module: a new guard's is checked too.
FLAGS = sorted(set(re.findall(r"--allow-[a-z]+", Path(guards.__file__).read_text("utf-8"))))


@given(
    flag=st.sampled_from(FLAGS),
    count=st.integers(min_value=1, max_value=10**7),
    message=st.text(min_size=1).filter(lambda t: "\n" not in t),
)
def test_an_overridden_decision_drops_the_way_out_and_a_blocked_one_keeps_it(
    flag: str, count: int, message: str
) -> None:
    overridden = guards._decision("g", message, True, count, count, flag)
    blocked = guards._decision("g", message, True, count, count - 1, flag)

    assert overridden.passed and overridden.overridden
    assert guard_message(overridden.message, True) == message
    assert guard_verdict(overridden.passed, True) == "ok (overridden)"
    assert not blocked.passed
    assert guard_message(blocked.message, False).endswith(
        f"rerun with {flag} {count} if this is intended"
    )
    assert guard_verdict(blocked.passed, False) == "BLOCKED"


def test_the_flags_are_found() -> None:
    assert {"--allow-removals", "--allow-reactivations", "--allow-updates"} <= set(FLAGS)
