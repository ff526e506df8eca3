"""What a sync run gave, for assertions."""

from __future__ import annotations

from syncd.plan import Plan
from syncd.run.runner import RunResult


def plan_of(result: RunResult) -> Plan:
    """The run's plan; a run that planned nothing fails the test with its error."""
    assert result.plan is not None, result.error
    return result.plan
