"""The emulator at scale: 5,000 nodes, 100,000 employees, batches of 500. Prints timings.

    .venv/bin/python benchmarks/emulator_scale.py [--employees N] [--nodes N]
        [--batch N] [--mode thread|process]

``thread`` serves in this process (as the tests do; client and server share the GIL),
``process`` runs ``syncd emulator`` in a child process (as the demo and benchmarks do).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from benchmarks.harness import app_token, running_emulator
from syncd.emulator import EmulatorOptions, serve_in_thread

ORG = "/v1/admin/organizations/acme"


def node_bodies(count: int) -> list[dict[str, Any]]:
    """A two-level tree: sqrt(count) departments, each with its share of teams."""
    tops = max(1, int(count**0.5))
    bodies = [
        {"name": f"Dept {t}", "type": "DEPT", "parent_path": "Acme", "serial_no": f"d{t}"}
        for t in range(tops)
    ]
    for index in range(count - tops):
        top = index % tops
        bodies.append(
            {
                "name": f"Team {index}",
                "type": "DEPT",
                "parent_path": f"Acme/Dept {top}",
                "serial_no": f"t{index}",
            }
        )
    return bodies


def employee_body(index: int, paths: list[str]) -> dict[str, Any]:
    return {
        "username": f"user{index:06}",
        "name": f"User {index}",
        "extension_id": f"hr-{index}",
        "email": f"user{index}@acme.test",
        "mobile": f"139{index:08}",
        "sn": f"E{index}",
        "positions": [
            {"org_path": paths[index % len(paths)], "job_title": "Engineer", "primary": True}
        ],
    }


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def post(client: httpx.Client, path: str, token: str, body: Any) -> Any:
    answer = client.post(
        path,
        params={"access_token": token},
        content=json.dumps(body),
        headers={"content-type": "application/json"},
    ).json()
    assert answer["status"] == 0, answer
    return answer["result"]


def get(client: httpx.Client, path: str, token: str, **params: Any) -> Any:
    answer = client.get(path, params={"access_token": token, **params}).json()
    assert answer["status"] == 0, answer
    return answer["result"]


@contextmanager
def emulator(mode: str) -> Iterator[str]:
    """The base URL of a fresh emulator, in this process or in a child process."""
    if mode == "thread":
        with serve_in_thread(EmulatorOptions()) as running:
            yield running.base_url
        return
    with TemporaryDirectory() as folder, running_emulator(Path(folder) / "emulator.log") as child:
        yield child.base_url


def measure(base_url: str, nodes: int, employees: int, batch: int) -> None:
    with httpx.Client(base_url=base_url, timeout=120.0) as client:
        token = app_token(client)
        bodies = node_bodies(nodes)
        took, _ = timed(
            lambda: [
                post(client, f"{ORG}/import-orgs", token, bodies[i : i + batch])
                for i in range(0, len(bodies), batch)
            ]
        )
        print(f"import-orgs      {len(bodies)} nodes in batches of {batch}: {took:.2f} s")
        paths = [f"{b['parent_path']}/{b['name']}" for b in bodies]
        batch_times = []
        for start in range(0, employees, batch):
            items = [employee_body(i, paths) for i in range(start, min(start + batch, employees))]
            began = time.perf_counter()
            result = post(client, f"{ORG}/import-employees", token, items)
            took = time.perf_counter() - began
            assert not result["failures"], list(result["failures"].items())[:3]
            batch_times.append(took)
        median, slowest = statistics.median(batch_times) * 1000, max(batch_times) * 1000
        print(
            f"import-employees {employees} employees, {len(batch_times)} batches of {batch}: "
            f"total {sum(batch_times):.2f} s, per batch median {median:.0f} ms, "
            f"max {slowest:.0f} ms"
        )
        update = [{**employee_body(i, paths), "name": f"Renamed {i}"} for i in range(batch)]
        took, _ = timed(lambda: post(client, f"{ORG}/import-employees", token, update))
        print(f"import-employees {batch} updates into {employees}: {took * 1000:.0f} ms")
        names = ",".join(f"user{i:06}" for i in range(0, employees, max(1, employees // batch)))
        took, found = timed(
            lambda: get(
                client,
                f"{ORG}/employees",
                token,
                domain_id="acme",
                matching="true",
                type="username",
                query=names,
            )
        )
        print(f"employees matching=true, {len(found)} usernames: {took * 1000:.0f} ms")
        took, page = timed(
            lambda: get(client, f"{ORG}/page-orgs", token, domain_id="acme", limit=nodes + 1)
        )
        print(f"page-orgs all {page['total_count']} nodes: {took * 1000:.0f} ms")
        took, _ = timed(lambda: get(client, "/v1/users", token, skip=50_000, limit=500))
        print(f"users page of 500: {took * 1000:.0f} ms")
        removal = [{"username": f"user{i:06}", "ops": "REMOVE"} for i in range(batch)]
        took, _ = timed(lambda: post(client, f"{ORG}/import-employees", token, removal))
        print(f"import-employees {batch} REMOVE: {took * 1000:.0f} ms")
        took, _ = timed(lambda: client.get("/_emulator/state").json())
        print(f"/_emulator/state dump: {took:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--employees", type=int, default=100_000)
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--mode", choices=["thread", "process"], default="thread")
    arguments = parser.parse_args()
    with emulator(arguments.mode) as base_url:
        print(f"emulator in a {arguments.mode}")
        measure(base_url, arguments.nodes, arguments.employees, arguments.batch)


if __name__ == "__main__":
    main()
