"""The measurements issue 14 asks for, each taken side by side with what it is compared with.

Three chains, each adding samples to ``Results`` series:

- **CSV**: per repetition, the initial sync into an empty emulator and the bare httpx push
  loop sending the same bodies to an identical emulator of its own (A/B, then B/A next
  time); the first no-change re-sync after it; two steady-state re-syncs, each alternated
  with a fresh interpreter making the imports a sync needs; then a 1% churn sync. With the
  state on both engines, each of these syncs is taken on SQLite and on PostgreSQL back to
  back, each engine with an emulator of its own.
- **LDAP**: the same company in a local slapd; per repetition, syncd's reader and
  ``ldapsearch -E pr=1000/noprompt`` making the same three searches, alternated, and
  ``syncd check``; then an initial LDAP sync, its first re-sync, and per repetition a full
  and an incremental no-change re-sync, alternated.
- **Planning**: per repetition, ``plan()`` of a million people with 1% churn (in a process
  of its own) and csv-diff diffing the same people's rows before and after, alternated.

Every figure is the measured process's own (``os.wait4``), or the timed part of a helper's
work, never the harness's or an emulator's.
"""

from __future__ import annotations

import gc
import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks import main_thread
from benchmarks.generate import (
    LDAP_PEOPLE_BASE,
    LDAP_SUFFIX,
    make_company,
    write_ldif,
    write_two_files,
)
from benchmarks.harness import (
    BIN,
    READ_EVERY_RUN,
    SYNCD,
    Emulator,
    Measured,
    Platform,
    app_token,
    child_json,
    csv_source,
    items_sent,
    last_run_items,
    measure,
    minimum_writes,
    python_child,
    short_endpoint,
    state_rows,
    write_calls,
    write_settings,
)
from benchmarks.mutate import churn
from benchmarks.push_loop import bodies
from benchmarks.results import Results, Sample

# csv-diff lives in a virtual environment of its own inside .venv (make bench makes it): its
# wheel installs a top-level ``tests`` package that would shadow this repository's tests/.
CSV_DIFF = BIN.parent / "csv-diff" / "bin" / "csv-diff"
# What a sync imports before it reads anything: the CLI and the run it drives.
SYNC_IMPORTS = "import syncd.cli, syncd.run.runner"


@dataclass
class Context:
    out: Path
    results: Results
    batch_size: int
    concurrency: int
    seed: int
    repeat: int
    plan_repeat: int
    log: Callable[[str], None]
    profile: bool = False  # run syncd, the LDAP reader and the planner under cProfile
    initial_only: bool = False  # of the CSV chain, the initial sync and the push loop alone

    def command(self, key: str, folder: Path, *command: str | Path) -> list[str | Path]:
        """``command``, or with --profile the same under cProfile, writing ``<key>-<n>.prof``."""
        if not self.profile:
            return list(command)
        stats = folder / f"{key}-{len(self.results.series.get(key, []))}.prof"
        if command[0] == sys.executable:  # python -m module: cProfile runs modules too
            return [sys.executable, "-m", "cProfile", "-o", stats, *command[1:]]
        return [sys.executable, "-m", "cProfile", "-o", stats, *command]

    def platform(self, emulator: Emulator | None) -> Platform:
        # Settings need a platform URL even where nothing calls it: then the discard port.
        url = emulator.base_url if emulator is not None else "http://127.0.0.1:9"
        return Platform(url, self.batch_size, self.concurrency)

    def keep(self, key: str, run: Measured, **detail: object) -> Sample:
        sample = self.results.add(key, Sample(run.wall, run.cpu, run.peak_rss_mb, dict(detail)))
        self.log(
            f"  {key:<18} {run.wall:7.2f} s  cpu {run.cpu:6.2f} s  rss {run.peak_rss_mb:6.0f} MB"
        )
        return sample


def in_turn(index: int, *steps: Callable[[], object]) -> None:
    """The steps in order on even repetitions, in reverse order on odd ones (A/B, then B/A)."""
    for step in steps if index % 2 == 0 else reversed(steps):
        step()


def imports(ctx: Context) -> None:
    """A fresh interpreter making a sync's imports: the start-up share of a no-change re-sync."""
    ctx.keep("imports", measure([sys.executable, "-c", SYNC_IMPORTS], None))


# ---------------------------------------------------------------- syncd sync


def sync(
    key: str,
    ctx: Context,
    emulator: Emulator,
    settings: Path,
    *extra: str,
    reset: bool = False,
    env: dict[str, str] | None = None,
    database_url: str | None = None,
) -> Sample:
    """``syncd sync`` measured; its write calls, the fewest possible, and its platform reads.
    ``database_url``: the one the settings name (PostgreSQL), to read the run back."""
    emulator.reset(data=reset)  # the request counts always; with reset, the data too
    state = settings.parent / "state"
    log = settings.parent / f"{key}-{len(ctx.results.series.get(key, []))}.log"
    # As the console script runs it, telling the main thread's CPU at exit (main_thread).
    syncd = python_child("benchmarks.main_thread")
    command = ctx.command(
        key, settings.parent, *syncd, "sync", "--yes", "--config", settings, *extra
    )
    run = measure(command, log, env=env)
    if run.exit_code != 0:
        raise RuntimeError(f"{key}: syncd exited {run.exit_code}:\n{run.output[-3000:]}")
    items = last_run_items(state, database_url)
    failed = {k: n for k, n in items.items() if k.endswith(" failed")}
    if failed:  # timings of a sync that did not do its work would mean nothing
        raise RuntimeError(f"{key}: items failed: {failed}; see {settings.parent}")
    requests = emulator.requests()
    writes = write_calls(requests)
    sample = ctx.keep(
        key,
        run,
        read=_last_read(state, database_url),
        writes=sum(writes.values()),
        min_writes=minimum_writes(items, ctx.batch_size),
        items_sent=items_sent(items),
        reads=sum(requests.values()) - sum(writes.values()),
        write_calls={short_endpoint(k): n for k, n in writes.items()},
        main_cpu=main_thread.found(run.output),
    )
    no_change = key.split("@")[0].endswith(("resync", "resync_full", "incremental"))
    if no_change and sample.detail["writes"]:
        ctx.log(f"  ! {key} wrote {sample.detail['write_calls']}: not a no-change re-sync")
    return sample


def _last_read(state: Path, database_url: str | None = None) -> str:
    """full or incremental: how the last run read its source."""
    rows = state_rows(state, database_url, "SELECT read FROM runs ORDER BY id DESC LIMIT 1")
    return str(rows[0][0]) if rows else ""


# ---------------------------------------------------------------- CSV


def csv_chain(
    ctx: Context,
    emulators: dict[str, Emulator],
    push_emulator: Emulator,
    new_database: Callable[[], str] | None = None,
) -> None:
    """``emulators``: the state database engines measured (sqlite, postgresql), each with
    an emulator of its own. Each step of a repetition is taken on every engine back to
    back (order alternated), so that the two engines' samples of a row, paired by their
    order, are taken under the same load. PostgreSQL's series are named ``<row>@postgresql``
    and start from a fresh database (``new_database``: its URL) each repetition."""
    people = ctx.results.people
    folder = ctx.out / "csv"
    company = make_company(people, ctx.seed)
    changed, done = churn(company, 0.01, ctx.seed + 1)
    ctx.log(f"  churn: {dict(done)}")
    data = folder / "data"
    source = csv_source(data / "employees.csv", data / "departments.csv")
    folder.mkdir(parents=True, exist_ok=True)
    pushed = folder / "bodies.json"
    pushed.write_text(json.dumps(bodies(company), ensure_ascii=False), encoding="utf-8")

    def push_loop() -> None:
        push_emulator.reset(data=True)
        token = app_token(push_emulator.client)
        command = python_child(
            "benchmarks.push_loop",
            push_emulator.base_url,
            token,
            str(pushed),
            str(ctx.batch_size),
            str(ctx.concurrency),
        )
        run = measure(command, folder / "push_loop.log")
        found = child_json(run)
        # The timed sends are the floor; the process's CPU and peak RSS are its whole life.
        timed = Measured(found["seconds"], run.cpu, run.peak_rss_mb, run.exit_code)
        ctx.keep("push_loop", timed, process_wall=run.wall, **found)

    for i in range(ctx.repeat):
        ctx.log(f" repetition {i + 1} of {ctx.repeat}")
        chains = [
            _CsvSyncs(ctx, folder, source, engine, emulator, new_database)
            for engine, emulator in emulators.items()
        ]
        write_two_files(company, data)
        in_turn(i, *([push_loop] if "sqlite" in emulators else []), *(c.initial for c in chains))
        if ctx.initial_only:
            continue
        in_turn(i, *(c.first_resync for c in chains))
        for j in range(2):
            in_turn(
                i + j,
                *(c.resync for c in chains),
                *(c.resync_full for c in chains),
                lambda: imports(ctx),
            )
        write_two_files(changed, data)
        in_turn(i, *(c.churn for c in chains))


class _CsvSyncs:
    """One repetition's CSV syncs with the state on one engine, from an empty state (and on
    PostgreSQL a fresh database) and an emptied emulator of its own."""

    def __init__(
        self,
        ctx: Context,
        folder: Path,
        source: str,
        engine: str,
        emulator: Emulator,
        new_database: Callable[[], str] | None,
    ) -> None:
        self.ctx, self.emulator = ctx, emulator
        self.url: str | None = None
        self.suffix, tag = "", ""  # the series' name, the files'
        if engine == "postgresql":
            assert new_database is not None
            self.url, self.suffix, tag = new_database(), "@postgresql", "-pg"
        self.state = folder / f"state{tag}"
        shutil.rmtree(self.state, ignore_errors=True)
        self.settings = write_settings(
            folder / f"syncd{tag}.toml", self.state, source, ctx.platform(emulator),
            removals=ctx.results.people, database_url=self.url,
        )  # fmt: skip

    def _sync(self, row: str, *, reset: bool = False, full: bool = False) -> None:
        env = READ_EVERY_RUN if full else None
        sync(
            row + self.suffix, self.ctx, self.emulator, self.settings,
            reset=reset, env=env, database_url=self.url,
        )  # fmt: skip

    def initial(self) -> None:
        self._sync("initial", reset=True)

    def first_resync(self) -> None:
        self._sync("first_resync")

    def resync(self) -> None:
        self._sync("resync")

    def resync_full(self) -> None:
        self._sync("resync_full", full=True)

    def churn(self) -> None:
        self._sync("churn")


# ---------------------------------------------------------------- LDAP


# The searches syncd's reader makes with the settings below (syncd.sources.ldap's
# OpenLDAP preset): departments, the departed people's ids, everyone with their attributes.
LDAP_SEARCHES = (
    ("(objectClass=organizationalUnit)", ("entryUUID", "ou")),
    ("(&(objectClass=inetOrgPerson)(employeeType=departed))", ("entryUUID",)),
    (
        "(objectClass=inetOrgPerson)",
        ("entryUUID", "uid", "cn", "mail", "mobile", "telephoneNumber", "employeeNumber", "title",
         "modifyTimestamp"),
    ),
)  # fmt: skip


def ldap_chain(ctx: Context, emulator: Emulator) -> None:
    from tests.support.slapd import Slapd  # the tests' real slapd, on loopback

    people = ctx.results.people
    folder = ctx.out / "ldap"
    ldif = write_ldif(make_company(people, ctx.seed), folder / "company.ldif")
    slapd = Slapd(folder / "slapd", suffix=LDAP_SUFFIX)
    slapd.slapadd(ldif)
    password_file = folder / "admin.pw"
    password_file.write_text(slapd.password)
    password_file.chmod(0o600)
    with slapd:
        source = "\n".join(
            [
                "[source]",
                'kind = "ldap"',
                "[source.ldap]",
                f'urls = ["{slapd.url}"]',
                f'bind_dn = "{slapd.bind_dn}"',
                f'bind_password_file = "{password_file}"',
                f'users_base = "{LDAP_PEOPLE_BASE}"',
                'departed_filter = "(employeeType=departed)"',
                "page_size = 1000",
                "",
            ]
        )
        settings = write_settings(
            folder / "syncd.toml", folder / "state", source, ctx.platform(emulator), people
        )

        def read_ldap() -> None:
            command = ctx.command(
                "ldap_read", folder, *python_child("benchmarks.ldap_read", str(settings))
            )
            run = measure(command, folder / "read.log")
            found = child_json(run)
            timed = Measured(found["read_seconds"], found["read_cpu_seconds"], run.peak_rss_mb, 0)
            ctx.keep("ldap_read", timed, process_wall=run.wall, **found)

        def ldapsearch() -> None:
            runs = [_ldapsearch(slapd.url, slapd.bind_dn, password_file, f, a)
                    for f, a in LDAP_SEARCHES]  # fmt: skip
            total = Measured(
                sum(r.wall for r in runs),
                sum(r.cpu for r in runs),
                max(r.peak_rss_mb for r in runs),
                0,
            )
            ctx.keep("ldapsearch", total, searches=[round(r.wall, 3) for r in runs])

        def check() -> None:
            run = measure([SYNCD, "check", "--config", settings], folder / "check.log")
            if run.exit_code != 0:
                raise RuntimeError(f"syncd check exited {run.exit_code}:\n{run.output[-2000:]}")
            ctx.keep("syncd_check", run)

        for i in range(ctx.repeat):
            ctx.log(f" repetition {i + 1} of {ctx.repeat}: reads")
            in_turn(i, read_ldap, ldapsearch)
            check()

        shutil.rmtree(folder / "state", ignore_errors=True)
        sync("ldap_initial", ctx, emulator, settings, reset=True)
        sync("ldap_first_resync", ctx, emulator, settings)
        for i in range(ctx.repeat):
            ctx.log(f" repetition {i + 1} of {ctx.repeat}: re-syncs")
            in_turn(
                i,
                lambda: sync("ldap_resync", ctx, emulator, settings),
                lambda: sync("ldap_incremental", ctx, emulator, settings, "--incremental"),
            )
    shutil.rmtree(slapd.data_dir, ignore_errors=True)  # hundreds of MB; the LDIF stays


def _ldapsearch(
    url: str, bind_dn: str, password_file: Path, search_filter: str, attributes: tuple[str, ...]
) -> Measured:
    command = ["ldapsearch", "-x", "-LLL", "-H", url, "-D", bind_dn, "-y", str(password_file)]
    command += ["-b", LDAP_PEOPLE_BASE, "-E", "pr=1000/noprompt", search_filter, *attributes]
    run = measure(command, None)  # its LDIF is discarded, as syncd keeps no text
    if run.exit_code != 0:
        raise RuntimeError(f"ldapsearch exited {run.exit_code}")
    return run


# ---------------------------------------------------------------- planning


def planning_chain(ctx: Context) -> None:
    people = ctx.results.plan_people
    folder = ctx.out / "plan"
    if not CSV_DIFF.exists():
        raise SystemExit(f"{CSV_DIFF} is missing: make bench installs it")
    # The rows plan_only plans: the same company, the same churn (its seed).
    company = make_company(people, ctx.seed)
    changed, _ = churn(company, 0.01)
    before, _ = write_two_files(company, folder / "before")
    after, _ = write_two_files(changed, folder / "after")
    del company, changed
    gc.collect()

    def plan() -> None:
        command = python_child(
            "benchmarks.plan_only", "--people", str(people), "--seed", str(ctx.seed)
        )
        run = measure(ctx.command("plan", folder, *command), folder / "plan.log")
        found = child_json(run)
        timed = Measured(found["plan_seconds"], found["plan_cpu_seconds"], run.peak_rss_mb, 0)
        ctx.keep("plan", timed, process_wall=run.wall, **found)

    def csv_diff() -> None:
        run = measure([CSV_DIFF, before, after, "--key", "id"], folder / "csv-diff.log")
        if run.exit_code != 0:
            raise RuntimeError(f"csv-diff exited {run.exit_code}:\n{run.output[-2000:]}")
        summary = [line.strip() for line in run.output.splitlines()[:4] if line.strip()]
        ctx.keep("csv_diff", run, summary=summary)

    for i in range(ctx.plan_repeat):
        ctx.log(f" repetition {i + 1} of {ctx.plan_repeat}")
        in_turn(i, plan, csv_diff)
