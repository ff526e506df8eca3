"""The platform's access token as a value: what the client is given and the state store
keeps (shared by the API client and the store, below both)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CachedToken:
    access_token: str
    expire_time: int  # ms since the epoch
    issued_time: int | None = None

    def __repr__(self) -> str:  # never show the token itself
        return f"CachedToken(expire_time={self.expire_time})"
