"""``syncd run`` and ``syncd status``: the service, and whether it is healthy."""

from __future__ import annotations

import typer

from syncd.cli import ConfigOption, Output, OutputOption, out, print_json, settings_from


def run(config: ConfigOption = None) -> None:
    """Run as a service: sync on the configured schedule until stopped."""
    from syncd.daemon import serve

    raise typer.Exit(serve(config))


def status(config: ConfigOption = None, output: OutputOption = Output.TEXT) -> None:
    """The daemon, its next run, the run lock and the last runs; exit 1 when not healthy,
    3 when the daemon is expected and not running."""
    from syncd._status import print_status, read_status

    found = read_status(settings_from(config, require_secrets=False))
    if output is Output.JSON:
        print_json(found.document())
    else:
        print_status(found, out)
    if found.problem is not None:  # told once, above: no "error:" line besides
        raise typer.Exit(found.problem.exit_code)
