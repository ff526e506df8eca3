"""A site for daemon tests: CSV source, settings file, state directory, and syncd processes.

Synchronization is by what syncd says: the test plays the service manager's end of the
notify protocol and reads its datagrams with deadlines. Where only a file or a row can
tell, a condition is polled until a deadline.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from syncd.emulator import RunningEmulator
from tests.support.cli import SYNCD
from tests.support.waiting import DEADLINE as DEADLINE

DEPARTMENTS = [("D1", "Sales", ""), ("D2", "Engineering", ""), ("D3", "Backend", "D2")]
EMPLOYEES = [
    ("E1", "alice", "Alice", "D1"),
    ("E2", "bob", "Bob", "D2"),
    ("E3", "carol", "Carol", "D3"),
    ("E4", "dave", "Dave", "D3"),
    ("E5", "erin", "Erin", "D1"),
    ("E6", "frank", "Frank", "D2"),
]
ROOT_NAME = "Acme"  # the emulator's default root node


class NotifySocket:
    """The service manager's end of the notify protocol: reads every datagram as it comes.

    Like systemd it keeps reading: a socket left unread fills up (ten datagrams by
    default) and syncd would drop what follows.
    """

    def __init__(self, address: str) -> None:
        self.address = address  # as NOTIFY_SOCKET gives it: a path, or "@name" (abstract)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + address[1:] if address.startswith("@") else address)
        self.sock.settimeout(0.2)  # how soon the reader notices close()
        self.messages: list[dict[str, str]] = []
        self._arrived = threading.Condition()
        self._seen = 0  # messages before this index were consumed by wait_for
        self._open = True
        self._reader = threading.Thread(target=self._read, name="notify-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                if not self._open:
                    return  # closed, and nothing more queued
                continue
            except OSError:
                return
            lines = data.decode("utf-8").split("\n")
            with self._arrived:
                self.messages.append(dict(line.split("=", 1) for line in lines if "=" in line))
                self._arrived.notify_all()

    def wait_for(
        self, accept: Callable[[dict[str, str]], bool], what: str, deadline: float = DEADLINE
    ) -> dict[str, str]:
        """The next message (after the last one returned) that ``accept`` likes."""
        end = time.monotonic() + deadline
        with self._arrived:
            while True:
                while self._seen < len(self.messages):
                    message = self.messages[self._seen]
                    self._seen += 1
                    if accept(message):
                        return message
                remaining = end - time.monotonic()
                if remaining <= 0:
                    shown = "\n".join(map(str, self.messages[-10:]))
                    raise AssertionError(f"no notification {what}; the last ones:\n{shown}")
                self._arrived.wait(remaining)

    def status(self, *fragments: str, deadline: float = DEADLINE) -> str:
        """The next STATUS= text that holds every fragment."""
        message = self.wait_for(
            lambda m: all(f in m.get("STATUS", "") for f in fragments),
            f"with STATUS= holding {fragments}",
            deadline,
        )
        return message["STATUS"]

    def count(self, key: str) -> int:
        """How many messages so far hold ``key`` (call it after the sender has exited)."""
        self.close()  # the reader has taken what was queued once it stops
        with self._arrived:
            return sum(1 for m in self.messages if key in m)

    def close(self) -> None:
        if self._open:
            self._open = False
            self._reader.join()
            self.sock.close()


@dataclass
class Service:
    """A ``syncd run`` process and what it tells."""

    process: subprocess.Popen[bytes]
    notify: NotifySocket
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def send(self, signum: int) -> None:
        self.process.send_signal(signum)

    def wait(self, deadline: float = DEADLINE) -> int:
        try:
            return self.process.wait(deadline)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"syncd run did not exit; its log:\n{self.log()}") from None

    def stop(self) -> int:
        self.send(signal.SIGTERM)
        return self.wait()

    def ready(self) -> dict[str, str]:
        return self.notify.wait_for(lambda m: m.get("READY") == "1", "READY=1")

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def close(self) -> None:
        """Kill the process if it still runs, and stop reading its notifications."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(DEADLINE)
        self.notify.close()


def start_service(
    config: Path, notify: NotifySocket, log_path: Path, env: Mapping[str, str]
) -> Service:
    """``syncd run --config CONFIG`` telling ``notify``, its output in ``log_path``."""
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [str(SYNCD), "run", "--config", str(config)],
            env={**env, "NOTIFY_SOCKET": notify.address},
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    return Service(process, notify, log_path)


@dataclass
class Site:
    """One installation: source files, settings, state directory, and the processes started."""

    root: Path
    emulator: RunningEmulator
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    sockets: list[NotifySocket] = field(default_factory=list)

    def __post_init__(self) -> None:
        write_csv(self.root)
        self.configure()

    @property
    def config(self) -> Path:
        return self.root / "syncd.toml"

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    def configure(self, **sections: dict[str, Any] | str) -> None:
        """Write the settings file; each keyword replaces keys of that section (or top level)."""
        settings: dict[str, Any] = {
            "state_dir": "state",
            "log_format": "text",
            "source": {"kind": "csv"},
            "source.csv": {"employees": "employees.csv", "departments": "departments.csv"},
            "platform": platform_settings(self.emulator),
            "schedule": {"interval_seconds": 3600, "jitter_seconds": 0},
        }
        for name, value in sections.items():
            if isinstance(value, dict):
                settings[name] = {**settings.get(name, {}), **value}
            else:
                settings[name] = value
        self.config.write_text(toml_text(settings), encoding="utf-8")
        self.config.chmod(0o600)  # it holds the client secret

    def start(self, *, watchdog_usec: int | None = 200_000) -> Service:
        address = str(self.root / f"notify-{len(self.sockets)}")
        notify = NotifySocket(address)
        self.sockets.append(notify)
        env = dict(os.environ)
        env.pop("SYNCD_CONFIG", None)
        if watchdog_usec is not None:
            env["WATCHDOG_USEC"] = str(watchdog_usec)
        log_path = self.root / f"daemon-{len(self.processes)}.log"
        service = start_service(self.config, notify, log_path, env)
        self.processes.append(service.process)
        return service

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "SYNCD_CONFIG")}
        return subprocess.run(
            [str(SYNCD), *args, "--config", str(self.config)],
            env=env,
            capture_output=True,
            text=True,
            timeout=DEADLINE,
        )

    def runs(self) -> list[dict[str, Any]]:
        """The runs table, oldest first."""
        path = self.state_dir / "syncd.db"
        if not path.exists():
            return []
        with sqlite3.connect(path, timeout=30) as db:
            db.row_factory = sqlite3.Row
            return [dict(r) for r in db.execute("SELECT * FROM runs ORDER BY id")]

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait()
        for notify in self.sockets:
            notify.close()


def write_csv(root: Path, people: list[tuple[str, str, str, str]] = EMPLOYEES) -> None:
    """The source: DEPARTMENTS, and these employees (id, username, name, department)."""
    departments = ["id,name,parent_id", *(",".join(d) for d in DEPARTMENTS)]
    employees = ["id,username,name,department", *(",".join(e) for e in people)]
    (root / "departments.csv").write_text("\n".join(departments) + "\n", encoding="utf-8")
    (root / "employees.csv").write_text("\n".join(employees) + "\n", encoding="utf-8")


def platform_settings(emulator: RunningEmulator) -> dict[str, Any]:
    """The [platform] section of a daemon under test: the emulator, small slow batches."""
    return {
        "base_url": emulator.base_url,
        "domain_id": "acme",
        "org_code": "acme",
        "org_id": "acme",
        "client_id": "syncd",
        "client_secret": "demo-secret",
        "batch_size": 2,
        "concurrency": 1,
    }


def toml_text(settings: dict[str, Any]) -> str:
    """Top-level keys first, then one [section] per dict (dotted names for nesting)."""
    lines = [f"{k} = {_value(v)}" for k, v in settings.items() if not isinstance(v, dict)]
    for name, section in settings.items():
        if isinstance(section, dict):
            lines.append(f"\n[{name}]")
            lines.extend(f"{k} = {_value(v)}" for k, v in section.items())
    return "\n".join(lines) + "\n"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def platform_matches_source(
    emulator: RunningEmulator, people: list[tuple[str, str, str, str]] = EMPLOYEES
) -> None:
    """The platform holds exactly the source's departments and people, each in place."""
    state = emulator.state()
    nodes = {n["serial_no"]: n["full_name_path"] for n in state["nodes"] if n["serial_no"]}
    names = {d[0]: d[1] for d in DEPARTMENTS}
    parents = {d[0]: d[2] for d in DEPARTMENTS}

    def path(department: str) -> str:
        parent = parents[department]
        return f"{path(parent) if parent else ROOT_NAME}/{names[department]}"

    assert nodes == {d[0]: path(d[0]) for d in DEPARTMENTS}
    placed = {
        (e["extension_id"], e["username"], p["full_name_path"])
        for e in state["employees"]
        for p in e["positions"]
        if p["primary"]
    }
    assert placed == {(e[0], e[1], path(e[3])) for e in people}
    assert len(state["employees"]) == len(people)


def samples(text: str) -> dict[str, float]:
    """Each sample of a scrape by its name and labels, as the exposition format writes them."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            found[sample.name + (f"{{{labels}}}" if labels else "")] = sample.value
    return found
