"""``syncd run`` and ``syncd status``: the service, and whether it is healthy."""

from __future__ import annotations

import typer

from syncd.cli.shared import ConfigOption, Output, OutputOption, out, print_json, settings_from
from syncd.errors import ConfigError
from syncd.logs import redact


def run(config: ConfigOption = None) -> None:
    """Run as a service: sync on the configured schedule until stopped."""
    from syncd._gc import collection_paused

    with collection_paused(freeze=True):  # modules live on: out of the collector's reach
        from syncd.service.daemon import serve

    raise typer.Exit(serve(config))


def status(config: ConfigOption = None, output: OutputOption = Output.TEXT) -> None:
    """The daemon, its next run, the run lock and the last runs; exit 1 when not healthy,
    3 when the daemon is expected and not running."""
    from syncd.config import NoSettingsGiven, salvaged_settings
    from syncd.service.status import print_status, read_status

    broken_by: ConfigError | None = None
    try:
        settings, broken = settings_from(config, require_secrets=False), None
    except ConfigError as exc:
        broken_by = exc
        # A daemon already running keeps the settings it loaded: its health still counts,
        # and the file's problem is said beside it (a health check must not fail on it alone).
        salvaged = salvaged_settings(config)
        if salvaged is None:  # not even TOML: where the state is cannot be known
            raise
        settings, broken = salvaged, redact(str(exc))
    found = read_status(settings)
    found.settings_problem = broken
    # Nothing given at all is not a broken file: what to give is said instead (the default
    # state directory is still shown: the shipped units keep their state there).
    found.settings_given = not isinstance(broken_by, NoSettingsGiven)
    if output is Output.JSON:
        print_json(found.document())
    else:
        print_status(found, out)
    if found.problem is not None:  # told once, above: no "error:" line besides
        raise typer.Exit(found.problem.exit_code)
