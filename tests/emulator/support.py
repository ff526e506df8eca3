"""Helpers for the emulator tests: an authenticated API client and small body builders."""

from __future__ import annotations

from typing import Any

import httpx

from syncd.emulator import RunningEmulator

ORG = "/v1/admin/organizations/acme"
DOMAIN = {"domain_id": "acme"}


class Api:
    """Plain httpx calls with the current token; returns the decoded envelope."""

    def __init__(self, emulator: RunningEmulator, client: httpx.Client) -> None:
        self.emulator = emulator
        self.client = client
        self.token = emulator.issue_token()

    def call(
        self, method: str, path: str, params: dict[str, Any] | None = None, json: Any = None
    ) -> dict[str, Any]:
        query = {"access_token": self.token, **(params or {})}
        answer: dict[str, Any] = self.client.request(method, path, params=query, json=json).json()
        return answer

    def ok(
        self, method: str, path: str, params: dict[str, Any] | None = None, json: Any = None
    ) -> Any:
        answer = self.call(method, path, params, json)
        assert answer["status"] == 0, answer
        assert answer["message"] == "ok"
        return answer["result"]

    def import_orgs(self, items: list[Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.ok("POST", f"{ORG}/import-orgs", json=items)
        return result

    def import_employees(self, items: list[Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.ok("POST", f"{ORG}/import-employees", json=items)
        return result

    def node(self, node_id: int) -> dict[str, Any]:
        result: dict[str, Any] = self.ok("GET", f"{ORG}/{node_id}")
        return result

    def root(self) -> dict[str, Any]:
        result: dict[str, Any] = self.ok("GET", ORG)
        return result

    def employees(self, **params: Any) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.ok("GET", f"{ORG}/employees", {**DOMAIN, **params})
        return result

    def employee(self, username: str) -> dict[str, Any]:
        found = self.employees(matching="true", type="username", query=username)
        assert len(found) == 1, found
        return found[0]

    def all_nodes(self) -> list[dict[str, Any]]:
        result = self.ok("GET", f"{ORG}/page-orgs", {**DOMAIN, "limit": 100000})
        records: list[dict[str, Any]] = result["records"]
        return records
