"""``syncd emulator``, ``demo``, ``init`` and ``completion``: the emulator, the demo, new files."""

from __future__ import annotations

import json
import logging
import sys
from enum import StrEnum
from importlib.util import find_spec
from pathlib import Path
from typing import Annotated
from urllib.parse import unquote, urlparse

import typer

from syncd.cli.screen import _print_run
from syncd.cli.shared import out, settings_from, tell
from syncd.errors import SyncdError
from syncd.setup.init import SourceKind


def emulator(
    host: Annotated[
        str, typer.Option(metavar="ADDRESS", help="Address to bind; loopback unless you mean it.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(metavar="PORT", help="Port to listen on.")] = 8900,
    org_code: Annotated[
        str, typer.Option(metavar="CODE", help="Organization code of the one root node.")
    ] = "acme",
    org_name: Annotated[str, typer.Option(metavar="NAME", help="Name of the root node.")] = "Acme",
    domain_id: Annotated[str, typer.Option(metavar="ID", help="Domain id.")] = "acme",
    client_id: Annotated[
        str, typer.Option(metavar="ID", help="Application key accepted by /v1/token.")
    ] = "syncd",
    client_secret: Annotated[
        str,
        typer.Option(
            envvar="SYNCD_EMULATOR_SECRET", metavar="SECRET", help="Application secret accepted."
        ),
    ] = "demo-secret",  # noqa: S107 - the emulator's made-up demo credential
    state_file: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Load state from this file at start, save it at stop."),
    ] = None,
    api_version: Annotated[
        str,
        typer.Option(
            metavar="v3|v4", help="v4, or v3 (no employee /disable and /enable endpoints)."
        ),
    ] = "v4",
    token_lifetime: Annotated[
        int, typer.Option(metavar="SECONDS", help="Token lifetime in seconds.")
    ] = 7200,
    faults: Annotated[
        Path | None, typer.Option(metavar="FILE", help="JSON file of fault settings to start with.")
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


def demo(
    folder: Annotated[
        Path, typer.Option(metavar="DIR", help="Where the demo keeps its files and state.")
    ] = Path(".syncd/demo"),
    two_sources: Annotated[
        bool,
        typer.Option(
            "--two-sources",
            help="The HR export and a directory's export, joined on the work number.",
        ),
    ] = False,
) -> None:
    """Sync the sample company into a local emulator, change it, sync again, show both runs."""
    _need_the_emulator("syncd demo")
    from syncd.emulator import EmulatorOptions, serve_in_thread
    from syncd.run.runner import RunRequest, run_sync
    from syncd.run.runs import show_run
    from syncd.setup import demo as scenario
    from syncd.sources.preview import show_preview

    with serve_in_thread(EmulatorOptions()) as platform:
        config = scenario.prepare(
            folder.resolve(), platform.base_url, platform.options.client_secret, two_sources
        )
        with scenario.own_settings_only():
            settings = settings_from(config)
        # Titles fit 80 columns: a longer one is cut, and with it the command it names.
        previewed = "each field's source" if two_sources else "the mapping rule"
        out.rule(f"0. {previewed}, previewed: syncd check --preview wangjianguo")
        show_preview(settings, ["wangjianguo"], "table", out)
        out.rule(f"1. first sync: the sample company into {platform.base_url}")
        first = run_sync(settings, RunRequest(trigger="demo"))
        _print_run(settings, first, show=15)
        out.rule("2. HR changes the export")
        for line in scenario.change_company(folder, two_sources):
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
    """The emulator is an extra (FastAPI, uvicorn): without it, one line says how to add it,
    from the wheel or checkout this syncd was installed from (no package index has it: a
    name there could be anybody's)."""
    missing = [name for name in ("fastapi", "uvicorn") if find_spec(name) is None]
    if missing:
        origin = installed_from()
        how = (
            f"pip install {'-e ' if origin and Path(origin).is_dir() else ''}"
            f"'{origin or '/path/to/syncd-<version>-py3-none-any.whl'}[emulator]'"
        )
        raise SyncdError(
            f"{command} needs the platform emulator, which is not installed ({', '.join(missing)} "
            f"missing): install syncd's emulator extra from the wheel or checkout syncd came "
            f"from: {how}"
        )


def installed_from() -> str | None:
    """The wheel file or checkout this syncd was installed from, as pip recorded it."""
    # A checkout's own syncd.egg-info may come first on the path: it records no origin.
    from importlib.metadata import distributions

    for found in distributions(name="syncd"):
        try:
            url = json.loads(found.read_text("direct_url.json") or "{}").get("url", "")
        except (ValueError, AttributeError):
            continue
        if url.startswith("file://"):
            return unquote(urlparse(url).path)
    return None


def init(
    path: Annotated[
        Path | None,
        typer.Argument(
            metavar="PATH",
            help="The settings file to write; never overwritten.",
            show_default=False,
        ),
    ] = None,
    source: Annotated[
        SourceKind,
        typer.Option(metavar="csv|openldap|active_directory", help="Where people come from."),
    ] = SourceKind.CSV,
    units: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="Also write the systemd unit files into this folder (/etc/systemd/system).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write a commented settings file for a kind of source (and, asked, the systemd units)."""
    from syncd.data import EXAMPLE_SETTINGS
    from syncd.setup import init as setup

    if path is None and units is None:
        raise typer.BadParameter("name the settings file to write", param_hint="PATH")
    files = [setup.settings_file(path, source)] if path is not None else []
    this = Path(sys.executable).parent / "syncd"  # the syncd of this environment
    settings = path if path is not None else setup.UNITS_SETTINGS
    files += setup.unit_files_in(units, this, settings) if units is not None else []
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
        out.print(f"The units start {this}, this syncd, with SYNCD_CONFIG={settings.absolute()}")
        for hidden, home in setup.hidden_by_protect_home(this, settings):
            then = (
                "the service would not start (status 203/EXEC): install syncd system-wide "
                '(README, "Install as a service": /opt/syncd/bin/syncd) and write the units '
                "with that syncd"
                if hidden == this
                else "the service could not read it: keep the settings in /etc/syncd"
            )
            tell(
                "warning:",
                f"{hidden} is under {home}, which the units' ProtectHome=yes hides from the "
                f"service: {then}",
                logging.WARNING,
            )
        out.print('Then: systemctl daemon-reload (README, "Install as a service")')


class Shell(StrEnum):
    """The shells ``syncd completion`` writes a script for."""

    BASH = "bash"
    ZSH = "zsh"
    FISH = "fish"


def completion(
    shell: Annotated[
        Shell, typer.Argument(metavar="bash|zsh|fish", help="The shell the script is for.")
    ],
) -> None:
    """Print SHELL's completion script, to write where that shell looks for it.

    The shell is named, never guessed: ``--show-completion`` guesses it from the process
    that started syncd, so from ``sh -c`` or ``sudo`` it refuses ("Shell sh not supported").
    """
    # Typer's own script writer (what --show-completion prints), without its guessing.
    from typer._completion_shared import get_completion_script

    script = get_completion_script(prog_name="syncd", complete_var="_SYNCD_COMPLETE", shell=shell)
    sys.stdout.write(script + "\n")
