"""Two hosts, each with its own state database, syncing with one application (issue 25,
case 6).

The platform keeps one token per application: each host's renewal invalidates the
other's token. A renewal must never fail a run, even when it comes while the run holds
its own database's write lock (a batch's answer being settled, which may look a node
up), and a token the other host invalidated is renewed and the call sent again.

Host A talks to the emulator through a relay that holds one of A's requests — a look-up
A sends while it settles a batch, inside its write transaction — until host B has run a
whole ``syncd sync`` (and so taken a new token). Real processes, real HTTP, real SQLite.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from syncd.emulator import RunningEmulator
from tests.engine.company import small_company
from tests.support.cli import SYNCD

from .support import DEADLINE, Rig, assert_nothing_twice, clean_env, query


class Relay:
    """An HTTP relay to the emulator that holds the first request whose path contains
    ``hold`` until ``release`` is set (``reached`` is set when it arrives)."""

    def __init__(self, target: str, hold: str) -> None:
        self.reached = threading.Event()
        self.release = threading.Event()
        self._held = False
        self._lock = threading.Lock()
        relay = self
        upstream = httpx.Client(base_url=target, timeout=DEADLINE)
        self._upstream = upstream

        class Handler(BaseHTTPRequestHandler):
            def _relay(self) -> None:
                with relay._lock:
                    hold = hold_now = not relay._held and hold_path in self.path
                    relay._held = relay._held or hold_now
                if hold:
                    relay.reached.set()
                    relay.release.wait(DEADLINE * 2)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                answer = upstream.request(
                    self.command,
                    self.path,
                    content=body,
                    headers={"Content-Type": self.headers.get("Content-Type", "")},
                )
                self.send_response(answer.status_code)
                self.send_header("Content-Type", answer.headers.get("Content-Type", ""))
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_DELETE = _relay

            def log_message(self, format: str, *args: object) -> None:
                pass

        hold_path = hold
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Relay:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._upstream.close()


@pytest.fixture
def relay(emulator: RunningEmulator) -> Iterator[Relay]:
    with Relay(emulator.base_url, hold="/serial/") as running:
        yield running


def host(folder: Path, emulator: RunningEmulator, **platform: object) -> Rig:
    folder.mkdir()
    rig = Rig(folder, emulator, small_company(), platform_options=dict(platform))
    rig.company.write(folder)
    rig.write_config()
    return rig


def test_two_hosts_on_one_application_do_not_fail_each_other(
    tmp_path: Path, emulator: RunningEmulator, relay: Relay
) -> None:
    first = host(tmp_path / "a", emulator, base_url=relay.url)
    second = host(tmp_path / "b", emulator)
    # A's first import-orgs is applied and its answer lost: the retry finds the node
    # there already, which A looks up (by serial_no) while it settles the batch.
    emulator.set_faults(scripted=[{"match": "import-orgs", "fault": "drop_after", "count": 1}])
    a = subprocess.Popen(
        [SYNCD, "sync", "--yes", "--config", str(first.config)],
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert relay.reached.wait(DEADLINE), "host A never looked a node up"
        b = second.cli("sync", "--yes")  # host B: a new token, A's is invalid from now on
        relay.release.set()
        a_out, a_err = a.communicate(timeout=DEADLINE * 2)
    finally:
        if a.poll() is None:
            a.kill()
            a.communicate()
    assert b.returncode == 0, b.stderr
    assert a.returncode == 0, a_err
    assert "database is locked" not in a_err + a_out
    assert int(emulator.state()["tokens_issued"]) >= 3  # A's, B's, A's renewal
    # Each host's database keeps the token it renewed last, once the run has let go of it.
    for rig in (first, second):
        assert len(query(rig.database, "SELECT * FROM tokens")) == 1
    assert first.platform().same_as(first.company.expected())
    assert_nothing_twice(emulator)


def test_two_hosts_syncing_at_once_both_succeed(tmp_path: Path, emulator: RunningEmulator) -> None:
    """Both hosts' runs overlap wherever the scheduler puts them; neither fails the other."""
    rigs = [host(tmp_path / name, emulator, concurrency=4) for name in ("a", "b")]
    procs = [
        subprocess.Popen(
            [SYNCD, "sync", "--yes", "--config", str(rig.config)],
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rig in rigs
    ]
    results = [p.communicate(timeout=DEADLINE * 2) for p in procs]
    for proc, (_, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
    assert rigs[0].platform().same_as(rigs[0].company.expected())
    assert_nothing_twice(emulator)
