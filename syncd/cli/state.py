"""``syncd state``: the state database against the platform — rebuild what it lost, bind it
to a platform again, or accept it as it is (README, "Backup and upgrade")."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from syncd.cli.shared import ConfigOption, out, settings_from

state_app: typer.Typer = typer.Typer(
    help="Back up, rebuild, rebind or accept the state database.", no_args_is_help=True
)


@state_app.command("backup")
def state_backup(
    target: Annotated[
        Path, typer.Argument(metavar="FILE", help="The copy to write: a new file.", dir_okay=False)
    ],
    config: ConfigOption = None,
) -> None:
    """A consistent copy of the state database, readable by this user alone (mode 0600: it
    holds the platform's access token), taken while syncd runs if it does."""
    from syncd import snapshot as store
    from syncd.snapshot.tables import SCHEMA_VERSION

    settings = settings_from(config, require_secrets=False)
    with store.StateStore.open(settings.database, settings.database_url) as state:
        size = state.backup(target)
    out.print(
        f"backed up {state.describe()} to {target} ({size / 1e6:,.1f} MB, mode 0600, schema "
        f'{SCHEMA_VERSION}); to restore it: README, "Backup and upgrade"'
    )


@state_app.command("rebuild")
def state_rebuild(
    config: ConfigOption = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would be taken back; change nothing.")
    ] = False,
) -> None:
    """Take back into the state database what syncd wrote on the platform and lost: the
    departments (by serial_no) and people (by extension_id) neither it nor the source knows."""
    from syncd.run.leadership import holding_lease
    from syncd.run.rebuild import rebuild_state

    settings = settings_from(config)
    if dry_run:
        unknown = rebuild_state(settings, dry_run=True)
    else:
        with holding_lease(settings, "syncd state rebuild"):
            unknown = rebuild_state(settings, dry_run=False)
    verb = "would take back" if dry_run else "took back"
    for line in unknown.lines():
        out.print(f"{'would adopt' if dry_run else 'adopted'} {line}")
    out.print(
        f"{verb} {len(unknown.departments)} departments and {len(unknown.people)} people"
        + ("" if dry_run or not unknown else "; the next sync plans them as leavers")
    )


@state_app.command("rebind")
def state_rebind(config: ConfigOption = None) -> None:
    """Bind the state database to the platform the settings name: the same platform under a
    new address or application (another platform needs its own state_dir)."""
    from syncd import snapshot as store
    from syncd.run.leadership import holding_lease
    from syncd.run.rebuild import rebind

    settings = settings_from(config, require_secrets=False)
    with (
        store.StateStore.open(settings.database, settings.database_url) as state,
        holding_lease(settings, "syncd state rebind"),
    ):
        old, new = rebind(state, settings)
    shown = ", ".join(f"{k} {v!r}" for k, v in new.items())
    out.print(f"state database {state.describe()} bound to {shown}")
    if old is not None and old != new:
        out.print("(was " + ", ".join(f"{k} {v!r}" for k, v in old.items()) + ")")


@state_app.command("accept")
def state_accept(config: ConfigOption = None) -> None:
    """Accept the state database as complete: the platform's records it does not know and
    the source does not name are another program's or installation's, left alone and
    never counted as syncd's again."""
    from syncd.run.leadership import holding_lease
    from syncd.run.rebuild import accept

    settings = settings_from(config, require_secrets=False)
    with holding_lease(settings, "syncd state accept"):
        accepted = accept(settings)
    others = f"; {accepted} people the check found are another's, left alone" if accepted else ""
    out.print(f"state database {settings.database_place} accepted as complete{others}")
