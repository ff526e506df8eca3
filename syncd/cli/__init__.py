"""The ``syncd`` command: sync, check, run, status, reports, emulator, demo, init, completion.

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

The package's rooms: this module (the entry point: the commands registered, errors told),
``shared`` (the app, the options every command shares, the consoles and how text is
shown: each command takes them from there, so no command imports this package back),
``screen`` (what a shell sync shows, or its JSON document), ``sync`` (``sync``,
``apply``), ``check``, ``reports``, ``state``, ``service`` (``run``, ``status``) and
``tools`` (``emulator``, ``demo``, ``init``, ``completion``).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import typer

from syncd.cli import check, reports, service, state, sync, tools
from syncd.cli.shared import (
    ConfigOption,
    LongOption,
    Output,
    OutputOption,
    ShowOption,
    WaitOption,
    app,
    ask,
    at_terminal,
    err,
    in_place,
    labelled,
    live,
    log,
    options,
    out,
    print_json,
    problem,
    settings_from,
    spinner,
    tell,
    wants_json,
)
from syncd.errors import EXIT_FAILED, EXIT_OK, SyncdError
from syncd.logs import redact

__all__ = [
    "ConfigOption",
    "LongOption",
    "Output",
    "OutputOption",
    "ShowOption",
    "WaitOption",
    "app",
    "ask",
    "at_terminal",
    "err",
    "in_place",
    "labelled",
    "live",
    "log",
    "main",
    "options",
    "out",
    "print_json",
    "problem",
    "run_cli",
    "settings_from",
    "spinner",
    "tell",
    "wants_json",
]


def run_cli(args: list[str] | None = None) -> int:
    """Run the command line and return its exit code; errors are printed, never raised.

    With ``--output json``, stdout always holds exactly one JSON document: the command's,
    or, when the command stops before it has one (a usage error, a ``SyncdError``),
    ``{"error": TEXT, "exit_code": N}``. A usage error is then told only there; any other
    error is also told on stderr, as every log line is.
    """
    given = sys.argv[1:] if args is None else args
    as_json = wants_json(given)
    try:
        code = app(in_place(given), standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except typer.TyperException as exc:  # a usage error; help asked for by giving no arguments
        if type(exc).__name__ == "NoArgsIsHelpError":
            exc.show()  # type: ignore[attr-defined]
            return EXIT_OK
        if as_json:
            print_json(_usage_error(exc))
        else:
            exc.show()  # type: ignore[attr-defined]
        return EXIT_FAILED
    except (typer.Abort, KeyboardInterrupt):
        err.print("interrupted")
        return 130
    except SyncdError as exc:
        tell("error:", redact(str(exc)), logging.ERROR, exit_code=exc.exit_code)
        if as_json:
            print_json({"error": redact(str(exc)), "exit_code": exc.exit_code})
        return exc.exit_code
    except Exception as exc:  # a bug: say so, without leaking secrets in the traceback
        log.debug("unexpected error", exc_info=True)
        message = f"{type(exc).__name__}: {redact(str(exc))}"
        tell("internal error:", message, logging.CRITICAL, exit_code=EXIT_FAILED)
        return EXIT_FAILED
    return code if isinstance(code, int) else 0


def _usage_error(exc: Exception) -> dict[str, Any]:
    """A usage error as one JSON object: what is wrong, the command's usage line, and how
    to see its help (click's four text lines, as fields)."""
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    context = getattr(exc, "ctx", None)
    usage = context.get_usage() if context is not None else None
    help_command = f"{context.command_path} --help" if context is not None else "syncd --help"
    return {
        "error": f"usage: {message}",
        "exit_code": EXIT_FAILED,
        "usage": usage,
        "help": help_command,
    }


def main() -> None:
    sys.exit(run_cli())


# The commands, in the order ``syncd --help`` lists them.

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
app.command()(tools.completion)
