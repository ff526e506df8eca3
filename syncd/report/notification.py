"""What notifications say: the platform's short text message, an e-mail, a webhook's JSON.

Every text is redacted and made printable here; sending is ``syncd.run.notifications``'s.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from syncd.logs import redact
from syncd.report.value import SCHEMA, RunReport, redact_tree, run_times
from syncd.report.wording import EXAMPLES, outcome_line, printable, record, shown, totals_line

NOTIFY_REASONS = 3
NOTIFY_LINE = 200  # characters: a push message is read on a phone
COMMAND = "syncd reports show"
KNOWN_PROBLEM = "known problem"  # the note a run leaves for each new one


def render_notification(report: RunReport, command: str = COMMAND) -> str:
    """A short text message for administrators' phones."""
    r = report.redacted()
    return redact("\n".join(_shorten(line, NOTIFY_LINE) for line in _lines(r, command)))


def _lines(r: RunReport, command: str, reasons: int = NOTIFY_REASONS) -> list[str]:
    run = r.run
    lines = [f"syncd {outcome_line(run)} on {run.host or 'unknown host'}", totals_line(r.totals)]
    lines += [f"blocked by {g.name}: {g.message}" for g in r.blocked_by]
    if r.error and not r.blocked_by:
        lines.append(f"error: {r.error}")
    lines += [f"{g.count:,} × {g.error}" for g in r.failures[:reasons]]
    problems = known_problems(r)  # told once: in the run that found them
    lines += [f"new known problem: {p}" for p in (problems[:reasons] if reasons else problems)]
    if reasons and len(problems) > reasons:
        lines.append(f"… and {len(problems) - reasons:,} more known problems")
    lines.append(f"report: {command} {run.id}")
    return [printable(line) for line in lines]


def known_problems(r: RunReport) -> list[str]:
    """The run's new known problems (values another account holds), as its notes say."""
    return [n.message for n in r.notes if n.kind == KNOWN_PROBLEM]


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def email_subject(report: RunReport) -> str:
    run = report.run
    return shown(f"syncd on {run.host or 'unknown host'}: {outcome_line(run)}")[:200]


def email_body(report: RunReport, command: str = COMMAND) -> str:
    """The message's text, then every failure reason with up to ten of its records."""
    r = report.redacted()
    lines = _lines(r, command, reasons=0)
    for group in r.failures:
        lines += ["", f"{group.count:,} × {printable(group.error)}"]
        lines += [f"    {printable(record(i))}" for i in group.items[:EXAMPLES]]
        if group.count > EXAMPLES:
            lines.append(f"    … and {group.count - EXAMPLES} more")
    return redact("\n".join(lines) + "\n")


def webhook_payload(report: RunReport, command: str = COMMAND) -> dict[str, Any]:
    """The JSON a webhook receives (``"schema": 1``; keys are only ever added)."""
    r = report.redacted()
    totals = r.totals
    payload = {
        "schema": SCHEMA,
        "event": "syncd.run",
        "run": {**asdict(r.run), **run_times(r.run)},
        "totals": asdict(totals),
        "summary": totals_line(totals),
        "blocked_by": [asdict(g) for g in r.blocked_by],
        "error": r.error,
        "failures": [{"error": g.error, "count": g.count} for g in r.failures],
        "known_problems": known_problems(r),
        "text": render_notification(r, command),
        "report_command": f"{command} {r.run.id}",
    }
    result: dict[str, Any] = redact_tree(payload)
    return result
