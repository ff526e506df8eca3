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

The package's rooms: this module (the app, the options every command shares, the
consoles and how text is shown), ``screen`` (what a shell sync shows, or its JSON
document), ``sync`` (``sync``, ``apply``), ``check``, ``reports``, ``state``, ``service``
(``run``, ``status``) and ``tools`` (``emulator``, ``demo``, ``init``).
"""

from __future__ import annotations

import json
import logging
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from syncd.config import Settings, load_settings
from syncd.errors import EXIT_FAILED, EXIT_OK, SyncdError
from syncd.logs import journal_prefix, redact, register_secret, setup_logging

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


def _seconds(value: float) -> float:
    # Checked here, not by min=0: nan is neither below nor above 0, and "should be >= 0"
    # would not say what is wrong with it.
    if not math.isfinite(value):
        raise typer.BadParameter("must be a finite number")
    if value < 0:
        raise typer.BadParameter("must be 0 or more")
    return value


ShowOption = Annotated[int, typer.Option(min=0, help="Changes to list (0: all).")]
LongOption = Annotated[
    bool, typer.Option("--long", "-l", help="List the fields each change sets, one a line.")
]
WaitOption = Annotated[
    float,
    typer.Option(callback=_seconds, help="Seconds to wait for a running sync to finish."),
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
    config: Path | None, *, require_secrets: bool = True, platform: bool = True
) -> Settings:
    """Load settings, set up logging and register the secrets for redaction."""
    settings = load_settings(
        config,
        warn=lambda message: err.print(problem("warning:", message, logging.WARNING)),
        require_secrets=require_secrets,
        platform=platform,
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


def print_json(document: Mapping[str, Any]) -> None:
    """One JSON document on stdout, as it is (never through the console's markup)."""
    out.file.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")
    out.file.flush()


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


# The commands, in the order ``syncd --help`` lists them. Imported last: each module takes
# the options, consoles and helpers above from this one.
from syncd.cli import check, reports, service, state, sync, tools  # noqa: E402

app.command()(sync.sync)
app.command()(sync.apply)
app.command()(check.check)
app.add_typer(reports.reports_app, name="reports")
app.add_typer(state.state_app, name="state")
app.command()(service.run)
app.command()(service.status)
app.command()(tools.emulator)
app.command()(tools.demo)
app.command()(tools.init)
