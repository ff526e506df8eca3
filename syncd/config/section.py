"""The base of every settings section, and the rules several sections share."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, get_args

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationInfo, field_validator

PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0)]

# A URL's authority: what comes after "scheme://" up to its path, query or fragment.
_AUTHORITY = re.compile(r"[^/?#]*")


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _blank_refused(cls, value: Any, info: ValidationInfo) -> Any:
        """Every path and every secret of a section: a blank one is refused, never read as
        the current folder or sent to be refused by the server."""
        annotation = cls.model_fields[info.field_name].annotation if info.field_name else None
        blank_path(value, annotation)
        if holds(annotation, SecretStr) and _blank(value):
            raise ValueError(
                "must not be blank: give the secret, or leave the key out (for its *_file key "
                "or its systemd credential)"
            )
        return value


def holds(annotation: Any, kind: type) -> bool:
    """Whether a field's annotation is ``kind`` or ``kind | None``."""
    return annotation is kind or kind in get_args(annotation)


def _blank(value: Any) -> bool:
    text = value.get_secret_value() if isinstance(value, SecretStr) else value
    return isinstance(text, str) and not text.strip()


def blank_path(value: Any, annotation: Any) -> None:
    """Refuse a blank value for a path: "" would be the folder syncd happens to run in."""
    if holds(annotation, Path) and _blank(value):
        raise ValueError("must be a path, not blank")


def without_userinfo(text: str) -> str:
    """A URL as a message may show it: a user name and password it holds replaced by ***
    (``https://***@host/``); so too ``user:password@host`` without a scheme. Other text
    (an e-mail address) is returned as it is."""
    head, sep, rest = text.partition("://")
    if not sep:
        head, rest = "", text
    authority = _AUTHORITY.match(rest)
    userinfo, at, _ = (authority.group() if authority else "").rpartition("@")
    if not at or (not sep and ":" not in userinfo):
        return text
    return f"{head}{sep}***@{rest[len(userinfo) + 1 :]}"


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
