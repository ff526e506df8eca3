"""``syncd reports``: list, show and prune the runs syncd recorded; one person's history."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from syncd.cli.shared import (
    ConfigOption,
    Output,
    OutputOption,
    ask,
    at_terminal,
    out,
    settings_from,
)

reports_app: typer.Typer = typer.Typer(help="Review the runs syncd recorded.", no_args_is_help=True)


FileOption = Annotated[
    Path | None,
    typer.Option("--file", metavar="FILE", help="Write to this file instead of stdout."),
]


@reports_app.command("list")
def reports_list(
    config: ConfigOption = None,
    last: Annotated[
        int, typer.Option(min=0, metavar="N", help="How many runs, newest first.")
    ] = 20,
    failed: Annotated[
        bool, typer.Option(help="Only runs that failed, partly failed or were blocked.")
    ] = False,
    output: OutputOption = Output.TEXT,
    dry_runs: Annotated[
        bool, typer.Option("--dry-runs", help="List dry runs (--dry-run, --check) instead.")
    ] = False,
) -> None:
    """One line per run: real runs; dry runs are kept apart (--dry-runs)."""
    from syncd.run.runs import print_run_list

    settings = settings_from(config, require_secrets=False)
    print_run_list(
        settings, out, last=last, failed_only=failed, fmt=output.value, dry_runs=dry_runs
    )


@reports_app.command("show")
def reports_show(
    run: Annotated[str, typer.Argument(metavar="ID", help="A run id, or 'latest'.")] = "latest",
    config: ConfigOption = None,
    failed_only: Annotated[bool, typer.Option(help="Only the items that failed.")] = False,
    output: Annotated[
        str,
        typer.Option(
            "--output",
            "-o",
            "--format",
            metavar="text|json|csv|html",
            help="text, json, csv or html.",
        ),
    ] = "text",
    file: FileOption = None,
    limit: Annotated[
        int,
        typer.Option(
            min=0,
            metavar="N",
            help="Text: the changes listed of each action, and the rejected rows (0: all).",
        ),
    ] = 50,
) -> None:
    """One run: summary, failures grouped by error, changes, rejected rows."""
    from syncd.run.runs import show_run

    show_run(
        settings_from(config, require_secrets=False),
        out,
        run,
        fmt=output,
        failed_only=failed_only,
        output=file,
        limit=limit or None,
    )


@reports_app.command("person")
def reports_person(
    username: Annotated[
        str, typer.Argument(metavar="USERNAME", help="The person's username on the platform.")
    ],
    config: ConfigOption = None,
    planned: Annotated[
        bool, typer.Option(help="Also what dry runs and blocked runs only planned.")
    ] = False,
    output: Annotated[
        str,
        typer.Option(
            "--output", "-o", "--format", metavar="text|json|csv", help="text, json or csv."
        ),
    ] = "text",
    file: FileOption = None,
) -> None:
    """Every run that changed, locked, removed or failed one person, and why."""
    from syncd.run.runs import show_person

    settings = settings_from(config, require_secrets=False)
    show_person(settings, out, username, fmt=output, planned=planned, output=file)


@reports_app.command("prune")
def reports_prune(
    keep_days: Annotated[
        int, typer.Option(metavar="DAYS", help="Keep the runs of the last N days.")
    ],
    config: ConfigOption = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only say what would be deleted.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Delete without asking (a terminal asks first).")
    ] = False,
) -> None:
    """Delete the records of older runs, then give their space back to the disk."""
    from syncd.run.runs import prune_runs

    confirm = (
        None if yes or not at_terminal() else partial(ask, how_not_to_ask="--yes does not ask")
    )
    prune_runs(
        settings_from(config, require_secrets=False),
        out,
        keep_days=keep_days,
        dry_run=dry_run,
        confirm=confirm,
    )
