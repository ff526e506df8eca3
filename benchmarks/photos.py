"""Photos at scale: a CSV company with a photo per person, synced with photos off and on.

    benchmarks/photos.py [--people 10000] [--photo-bytes 12000] [--repeat 3] [--keep]

A generated company (benchmarks/generate.py) and a folder of one image per person, named
by the work number (``W00000042.jpg``, about ``--photo-bytes`` each, every one different),
synced from CSV by ``syncd sync`` in its own process into ``syncd emulator`` in another:
with ``[source.photos]`` off, then on, each from an empty platform and state. For each:
the initial sync, the no-change re-sync (best of ``--repeat``) and a re-sync after one
photo changed, with wall time, CPU, peak RSS and the photo calls the emulator counted
(uploads, avatars, user id look-ups). Measurements, never assertions.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from benchmarks.generate import Company, make_company, write_two_files
from benchmarks.harness import (
    READ_EVERY_RUN,
    SYNCD,
    Emulator,
    Measured,
    Platform,
    csv_source,
    measure,
    running_emulator,
    write_settings,
)

OUT = Path(__file__).resolve().parent / "out"
UPLOAD = "POST /v1/medias/images"
AVATAR = "POST /users/{user_id}/avatar"
LOOKUP = "GET /v1/admin/organizations/{code}/employees"


@dataclass
class Row:
    photos: str  # off or on
    scenario: str
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    uploads: int
    avatars: int
    lookups: int
    exit_code: int


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/photos.py", description=__doc__)
    parser.add_argument("--people", type=int, default=10_000)
    parser.add_argument("--photo-bytes", type=int, default=12_000)
    parser.add_argument("--repeat", type=int, default=3, help="no-change re-syncs, best kept")
    parser.add_argument("--keep", action="store_true", help="keep the files and state")
    args = parser.parse_args(argv)
    folder = OUT / time.strftime("photos-%Y%m%d-%H%M%S")
    company = make_company(args.people)
    employees, departments = write_two_files(company, folder / "csv")
    photos = folder / "csv" / "photos"
    photos.mkdir()
    for person in company.people.values():
        (photos / f"{person.sn}.jpg").write_bytes(image(person.sn, args.photo_bytes))
    print(f"{args.people} people and photos written to {folder / 'csv'}", flush=True)
    rows: list[Row] = []
    with running_emulator(folder / "emulator.log") as emulator:
        for mode in ("off", "on"):
            emulator.reset(data=True)
            source = csv_source(employees, departments)
            if mode == "on":
                source += f'\n[source.photos]\nenabled = true\nfolder = "{photos}"\n'
            settings = write_settings(
                folder / mode / "syncd.toml",
                folder / mode / "state",
                source,
                Platform(emulator.base_url, batch_size=500, concurrency=4),
                removals=args.people,
            )
            rows += scenarios(mode, settings, emulator, photos, company, args)
    print(table(rows))
    (folder / "results.json").write_text(json.dumps([asdict(r) for r in rows], indent=2))
    print(f"results: {folder / 'results.json'}")
    if not args.keep:
        for child in folder.iterdir():
            if child.is_dir():
                shutil.rmtree(child)
    return 0


def image(seed: str, size: int) -> bytes:
    """Bytes a JPEG begins and ends with, ``size`` long, different for each seed."""
    body = (seed.encode() * (size // max(len(seed), 1) + 1))[: max(size - 4, 0)]
    return b"\xff\xd8\xff\xe0" + body[4:] + b"\xff\xd9"


def scenarios(
    mode: str,
    settings: Path,
    emulator: Emulator,
    photos: Path,
    company: Company,
    args: argparse.Namespace,
) -> list[Row]:
    log = settings.parent / "sync.log"

    def sync(scenario: str) -> Row:
        before = emulator.requests()
        # Both modes read the files every run: with photos off, unchanged files would not be.
        done = measure(
            [SYNCD, "-q", "sync", "--yes", "--config", settings], log, env=READ_EVERY_RUN
        )
        if done.exit_code != 0:
            raise RuntimeError(f"syncd sync exited {done.exit_code}:\n{done.output[-3000:]}")
        return row(mode, scenario, done, before, emulator.requests())

    found = [sync("initial sync")]
    print(f"  photos {mode}: {found[-1]}", flush=True)
    again = min((sync("no-change re-sync") for _ in range(args.repeat)), key=lambda r: r.wall_s)
    found.append(again)
    print(f"  photos {mode}: {again}", flush=True)
    someone = next(p for p in company.people.values() if not p.departed)
    changed = photos / f"{someone.sn}.jpg"
    changed.write_bytes(image(f"{someone.sn} changed, photos {mode}", args.photo_bytes))
    found.append(sync("one photo changed"))
    print(f"  photos {mode}: {found[-1]}", flush=True)
    return found


def row(
    mode: str, scenario: str, done: Measured, before: dict[str, int], after: dict[str, int]
) -> Row:
    def calls(key: str) -> int:
        return after.get(key, 0) - before.get(key, 0)

    return Row(
        mode,
        scenario,
        round(done.wall, 2),
        round(done.cpu, 2),
        round(done.peak_rss_mb),
        calls(UPLOAD),
        calls(AVATAR),
        calls(LOOKUP),
        done.exit_code,
    )


def table(rows: list[Row]) -> str:
    lines = [
        "| photos | scenario | wall | CPU | peak RSS | uploads | avatars | employee look-ups |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.photos} | {r.scenario} | {r.wall_s:.2f} s | {r.cpu_s:.2f} s | "
        f"{r.peak_rss_mb} MB | {r.uploads} | {r.avatars} | {r.lookups} |"
        for r in rows
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
