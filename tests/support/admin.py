"""Another administrator: changes made on the platform, through its real API, behind syncd's back.

Every call goes over HTTP with a token of the application's own (which replaces the one
syncd holds, as on the real platform: syncd renews it). Records are named the way an
administrator names them: people by username, nodes by serial_no or name path.
"""

from __future__ import annotations

from typing import Any

from syncd.emulator import RunningEmulator

ORG = "/v1/admin/organizations/acme"


class AnotherAdmin:
    def __init__(self, emulator: RunningEmulator) -> None:
        self.emulator = emulator
        self._token: str | None = None

    # ------------------------------------------------------------ the wire

    def call(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        """One API call; raises AssertionError unless the envelope says status 0."""
        for attempt in (1, 2):
            if self._token is None:
                self._token = self.emulator.issue_token()
            answer = self.emulator.client.request(
                method,
                path,
                params={"access_token": self._token, "domain_id": "acme", **params},
                json=body,
            ).json()
            if answer["status"] == 10011 and attempt == 1:  # syncd took the token back
                self._token = None
                continue
            assert answer["status"] == 0, f"{method} {path}: {answer}"
            return answer["result"]
        raise AssertionError("unreachable")

    # ------------------------------------------------------------ looking things up

    def employee(self, username: str) -> dict[str, Any]:
        found = self.call(
            "GET", f"{ORG}/employees", matching="true", type="username", query=username
        )
        assert len(found) == 1, f"{username}: {found}"
        result: dict[str, Any] = found[0]
        return result

    def node(self, serial_no: str) -> dict[str, Any]:
        result: dict[str, Any] = self.call("GET", f"{ORG}/serial/{serial_no}")
        return result

    def node_id(self, serial_no: str | None) -> int:
        """A node's id by serial_no; None is the root."""
        if serial_no is None:
            return int(self.call("GET", ORG)["id"])
        return int(self.node(serial_no)["id"])

    # ------------------------------------------------------------ people

    def delete_person(self, username: str) -> None:
        self.call("DELETE", f"{ORG}/employees/{self.employee(username)['id']}")

    def lock(self, username: str) -> None:
        self.call("POST", f"{ORG}/employees/{self.employee(username)['id']}/lock")

    def unlock(self, username: str) -> None:
        self.call("POST", f"{ORG}/employees/{self.employee(username)['id']}/unlock")

    def edit(self, username: str, **fields: Any) -> None:
        self.call("POST", f"{ORG}/employees/{self.employee(username)['id']}", fields)

    def move_person(self, username: str, serial_no: str | None) -> None:
        """Place the person in this node alone (None: the root)."""
        position = {"org_id": self.node_id(serial_no), "primary": True}
        self.edit(username, positions=[position])

    def add_person(self, username: str, serial_no: str | None = None, **fields: Any) -> int:
        """A person syncd does not own; ``fields`` (mobile, email, ...) as the API takes them."""
        body = {
            "username": username,
            "name": username.title(),
            "positions": [{"org_id": self.node_id(serial_no), "primary": True}],
            **fields,
        }
        return int(self.call("POST", f"{ORG}/employees", body)["employee_id"]["id"])

    # ------------------------------------------------------------ nodes

    def rename_node(self, serial_no: str, name: str) -> None:
        self.call("POST", f"{ORG}/{self.node_id(serial_no)}", {"name": name})

    def move_node(self, serial_no: str, parent: str | None) -> None:
        self.call(
            "POST", f"{ORG}/{self.node_id(serial_no)}", {"new_parentId": self.node_id(parent)}
        )

    def delete_node(self, serial_no: str) -> None:
        self.call("DELETE", f"{ORG}/{self.node_id(serial_no)}")

    def set_serial(self, node_id: int, serial_no: str) -> None:
        self.call("POST", f"{ORG}/{node_id}", {"serial_no": serial_no})

    def add_node(self, name: str, parent: str | None = None, serial_no: str = "") -> int:
        body: dict[str, Any] = {"name": name, "type": "DEPT", "parent_id": self.node_id(parent)}
        if serial_no:
            body["serial_no"] = serial_no
        self.call("POST", ORG, body)
        parent_id = self.node_id(parent)
        for node in self.emulator.state()["nodes"]:
            if node["name"] == name and node.get("parent_org_id") == parent_id:
                return int(node["id"])
        raise AssertionError(f"node {name} not created")
