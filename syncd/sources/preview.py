"""``syncd check --preview``: what the source and the mapping rules make of some people.

For the first N people read, or the ones named, each platform field is shown with where
it comes from (an attribute, or a rule), the source values it reads, and the value the
platform would get; people the row filter leaves out and rows that are rejected are
shown with the reason. The source is read as a sync reads it; the platform is not
contacted, and its secret is not needed.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from syncd.config import Settings
from syncd.report import printable
from syncd.sources import read_directory
from syncd.sources.person_preview import PLATFORM_FIELDS, FieldPreview, PersonPreview, Preview

# The person's preview and its tracer live in person_preview (joined_preview takes them
# from there: the two previews import no circle); named here as they were.
__all__ = [
    "PLATFORM_FIELDS",
    "FieldPreview",
    "PersonPreview",
    "Preview",
    "preview",
    "print_table",
    "render_json",
    "show_preview",
]


def preview(settings: Settings, targets: list[str]) -> list[PersonPreview]:
    """Read the source and preview the first N people (default 5) or the usernames given."""
    wanted: int | list[str] = 5
    if len(targets) == 1 and targets[0].isdigit():
        wanted = int(targets[0])
    elif targets:
        wanted = targets
    if settings.source is None:  # several sources: each field with the source that gave it
        from syncd.sources.joined_preview import joined_preview

        return joined_preview(settings, wanted)
    tracer = Preview(settings, wanted)
    directory = read_directory(settings.source, trace=tracer)
    return tracer.finish(directory)


def show_preview(settings: Settings, targets: list[str], output: str, console: Console) -> None:
    """Print the preview of the people asked for, as a table per person or as JSON."""
    people = preview(settings, targets)
    if output == "json":
        console.print(render_json(people))
    else:
        print_table(people, console, targets)


def render_json(people: list[PersonPreview]) -> str:
    def plain(person: PersonPreview) -> dict[str, Any]:
        found = asdict(person)
        found.pop("_employee")
        return found

    return json.dumps([plain(p) for p in people], ensure_ascii=False, indent=2)


def print_table(people: list[PersonPreview], console: Console, named: list[str]) -> None:
    """One block per person: a line saying who and what became of them, then their fields."""
    if not people:
        console.print(
            "nobody to preview" + (f": no one is named {', '.join(named)}" if named else "")
        )
    for person in people:
        head = f"{person.username or '?'}  {person.where}  {person.outcome}"
        console.print(printable(head + (f": {person.reason}" if person.reason else "")))
        if not person.fields:  # set aside by the join before any field was made
            continue
        rows: list[tuple[str, ...]] = [("platform field", "from", "source values", "value")]
        for row in person.fields:
            inputs = "  ".join(
                f"{k}={'(empty)' if v is None else v}" for k, v in row.inputs.items()
            )
            rows.append(tuple(map(printable, (row.field, row.source, inputs, row.value))))
        lines = _aligned(rows)
        if console.is_terminal and max(map(cell_len, lines)) + 2 > console.width:
            _print_stacked(rows[1:], console)  # a table wider than the terminal: a field a block
            continue
        for line in lines:
            console.print("  " + line)
    found = {(p.username or "").casefold() for p in people}
    missing = [name for name in named if name.casefold() not in found and not name.isdigit()]
    if missing:
        console.print(f"not in the source: {', '.join(missing)}")


def _print_stacked(rows: list[tuple[str, ...]], console: Console) -> None:
    """Each field as ``name  value``, then where it came from on the lines below, wrapped
    between words: what a table too wide for the terminal says, in its width."""
    width = max(cell_len(row[0]) for row in rows) + 2
    for name, source, inputs, value in rows:
        console.print(Text("  " + name + " " * (width - cell_len(name)) + (value or "—")))
        came = f"from {source}" + (f" ({inputs})" if inputs else "")
        console.print(
            Padding(Text(came, style="dim", overflow="fold"), (0, 0, 0, width + 2), expand=False)
        )


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    """Rows as lines of columns, each as wide as its widest cell (wide characters count 2)."""
    widths = [max(cell_len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell + " " * (w - cell_len(cell)) for cell, w in zip(row, widths, strict=True)
        ).rstrip()
        for row in rows
    ]
