"""What every command of ``syncd`` shares: the app, the options, the consoles, and how text
is shown (the package's docstring says why the consoles print text as it is)."""

from __future__ import annotations

import json
import logging
import math
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.text import Text
from typer.core import TyperArgument

from syncd.errors import EXIT_OK
from syncd.logs import journal_prefix, log_format, register_secret, setup_logging

if TYPE_CHECKING:
    # Imported where settings are loaded: pydantic's models cost most of a command's start,
    # and --version, --help and each Tab of completion load none.
    from syncd.config import Settings


def _argument_type(self: TyperArgument, ctx: Any) -> str | None:  # typer's own click Context
    """Nothing beside an argument's name in help: its metavar says what it takes."""
    return None if self.metavar else TyperArgument.display_type(self, ctx)


# typer 0.29 writes a parameter's Python type beside it in help (``<list[str]>``,
# ``<int range>``): an option's metavar replaces it, an argument's is printed beside it.
TyperArgument.display_type_rich = _argument_type  # type: ignore[method-assign,assignment]

app = typer.Typer(
    name="syncd",
    help="Keep the platform's organization tree and employees in step with LDAP, AD or CSV.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help as plain text: two columns that use the width they have
)
# Long lines stay whole in logs and pipes; text is never markup (see the docstring).
out = Console(soft_wrap=True, markup=False, emoji=False, highlight=False)
err = Console(stderr=True, soft_wrap=True, markup=False, emoji=False, highlight=False)
# At a terminal, lines wrap between words to its width (the terminal would cut them
# mid-word); in pipes and files they stay whole, one record a line.
out.soft_wrap, err.soft_wrap = not out.is_terminal, not err.is_terminal
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
        metavar="FILE",
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


ShowOption = Annotated[int, typer.Option(min=0, metavar="N", help="Changes to list (0: all).")]
LongOption = Annotated[
    bool, typer.Option("--long", "-l", help="List the fields each change sets, one a line.")
]
WaitOption = Annotated[
    float,
    typer.Option(
        callback=_seconds, metavar="SECONDS", help="Seconds to wait for a running sync to finish."
    ),
]
OutputOption = Annotated[
    Output,
    typer.Option(
        "--output",
        "-o",
        "--format",
        metavar="text|json",
        help="text, or json: one document of a stable shape (see README).",
    ),
]


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        from syncd.snapshot.tables import SCHEMA_VERSION

        out.print(f"syncd {version('syncd')} (state database schema {SCHEMA_VERSION})")
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


def at_terminal() -> bool:
    """Whether a person is there to answer: standard input and output both a terminal."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def ask(question: str, how_not_to_ask: str) -> bool:
    """terraform's question: only ``yes`` says yes; anything else, Ctrl-C or Ctrl-D, no."""
    out.print(f"\n{question} Only 'yes' goes ahead ({how_not_to_ask}).\n")
    # A run's signal handler only sets its stop event: at the prompt Ctrl-C answers at once.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        answer = input("  Enter a value: ")
    except (EOFError, KeyboardInterrupt):
        answer = ""
    finally:
        signal.signal(signal.SIGINT, previous)
    return answer.strip() == "yes"


def settings_from(
    config: Path | None, *, require_secrets: bool = True, platform: bool = True
) -> Settings:
    """Load settings, set up logging and register the secrets for redaction."""
    from syncd.config import load_settings, log_format_hint

    # Problems with the file itself are told in the format it asks for, if it can be read.
    _setup_logging(options.level or "INFO", log_format_hint(config))
    settings = load_settings(
        config,
        warn=lambda message: tell("warning:", message, logging.WARNING),
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


def tell(label: str, message: str, level: int, **fields: Any) -> None:
    """A problem on stderr: ``error: ...`` as text, or one JSON log line when the logs are
    JSON (a log shipper then parses every line; ``fields`` are added to it)."""
    if log_format() == "json":
        log.log(level, "%s %s", label, message, extra={"problem": label.rstrip(":"), **fields})
    else:
        err.print(problem(label, message, level))


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


# Options of the whole command line, taken wherever they are given: -v/-q after the command
# (syncd sync -v) as before it, --config before it (syncd --config F sync) as after it.
_VERBOSITY = frozenset({"-v", "--verbose", "-q", "--quiet"})
_CONFIG = frozenset({"-c", "--config"})


def in_place(args: list[str]) -> list[str]:
    """The arguments with -v/-q moved before the command and --config after it, where
    click expects them: the root's options before the command, the command's after."""
    named = [c.name or c.callback.__name__ for c in app.registered_commands if c.callback]
    commands = {*named, *(g.name for g in app.registered_groups)}
    at = next((n for n, a in enumerate(args) if a in commands), None)
    if at is None:
        return args
    end = args.index("--") if "--" in args[at:] else len(args)
    before, after, rest = args[:at], args[at:end], args[end:]
    verbosity = [a for a in after if a in _VERBOSITY]
    after = [a for a in after if a not in _VERBOSITY]
    config: list[str] = []
    kept: list[str] = []
    it = iter(before)
    for a in it:
        if a in _CONFIG:
            config += [a, next(it, "")]
        elif a.startswith("--config="):
            config.append(a)
        else:
            kept.append(a)
    return [*kept, *verbosity, *after, *config, *rest]


_JSON_OUTPUT = frozenset({"--output=json", "-ojson", "--format=json"})


def wants_json(args: list[str]) -> bool:
    """Whether the command line asks for JSON output (``--output json`` or a spelling of
    it), read before click parses it: a usage error must be told in that format too."""
    end = args.index("--") if "--" in args else len(args)
    given = args[:end]
    return any(a in _JSON_OUTPUT for a in given) or any(
        a in ("--output", "-o", "--format") and b == "json" for a, b in pairwise(given)
    )
