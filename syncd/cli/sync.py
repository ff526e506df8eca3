"""``syncd sync`` and ``syncd apply``: one run with its screen, stopped cleanly by signals."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from syncd._gc import collection_paused
from syncd.cli.screen import Screen
from syncd.cli.shared import (
    ConfigOption,
    LongOption,
    Output,
    OutputOption,
    ShowOption,
    WaitOption,
    at_terminal,
    err,
    labelled,
    settings_from,
    tell,
)
from syncd.errors import SyncdError
from syncd.logs import log_context

if TYPE_CHECKING:
    from syncd.config import Settings
    from syncd.run.runner import RunRequest


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
            min=0,
            metavar="N",
            help="Let this run lock, remove or delete up to N records past the guards.",
        ),
    ] = None,
    allow_reactivations: Annotated[
        int | None,
        typer.Option(
            min=0,
            metavar="N",
            help="Let this run unlock, or make anew for people held locked, up to N accounts "
            "past the guards.",
        ),
    ] = None,
    allow_updates: Annotated[
        int | None,
        typer.Option(
            min=0, metavar="N", help="Let this run update up to N synced people past the guards."
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
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            "-y",
            help="Apply without asking. At a terminal sync asks first; where nobody can be "
            "asked (a pipe, --output json, a timer) it refuses without --yes (exit 3).",
        ),
    ] = False,
    save_plan: Annotated[
        Path | None,
        typer.Option(
            "--save-plan",
            metavar="FILE",
            help="Write the plan to this file for review and `syncd apply` (a dry run).",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Sync the source to the platform: show the plan, then apply it; --dry-run only shows it."""
    # What the imports make lives as long as the process: the collector's passes over it
    # were a tenth of their time (50 ms), so it is set out of its reach (syncd._gc).
    with collection_paused(freeze=True):
        from syncd.run.runner import RunRequest

    dry = dry_run or check_only or save_plan is not None
    # Only a person at a terminal is asked: never the daemon, the timer unit or a pipe.
    confirm = not yes and output is Output.TEXT and at_terminal()
    settings = settings_from(config)  # its errors first, in the log format it asks for
    if not (dry or yes or confirm):
        raise SyncdError(_nobody_to_ask(output))
    request = RunRequest(
        dry_run=dry,
        read="incremental" if incremental else "full",
        allow_removals=allow_removals,
        allow_reactivations=allow_reactivations,
        allow_updates=allow_updates,
        save_plan=save_plan,
    )
    code = _sync_and_show(settings, request, check_only, show, long, wait, output, confirm)
    if save_plan is not None and code in (0, 1, 2):  # blocked too: the reviewer decides
        err.print(
            labelled("saved:", "bold", f"the plan is in {save_plan}: syncd apply {save_plan}")
        )
    raise typer.Exit(code)


def _nobody_to_ask(output: Output) -> str:
    """Why a real sync without ``--yes`` refuses here, and what to give instead.

    As ``terraform apply`` does: when no question can be asked (standard input or output
    not a terminal, or JSON output) a run that would change the platform is not started
    unless ``--yes`` says so. A script piping the output away, a cron line or a unit
    file that forgot ``--yes`` then changes nothing instead of applying unseen.
    """
    if output is Output.JSON:
        why = "--output json asks no question"
    elif not sys.stdout.isatty():
        why = "standard output is not a terminal"
    else:
        why = "standard input is not a terminal"
    return (
        f"not applied: nobody can be asked to confirm ({why}); give --yes to apply "
        "without asking, or --dry-run to only see the plan"
    )


def apply(
    plan_file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE", help="A plan saved by syncd sync --dry-run --save-plan.", dir_okay=False
        ),
    ],
    config: ConfigOption = None,
    show: ShowOption = 200,
    long: LongOption = False,
    wait: WaitOption = 0,
    output: OutputOption = Output.TEXT,
) -> None:
    """Apply a saved plan: only if planning now gives the very same changes (else exit 2)."""
    with collection_paused(freeze=True):  # as in sync
        from syncd.run import saved_plan
        from syncd.run.runner import RunRequest

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
    confirm: bool = False,
) -> int:
    """One run with its screen: the plan before anything is sent, bars, then the outcome.

    Run as root in a state directory that is another user's, it warns before and names,
    after, every file it left as root's (``syncd.ownership``)."""
    from syncd.ownership import chown_advice, foreign_owner, root_run_warning

    screen = Screen(
        show=show,
        long=long,
        as_json=output is Output.JSON,
        log_format=settings.log_format,
        confirm=confirm,
    )
    owner = foreign_owner(settings.state_dir)
    if owner is not None:
        database = None if settings.database_url is not None else settings.database.name
        tell("warning:", root_run_warning(settings.state_dir, owner, database), logging.WARNING)
    try:
        return _run_and_show(settings, request, check_only, screen, wait)
    finally:
        advice = None if owner is None else chown_advice(settings.state_dir, owner)
        if advice is not None:
            tell("warning:", advice, logging.WARNING)


def _run_and_show(
    settings: Settings, request: RunRequest, check_only: bool, screen: Screen, wait: float
) -> int:
    from syncd import snapshot as store
    from syncd.run.dry_runs import prune_dry_runs
    from syncd.run.runner import run_sync
    from syncd.service.status import log_failures

    with store.StateStore.open(settings.database, settings.database_url) as state:
        with _stop_on_signals() as stop, screen, log_context():
            result = run_sync(
                settings,
                request,
                state=state,
                progress=screen,
                stop=stop,
                on_planned=screen.planned,
                lock_wait_seconds=wait,
            )
        log_failures(state, result.run_id)
        code = result.exit_code
        if check_only and code == 0 and result.plan is not None and result.plan.changes:
            code = 1
        screen.finished(state, result, code)
        if request.dry_run:
            prune_dry_runs(state, settings.reports.dry_run_keep_days)
        elif settings.metrics.textfile is not None:
            from syncd.service.metrics import write_textfile  # prometheus_client: only when asked

            write_textfile(state, settings.metrics.textfile)
    return code


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
