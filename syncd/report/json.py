"""The report as JSON: the record itself (``RunReport.as_dict``), the run list, and a
person's history, each with ``"schema": 1``. Keys are only ever added within a schema."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from syncd.logs import redact
from syncd.report.value import (
    LIST_COLUMNS,
    SCHEMA,
    PersonHistory,
    RunLine,
    RunReport,
    redact_tree,
    run_times,
)


def _dump(data: Any) -> str:
    text = json.dumps(redact_tree(data), ensure_ascii=False, indent=2, sort_keys=True)
    return redact(text + "\n")


def render_json(report: RunReport) -> str:
    return _dump(report.as_dict())


def render_person_json(history: PersonHistory) -> str:
    return _dump(history.as_dict())


def run_list_dict(lines: Sequence[RunLine]) -> dict[str, Any]:
    """``syncd reports list --output json``: the runs, newest first, with their counts."""
    runs = []
    for line in lines:
        entry = {**asdict(line.run), **run_times(line.run)}
        entry["applied"] = line.totals.applied
        entry["counts"] = {c: line.totals.column(c) for c in LIST_COLUMNS}
        entry["counts"]["adopted"] = line.totals.by_action.get("adopt", 0)
        entry["failed"] = line.totals.failed
        entry["rejected"] = line.rejected
        runs.append(entry)
    return {"schema": SCHEMA, "runs": runs}


def render_run_list_json(lines: Sequence[RunLine]) -> str:
    return _dump(run_list_dict(lines))
