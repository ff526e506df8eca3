"""A cluster for the high-availability tests: several ``syncd run`` processes, each with
its own state directory (as on its own host), sharing one state store, and the platform
emulator that counts every caller's writes.

The shared store on SQLite is one database file the state directories' ``syncd.db`` all
point at (a symbolic link): the same file several processes on one host share; on
PostgreSQL, one database every member's ``database_url`` names. Every
wait polls an observable state (the lease row, the members, the emulator's per-caller
writes, the runs table) until a deadline.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Self

from sqlalchemy import create_engine, make_url, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from syncd.emulator import RunningEmulator
from syncd.errors import StateError
from syncd.run.leadership import Lease
from syncd.snapshot import StateStore, leases
from syncd.snapshot.lease_store import LeaseStore
from syncd.snapshot.leases import Claimant
from tests.daemon.support import NotifySocket, platform_settings, toml_text
from tests.support.cli import SYNCD
from tests.support.tap import Tap
from tests.support.waiting import scaled, wait_until

DEADLINE = scaled(90.0)  # seconds: only a failing test waits this long
HOST = os.uname().nodename
DEPARTMENTS = [("D1", "Sales", ""), ("D2", "Engineering", ""), ("D3", "Backend", "D2")]
SLOW_WRITE_MS = 1000  # each import-employees answered this late: the apply takes a while


def people(n: int) -> list[tuple[str, str, str, str]]:
    """n employees: (id, username, name, department), spread over the departments."""
    return [(f"E{i}", f"user{i}", f"User {i}", DEPARTMENTS[i % 3][0]) for i in range(1, n + 1)]


@dataclass
class Member:
    """One ``syncd run``: its folder (settings, state directory, log) and process."""

    name: str
    folder: Path
    process: subprocess.Popen[bytes] | None = None
    notify: NotifySocket | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def caller(self) -> str:
        """How the emulator names this process's requests (X-Syncd-Instance)."""
        return f"{HOST}/{self.pid}"

    @property
    def log_path(self) -> Path:
        return self.folder / "daemon.log"

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def signal(self, signum: int) -> None:
        assert self.process is not None
        os.kill(self.pid, signum)


@dataclass
class Cluster:
    """Daemons sharing one store; ``database`` is the shared SQLite file."""

    root: Path
    emulator: RunningEmulator
    employees: list[tuple[str, str, str, str]]
    store_url: str | None = None  # a PostgreSQL database; None: one shared SQLite file
    lease_seconds: int = 9  # the platform's timeouts below fit in it with a renewal
    interval_seconds: int = 2
    members: list[Member] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.database = self.root / "shared.db"
        url = (
            self.store_url.replace("postgresql://", "postgresql+psycopg://", 1)
            if (self.store_url)
            else f"sqlite:///{self.database}"
        )
        self._engine = create_engine(url, poolclass=NullPool)
        self._lease_store: LeaseStore | None = None
        departments = ["id,name,parent_id", *(",".join(d) for d in DEPARTMENTS)]
        employees = ["id,username,name,department", *(",".join(e) for e in self.employees)]
        (self.root / "departments.csv").write_text("\n".join(departments) + "\n", "utf-8")
        (self.root / "employees.csv").write_text("\n".join(employees) + "\n", "utf-8")

    def member(
        self,
        name: str,
        *,
        employees: list[tuple[str, str, str, str]] | None = None,
        metrics_port: int | None = None,
        database_url: str | None = None,
        platform_url: str | None = None,
    ) -> Member:
        """A member's settings; ``employees``: its own source (a standby that diverges);
        ``database_url`` and ``platform_url``: the store and the platform reached another
        way (through a tests.support.tap.Tap), the same server as the others'."""
        folder = self.root / name
        (folder / "state").mkdir(parents=True, mode=0o700)
        if self.store_url is None:
            (folder / "state" / "syncd.db").symlink_to(self.database)
        source = self.root / "employees.csv"
        if employees is not None:
            source = folder / "employees.csv"
            rows = ["id,username,name,department", *(",".join(e) for e in employees)]
            source.write_text("\n".join(rows) + "\n", "utf-8")
        settings: dict[str, Any] = {
            "state_dir": str(folder / "state"),
            "log_format": "text",
            "source": {"kind": "csv"},
            "source.csv": {
                "employees": str(source),
                "departments": str(self.root / "departments.csv"),
            },
            "platform": {
                **platform_settings(self.emulator),
                **({"base_url": platform_url} if platform_url else {}),
                "retry_backoff": 0.01,
                "retry_backoff_max": 0.05,
                "timeout": 2.4,
                "connect_timeout": 0.6,
            },
            "sync": {"max_removal_ratio": 1.0},
            "schedule": {"interval_seconds": self.interval_seconds, "jitter_seconds": 0},
            "leadership": {"lease_seconds": self.lease_seconds},
        }
        if self.store_url is not None:
            settings["database_url"] = database_url or self.store_url
        if metrics_port is not None:
            settings["metrics"] = {"enabled": True, "port": metrics_port}
        config = folder / "syncd.toml"
        config.write_text(toml_text(settings), encoding="utf-8")
        config.chmod(0o600)
        made = Member(name, folder)
        self.members.append(made)
        return made

    def start(self, member: Member) -> Member:
        member.notify = NotifySocket(str(member.folder / "notify"))
        env = {**os.environ, "NOTIFY_SOCKET": member.notify.address}
        env.pop("SYNCD_CONFIG", None)
        env.pop("SYNCD_DATABASE_URL", None)
        with member.log_path.open("ab") as log_file:
            member.process = subprocess.Popen(
                [str(SYNCD), "run", "--config", str(member.folder / "syncd.toml")],
                env=env,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        member.notify.wait_for(lambda m: m.get("READY") == "1", f"{member.name} READY=1")
        return member

    def close(self) -> None:
        for member in self.members:
            if member.process is not None and member.process.poll() is None:
                with suppress(ProcessLookupError):  # it may have exited
                    os.kill(member.pid, signal.SIGCONT)
                member.process.kill()
            if member.process is not None:
                member.process.wait()
            if member.notify is not None:
                member.notify.close()
        self._engine.dispose()
        if self._lease_store is not None:
            self._lease_store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ what the store says

    def query(self, sql: str, **params: Any) -> list[dict[str, Any]]:
        """Rows of the shared store (None while a PostgreSQL server restarts)."""
        with self._engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(text(sql), params)]

    @property
    def lease_store(self) -> LeaseStore:
        """Where the members keep the lease and the members (SQLite: the lease's own file)."""
        if self._lease_store is None:
            self._lease_store = LeaseStore.open(self._engine)
        return self._lease_store

    def lease_query(self, sql: str, **params: Any) -> list[dict[str, Any]]:
        """Rows of the lease's tables (leadership, members)."""
        with self.lease_store.read() as conn:
            return [dict(r._mapping) for r in conn.execute(text(sql), params)]

    def lease(self) -> leases.Holder | None:
        """The lease as the store holds it, and the store's clock."""
        try:
            return self.lease_store.holder()
        except (OperationalError, StateError):  # a server restarting
            return None

    def leader_pid(self) -> int | None:
        """The pid holding a live lease, by the store's clock."""
        held = self.lease()
        return held.pid if held is not None and held.live else None

    def wait_leader(self, among: list[Member], what: str) -> Member:
        pids = {m.pid: m for m in among}

        def leading() -> int | None:
            pid = self.leader_pid()
            return pid if pid in pids else None

        found = wait_until(leading, what, DEADLINE)
        assert found is not None  # wait_until returns a true value
        return pids[found]

    def roles(self) -> dict[int, str]:
        """Each member's role as the members table says (pid -> leader or standby)."""
        rows = self.lease_query("SELECT pid, role FROM members")
        return {int(r["pid"]): str(r["role"]) for r in rows}

    def cli(self, member: Member, *args: str) -> subprocess.CompletedProcess[str]:
        """A syncd command with this member's settings (as on its host)."""
        env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "SYNCD_CONFIG")}
        return subprocess.run(
            [str(SYNCD), *args, "--config", str(member.folder / "syncd.toml")],
            env=env,
            capture_output=True,
            text=True,
            timeout=DEADLINE,
        )

    def runs_of(self, member: Member) -> list[dict[str, Any]]:
        return self.query("SELECT * FROM runs WHERE pid = :p ORDER BY id", p=member.pid)

    # ------------------------------------------------------------ what the platform says

    def writes(self, member: Member, since_ms: int = 0) -> int:
        found = self.emulator.callers(since_ms).get(member.caller, {})
        return int(found.get("writes", 0))

    def first_write_ms(self, member: Member, since_ms: int = 0) -> int | None:
        found = self.emulator.callers(since_ms).get(member.caller, {})
        at = found.get("first_write_ms")
        return int(at) if at is not None else None

    def converged(self) -> bool:
        """The platform holds every source person once, and no one else."""
        state = self.emulator.state()
        held = sorted((e["extension_id"], e["username"]) for e in state["employees"])
        return held == sorted((e[0], e[1]) for e in self.employees)


def slow_writes(emulator: RunningEmulator) -> None:
    emulator.set_faults(
        scripted=[
            {
                "match": "import-employees",
                "method": "POST",
                "fault": "latency",
                "latency_ms": SLOW_WRITE_MS,
                "count": 1000,
            }
        ]
    )


def tapped_url(url: str, tap: Tap) -> str:
    """``url`` with the tap's port: the same server, reached through the tap."""
    return make_url(url).set(port=tap.port).render_as_string(hide_password=False)


def frozen_leader(
    cluster: Cluster, tap: Tap, where: Literal["store", "platform"]
) -> tuple[Member, Member]:
    """The leader (reaching ``where`` through the tap, to be frozen there) applying slowly,
    and a standby. Through the store: PostgreSQL's (a SQLite file has no wire)."""
    cluster.emulator.set_faults(down=True)  # no apply before both stand where they should
    if where == "store":
        assert cluster.store_url is not None
        through = cluster.member("a", database_url=tapped_url(cluster.store_url, tap))
        other = cluster.member("b")
    else:  # both (one platform has one address: the store is bound to it); "a" is stopped
        platform = tapped_url(cluster.emulator.base_url, tap)
        through = cluster.member("a", platform_url=platform)
        other = cluster.member("b", platform_url=platform)
    leader = cluster.start(through)
    cluster.wait_leader([leader], "the first daemon leads")
    standby = cluster.start(other)
    wait_for(lambda: cluster.roles().get(standby.pid) == "standby", "the other stands by")
    slow_writes(cluster.emulator)
    wait_for(lambda: cluster.writes(leader) >= 2, "the leader's first writes")
    return leader, standby


def no_duplicates(emulator: RunningEmulator) -> None:
    """No username, extension_id or department serial_no is held twice on the platform."""
    state = emulator.state()
    usernames = [e["username"] for e in state["employees"]]
    extensions = [e["extension_id"] for e in state["employees"]]
    serials = [n["serial_no"] for n in state["nodes"] if n["serial_no"]]
    assert len(usernames) == len(set(usernames)), usernames
    assert len(extensions) == len(set(extensions)), extensions
    assert len(serials) == len(set(serials)), serials


def wait_for(condition: Callable[[], Any], what: str) -> Any:
    return wait_until(condition, what, DEADLINE)


RIVAL = Claimant(
    instance="rival/4242/t", host="rival", pid=4242, machine="rival-machine",
    place="/var/lib/syncd", role="leader", lease_ms=30_000,
)  # fmt: skip


def rival_lease(state: StateStore) -> Lease:
    """Another instance's lease on the same state database (``take_over`` claims it)."""
    return Lease(state, RIVAL, role_waiting="standby", contend=True)


def take_over(state: StateStore, rival: Lease) -> None:
    """A takeover in the store, at once: the lease's row expires and ``rival`` claims it
    (its epoch one more; on PostgreSQL it ends the former holder's sessions)."""
    with state.leases.write(1000) as own:
        own.execute(text("UPDATE leadership SET expires_at = 0"))
    assert rival.claim()
