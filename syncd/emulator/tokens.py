"""Application tokens: one valid token per application, as on the platform."""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from syncd.emulator.codes import (
    APPLICATION_AUTH_FAILED,
    NO_SUCH_APPLICATION,
    TOKEN_NOT_FOUND,
    TOKEN_NOT_FOUND_MESSAGE,
    ApiError,
    bad_request,
)
from syncd.emulator.fields import Body, required_text, text


@dataclass(frozen=True, slots=True)
class Application:
    """The one application the emulator knows, and the org ids it may name."""

    client_id: str
    client_secret: str
    domain_id: str
    org_ids: frozenset[str]


@dataclass(frozen=True, slots=True)
class Token:
    access_token: str
    client_id: str
    issued_time: int
    expire_time: int

    def as_result(self) -> dict[str, object]:
        return {
            "access_token": self.access_token,
            "refresh_token": self.access_token,
            "issued_time": self.issued_time,
            "expire_time": self.expire_time,
            "client_id": self.client_id,
        }


class TokenBook:
    """Issues tokens and checks them; a new token for an application replaces its old one."""

    def __init__(
        self, lifetime_seconds: int, tokens: Iterable[Token] = (), issued: int = 0
    ) -> None:
        self.lifetime_ms = lifetime_seconds * 1000
        self.issued = issued
        self._current: dict[str, Token] = {t.client_id: t for t in tokens}

    def tokens(self) -> list[Token]:
        return list(self._current.values())

    def clear(self) -> None:
        self._current.clear()

    def issue(self, application: Application, body: Body, now: int) -> Token:
        """POST /v1/token: check the request and the credentials, then replace the token."""
        check_token_request(application, body)
        token = Token(secrets.token_urlsafe(32), application.client_id, now, now + self.lifetime_ms)
        self._current[application.client_id] = token
        self.issued += 1
        return token

    def check(self, access_token: str, now: int) -> Token:
        """The token's record, or 10011 if it is unknown, replaced or expired."""
        for token in self._current.values():
            if access_token and hmac.compare_digest(token.access_token, access_token):
                if now < token.expire_time:
                    return token
                break
        raise ApiError(TOKEN_NOT_FOUND, TOKEN_NOT_FOUND_MESSAGE)


def check_token_request(application: Application, body: Body) -> None:
    if text(body, "grant_type") != "client_credentials":
        raise bad_request("grant_type must be client_credentials")
    if text(body, "scope") != "app":
        raise bad_request("scope must be app")
    domain_id = required_text(body, "domain_id")
    client_id = required_text(body, "client_id")
    secret = required_text(body, "client_secret")
    org_id, owner_id = text(body, "org_id"), text(body, "owner_id")
    if not org_id and not owner_id:
        raise bad_request("org_id or owner_id is required")
    known = (
        client_id == application.client_id
        and domain_id == application.domain_id
        and (org_id in application.org_ids if org_id else owner_id == application.domain_id)
    )
    if not known:
        raise ApiError(NO_SUCH_APPLICATION, "no such application")
    if not hmac.compare_digest(secret.encode(), application.client_secret.encode()):
        raise ApiError(APPLICATION_AUTH_FAILED, "application authentication failed")
