"""Prometheus metrics of syncd's runs, from registries of their own.

``LastRunMetrics`` are gauges of the last run, set from a finished run or recalled from the
state database: what a node-exporter textfile holds after a ``syncd sync`` (the
timer-based setup has no process to scrape), and what the daemon shows from its start.
``RunMetrics`` adds the daemon's counters and serves both on loopback.

A dedicated registry keeps anything a library registers globally out of syncd's endpoint;
the daemon's adds the standard process collector (``process_*``: memory, CPU, start time,
open files); the client library's ``*_created`` series
(one per counter and label set, the time it was first used) are turned off.
"""

from __future__ import annotations

import platform
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Info,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
    start_http_server,
)
from sqlalchemy import Connection, text

from syncd.errors import ConfigError, StateError
from syncd.snapshot import SUCCEEDED, StateStore, json_object, last_success

OUTCOMES = ("ok", "partial", "failed", "blocked", "interrupted")
ITEM_LABELS = ("kind", "action", "outcome")

disable_created_metrics()  # type: ignore[no-untyped-call]


class LastRunMetrics:
    """Gauges: the build, and the last run's outcome, times, items and source size."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        Info("syncd_build", "syncd's version, and the Python it runs on.", registry=r).info(
            {"version": _version(), "python": platform.python_version()}
        )
        self.last_run = Gauge(
            "syncd_last_run_timestamp_seconds", "When the last run finished.", registry=r
        )
        self.last_success = Gauge(
            "syncd_last_success_timestamp_seconds",
            "When the last run that succeeded (ok, or partial: it ran to its end) finished.",
            registry=r,
        )
        self.last_duration = Gauge(
            "syncd_last_run_duration_seconds", "How long the last run took.", registry=r
        )
        self.last_outcome = Gauge(
            "syncd_last_run_outcome",
            "1 for the last run's outcome, 0 for the others.",
            ["outcome"],
            registry=r,
        )
        self.last_items = Gauge(
            "syncd_last_run_items",
            "The last run's changes, by kind, action and outcome.",
            ITEM_LABELS,
            registry=r,
        )
        self.last_rejected = Gauge(
            "syncd_last_run_rejected_rows", "Source rows the last run rejected.", registry=r
        )
        self.pending_failures = Gauge(
            "syncd_pending_failures",
            "Changes that failed in the last run: they are planned again in the next.",
            registry=r,
        )
        self.known_problems = Gauge(
            "syncd_known_problems",
            "Values the platform refused because another account holds them (known "
            "problems: told once, not failing the runs).",
            registry=r,
        )
        self.source = Gauge(
            "syncd_source_records",
            "Records in the last complete read of the source, by kind.",
            ["kind"],
            registry=r,
        )

    def show(
        self,
        outcome: str,
        finished_ms: int,
        summary: Mapping[str, Any],
        items: Mapping[tuple[str, str, str], int],
    ) -> None:
        """Set the gauges from one finished run: its outcome, timing, summary and items."""
        self.last_run.set(finished_ms / 1000)
        if outcome in SUCCEEDED:
            self.last_success.set(finished_ms / 1000)
        self.last_duration.set(float(summary.get("duration_ms") or 0) / 1000)
        for known in {*OUTCOMES, outcome}:
            self.last_outcome.labels(known).set(1 if known == outcome else 0)
        self.last_items.clear()
        for labels, n in items.items():
            self.last_items.labels(*labels).set(n)
        self.pending_failures.set(sum(n for (_, _, o), n in items.items() if o == "failed"))
        self.known_problems.set(int(summary.get("known_problems") or 0))
        source = summary.get("source") or {}
        self.last_rejected.set(int(source.get("rejected") or 0))
        self.show_source(source)

    def show_source(self, source: Mapping[str, Any]) -> None:
        """The source's size, from a run's summary: only a complete read tells it."""
        if source.get("read") == "full":
            self.source.labels("employee").set(int(source.get("employees") or 0))
            self.source.labels("department").set(int(source.get("departments") or 0))

    def recall(self, state: StateStore) -> None:
        """Set the gauges from the runs recorded in the state database (dry runs left out)."""
        with state.read() as conn:
            last = conn.execute(
                text(
                    "SELECT id, outcome, finished_at, summary FROM runs WHERE mode = 'apply' "
                    "AND finished_at IS NOT NULL ORDER BY id DESC LIMIT 1"
                )
            ).first()
            success = last_success(conn)
            full = _last_full_read(conn)
            items: dict[tuple[str, str, str], int] = {}
            if last is not None:
                rows = conn.execute(
                    text(
                        "SELECT kind, action, outcome, COUNT(*) FROM run_items WHERE run_id = :r "
                        "AND outcome IN ('ok', 'failed') GROUP BY kind, action, outcome"
                    ),
                    {"r": last.id},
                )
                items = {(k, a, o): int(n) for k, a, o, n in rows}
        if last is not None:
            self.show(last.outcome, int(last.finished_at), json_object(last.summary), items)
        self.show_source(json_object(full).get("source") or {})
        if success is not None:
            self.last_success.set(success / 1000)


def _last_full_read(conn: Connection, page: int = 100) -> str | None:
    """The summary of the newest finished real run that read the source whole (its JSON
    read here, by either engine's SQL alike)."""
    query = text(
        "SELECT summary FROM runs WHERE mode = 'apply' AND finished_at IS NOT NULL "
        "ORDER BY id DESC LIMIT :n OFFSET :o"
    )
    offset = 0
    while summaries := [str(r[0]) for r in conn.execute(query, {"n": page, "o": offset})]:
        for summary in summaries:
            if (json_object(summary).get("source") or {}).get("read") == "full":
                return summary
        offset += page
    return None


def write_textfile(state: StateStore, path: Path) -> None:
    """The last run's gauges as a node-exporter textfile, replaced whole (never half-written).

    Readable by all (no secret in it): node-exporter runs as its own user, and syncd's
    units set ``UMask=0077``.
    """
    metrics = LastRunMetrics()
    metrics.recall(state)
    temporary: Path | None = None
    try:
        # Not named *.prom: node-exporter never reads it half-written.
        with tempfile.NamedTemporaryFile(
            dir=path.parent, prefix=f".{path.name}.", delete=False
        ) as f:
            temporary = Path(f.name)
            f.write(generate_latest(metrics.registry))
        temporary.chmod(0o644)
        temporary.replace(path)
    except OSError as exc:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
        raise StateError(f"metrics.textfile {path}: cannot be written: {exc.strerror}") from exc


class RunMetrics(LastRunMetrics):
    """The gauges, and counters of the daemon's runs since it started; served on loopback."""

    def __init__(self) -> None:
        super().__init__()
        r = self.registry
        self.runs = Counter("syncd_runs", "Scheduled runs, by outcome.", ["outcome"], registry=r)
        self.skipped = Counter(
            "syncd_skipped_runs", "Scheduled runs skipped: the run lock was held.", registry=r
        )
        self.items = Counter(
            "syncd_items", "Changes applied, by kind, action and outcome.", ITEM_LABELS, registry=r
        )
        self.retries = Counter(
            "syncd_platform_retries", "Platform requests sent again after a failure.", registry=r
        )
        self.next_run = Gauge(
            "syncd_next_run_timestamp_seconds", "When the next run is scheduled.", registry=r
        )
        self.leader = Gauge(
            "syncd_leader",
            "1 while this daemon holds the lease and syncs, 0 while it stands by (docs/ha.md).",
            registry=r,
        )
        self.epoch = Gauge(
            "syncd_leader_epoch",
            "The lease's epoch: the one this daemon holds, or the last one it saw held.",
            registry=r,
        )
        # The daemon's own process, as dashboards for any process expect it: resident and
        # virtual memory, CPU seconds, start time, open and maximum file descriptors.
        ProcessCollector(registry=r)
        self._server: WSGIServer | None = None

    def observe(
        self,
        outcome: str,
        finished_ms: int,
        summary: Mapping[str, Any],
        items: Mapping[tuple[str, str, str], int],
    ) -> None:
        """Count one finished run, and show it."""
        self.show(outcome, finished_ms, summary, items)
        self.runs.labels(outcome).inc()
        for labels, n in items.items():
            self.items.labels(*labels).inc(n)
        self.retries.inc(int(summary.get("retries") or 0))

    def serve(self, host: str, port: int) -> None:
        try:
            server, _ = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            raise ConfigError(f"metrics endpoint {host}:{port}: {exc.strerror}") from exc
        self._server = server

    def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


def _version() -> str:
    from importlib.metadata import version  # only when metrics are served: 20 ms at start

    return version("syncd")
