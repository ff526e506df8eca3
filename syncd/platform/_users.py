"""The users' endpoints: the users list, and text messages pushed to users."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from syncd.platform._answers import _dict
from syncd.platform._requests import Requests

USERS = "/v1/users"
MBOX = "/app/mbox"


class Users:
    """Every user record, page by page; a text message to some of them."""

    def __init__(self, requests: Requests) -> None:
        self._requests = requests

    def users(
        self, *, refresh_time: int | None = None, page_size: int = 100, concurrency: int = 1
    ) -> Iterator[dict[str, Any]]:
        """Every user record, page by page (``concurrency`` pages asked at a time); with
        ``refresh_time``, those refreshed after it."""
        params: dict[str, Any] = {}
        if refresh_time is not None:
            params["refresh_time"] = refresh_time
        for record in self._requests.pages(USERS, "users", params, page_size, concurrency):
            yield _dict(record)

    def send_text(self, usernames: Sequence[str], content: str) -> dict[str, Any]:
        """Push a text message to these users; never sent twice (see the module docstring)."""
        body = {
            "type": "TEXT",
            "body": {"content": content, "dest_type": "P2P"},
            "client_ids": list(usernames),
        }
        return _dict(self._requests.call("POST", MBOX, body=body, repeatable=False))
