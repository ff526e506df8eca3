"""The ``syncd`` command: sync, check, run, status, reports, emulator, demo.

Exit codes: 0 everything applied (or nothing to do), 1 some items failed (or, with
``--check``, changes pending), 2 blocked by a guard, 3 could not run.

The consoles print text as it is: no markup, emoji codes or highlighting, so a value
shown (a path, an error, a name from the source) can never be read as markup. ``[/hr]``
in a path would otherwise end a style that was never opened and crash the command,
``[hr]`` would vanish, ``:smile:`` become an emoji. Styles come only from ``Text``.
"""

from __future__ import annotations

import logging
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from syncd.config import Settings, load_settings
from syncd.errors import EXIT_FAILED, EXIT_OK, SyncdError
from syncd.logs import redact, register_secret, setup_logging

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from syncd.executor import Progress
    from syncd.runner import RunResult

app = typer.Typer(
    name="syncd",
    help="Keep the platform's organization tree and employees in step with LDAP, AD or CSV.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Long lines stay whole in logs and pipes; text is never markup (see the docstring).
out = Console(soft_wrap=True, markup=False, emoji=False, highlight=False)
err = Console(stderr=True, soft_wrap=True, markup=False, emoji=False, highlight=False)
log = logging.getLogger("syncd")

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config", "-c", help="Settings file (default: $SYNCD_CONFIG).", show_default=False
    ),
]


def settings_from(config: Path | None, *, require_secrets: bool = True) -> Settings:
    """Load settings, set up logging and register the secrets for redaction."""
    settings = load_settings(
        config,
        warn=lambda message: err.print(labelled("warning:", "yellow", message)),
        require_secrets=require_secrets,
    )
    for secret in settings.secret_values():
        register_secret(secret)
    setup_logging(settings.log_level, settings.log_format)
    return settings


def labelled(label: str, style: str, value: str) -> Text:
    """A styled label and a value shown exactly as it is (see the module docstring)."""
    return Text.assemble((label, style), " ", value)


# The colour of each action's symbol (the symbols are the text report's) on a terminal.
ACTION_STYLES = {
    "create": "green",
    "adopt": "cyan",
    "update": "yellow",
    "move": "yellow",
    "unlock": "green",
    "lock": "red",
    "remove": "red",
    "delete": "red",
}


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
        typer.Option(help="Let this run lock, remove or delete up to N records past the guards."),
    ] = None,
    incremental: Annotated[
        bool,
        typer.Option(help="LDAP: read only what changed since the last run (finds no leavers)."),
    ] = False,
    show: Annotated[int, typer.Option(help="Changes to list (0: all).")] = 200,
    wait: Annotated[float, typer.Option(help="Seconds to wait for a running sync to finish.")] = 0,
) -> None:
    """Sync the source to the platform; with --dry-run, only show what would change."""
    from syncd.runner import RunRequest, run_sync

    settings = settings_from(config)
    request = RunRequest(
        dry_run=dry_run or check_only,
        read="incremental" if incremental else "full",
        allow_removals=allow_removals,
    )
    with _progress() as progress:
        result = run_sync(settings, request, progress=progress, lock_wait_seconds=wait)
    _print_run(settings, result, show)
    code = result.exit_code
    if check_only and code == 0 and result.plan is not None and result.plan.changes:
        code = 1
    raise typer.Exit(code)


def _print_run(settings: Settings, result: RunResult, show: int) -> None:
    from syncd import snapshot as store

    engine = store.open_engine(settings.database)
    try:
        _print_outcome(engine, result, show)
    finally:
        engine.dispose()  # `syncd demo` prints two runs: no engine left open behind it
    if result.error:
        err.print(labelled("error:", "red", result.error))


def _print_outcome(engine: Engine, result: RunResult, show: int) -> None:
    from syncd import snapshot as store
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
        summary = ", ".join(f"{n} to {a}" for a, n in counts.items()) or "no changes"
        out.print(labelled("plan:", "bold", summary))
        for item in store.load_items(engine, result.run_id, limit=show or None):
            action = item["action"]
            symbol = SYMBOLS.get(action, "*")
            out.print(
                Text.assemble("  ", (symbol, ACTION_STYLES.get(action, "")), " ")
                + printable(item["message"])
            )
        if show and len(the_plan.changes) > show:
            hidden = len(the_plan.changes) - show
            out.print(f"  ... and {hidden} more: syncd reports show {result.run_id}")
        for note in the_plan.notes:
            out.print(Text("  ") + labelled(f"{note.kind}:", "magenta", printable(note.message)))
    for guard in result.guards:
        mark = Text("ok", "green") if guard.passed else Text("BLOCKED", "red")
        message = guard.message + (" (overridden)" if guard.overridden else "")
        out.print(Text.assemble(f"guard {guard.name}: ", mark, " ", printable(message)))
    if result.applied is not None:
        done: Counter[tuple[str, str]] = Counter()
        for (_, action, outcome), n in result.applied.counts.items():
            done[(action, outcome)] += n
        line = ", ".join(f"{n} {a}" for (a, o), n in sorted(done.items()) if o == "ok")
        out.print(labelled("applied:", "bold", line or "nothing"))
        for error, n in store.failure_groups(engine, result.run_id):
            out.print(Text("  ") + labelled(f"{n} ×", "red", printable(error)))
    label = "dry run" if result.dry_run else "run"
    colours = {"ok": "green", "partial": "yellow", "blocked": "red", "failed": "red"}
    ended = Text(result.outcome, colours.get(result.outcome, "yellow"))
    out.print(Text.assemble(f"{label} {result.run_id}: ", ended, f" (exit {result.exit_code})"))


@contextmanager
def _progress() -> Iterator[Progress]:
    """Progress bars on a terminal, one log line per phase otherwise."""
    if not err.is_terminal:
        yield _LogProgress()
        return
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bars

    with Bars(
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as bars:
        yield _BarProgress(bars)


class _LogProgress:
    def phase(self, name: str, total: int) -> None:
        log.info("%s: %d items", name, total)

    def advance(self, n: int) -> None:
        pass


class _BarProgress:
    def __init__(self, bars: Any) -> None:
        self.bars = bars
        self.task: Any = None

    def phase(self, name: str, total: int) -> None:
        self.task = self.bars.add_task(name, total=total)

    def advance(self, n: int) -> None:
        if self.task is not None:
            self.bars.advance(self.task, n)


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
    output: Annotated[str, typer.Option(help="With --preview: table or json.")] = "table",
) -> None:
    """Read the configured source and show what it holds; the platform is not contacted."""
    from syncd.config import with_source_secret
    from syncd.model import Kind, match_index
    from syncd.report import printable
    from syncd.sources import describe, read_directory

    if preview or people:
        from syncd.sources.preview import show_preview

        if output not in ("table", "json"):
            raise typer.BadParameter("must be table or json", param_hint="--output")
        # The platform's secret is not needed, nor read; the source's is.
        settings = with_source_secret(settings_from(config, require_secrets=False))
        show_preview(settings, people or [], output, out)
        return
    settings = settings_from(config)
    directory = read_directory(settings.source)
    # What was read, when the source says (the LDAP server used, after any failover).
    out.print("source      " + printable(directory.source or describe(settings.source)))
    out.print(f"departments {len(directory.departments)}")
    out.print(f"employees   {len(directory.employees)}")
    departed = sum(1 for e in directory.employees.values() if e.state == "departed")
    out.print(f"departed    {departed}")
    out.print(f"left out    {directory.filtered} (source.mapping.filter)")
    out.print(f"rejected    {len(directory.rejected)}")
    for row in directory.rejected:
        what = "department" if row.kind is Kind.DEPARTMENT else "employee"
        out.print(f"  {printable(row.where)}: {what}: {printable(row.reason)}")
    for warning in directory.warnings:
        err.print(labelled("warning:", "yellow", printable(warning)))
    key = settings.sync.match_by
    shared = {v: ids for v, ids in match_index(directory, key).items() if len(ids) > 1}
    for value, ids in sorted(shared.items()):
        message = f"{len(ids)} people share {key} {value}: none of them can be matched"
        err.print(labelled("warning:", "yellow", printable(message)))


reports_app = typer.Typer(help="Review the runs syncd recorded.", no_args_is_help=True)
app.add_typer(reports_app, name="reports")


@reports_app.command("list")
def reports_list(
    config: ConfigOption = None,
    last: Annotated[int, typer.Option(help="How many runs, newest first.")] = 20,
    failed: Annotated[
        bool, typer.Option(help="Only runs that failed, partly failed or were blocked.")
    ] = False,
) -> None:
    """One line per run."""
    from syncd.runs import print_run_list

    print_run_list(settings_from(config, require_secrets=False), out, last=last, failed_only=failed)


@reports_app.command("show")
def reports_show(
    run: Annotated[str, typer.Argument(help="A run id, or 'latest'.")] = "latest",
    config: ConfigOption = None,
    failed_only: Annotated[bool, typer.Option(help="Only the items that failed.")] = False,
    fmt: Annotated[str, typer.Option("--format", help="text, json, csv or html.")] = "text",
    output: Annotated[
        Path | None, typer.Option(help="Write to this file instead of stdout.")
    ] = None,
) -> None:
    """One run in full: summary, failures grouped by error, changes, rejected rows."""
    from syncd.runs import show_run

    show_run(
        settings_from(config, require_secrets=False),
        out,
        run,
        fmt=fmt,
        failed_only=failed_only,
        output=output,
    )


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
def status(config: ConfigOption = None) -> None:
    """Last runs, the next scheduled run, and who holds the run lock."""
    from syncd.daemon import print_status

    print_status(settings_from(config, require_secrets=False), out)


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
        err.print(labelled("error:", "red", redact(str(exc))))
        return exc.exit_code
    except Exception as exc:  # a bug: say so, without leaking secrets in the traceback
        log.debug("unexpected error", exc_info=True)
        err.print(labelled("internal error:", "red", f"{type(exc).__name__}: {redact(str(exc))}"))
        return EXIT_FAILED
    return code if isinstance(code, int) else 0


def main() -> None:
    sys.exit(run_cli())
