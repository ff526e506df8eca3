"""``syncd check``: what the source holds, or (``--preview``) what the mapping makes of it."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Annotated

import typer

from syncd.cli.shared import (
    ConfigOption,
    Output,
    OutputOption,
    err,
    labelled,
    live,
    out,
    print_json,
    settings_from,
    spinner,
)


def check(
    config: ConfigOption = None,
    preview: Annotated[
        bool,
        typer.Option(help="Show source values and the platform fields they become, per person."),
    ] = False,
    people: Annotated[
        list[str] | None,
        typer.Argument(metavar="N|USERNAME", help="With --preview: N people, or usernames."),
    ] = None,
    output: OutputOption = Output.TEXT,
) -> None:
    """Read the source and show what it holds; the platform and its secret are not needed."""
    from syncd.model import match_index
    from syncd.report import printable
    from syncd.sources import describe_sources, read_source

    settings = settings_from(config, platform=False)
    if preview or people:
        from syncd.sources.preview import show_preview

        show_preview(settings, people or [], "json" if output is Output.JSON else "table", out)
        return
    with spinner("reading the source") if live(settings.log_format) else nullcontext():
        directory = read_source(settings)
    # What was read, when the source says (the LDAP server used, after any failover).
    where = directory.source or describe_sources(settings)
    departed = sum(1 for e in directory.employees.values() if e.state == "departed")
    if output is Output.JSON:
        print_json(
            {
                "source": where,
                "read": "full" if directory.complete else "incremental",
                "departments": len(directory.departments),
                "employees": len(directory.employees),
                "departed": departed,
                "rejected": [
                    {"kind": r.kind.value, "where": r.where, "key": r.key, "reason": r.reason}
                    for r in directory.rejected
                ],
            }
        )
        return
    out.print("source      " + printable(where))
    out.print(f"departments {len(directory.departments):,}")
    out.print(f"employees   {len(directory.employees):,}")
    out.print(f"departed    {departed}")
    out.print(f"left out    {directory.filtered} (source.mapping.filter)")
    out.print(f"rejected    {len(directory.rejected):,}")
    for row in directory.rejected:
        out.print(f"  {printable(row.where)}: {row.kind.value}: {printable(row.reason)}")
    for warning in directory.warnings:
        err.print(labelled("warning:", "yellow", printable(warning)))
    key = settings.sync.match_by
    shared = {v: ids for v, ids in match_index(directory, key).items() if len(ids) > 1}
    for value, ids in sorted(shared.items()):
        message = f"{len(ids)} people share {key} {value}: none of them can be matched"
        err.print(labelled("warning:", "yellow", printable(message)))
