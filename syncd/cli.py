"""The ``syncd`` command: sync, check, run, status, reports, emulator, demo, init.

Exit codes: 0 everything applied (or nothing to do), 1 some items failed (or, with
``--check``, changes pending; ``status``: unhealthy), 2 blocked by a guard, 3 could not
run (a usage error too).

A shell sync shows what it will do before doing it, as ``terraform apply`` does: a
spinner while it reads and plans, then the plan and the guards' decisions, then bars
while it applies, then the outcome. On a terminal the spinner, the bars and the log
lines share one console, so a log line prints above the bars instead of through them.
``--output json`` prints one JSON document instead (README, "Output for scripts").

The consoles print text as it is: no markup, emoji codes or highlighting, so a value
shown (a path, an error, a name from the source) can never be read as markup. ``[/hr]``
in a path would otherwise end a style that was never opened and crash the command,
``[hr]`` would vanish, ``:smile:`` become an emoji. Styles come only from ``Text``.
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import sys
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from enum import StrEnum
from importlib.util import find_spec
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from syncd.config import Settings, load_settings
from syncd.errors import EXIT_FAILED, EXIT_OK, SyncdError
from syncd.init import SourceKind
from syncd.logs import (
    add_log_fields,
    journal_prefix,
    log_context,
    redact,
    register_secret,
    setup_logging,
)

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from syncd.plan import Change
    from syncd.runner import RunRequest, RunResult

app = typer.Typer(
    name="syncd",
    help="Keep the platform's organization tree and employees in step with LDAP, AD or CSV.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
# Long lines stay whole in logs and pipes; text is never markup (see the docstring).
out = Console(soft_wrap=True, markup=False, emoji=False, highlight=False)
err = Console(stderr=True, soft_wrap=True, markup=False, emoji=False, highlight=False)
log = logging.getLogger("syncd")


@dataclass
class _Options:
    """What the options before the command (``syncd -v sync``) asked for."""

    level: str | None = None  # -v / -q: over the settings' log_level
    quiet: bool = False


options = _Options()


def _settings_file(value: Path | None) -> Path | None:
    if value is not None and str(value) in ("", "."):
        raise typer.BadParameter("must name a settings file")
    return value


ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help="Settings file (default: $SYNCD_CONFIG).",
        show_default=False,
        callback=_settings_file,
    ),
]


class Output(StrEnum):
    TEXT = "text"
    JSON = "json"


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise typer.BadParameter("must be a finite number")
    return value


ShowOption = Annotated[int, typer.Option(min=0, help="Changes to list (0: all).")]
LongOption = Annotated[
    bool, typer.Option("--long", "-l", help="List the fields each change sets, one a line.")
]
WaitOption = Annotated[
    float,
    typer.Option(min=0, callback=_finite, help="Seconds to wait for a running sync to finish."),
]
OutputOption = Annotated[
    Output,
    typer.Option(
        "--output", "-o", help="text, or json: one document of a stable shape (see README)."
    ),
]


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        out.print(f"syncd {version('syncd')}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _before_the_command(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log at DEBUG: each failed item, each request.")
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Log only warnings and errors; no progress.")
    ] = False,
) -> None:
    if verbose and quiet:
        raise typer.BadParameter("give one of --verbose and --quiet", param_hint="-v/-q")
    options.level = "DEBUG" if verbose else "WARNING" if quiet else None
    options.quiet = quiet
    _setup_logging(options.level or "INFO", "text")


def _setup_logging(level: str, fmt: str) -> None:
    setup_logging(level, fmt, console=err if err.is_terminal else None)


def settings_from(
    config: Path | None, *, require_secrets: bool = True, platform_secret: bool = True
) -> Settings:
    """Load settings, set up logging and register the secrets for redaction."""
    settings = load_settings(
        config,
        warn=lambda message: err.print(problem("warning:", message, logging.WARNING)),
        require_secrets=require_secrets,
        platform_secret=platform_secret,
    )
    for secret in settings.secret_values():
        register_secret(secret)
    _setup_logging(options.level or settings.log_level, settings.log_format)
    return settings


def labelled(label: str, style: str, value: str) -> Text:
    """A styled label and a value shown exactly as it is (see the module docstring)."""
    return Text.assemble((label, style), " ", value)


def problem(label: str, message: str, level: int) -> Text:
    """``error: ...`` or ``warning: ...``; under journald with its priority (``<3>``)."""
    style = "red" if level >= logging.ERROR else "yellow"
    return Text(journal_prefix(level)) + labelled(label, style, message)


# The colour of each action's symbol (the symbols are the text report's) on a terminal,
# in the order counts are shown: the order changes are applied in.
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


def in_order(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    """(action, count) in the fixed order: create, adopt, update, move, unlock, lock, ..."""
    return [(action, counts[action]) for action in ACTION_STYLES if counts.get(action)]


@app.command()
def sync(
    config: ConfigOption = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Read, plan and check; send nothing.")
    ] = False,
    check_only: Annotated[
        bool, typer.Option("--check", help="A dry run that exits 1 when changes are pending.")
    ] = False,
    allow_removals: Annotated[
        int | None,
        typer.Option(
            min=0, help="Let this run lock, remove or delete up to N records past the guards."
        ),
    ] = None,
    incremental: Annotated[
        bool,
        typer.Option(help="LDAP: read only what changed since the last run (finds no leavers)."),
    ] = False,
    show: ShowOption = 200,
    long: LongOption = False,
    wait: WaitOption = 0,
    output: OutputOption = Output.TEXT,
    save_plan: Annotated[
        Path | None,
        typer.Option(
            "--save-plan",
            help="Write the plan to this file for review and `syncd apply` (a dry run).",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Sync the source to the platform: show the plan, then apply it; --dry-run only shows it."""
    from syncd.runner import RunRequest

    settings = settings_from(config)
    request = RunRequest(
        dry_run=dry_run or check_only or save_plan is not None,
        read="incremental" if incremental else "full",
        allow_removals=allow_removals,
        save_plan=save_plan,
    )
    code = _sync_and_show(settings, request, check_only, show, long, wait, output)
    if save_plan is not None and code in (0, 1, 2):  # blocked too: the reviewer decides
        err.print(
            labelled("saved:", "bold", f"the plan is in {save_plan}: syncd apply {save_plan}")
        )
    raise typer.Exit(code)


@app.command()
def apply(
    plan_file: Annotated[
        Path,
        typer.Argument(help="A plan saved by syncd sync --dry-run --save-plan.", dir_okay=False),
    ],
    config: ConfigOption = None,
    show: ShowOption = 200,
    long: LongOption = False,
    wait: WaitOption = 0,
    output: OutputOption = Output.TEXT,
) -> None:
    """Apply a saved plan: only if planning now gives the very same changes (else exit 2)."""
    from syncd import saved_plan
    from syncd.runner import RunRequest

    settings = settings_from(config)
    request = RunRequest(saved=saved_plan.read(plan_file))
    raise typer.Exit(_sync_and_show(settings, request, False, show, long, wait, output))


def _sync_and_show(
    settings: Settings,
    request: RunRequest,
    check_only: bool,
    show: int,
    long: bool,
    wait: float,
    output: Output,
) -> int:
    """One run with its screen: the plan before anything is sent, bars, then the outcome."""
    from syncd import snapshot as store
    from syncd._status import log_failures
    from syncd.dry_runs import prune_dry_runs
    from syncd.metrics import write_textfile
    from syncd.runner import run_sync

    screen = Screen(
        show=show, long=long, as_json=output is Output.JSON, log_format=settings.log_format
    )
    engine = store.open_engine(settings.database)
    try:
        with _stop_on_signals() as stop, screen, log_context():
            result = run_sync(
                settings,
                request,
                engine=engine,
                progress=screen,
                stop=stop,
                on_planned=screen.planned,
                lock_wait_seconds=wait,
            )
        log_failures(engine, result.run_id)
        code = result.exit_code
        if check_only and code == 0 and result.plan is not None and result.plan.changes:
            code = 1
        screen.finished(engine, result, code)
        if request.dry_run:
            prune_dry_runs(engine, settings.reports.dry_run_keep_days)
        elif settings.metrics.textfile is not None:
            write_textfile(engine, settings.metrics.textfile)
    finally:
        engine.dispose()
    return code


def live(log_format: str) -> bool:
    """Whether to show a spinner and bars: on a terminal, not asked to be quiet, text logs."""
    return err.is_terminal and not options.quiet and log_format == "text"


def spinner(description: str) -> Progress:
    """A spinner with what is being done and for how long; it vanishes once stopped."""
    display = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )
    display.add_task(description, total=None)
    return display


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

    def __init__(self, *, show: int, long: bool, as_json: bool, log_format: str) -> None:
        self.show = show
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

    def planned(self, result: RunResult) -> None:
        """The plan is made and the guards have decided: show both before anything is sent."""
        add_log_fields(run_id=result.run_id)
        if self._spinner is not None:
            self._spinner.stop()
            self._spinner = None
        if not self.as_json:
            print_plan(result, self.show, long=self.long)
        self.shown_plan = True

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

    def finished(self, engine: Engine, result: RunResult, code: int) -> None:
        if self.as_json:
            print_json(run_document(engine, result, self.show, code))
        else:
            if not self.shown_plan:  # stopped before planning: what was read, if anything
                print_plan(result, self.show, long=self.long)
            print_applied(result)
            print_end(result, code)
        if result.outcome == "failed" and result.error:  # blocked: the guards' lines said why
            err.print(problem("error:", result.error, logging.ERROR))


def print_plan(result: RunResult, show: int, *, long: bool = False) -> None:
    """What was read, the plan (counts, then up to ``show`` changes), notes and guards."""
    from syncd.report import SYMBOLS, printable

    if result.directory is not None:
        d = result.directory
        out.print(
            f"read {len(d.employees)} employees and {len(d.departments)} departments "
            f"({'full' if d.complete else 'incremental'} read), {len(d.rejected)} rows rejected"
        )
    the_plan = result.plan
    if the_plan is not None:
        counts = Counter(c.action.value for c in the_plan.changes)
        summary = ", ".join(f"{n} to {a}" for a, n in in_order(counts)) or "no changes"
        out.print(labelled("plan:", "bold", summary))
        listed = the_plan.changes[: show or None]
        for change in listed:
            action = change.action.value
            symbol = SYMBOLS.get(action, "*")
            out.print(
                Text.assemble("  ", (symbol, ACTION_STYLES.get(action, "")), " ")
                + printable(change.message)
            )
            if long:
                for line in field_lines(change):
                    out.print("      " + line)
        if len(the_plan.changes) > len(listed):
            hidden = len(the_plan.changes) - len(listed)
            out.print(f"  ... and {hidden} more: syncd reports show {result.run_id}")
        for note in the_plan.notes:
            out.print(Text("  ") + labelled(f"{note.kind}:", "magenta", printable(note.message)))
    for guard in result.guards:
        mark = Text("ok", "green") if guard.passed else Text("BLOCKED", "red")
        message = guard.message + (" (overridden)" if guard.overridden else "")
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
    if result.applied is None:
        return
    done = applied_counts(result)
    line = ", ".join(f"{n} {a}" for a, n in in_order(done.get("ok", Counter()))) or "nothing"
    failed = sum(done.get("failed", Counter()).values())
    text = labelled("applied:", "bold", line)
    if failed:
        text += Text.assemble("; ", (f"{failed} failed", "red"))
        text += f" (syncd reports show {result.run_id} --failed-only)"
    out.print(text)


def print_end(result: RunResult, code: int) -> None:
    label = "dry run" if result.dry_run else "run"
    colours = {"ok": "green", "partial": "yellow", "blocked": "red", "failed": "red"}
    ended = Text(result.outcome, colours.get(result.outcome, "yellow"))
    out.print(Text.assemble(f"{label} {result.run_id}: ", ended, f" (exit {code})"))


@contextmanager
def _stop_on_signals() -> Iterator[threading.Event]:
    """SIGTERM or SIGINT: the run stops after the batch in flight; a second one exits at once.

    A shell sync and the timer unit's are stopped so: recorded as interrupted, exit 1.
    """
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        # Between two bytecodes of the main thread: no logging (it takes locks), no raising.
        name = signal.Signals(signum).name
        if stop.is_set():
            os.write(2, f"{name} again: exiting at once\n".encode())
            os._exit(128 + signum)
        stop.set()
        os.write(2, f"{name}: stopping after the batch in flight (again: at once)\n".encode())

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield stop
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _print_run(settings: Settings, result: RunResult, show: int) -> None:
    """A run shown after the fact (``syncd demo``): plan, guards, what was done."""
    from syncd import snapshot as store
    from syncd._status import log_failures

    engine = store.open_engine(settings.database)
    try:
        print_plan(result, show)
        log_failures(engine, result.run_id)
        print_applied(result)
    finally:
        engine.dispose()  # `syncd demo` prints two runs: no engine left open behind it
    print_end(result, result.exit_code)


# ---------------------------------------------------------------- --output json


def print_json(document: Mapping[str, Any]) -> None:
    """One JSON document on stdout, as it is (never through the console's markup)."""
    out.file.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")
    out.file.flush()


def run_document(engine: Engine, result: RunResult, show: int, code: int) -> dict[str, Any]:
    """``syncd sync --output json``: the shape README.md documents."""
    from syncd import snapshot as store

    d, the_plan = result.directory, result.plan
    changes = the_plan.changes if the_plan is not None else ()
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
            "read": "full" if d.complete else "incremental",
            "departments": len(d.departments),
            "employees": len(d.employees),
            "rejected": len(d.rejected),
        },
        "planned": dict(in_order(Counter(c.action.value for c in changes))),
        "changes": [c.as_document() for c in changes[: show or None]],
        "notes": [{"kind": n.kind, "key": n.key, "message": n.message} for n in the_plan.notes]
        if the_plan is not None
        else [],
        "guards": [
            {"name": g.name, "passed": g.passed, "overridden": g.overridden, "message": g.message}
            for g in result.guards
        ],
        "applied": None
        if result.applied is None
        else {outcome: dict(in_order(counts)) for outcome, counts in sorted(done.items())},
        "failures": [
            {"error": error, "count": n} for error, n in store.failure_groups(engine, result.run_id)
        ],
    }


@app.command()
def check(
    config: ConfigOption = None,
    preview: Annotated[
        bool,
        typer.Option(help="Show source values and the platform fields they become, per person."),
    ] = False,
    people: Annotated[
        list[str] | None, typer.Argument(help="With --preview: N people, or usernames.")
    ] = None,
    output: OutputOption = Output.TEXT,
) -> None:
    """Read the source and show what it holds; the platform and its secret are not needed."""
    from syncd.model import match_index
    from syncd.report import printable
    from syncd.sources import describe, read_directory

    settings = settings_from(config, platform_secret=False)
    if preview or people:
        from syncd.sources.preview import show_preview

        show_preview(settings, people or [], "json" if output is Output.JSON else "table", out)
        return
    with spinner("reading the source") if live(settings.log_format) else nullcontext():
        directory = read_directory(settings.source)
    # What was read, when the source says (the LDAP server used, after any failover).
    where = directory.source or describe(settings.source)
    departed = sum(1 for e in directory.employees.values() if e.state == "departed")
    if output is Output.JSON:
        print_json(
            {
                "source": where,
                "read": "full" if directory.complete else "incremental",
                "departments": len(directory.departments),
                "employees": len(directory.employees),
                "departed": departed,
                "rejected": [
                    {"kind": r.kind.value, "where": r.where, "key": r.key, "reason": r.reason}
                    for r in directory.rejected
                ],
            }
        )
        return
    out.print("source      " + printable(where))
    out.print(f"departments {len(directory.departments)}")
    out.print(f"employees   {len(directory.employees)}")
    out.print(f"departed    {departed}")
    out.print(f"left out    {directory.filtered} (source.mapping.filter)")
    out.print(f"rejected    {len(directory.rejected)}")
    for row in directory.rejected:
        out.print(f"  {printable(row.where)}: {row.kind.value}: {printable(row.reason)}")
    for warning in directory.warnings:
        err.print(labelled("warning:", "yellow", printable(warning)))
    key = settings.sync.match_by
    shared = {v: ids for v, ids in match_index(directory, key).items() if len(ids) > 1}
    for value, ids in sorted(shared.items()):
        message = f"{len(ids)} people share {key} {value}: none of them can be matched"
        err.print(labelled("warning:", "yellow", printable(message)))


reports_app = typer.Typer(help="Review the runs syncd recorded.", no_args_is_help=True)
app.add_typer(reports_app, name="reports")


FileOption = Annotated[
    Path | None, typer.Option("--file", help="Write to this file instead of stdout.")
]


@reports_app.command("list")
def reports_list(
    config: ConfigOption = None,
    last: Annotated[int, typer.Option(min=0, help="How many runs, newest first.")] = 20,
    failed: Annotated[
        bool, typer.Option(help="Only runs that failed, partly failed or were blocked.")
    ] = False,
    output: Annotated[str, typer.Option("--output", "-o", help="text or json.")] = "text",
    dry_runs: Annotated[
        bool, typer.Option("--dry-runs", help="List dry runs (--dry-run, --check) instead.")
    ] = False,
) -> None:
    """One line per run: real runs; dry runs are kept apart (--dry-runs)."""
    from syncd.runs import print_run_list

    settings = settings_from(config, require_secrets=False)
    print_run_list(settings, out, last=last, failed_only=failed, fmt=output, dry_runs=dry_runs)


@reports_app.command("show")
def reports_show(
    run: Annotated[str, typer.Argument(help="A run id, or 'latest'.")] = "latest",
    config: ConfigOption = None,
    failed_only: Annotated[bool, typer.Option(help="Only the items that failed.")] = False,
    output: Annotated[
        str, typer.Option("--output", "-o", "--format", help="text, json, csv or html.")
    ] = "text",
    file: FileOption = None,
) -> None:
    """One run in full: summary, failures grouped by error, changes, rejected rows."""
    from syncd.runs import show_run

    show_run(
        settings_from(config, require_secrets=False),
        out,
        run,
        fmt=output,
        failed_only=failed_only,
        output=file,
    )


@reports_app.command("person")
def reports_person(
    username: Annotated[str, typer.Argument(help="The person's username on the platform.")],
    config: ConfigOption = None,
    planned: Annotated[
        bool, typer.Option(help="Also what dry runs and blocked runs only planned.")
    ] = False,
    output: Annotated[str, typer.Option("--output", "-o", help="text, json or csv.")] = "text",
    file: FileOption = None,
) -> None:
    """Every run that changed, locked, removed or failed one person, and why."""
    from syncd.runs import show_person

    settings = settings_from(config, require_secrets=False)
    show_person(settings, out, username, fmt=output, planned=planned, output=file)


@reports_app.command("prune")
def reports_prune(
    keep_days: Annotated[int, typer.Option(help="Keep the runs of the last N days.")],
    config: ConfigOption = None,
) -> None:
    """Delete the records of older runs."""
    from syncd.runs import prune_runs

    prune_runs(settings_from(config, require_secrets=False), out, keep_days=keep_days)


@app.command()
def run(config: ConfigOption = None) -> None:
    """Run as a service: sync on the configured schedule until stopped."""
    from syncd.daemon import serve

    raise typer.Exit(serve(config))


@app.command()
def status(config: ConfigOption = None, output: OutputOption = Output.TEXT) -> None:
    """The daemon, its next run, the run lock and the last runs; exit 1 when not healthy."""
    from syncd._status import print_status, read_status

    found = read_status(settings_from(config, require_secrets=False))
    if output is Output.JSON:
        print_json(found.document())
    else:
        print_status(found, out)
    found.check_health()


@app.command()
def emulator(
    host: Annotated[
        str, typer.Option(help="Address to bind; loopback unless you mean it.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8900,
    org_code: Annotated[str, typer.Option(help="Organization code of the one root node.")] = "acme",
    org_name: Annotated[str, typer.Option(help="Name of the root node.")] = "Acme",
    domain_id: Annotated[str, typer.Option(help="Domain id.")] = "acme",
    client_id: Annotated[
        str, typer.Option(help="Application key accepted by /v1/token.")
    ] = "syncd",
    client_secret: Annotated[
        str, typer.Option(envvar="SYNCD_EMULATOR_SECRET", help="Application secret accepted.")
    ] = "demo-secret",  # noqa: S107 - the emulator's made-up demo credential
    state_file: Annotated[
        Path | None, typer.Option(help="Load state from this file at start, save it at stop.")
    ] = None,
    api_version: Annotated[
        str, typer.Option(help="v4, or v3 (no employee /disable and /enable endpoints).")
    ] = "v4",
    token_lifetime: Annotated[int, typer.Option(help="Token lifetime in seconds.")] = 7200,
    faults: Annotated[
        Path | None, typer.Option(help="JSON file of fault settings to start with.")
    ] = None,
) -> None:
    """Serve the platform emulator: the admin API syncd uses, for tests and demos."""
    _need_the_emulator("syncd emulator")
    from syncd.emulator import EmulatorOptions, FaultSettings, read_fault_settings, serve

    if api_version not in ("v3", "v4"):
        raise typer.BadParameter("must be v3 or v4", param_hint="--api-version")
    serve(
        EmulatorOptions(
            host=host,
            port=port,
            org_code=org_code,
            org_name=org_name,
            domain_id=domain_id,
            client_id=client_id,
            client_secret=client_secret,
            state_file=state_file,
            api_version="v3" if api_version == "v3" else "v4",
            token_lifetime_seconds=token_lifetime,
            faults=read_fault_settings(faults) if faults else FaultSettings(),
            log_level="info",
        )
    )


@app.command()
def demo(
    folder: Annotated[Path, typer.Option(help="Where the demo keeps its files and state.")] = Path(
        ".syncd/demo"
    ),
) -> None:
    """Sync the sample company into a local emulator, change it, sync again, show both runs."""
    _need_the_emulator("syncd demo")
    from syncd import demo as scenario
    from syncd.emulator import EmulatorOptions, serve_in_thread
    from syncd.runner import RunRequest, run_sync
    from syncd.runs import show_run
    from syncd.sources.preview import show_preview

    with serve_in_thread(EmulatorOptions()) as platform:
        config = scenario.prepare(
            folder.resolve(), platform.base_url, platform.options.client_secret
        )
        settings = settings_from(config)
        out.rule(
            "0. the mapping rule in the settings, previewed: syncd check --preview wangjianguo"
        )
        show_preview(settings, ["wangjianguo"], "table", out)
        out.rule(f"1. first sync: the sample company into the emulator at {platform.base_url}")
        first = run_sync(settings, RunRequest(trigger="demo"))
        _print_run(settings, first, show=15)
        out.rule("2. HR changes the export")
        for line in scenario.change_company(folder):
            out.print(f"  {line}")
        out.rule("3. second sync: only the changes are sent")
        second = run_sync(settings, RunRequest(trigger="demo"))
        _print_run(settings, second, show=0)
        calls = platform.stats()["requests"]
    out.rule("platform calls made by both syncs")
    for endpoint, count in sorted(calls.items()):
        out.print(f"  {count:4d}  {endpoint}")
    out.rule(f"4. the report of run {second.run_id}: syncd reports show {second.run_id}")
    show_run(settings, out, str(second.run_id), fmt="text")
    page = folder / "report.html"
    show_run(settings, out, str(second.run_id), fmt="html", output=page)
    out.print(f"\nThe same report as a web page: {page}")
    out.print(f"Review the runs again: syncd reports list --config {config}")
    if second.exit_code:
        raise typer.Exit(second.exit_code)


def _need_the_emulator(command: str) -> None:
    """The emulator is an extra (FastAPI, uvicorn): without it, one line says how to add it."""
    missing = [name for name in ("fastapi", "uvicorn") if find_spec(name) is None]
    if missing:
        raise SyncdError(
            f"{command} needs the platform emulator, which is not installed ({', '.join(missing)} "
            "missing): install syncd[emulator], e.g. pip install 'syncd[emulator]'"
        )


@app.command()
def init(
    path: Annotated[
        Path | None,
        typer.Argument(
            metavar="PATH",
            help="The settings file to write; never overwritten.",
            show_default=False,
        ),
    ] = None,
    source: Annotated[SourceKind, typer.Option(help="Where people come from.")] = SourceKind.CSV,
    units: Annotated[
        Path | None,
        typer.Option(
            help="Also write the systemd unit files into this folder (/etc/systemd/system).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write a commented settings file for a kind of source (and, asked, the systemd units)."""
    from syncd import init as setup
    from syncd.data import EXAMPLE_SETTINGS

    if path is None and units is None:
        raise typer.BadParameter("name the settings file to write", param_hint="PATH")
    files = [setup.settings_file(path, source)] if path is not None else []
    files += setup.unit_files_in(units) if units is not None else []
    setup.create(files)
    for new in files:
        out.print(f"wrote {new.path} (mode {new.mode:04o})")
    if path is not None:
        out.print(
            f'Next: put your own values where {path} says "# yours", give the platform\'s '
            f"secret (the file's head says how), then: syncd check --config {path}"
        )
        out.print(f"Every key, with its default and what it does: {EXAMPLE_SETTINGS}")
    if units is not None:
        out.print('Then: systemctl daemon-reload (README, "Install as a service")')
        this = Path(sys.executable).parent / "syncd"
        if this != setup.UNITS_START:
            out.print(
                f"The units start {setup.UNITS_START} (README's install); this syncd is "
                f"{this}: install it there, or change ExecStart= in the units"
            )


def run_cli(args: list[str] | None = None) -> int:
    """Run the command line and return its exit code; errors are printed, never raised."""
    try:
        code = app(args, standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except typer.TyperException as exc:  # a usage error; help asked for by giving no arguments
        exc.show()  # type: ignore[attr-defined]
        return EXIT_OK if type(exc).__name__ == "NoArgsIsHelpError" else EXIT_FAILED
    except (typer.Abort, KeyboardInterrupt):
        err.print("interrupted")
        return 130
    except SyncdError as exc:
        err.print(problem("error:", redact(str(exc)), logging.ERROR))
        return exc.exit_code
    except Exception as exc:  # a bug: say so, without leaking secrets in the traceback
        log.debug("unexpected error", exc_info=True)
        message = f"{type(exc).__name__}: {redact(str(exc))}"
        err.print(problem("internal error:", message, logging.CRITICAL))
        return EXIT_FAILED
    return code if isinstance(code, int) else 0


def main() -> None:
    sys.exit(run_cli())
