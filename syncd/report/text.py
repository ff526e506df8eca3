"""The report as plain text, for a terminal or a log: one value per line, never a control
character, failures first."""

from __future__ import annotations

from syncd.logs import redact
from syncd.report.value import PersonHistory, RunReport
from syncd.report.wording import (
    EXAMPLES,
    SYMBOLS,
    count_lines,
    detail_lines,
    duration,
    failed_record,
    guard_message,
    item_state,
    outcome_line,
    platform_line,
    printable,
    readable,
    shown,
    source_line,
    steps_line,
    totals_line,
    when,
)


def render_text(report: RunReport, limit: int | None = None) -> str:
    """The whole report; ``limit``: the changes listed of each action, and the rejected
    rows listed (the rest counted, with where to see them all)."""
    r = report.redacted()
    sections = (
        _text_header(r),
        _text_failures(r),
        _text_changes(r, limit),
        _text_scheduled(r, limit),
        _text_notes(r),
        _text_guards(r),
        _text_rejected(r, limit),
    )
    lines = [line for section in sections if section for line in (*section, "")]
    return redact("\n".join(lines).rstrip("\n") + "\n")


LABEL = " " * 12  # the width of a header line's label ("  steps     ")


def _text_header(r: RunReport) -> list[str]:
    run = r.run
    p = printable
    lines = [
        outcome_line(run),
        f"  trigger   {p(run.trigger)}, mode {p(run.mode)}, {p(run.read)} read",
        f"  source    {p(run.source) or '—'}",
        f"  read      {p(source_line(r.source))}",
        f"  started   {when(run.started_at)}   finished {when(run.finished_at)}   "
        f"took {duration(run.duration_ms)}",
        *_steps_lines(r),
        f"  host      {p(run.host or '—')} (pid {run.pid if run.pid is not None else '—'})",
        f"  result    {totals_line(r.totals)}",
    ]
    if r.stats.get("calls") is not None:
        lines.append(f"  platform  {p(platform_line(r.stats))}")
    if r.error and not r.blocked_by:  # a block's reasons are the guards, listed below
        lines.append(f"  error     {p(r.error)}")
    if r.counts:
        lines.append("  counts")
        lines += [f"    {p(k)} {p(a)}: {p(o)}" for (k, a), o in count_lines(r.counts)]
    return lines


def _steps_lines(r: RunReport) -> list[str]:
    """Where the run's time went (none for a run recorded before steps were timed): six
    steps and their times, wrapped to 80 columns."""
    steps = steps_line(r.stats)
    parts = _between_steps(printable(steps), 80 - len(LABEL)) if steps else []
    return [("  steps     " if n == 0 else LABEL) + part for n, part in enumerate(parts)]


def _between_steps(steps: str, width: int) -> list[str]:
    """``steps`` ("read 0.7 s, plan 0.7 s, …") as lines of at most ``width``, broken only
    between two steps, so a step's time is never cut in two."""
    lines = [""]
    for part in steps.split(", "):
        if lines[-1] and len(lines[-1]) + len(part) + 3 > width:  # ", " now, "," at the end
            lines[-1] += ","
            lines.append(part)
        else:
            lines[-1] += f", {part}" if lines[-1] else part
    return lines


def _text_failures(r: RunReport) -> list[str]:
    p = printable
    lines = ["failures"]
    lines += [f"  blocked by guard {p(g.name)}: {p(g.message)}" for g in r.blocked_by]
    if r.run.outcome == "interrupted":
        lines.append("  interrupted: items not sent are planned again by the next run")
    for group in r.failures:
        lines.append(f"  {group.count:,} × {p(group.error)}")
        lines += [f"      {p(failed_record(i))}" for i in group.items[:EXAMPLES]]
        if group.count > EXAMPLES:
            lines.append(f"      … and {group.count - EXAMPLES:,} more")
    if len(lines) == 1:
        lines.append("  none")
    return lines


def _more(hidden: int, indent: str) -> list[str]:
    """The line that counts what a limit left out, and how to see it."""
    if hidden <= 0:
        return []
    return [f"{indent}… and {hidden:,} more (--limit 0 lists all; --output csv for a sheet)"]


def _text_changes(r: RunReport, limit: int | None) -> list[str]:
    p = printable
    lines = ["failed changes" if r.failed_only else "changes"]
    for action, items in r.by_action():
        lines.append(f"  {p(action)} ({len(items):,})")
        for item in items[:limit]:
            state = item_state(item, r.run)
            suffix = f"  — {p(state)}" if state else ""
            lines.append(f"    {SYMBOLS.get(item.action, '*')} {p(item.message)}{suffix}")
            if item.before is not None:  # a create's fields are the whole record: not repeated
                lines += [
                    f"        {p(k)}: {p(b)} → {p(a)}"
                    for k, b, a in detail_lines(item, readable(r.departments))
                    if b is not None
                ]
        lines += _more(len(items) - len(items[:limit]), "    ")
    if len(lines) == 1:
        lines.append("  none")
    return lines


def _text_scheduled(r: RunReport, limit: int | None) -> list[str]:
    """What the clock will do (start and end dates): not done, not counted; none: no lines."""
    count = int(r.scheduled.get("count") or 0)
    if not count:
        return []
    p = printable
    items = list(r.scheduled.get("items") or ())
    lines = [f"scheduled, not done ({count:,})"]
    for item in items[:limit]:
        lines.append(f"  scheduled: {p(str(item.get('display')))}: {p(str(item.get('message')))}")
    lines += _more(count - len(items[:limit]), "  ")
    return lines


def _text_notes(r: RunReport) -> list[str]:
    p = printable
    lines = ["notes"]
    lines += [
        f"  {p(n.kind)}: " + (f"{p(n.key)}: " if n.key else "") + p(n.message) for n in r.notes
    ]
    return lines if r.notes else [*lines, "  none"]


def _text_guards(r: RunReport) -> list[str]:
    p = printable
    lines = ["guards"]
    for g in r.guards:
        verdict = "passed" if g.passed else "BLOCKED"
        extra = " (overridden)" if g.overridden else ""
        lines.append(
            f"  {p(g.name)}: {verdict}{extra}: {p(guard_message(g.message, g.overridden))}"
        )
    return lines if r.guards else [*lines, "  none"]


def _text_rejected(r: RunReport, limit: int | None) -> list[str]:
    p = printable
    lines = [f"rejected rows ({len(r.rejected):,})"]
    for row in r.rejected[:limit]:
        key = f" {p(row.key)}" if row.key else ""
        lines.append(f"  {p(row.where)}: {p(row.kind)}{key}: {p(row.reason)}")
    lines += _more(len(r.rejected) - len(r.rejected[:limit]), "  ")
    return lines if r.rejected else [*lines, "  none"]


def render_person_text(history: PersonHistory) -> str:
    """One person's history: each run that changed, locked, removed or failed them, and why."""
    lines = [f"{shown(history.username)}: {len(history.events)} changes recorded"]
    if history.keys:
        lines[0] += f" (source id {', '.join(shown(k) for k in history.keys)})"
    for event in history.events:
        run, item = event.run, event.item
        planned = "" if run.applied else " (planned, not sent)"
        state = item_state(item, run) or "planned"
        lines.append(
            f"  {when(run.started_at)}  {outcome_line(run)}: {shown(item.action)} "
            f"{shown(item.display)}{planned} — {shown(state)}"
        )
        for k, b, a in detail_lines(item, readable(history.departments)):
            change = f"{shown(b)} → {shown(a)}" if b is not None else shown(a)
            lines.append(f"      {shown(k)}: {change}")
    if not history.events:
        lines.append("  no recorded run changed, locked, removed or failed this person")
    return redact("\n".join(lines) + "\n")
