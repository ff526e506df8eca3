"""What a shell sync shows: a spinner, the plan and the guards, bars, the outcome; or JSON."""

from __future__ import annotations

import logging
from collections import Counter
from types import TracebackType
from typing import TYPE_CHECKING, Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from syncd.cli.shared import ask, err, labelled, live, log, out, print_json, spinner, tell
from syncd.logs import add_log_fields

if TYPE_CHECKING:
    from syncd.config import Settings
    from syncd.plan import Change, Plan
    from syncd.run.runner import RunResult
    from syncd.snapshot import StateStore

# The colour of each action's symbol (the symbols are the text report's) on a terminal.
ACTION_STYLES = {
    "create": "green",
    "adopt": "cyan",
    "update": "yellow",
    "move": "yellow",
    "photo": "cyan",
    "unlock": "green",
    "lock": "red",
    "remove": "red",
    "delete": "red",
}


# The runner logs how a run ended (failed, blocked) for the daemon, whose only output is
# its log; a shell sync shows that itself, once (the error, or the guards' lines).
_RUNNER_LOG = logging.getLogger("syncd.runner")


def _told_by_the_screen(record: logging.LogRecord) -> bool:
    return record.levelno < logging.ERROR


class _Rate(ProgressColumn):
    """Items per second, once there is enough to measure."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.0f}/s" if speed else "", style="progress.data.speed")


class Screen:
    """What a shell sync shows, in order: a spinner while it reads and plans, the plan
    once made (nothing sent yet), bars while it applies, then what was done.

    It is the run's progress (``phase``/``advance``); off a terminal, or with ``-q``,
    each apply phase is one log line instead of a bar.
    """

    def __init__(
        self, *, show: int, long: bool, as_json: bool, log_format: str, confirm: bool = False
    ) -> None:
        self.show = show
        self.confirm = confirm  # ask before applying (a terminal, without --yes)
        self.long = long
        self.as_json = as_json
        self.live = live(log_format)
        self.shown_plan = False
        self._spinner: Progress | None = None
        self._bars: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> Screen:
        _RUNNER_LOG.addFilter(_told_by_the_screen)
        if self.live:
            self._spinner = spinner("reading the source and the platform, planning")
            self._spinner.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _RUNNER_LOG.removeFilter(_told_by_the_screen)
        for display in (self._spinner, self._bars):
            if display is not None:
                display.stop()
        self._spinner = self._bars = None

    # ------------------------------------------------------------ the run's hooks

    def planned(self, result: RunResult) -> bool:
        """The plan is made and the guards have decided: show both before anything is sent,
        and, when asked to confirm, whether the admin wants it applied."""
        add_log_fields(run_id=result.run_id)
        if self._spinner is not None:
            self._spinner.stop()
            self._spinner = None
        if not self.as_json:
            print_plan(result, self.show, long=self.long)
        self.shown_plan = True
        return not (self.confirm and sends(result)) or ask_to_apply()

    def step(self, doing: str, read: int | None = None) -> None:
        """The spinner's words: what is done before anything is sent, and how far it got."""
        if self._spinner is not None:
            text = doing if read is None else f"{doing}: {read:,} people read"
            self._spinner.update(self._spinner.task_ids[0], description=text, refresh=True)

    def phase(self, name: str, total: int) -> None:
        if not self.live:
            log.info("%s: %d items", name, total)
            return
        if self._bars is None:
            self._bars = Progress(
                TextColumn("{task.description:<28}"),
                BarColumn(),
                MofNCompleteColumn(),
                _Rate(),
                TimeRemainingColumn(),
                console=err,
            )
            self._bars.start()
        self._task = self._bars.add_task(name, total=total)

    def advance(self, n: int) -> None:
        if self._bars is not None and self._task is not None:
            self._bars.advance(self._task, n)

    # ------------------------------------------------------------ the end

    def finished(self, state: StateStore, result: RunResult, code: int) -> None:
        if self.as_json:
            print_json(run_document(state, result, self.show, code))
        else:
            if not self.shown_plan:  # stopped before planning: what was read, if anything
                print_plan(result, self.show, long=self.long)
            print_applied(result)
            print_end(result, code)
        if result.outcome == "failed" and result.error:  # blocked: the guards' lines said why
            tell("error:", result.error, logging.ERROR, run_id=result.run_id)


def sends(result: RunResult) -> bool:
    """Whether applying this run's plan would send anything (no guard stopped it)."""
    from syncd.plan import Action

    quiet = (Action.ADOPT, Action.FORGET)  # recorded, nothing sent
    the_plan = result.plan
    return (
        not result.dry_run
        and all(g.passed for g in result.guards)
        and the_plan is not None
        and any(c.action not in quiet for c in the_plan.changes)
    )


def ask_to_apply() -> bool:
    """Whether the admin at the terminal wants the plan shown applied."""
    if ask("Apply these changes?", "syncd sync --yes does not ask"):
        return True
    out.print(labelled("not applied:", "bold", "the plan was declined; nothing was sent"))
    return False


def print_plan(result: RunResult, show: int, *, long: bool = False) -> None:
    """What was read, the plan (counts, then up to ``show`` changes), notes and guards."""
    if (d := result.source) is not None:
        seen = f"read {d['employees']:,} employees and {d['departments']:,} departments"
        if "unchanged_since" in d:
            seen = f"source unchanged since run {d['unchanged_since']}: as then, {seen}"
        out.print(f"{seen} ({d['read']} read), {d['rejected']:,} rows rejected")
    if result.plan is not None:
        shown = _print_changes(result.plan, result.run_id, show, long)
        _print_scheduled(result.plan, result.run_id, show)
        _print_notes(result.plan, told={c.key for c in shown})
    _print_guards(result)


def _print_changes(the_plan: Plan, run_id: int, show: int, long: bool) -> list[Change]:
    """The plan's counts, then up to ``show`` changes (their fields too when ``long``)."""
    from syncd.plan import in_order, listed  # syncd.plan: imported once a run has a result
    from syncd.report import SYMBOLS, printable

    counts = Counter(c.action.value for c in the_plan.changes)
    summary = ", ".join(f"{n:,} to {a}" for a, n in in_order(counts)) or "no changes"
    out.print(labelled("plan:", "bold", summary))
    shown_changes = listed(the_plan.changes, show)
    for change in shown_changes:
        action = change.action.value
        symbol = SYMBOLS.get(action, "*")
        out.print(
            Text.assemble("  ", (symbol, ACTION_STYLES.get(action, "")), " ")
            + printable(change.message)
        )
        if long:
            for line in field_lines(change):
                out.print("      " + line)
    if len(the_plan.changes) > len(shown_changes):
        hidden = len(the_plan.changes) - len(shown_changes)
        out.print(f"  ... and {hidden:,} more: syncd reports show {run_id}")
    return shown_changes


def _print_scheduled(the_plan: Plan, run_id: int, show: int) -> None:
    """What the clock will do (start and end dates): not changes, not counted above."""
    from syncd.report import printable

    scheduled = the_plan.scheduled[: show or None]
    for item in scheduled:
        text = f"{item.display}: {item.message}"
        out.print(Text("  ") + labelled("scheduled:", "cyan", printable(text)))
    if len(the_plan.scheduled) > len(scheduled):
        hidden = len(the_plan.scheduled) - len(scheduled)
        out.print(f"  ... and {hidden:,} more scheduled: syncd reports show {run_id}")


def _print_notes(the_plan: Plan, told: set[str]) -> None:
    """The plan's notes. A drift note whose change is listed above (its key in ``told``)
    would say it twice: the change's reason names the drift (the report keeps every note)."""
    from syncd.report import printable

    for note in the_plan.notes:
        if note.kind == "drift" and note.key in told:
            continue
        out.print(Text("  ") + labelled(f"{note.kind}:", "magenta", printable(note.message)))


def _print_guards(result: RunResult) -> None:
    from syncd.report import printable
    from syncd.report.wording import guard_message, guard_verdict

    for guard in result.guards:
        verdict = guard_verdict(guard.passed, guard.overridden)
        mark = Text(verdict, "yellow" if guard.overridden else "green" if guard.passed else "red")
        message = guard_message(guard.message, guard.overridden)
        out.print(Text.assemble(f"guard {guard.name}: ", mark, " ", printable(message)))


def field_lines(change: Change) -> list[str]:
    """``field: value`` for each field a create sets, ``field: before → after`` otherwise."""
    from syncd import report as rpt
    from syncd.report.wording import readable

    item = rpt.Item(
        seq=0,
        kind=change.kind.value,
        key=change.key,
        display=change.display,
        action=change.action.value,
        before=change.before,
        after=change.after,
    )
    p, value = rpt.printable, readable(change.departments)
    return [
        f"{p(k)}: {p(value(k, a))}" if b is None else f"{p(k)}: {p(value(k, b))} → {p(value(k, a))}"
        for k, b, a in item.field_changes()
    ]


def applied_counts(result: RunResult) -> dict[str, Counter[str]]:
    """Applied items by outcome, then action."""
    done: dict[str, Counter[str]] = {}
    if result.applied is not None:
        for (_, action, outcome), n in result.applied.counts.items():
            done.setdefault(outcome, Counter())[action] += n
    return done


def print_applied(result: RunResult) -> None:
    from syncd.plan import in_order

    if result.applied is None:
        return
    done = applied_counts(result)
    line = ", ".join(f"{n:,} {a}" for a, n in in_order(done.get("ok", Counter()))) or "nothing"
    failed = sum(done.get("failed", Counter()).values())
    text = labelled("applied:", "bold", line)
    if failed:
        text += Text.assemble("; ", (f"{failed:,} failed", "red"))
        text += f" (syncd reports show {result.run_id} --failed-only)"
    out.print(text)
    from syncd.report import printable
    from syncd.run.known_problems import describe

    for known, username in result.applied.new_problems:  # told once: this run found them
        out.print(labelled("known problem:", "yellow", printable(describe(known, username))))


def print_end(result: RunResult, code: int) -> None:
    label = "dry run" if result.dry_run else "run"
    colours = {"ok": "green", "partial": "yellow", "blocked": "red", "failed": "red"}
    ended = Text(result.outcome, colours.get(result.outcome, "yellow"))
    out.print(Text.assemble(f"{label} {result.run_id}: ", ended, f" (exit {code})"))


def _print_run(settings: Settings, result: RunResult, show: int) -> None:
    """A run shown after the fact (``syncd demo``): plan, guards, what was done."""
    from syncd import snapshot as store
    from syncd.service.status import log_failures

    # `syncd demo` prints two runs: no store left open behind it
    with store.StateStore.open(settings.database, settings.database_url) as state:
        print_plan(result, show)
        log_failures(state, result.run_id)
        print_applied(result)
    print_end(result, result.exit_code)


# ---------------------------------------------------------------- --output json


def run_document(state: StateStore, result: RunResult, show: int, code: int) -> dict[str, Any]:
    """``syncd sync --output json``: the shape README.md documents."""
    from syncd.plan import department_paths, in_order, listed
    from syncd.report.value import scheduled_summary
    from syncd.report.wording import guard_message

    d, the_plan = result.source, result.plan
    changes = the_plan.changes if the_plan is not None else ()
    shown_changes = listed(changes, show)
    done = applied_counts(result)
    return {
        "run_id": result.run_id,
        "dry_run": result.dry_run,
        "outcome": result.outcome,
        "exit_code": code,
        "error": result.error,
        "source": None
        if d is None
        else {
            k: d[k]
            for k in ("read", "departments", "employees", "rejected", "unchanged_since")
            if k in d
        },
        "planned": dict(in_order(Counter(c.action.value for c in changes))),
        "changes": [c.as_document() for c in shown_changes],
        "departments": department_paths(shown_changes),
        "notes": [{"kind": n.kind, "key": n.key, "message": n.message} for n in the_plan.notes]
        if the_plan is not None
        else [],
        # What the clock will do (start and end dates): not done, not counted in "planned".
        "scheduled": scheduled_summary(the_plan.scheduled if the_plan is not None else ()),
        "guards": [
            {
                "name": g.name,
                "passed": g.passed,
                "overridden": g.overridden,
                "message": guard_message(g.message, g.overridden),
            }
            for g in result.guards
        ],
        "applied": None
        if result.applied is None
        else {outcome: dict(in_order(counts)) for outcome, counts in sorted(done.items())},
        "failures": [
            {"error": error, "count": n} for error, n in state.failure_groups(result.run_id)
        ],
    }
