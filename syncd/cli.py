"""The ``syncd`` command: sync, check, run, status, reports, emulator, demo.

Exit codes: 0 everything applied (or nothing to do), 1 some items failed, 2 blocked by
a guard (or, with ``--check``, changes pending), 3 could not run.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from syncd.config import Settings, load_settings
from syncd.errors import EXIT_FAILED, SyncdError
from syncd.logs import redact, register_secret, setup_logging

app = typer.Typer(
    name="syncd",
    help="Keep the platform's organization tree and employees in step with LDAP, AD or CSV.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)
log = logging.getLogger("syncd")

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="Settings file (default: $SYNCD_CONFIG).", show_default=False),
]


def settings_from(config: Path | None) -> Settings:
    """Load settings, set up logging and register the secrets for redaction."""
    settings = load_settings(config, warn=lambda message: err.print(f"[yellow]warning:[/] {message}"))
    for secret in settings.secret_values():
        register_secret(secret)
    setup_logging(settings.log_level, settings.log_format)
    return settings


@app.command()
def check(config: ConfigOption = None) -> None:
    """Read the configured source and show what it holds; the platform is not contacted."""
    from syncd.model import Kind
    from syncd.sources import describe, read_directory

    settings = settings_from(config)
    directory = read_directory(settings.source)
    out.print(f"source      {describe(settings.source)}")
    out.print(f"departments {len(directory.departments)}")
    out.print(f"employees   {len(directory.employees)}")
    departed = sum(1 for e in directory.employees.values() if e.state == "departed")
    out.print(f"departed    {departed}")
    out.print(f"rejected    {len(directory.rejected)}")
    for row in directory.rejected:
        what = "department" if row.kind is Kind.DEPARTMENT else "employee"
        out.print(f"  {row.where}: {what}: {row.reason}", markup=False, highlight=False)


@app.command()
def emulator(
    host: Annotated[str, typer.Option(help="Address to bind; loopback unless you mean it.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8900,
    org_code: Annotated[str, typer.Option(help="Organization code of the one root node.")] = "acme",
    org_name: Annotated[str, typer.Option(help="Name of the root node.")] = "Acme",
    domain_id: Annotated[str, typer.Option(help="Domain id.")] = "acme",
    client_id: Annotated[str, typer.Option(help="Application key accepted by /v1/token.")] = "syncd",
    client_secret: Annotated[
        str, typer.Option(envvar="SYNCD_EMULATOR_SECRET", help="Application secret accepted.")
    ] = "demo-secret",
    state_file: Annotated[
        Path | None, typer.Option(help="Load state from this file at start, save it at stop.")
    ] = None,
) -> None:
    """Serve the platform emulator: the admin API syncd uses, for tests and demos."""
    from syncd.emulator import EmulatorOptions, serve

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
        )
    )


def main() -> None:
    try:
        app()
    except SyncdError as exc:
        err.print(f"[red]error:[/] {redact(str(exc))}", highlight=False)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
    except Exception as exc:  # a bug: say so, without leaking secrets in the traceback
        log.debug("unexpected error", exc_info=True)
        err.print(f"[red]internal error:[/] {type(exc).__name__}: {redact(str(exc))}", highlight=False)
        sys.exit(EXIT_FAILED)
