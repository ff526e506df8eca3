"""The base of every settings section, and the rules several sections share."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, SecretStr

PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0)]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _one_of(value: SecretStr | None, path: Path | None, key: str) -> None:
    # Both given would leave one silently unused: the operator may rotate the wrong one.
    if value is not None and path is not None:
        raise ValueError(f"give one of {key} and {key}_file, not both")
