"""What the platform emulator saw: requests counted by route."""

from __future__ import annotations

from syncd.emulator import RunningEmulator


def requests_to(emulator: RunningEmulator, fragment: str) -> int:
    """How many API requests the emulator saw on routes whose template holds ``fragment``."""
    requests: dict[str, int] = emulator.stats()["requests"]
    return sum(n for route, n in requests.items() if fragment in route)
