"""The platform emulator: the admin API syncd uses, served locally over real HTTP.

It keeps the platform's rules (one token per application, parents-first imports, name
paths, per-item failures, 208507/208502) and injects faults on request (HTTP 500, 429
with Retry-After, latency, dropped connections, "down", per-item rejections). Control
endpoints under ``/_emulator`` read and reset its state; see docs/platform.md.
"""

from syncd.emulator.app import create_app
from syncd.emulator.faults import FaultSettings, RejectRule, ScriptedFault, read_fault_settings
from syncd.emulator.options import EmulatorOptions
from syncd.emulator.server import RunningEmulator, serve, serve_in_thread

__all__ = [
    "EmulatorOptions",
    "FaultSettings",
    "RejectRule",
    "RunningEmulator",
    "ScriptedFault",
    "create_app",
    "read_fault_settings",
    "serve",
    "serve_in_thread",
]
