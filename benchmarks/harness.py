"""Processes the benchmarks measure: the emulator, syncd commands, helpers in child processes.

Every process is started in its own session and is asked to die with the harness
(``PR_SET_PDEATHSIG``), and every ``with`` block kills its process group on the way out:
no server outlives a crashed or interrupted benchmark. A measured command runs under GNU
time, in time's process group: killed with it, and in any case ending by itself.
"""

from __future__ import annotations

import compileall
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from syncd.emulator.options import EmulatorOptions
from tests.support.processes import die_with_parent, free_port, wait_until_serving

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SYNCD = BIN / "syncd"
TIME = Path("/usr/bin/time")  # GNU time (Debian package time): the peak RSS of what it runs
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
WRITE_PREFIXES = ("POST /v1/admin", "DELETE /v1/admin")
# A sync that reads and plans even when its files are those of a run that planned nothing
# (syncd.run.unchanged): what a changed export costs.
READ_EVERY_RUN = {"SYNCD_SYNC__SKIP_UNCHANGED": "false"}
BATCHED = ("import-orgs", "import-employees")


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def spawn(
    command: Sequence[str | Path], log: Path | None, **kwargs: Any
) -> subprocess.Popen[bytes]:
    """A child process in its own session, output to ``log`` (None: discarded), dying with us."""
    if log is None:
        return _popen(command, subprocess.DEVNULL, **kwargs)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return _popen(command, out, **kwargs)


def _popen(command: Sequence[str | Path], out: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
    kwargs.setdefault("env", child_env())
    return subprocess.Popen(
        [str(part) for part in command],
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=subprocess.STDOUT if out is not subprocess.DEVNULL else subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=die_with_parent,
        cwd=ROOT / "benchmarks",  # not the repository root, whose syncd/ would come first
        **kwargs,
    )


_child_path = [str(ROOT)]  # what children import from: benchmarks, tests.support, syncd


def use_syncd_from(source: Path) -> None:
    """Have every child run the syncd package found in ``source`` (before/after runs).

    ``source`` holds a ``syncd/`` folder, e.g. ``git archive <commit> syncd | tar -x -C DIR``.
    """
    if not (source / "syncd" / "__init__.py").is_file():
        raise SystemExit(f"{source}: no syncd/ package there")
    _child_path.insert(0, str(source.resolve()))


def compile_bytecode() -> None:
    """Compile the measured packages' bytecode, as pip does when it installs a wheel.

    Without it, a shell with PYTHONDONTWRITEBYTECODE set (or a read-only checkout) would
    have every measured syncd process compile its ~100 modules from source, about 0.07 s
    an installed syncd never spends.
    """
    for folder in _child_path:
        for package in ("syncd", "benchmarks"):
            if (Path(folder) / package).is_dir():
                compileall.compile_dir(Path(folder) / package, quiet=1)


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(_child_path), **(extra or {})}


# ---------------------------------------------------------------- measured child processes


@dataclass(frozen=True)
class Measured:
    """One child process's cost, from its own rusage: nothing of the harness or the emulator."""

    wall: float  # seconds
    cpu: float  # user + system seconds
    peak_rss_mb: float
    exit_code: int
    output: str = ""


def measure(
    command: Sequence[str | Path], log: Path | None, *, env: Mapping[str, str] | None = None
) -> Measured:
    """Run a command to its end and measure it: wall time, CPU time and peak RSS.

    Its output goes to ``log`` (replaced), or is discarded when ``log`` is None. The peak RSS
    is the one GNU time reads from wait4 for the command, which it starts itself: a child of
    the harness would count the harness's own memory, copied by fork and kept by exec as its
    high-water mark (a 500 MB harness makes ``true`` peak at 500 MB). CPU time is wait4's
    for time and the command together (time's own is a few milliseconds).
    """
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.unlink(missing_ok=True)
    with tempfile.NamedTemporaryFile("r", prefix="rss-", suffix=".txt") as rss:
        started = time.perf_counter()
        process = spawn([TIME, "-f", "%M", "-o", rss.name, *command], log, env=child_env(env))
        try:
            _, status, usage = os.wait4(process.pid, 0)
        except BaseException:
            _kill_group(process)
            raise
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        # The last line: time puts "Command exited with non-zero status N" before it.
        kilobytes = rss.read().split()[-1:] or ["0"]  # none: time itself could not run
    return Measured(
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        peak_rss_mb=int(kilobytes[0]) / 1024,
        exit_code=process.returncode,
        output=log.read_text(encoding="utf-8", errors="replace") if log is not None else "",
    )


def python_child(module: str, *args: str) -> list[str]:
    """A command running ``python -m module args`` with the repository importable."""
    return [sys.executable, "-m", module, *args]


def child_json(measured: Measured) -> dict[str, Any]:
    """The last line of a helper's output: the JSON it printed."""
    for line in reversed(measured.output.strip().splitlines()):
        if line.startswith("{"):
            result: dict[str, Any] = json.loads(line)
            return result
    raise RuntimeError(
        f"the helper printed no result (exit {measured.exit_code}):\n{measured.output[-3000:]}"
    )


# ---------------------------------------------------------------- the emulator


@dataclass
class Emulator:
    """``syncd emulator`` in its own process on a free loopback port."""

    process: subprocess.Popen[bytes]
    base_url: str
    client: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.client = httpx.Client(base_url=self.base_url, timeout=120.0)

    def control(self, method: str, path: str, body: Any = None) -> Any:
        answer = self.client.request(method, f"/_emulator/{path}", json=body).json()
        if answer.get("status") != 0:
            raise RuntimeError(f"/_emulator/{path}: {answer}")
        return answer["result"]

    def reset(self, *, data: bool) -> None:
        """Clear the request counts (and with ``data`` every node but the root, and people)."""
        self.control("POST", "reset", {"data": data})

    def requests(self) -> dict[str, int]:
        counts: dict[str, int] = self.control("GET", "stats")["requests"]
        return counts


@contextmanager
def running_emulator(log: Path) -> Iterator[Emulator]:
    port = free_port()
    process = spawn([SYNCD, "emulator", "--port", str(port)], log)
    try:
        emulator = Emulator(process, f"http://127.0.0.1:{port}")
        _wait_until_answering(emulator)
        try:
            yield emulator
        finally:
            emulator.client.close()
    finally:
        _kill_group(process)


def _wait_until_answering(emulator: Emulator) -> None:
    def problem() -> str | None:
        try:
            emulator.requests()
        except httpx.TransportError as exc:
            return str(exc) or type(exc).__name__
        return None

    status = wait_until_serving(
        "the emulator", emulator.process, problem, timeout=START_TIMEOUT, pause=0.05
    )
    if status is not None:
        raise RuntimeError(f"the emulator exited with status {status}")


def app_token(client: httpx.Client) -> str:
    """A token for the emulator's default application (acme / syncd / demo-secret)."""
    body = EmulatorOptions().token_request()
    return str(client.post("/v1/token", json=body).json()["result"]["access_token"])


# ---------------------------------------------------------------- syncd settings and state


@dataclass(frozen=True)
class Platform:
    base_url: str
    batch_size: int
    concurrency: int


GUARDS = """
[sync]
# A benchmark's churn locks, unlocks and updates hundreds of people: the guards would block it.
max_removals = {removals}
max_removal_ratio = 1.0
max_reactivations = {removals}
max_reactivation_ratio = 1.0
max_updates = {removals}
max_update_ratio = 1.0
max_field_changes = {removals}
max_field_change_ratio = 1.0
"""


def write_settings(
    path: Path,
    state_dir: Path,
    source: str,
    platform: Platform,
    removals: int | None,
    database_url: str | None = None,
) -> Path:
    """A settings file for syncd: ``source`` is the TOML of its [source] tables;
    ``removals``: the guards' limits (None: no [sync] table, what every syncd since
    c427ab5 reads; an initial sync meets no guard); ``database_url``: the state database
    on PostgreSQL (None: SQLite in ``state_dir``)."""
    database = f'database_url = "{database_url}"\n' if database_url else ""
    guards = "" if removals is None else GUARDS.format(removals=removals)
    text = f"""\
state_dir = "{state_dir}"
{database}log_level = "INFO"

{source}
[platform]
base_url = "{platform.base_url}"
domain_id = "acme"
org_code = "acme"
org_id = "acme"
client_id = "syncd"
client_secret = "demo-secret"
batch_size = {platform.batch_size}
concurrency = {platform.concurrency}
{guards}"""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return path


def csv_source(employees: Path, departments: Path | None) -> str:
    lines = ["[source]", 'kind = "csv"', "", "[source.csv]"]
    if departments is None:
        lines += ['layout = "paths"', f'employees = "{employees}"']
    else:
        lines += [f'employees = "{employees}"', f'departments = "{departments}"']
    return "\n".join(lines) + "\n"


def state_rows(state_dir: Path, database_url: str | None, query: str) -> list[tuple[Any, ...]]:
    """A query's rows from the state database: SQLite in ``state_dir``, or PostgreSQL."""
    if database_url is None:
        with sqlite3.connect(state_dir / "syncd.db") as db:
            return db.execute(query).fetchall()
    import psycopg

    with psycopg.connect(database_url) as pg:
        rows: list[tuple[Any, ...]] = pg.execute(query.encode()).fetchall()
        return rows


def last_run_items(state_dir: Path, database_url: str | None = None) -> dict[str, int]:
    """The last run's items by "kind action outcome"."""
    rows = state_rows(
        state_dir,
        database_url,
        "SELECT kind, action, outcome, COUNT(*) FROM run_items "
        "WHERE run_id = (SELECT MAX(id) FROM runs) GROUP BY 1, 2, 3",
    )
    return {f"{kind} {action} {outcome}": int(n) for kind, action, outcome, n in rows}


def items_sent(items: Mapping[str, int]) -> int:
    """Items the executor sent: settled ok or failed, adoptions (nothing sent) left out."""
    return sum(
        n
        for key, n in items.items()
        if key.split()[2] in ("ok", "failed") and key.split()[1] != "adopt"
    )


def minimum_writes(items: Mapping[str, int], batch: int) -> int:
    """The fewest write calls the API allows for this plan.

    Batched endpoints take ``batch`` items a call: department creates (import-orgs),
    employee creates and updates, and removals (import-employees with ops REMOVE, kept
    apart because they must come after locks); every node update, node delete, lock and
    unlock is a call of its own.
    """
    planned: dict[tuple[str, str], int] = {}
    for key, n in items.items():
        kind, action, _ = key.split()
        planned[(kind, action)] = planned.get((kind, action), 0) + n

    def count(kind: str, *actions: str) -> int:
        return sum(planned.get((kind, a), 0) for a in actions)

    return (
        math.ceil(count("department", "create") / batch)
        + count("department", "update", "move", "delete")
        + math.ceil(count("employee", "create", "update") / batch)
        + count("employee", "lock", "unlock")
        + math.ceil(count("employee", "remove") / batch)
    )


def write_calls(requests: Mapping[str, int]) -> dict[str, int]:
    return {k: n for k, n in requests.items() if k.startswith(WRITE_PREFIXES)}


def short_endpoint(key: str) -> str:
    """``POST /v1/admin/organizations/{org_code}/import-orgs`` -> ``POST import-orgs``."""
    method, _, path = key.partition(" ")
    tail = (
        path.replace("/v1/admin/organizations", "").replace("{code}", "").replace("{org_code}", "")
    )
    return f"{method} {tail.strip('/') or '(root)'}"
