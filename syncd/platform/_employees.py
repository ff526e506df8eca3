"""The employees' endpoints: looked up, listed, created, updated, locked and deleted."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from syncd.platform._answers import _dict, _import_result, _malformed, _model
from syncd.platform._organizations import ORG
from syncd.platform._requests import Requests
from syncd.platform.schemas import EmployeeRecord, ImportResult

EMPLOYEES = ORG + "/employees"
EMPLOYEE = EMPLOYEES + "/{employee_id}"


class Employees:
    """Employees by username, by search or node; one at a time or imported in bulk."""

    def __init__(self, requests: Requests) -> None:
        self._requests = requests

    def employees_by_username(
        self, usernames: Sequence[str], *, batch: int = 100
    ) -> list[EmployeeRecord]:
        """The employees holding these usernames (absent ones are simply missing)."""
        if batch < 1:
            raise ValueError("batch must be at least 1")
        wanted = list(dict.fromkeys(u for u in usernames if u))
        if any("," in u for u in wanted):
            raise ValueError("a username with a comma cannot be looked up in a batch")
        found: list[EmployeeRecord] = []
        for start in range(0, len(wanted), batch):
            query = ",".join(wanted[start : start + batch])
            found += self._employee_list({"matching": "true", "type": "username", "query": query})
        return found

    def employees_by_id(self, ids: Sequence[int], *, batch: int = 100) -> list[EmployeeRecord]:
        """The employees with these ids, in the list form (absent ones are simply missing)."""
        if batch < 1:
            raise ValueError("batch must be at least 1")
        wanted = list(dict.fromkeys(ids))
        found: list[EmployeeRecord] = []
        for start in range(0, len(wanted), batch):
            query = ",".join(str(i) for i in wanted[start : start + batch])
            found += self._employee_list({"matching": "true", "type": "id", "query": query})
        return found

    def employee_records(
        self, usernames: Sequence[str], *, batch: int = 200
    ) -> Iterator[dict[str, Any]]:
        """The list-form records of these usernames, as the platform sends them (plain
        dicts, for reading many: no model is built), ``concurrency`` batches in flight."""
        wanted = list(dict.fromkeys(u for u in usernames if u))
        if any("," in u for u in wanted):
            raise ValueError("a username with a comma cannot be looked up in a batch")
        endpoint = f"GET {EMPLOYEES}"

        def fetch(start: int) -> list[Any]:
            query = ",".join(wanted[start : start + batch])
            params = {"domain_id": self._requests.settings.domain_id, "matching": "true"}
            result = self._requests.call(
                "GET", EMPLOYEES, params={**params, "type": "username", "query": query}
            )
            if not isinstance(result, list):
                raise _malformed(endpoint, "expected a list of employees")
            return result

        with ThreadPoolExecutor(
            self._requests.settings.concurrency, thread_name_prefix="read"
        ) as pool:
            for page in pool.map(fetch, range(0, len(wanted), batch)):
                yield from (r for r in page if isinstance(r, dict))

    def employee_listing(self, org_id: int, *, recursion: bool) -> list[dict[str, Any]]:
        """The list-form records of a node's people (with ``recursion``, its descendants'
        too), as the platform sends them: plain dicts, for reading many."""
        params = {"org_id": org_id, "recursion": "true" if recursion else "false"}
        return [r for r in self._employee_records(params) if isinstance(r, dict)]

    def list_employees(
        self, *, query: str | None = None, org_id: int | None = None, recursion: bool = False
    ) -> list[EmployeeRecord]:
        """Employees by search text, or of a node (and its descendants with ``recursion``)."""
        params: dict[str, Any] = {}
        if query is not None:
            params["query"] = query
        if org_id is not None:
            params["org_id"] = org_id
            params["recursion"] = "true" if recursion else "false"
        return self._employee_list(params)

    def _employee_list(self, params: dict[str, Any]) -> list[EmployeeRecord]:
        endpoint = f"GET {EMPLOYEES}"
        return [_model(EmployeeRecord, r, endpoint) for r in self._employee_records(params)]

    def _employee_records(self, params: dict[str, Any]) -> list[Any]:
        """The employee list's answer to these parameters: a list (none: empty)."""
        result = self._requests.call(
            "GET", EMPLOYEES, params={"domain_id": self._requests.settings.domain_id, **params}
        )
        if result is None:
            return []
        if not isinstance(result, list):
            raise _malformed(f"GET {EMPLOYEES}", "expected a list of employees")
        return result

    def employee(self, employee_id: int) -> dict[str, Any]:
        """One employee in the detail form."""
        return _dict(self._requests.call("GET", EMPLOYEE, path={"employee_id": employee_id}))

    def create_employee(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create one employee; not resent when its fate is unknown (a copy would conflict)."""
        return _dict(self._requests.call("POST", EMPLOYEES, body=dict(body), repeatable=False))

    def update_employee(self, employee_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        """Update one employee; the platform cannot change a ``username`` this way."""
        return _dict(
            self._requests.call(
                "POST", EMPLOYEE, path={"employee_id": employee_id}, body=dict(body)
            )
        )

    def import_employees(
        self, bodies: Sequence[Mapping[str, Any]], *, remove: bool = False
    ) -> ImportResult:
        """Create-or-update (or, with ``remove``, delete) employees in bulk, keyed by username."""
        if not bodies:
            return ImportResult()
        template = ORG + "/import-employees"
        payload = [{**b, "ops": "REMOVE"} if remove else dict(b) for b in bodies]
        result = self._requests.call("POST", template, body=payload)
        return _import_result(result, f"POST {template}")

    def depart(self, employee_id: int) -> None:
        """Mark an employee departed: lock on V3, disable on V4."""
        self._employee_action(employee_id, "disable" if self._v4 else "lock")

    def reinstate(self, employee_id: int) -> None:
        """Bring a departed employee back: unlock on V3, enable on V4."""
        self._employee_action(employee_id, "enable" if self._v4 else "unlock")

    def lock(self, employee_id: int) -> None:
        self._employee_action(employee_id, "lock")

    def unlock(self, employee_id: int) -> None:
        self._employee_action(employee_id, "unlock")

    def disable(self, employee_id: int) -> None:
        """V4 only."""
        self._employee_action(employee_id, "disable")

    def enable(self, employee_id: int) -> None:
        """V4 only."""
        self._employee_action(employee_id, "enable")

    def delete_employee(self, employee_id: int) -> None:
        self._requests.call("DELETE", EMPLOYEE, path={"employee_id": employee_id})

    @property
    def _v4(self) -> bool:
        return self._requests.settings.api_version == "v4"

    def _employee_action(self, employee_id: int, action: str) -> None:
        self._requests.call("POST", EMPLOYEE + "/" + action, path={"employee_id": employee_id})
