"""Injected faults: what the settings say, and the decision taken for each API request.

Random faults draw from one seeded generator, one draw per API request whatever the
rates, so a given seed and request sequence always fault the same requests.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from random import Random
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from syncd.emulator.fields import Body
from syncd.emulator.orgs import Rejector
from syncd.errors import ConfigError

ScriptedKind = Literal["http_500", "http_429", "drop_before", "drop_after", "latency", "error"]
Action = Literal["pass", "http_500", "http_429", "down", "drop_before", "drop_after", "error"]
ImportEndpoint = Literal["import-employees", "import-orgs"]
Rate = float
SCRIPTED_ACTIONS: dict[ScriptedKind, Action] = {
    "http_500": "http_500",
    "http_429": "http_429",
    "drop_before": "drop_before",
    "drop_after": "drop_after",
    "latency": "pass",
    "error": "error",
}


class RejectRule(BaseModel):
    """Import items whose ``field`` matches ``pattern`` (regex search) fail with ``message``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    field: str
    pattern: str
    message: str = "rejected by rule"
    endpoint: ImportEndpoint | None = None  # None: both import endpoints

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"invalid regular expression: {error}") from error
        return pattern

    def rejects(self, endpoint: ImportEndpoint, item: Body) -> bool:
        if self.endpoint not in (None, endpoint) or self.field not in item:
            return False
        value = item[self.field]
        return value is not None and re.search(self.pattern, str(value)) is not None


class ScriptedFault(BaseModel):
    """A one-shot fault for the next ``count`` requests whose path contains ``match``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    match: str = ""
    method: str | None = None
    fault: ScriptedKind
    count: int = Field(default=1, ge=1)
    latency_ms: int = Field(default=0, ge=0)
    # fault "error": this envelope error (HTTP 200), e.g. 208507, instead of processing
    status: int = 0
    message: str = ""

    @model_validator(mode="after")
    def _error_has_status(self) -> ScriptedFault:
        if self.fault == "error" and not self.status:
            raise ValueError('fault "error" needs a non-zero status')
        return self

    def applies(self, method: str, path: str) -> bool:
        method_ok = self.method is None or self.method.upper() == method
        return method_ok and self.match in path


class FaultSettings(BaseModel):
    """All fault settings; replacing them resets the generator and the scripted counts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = 0
    http_500_rate: Rate = Field(default=0.0, ge=0, le=1)
    http_429_rate: Rate = Field(default=0.0, ge=0, le=1)
    retry_after: int = Field(default=1, ge=0)
    latency_ms: int = Field(default=0, ge=0)
    drop_rate: Rate = Field(default=0.0, ge=0, le=1)
    drop_after_rate: Rate = Field(default=0.0, ge=0, le=1)
    down: bool = False
    # Envelope errors (10011, 208502, 208507, ...) with HTTP 500 instead of 200: the HTTP
    # code of a failure is unspecified, and the envelope's status must win over it.
    errors_as_http_500: bool = False
    # The platform's own limit on a page of page-orgs or users: fewer records than the
    # ``limit`` asked for (None: as many as asked).
    page_cap: int | None = Field(default=None, ge=1)
    reject: tuple[RejectRule, ...] = ()
    scripted: tuple[ScriptedFault, ...] = ()

    @model_validator(mode="after")
    def _rates_fit(self) -> FaultSettings:
        if self.drop_rate + self.drop_after_rate + self.http_500_rate + self.http_429_rate > 1:
            raise ValueError("the fault rates add up to more than 1")
        return self


def read_fault_settings(path: Path) -> FaultSettings:
    """Fault settings from a JSON file (the body POST /_emulator/faults takes)."""
    try:
        return FaultSettings.model_validate_json(path.read_bytes())
    except OSError as error:
        raise ConfigError(f"{path}: cannot read fault settings: {error.strerror}") from error
    except ValidationError as error:
        raise ConfigError(f"{path}: invalid fault settings: {error}") from error


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    latency_ms: int = 0
    error: tuple[int, str] = (0, "")  # action "error": the envelope's status and message


class FaultInjector:
    """Decides the fault for each API request and counts what it injected."""

    def __init__(self, settings: FaultSettings) -> None:
        self.counts: Counter[str] = Counter()
        self.settings = settings
        self._rng = Random(settings.seed)
        self._remaining: list[int] = []
        self.replace(settings)

    def replace(self, settings: FaultSettings) -> None:
        self.settings = settings
        self._rng = Random(settings.seed)
        self._remaining = [s.count for s in settings.scripted]

    def scripted_remaining(self) -> list[int]:
        return list(self._remaining)

    def decide(self, method: str, path: str) -> Decision:
        settings = self.settings
        latency = settings.latency_ms
        action: Action = "pass"
        draw = self._rng.random()
        scripted = self._take_scripted(method, path)
        if scripted is not None and scripted.fault == "latency":
            latency += scripted.latency_ms
        elif scripted is not None:
            action = SCRIPTED_ACTIONS[scripted.fault]
        elif settings.down:
            action = "down"
        else:
            action = self._by_rate(draw)
        if latency:
            self.counts["latency"] += 1
        if action != "pass":
            self.counts[action] += 1
        if action == "error" and scripted is not None:
            return Decision(action, latency, (scripted.status, scripted.message))
        return Decision(action, latency)

    def _take_scripted(self, method: str, path: str) -> ScriptedFault | None:
        for index, fault in enumerate(self.settings.scripted):
            if self._remaining[index] > 0 and fault.applies(method, path):
                self._remaining[index] -= 1
                return fault
        return None

    def _by_rate(self, draw: float) -> Action:
        settings = self.settings
        thresholds: tuple[tuple[float, Action], ...] = (
            (settings.drop_rate, "drop_before"),
            (settings.drop_after_rate, "drop_after"),
            (settings.http_500_rate, "http_500"),
            (settings.http_429_rate, "http_429"),
        )
        bound = 0.0
        for rate, action in thresholds:
            bound += rate
            if draw < bound:
                return action
        return "pass"

    def capped(self, limit: int) -> int:
        """A page's size: what was asked, within the platform's own cap if it has one."""
        cap = self.settings.page_cap
        return limit if cap is None or 0 <= limit <= cap else cap

    def rejector(self, endpoint: ImportEndpoint) -> Rejector:
        """The per-item rejection check of one import endpoint, counting what it rejects."""

        def reject(item: Body) -> str | None:
            for rule in self.settings.reject:
                if rule.rejects(endpoint, item):
                    self.counts["reject"] += 1
                    return rule.message
            return None

        return reject
