"""Prometheus metrics of the daemon's runs, from a registry of their own, served on loopback.

A dedicated registry keeps the process's default collectors (and anything a library
registers globally) out of syncd's endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from syncd.errors import ConfigError

OUTCOMES = ("ok", "partial", "failed", "blocked", "interrupted")
ITEM_LABELS = ("kind", "action", "outcome")


class RunMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
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
        self.last_run = Gauge(
            "syncd_last_run_timestamp_seconds", "When the last run finished.", registry=r
        )
        self.last_success = Gauge(
            "syncd_last_success_timestamp_seconds",
            "When the last run with outcome ok finished.",
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
        self.next_run = Gauge(
            "syncd_next_run_timestamp_seconds", "When the next run is scheduled.", registry=r
        )
        self._server: WSGIServer | None = None

    def observe(
        self,
        outcome: str,
        finished_ms: int,
        summary: Mapping[str, Any],
        items: Mapping[tuple[str, str, str], int],
        rejected: int,
    ) -> None:
        """Record one finished run: its outcome, timing, applied items and rejected rows."""
        self.runs.labels(outcome).inc()
        self.last_run.set(finished_ms / 1000)
        if outcome == "ok":
            self.last_success.set(finished_ms / 1000)
        self.last_duration.set(float(summary.get("duration_ms") or 0) / 1000)
        for known in {*OUTCOMES, outcome}:
            self.last_outcome.labels(known).set(1 if known == outcome else 0)
        self.last_items.clear()
        for labels, n in items.items():
            self.items.labels(*labels).inc(n)
            self.last_items.labels(*labels).set(n)
        self.last_rejected.set(rejected)
        self.retries.inc(int(summary.get("retries") or 0))

    def serve(self, host: str, port: int) -> None:
        try:
            server, _ = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            raise ConfigError(f"metrics endpoint {host}:{port}: {exc.strerror}") from None
        self._server = server

    def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
