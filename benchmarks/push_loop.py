"""Child process: a bare httpx loop pushing an initial sync's bodies to the emulator; prints JSON.

    python -m benchmarks.push_loop BASE_URL TOKEN BODIES.json BATCH CONCURRENCY

The floor syncd's initial sync is measured against: the same import-orgs bodies (one depth
level at a time, parents first, as syncd sends them) and import-employees bodies, in
batches of BATCH with CONCURRENCY calls in flight, and nothing else. BODIES.json (written
by ``bodies``) names departments by path in each position; they are replaced by the node
ids import-orgs answered between the two timed parts. Bodies are loaded before the clock
starts and serialised inside it.
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from benchmarks.generate import Company, Person

ORG = "/v1/admin/organizations/acme"
ROOT_NAME = "Acme"


# ---------------------------------------------------------------- the bodies (in the harness)


def bodies(company: Company) -> dict[str, Any]:
    """What syncd sends for this company's initial sync: orgs by depth, people not departed."""
    by_depth: dict[int, list[dict[str, Any]]] = {}
    for unit in company.ordered_units():
        parent = "/".join((ROOT_NAME, *company.path(unit.parent))) if unit.parent else ROOT_NAME
        by_depth.setdefault(company.depth(unit.id), []).append(
            {
                "name": unit.name,
                "serial_no": unit.id,
                "sort_order": unit.sort_order,
                "type": "DEPT",
                "parent_path": parent,
            }
        )
    people = [_person(p, company) for p in company.people.values() if not p.departed]
    return {"levels": [by_depth[d] for d in sorted(by_depth)], "employees": people}


def _person(p: Person, company: Company) -> dict[str, Any]:
    def path(unit_id: str) -> str:
        return "/".join((ROOT_NAME, *company.path(unit_id)))

    positions = [
        {"primary": True, "chief": False, "job_title": p.job_title, "org_id": path(p.department)}
    ]
    if p.second:
        positions.append({"primary": False, "chief": False, "org_id": path(p.second)})
    body: dict[str, Any] = {
        "username": p.username,
        "name": p.name,
        "extension_id": p.id,
        "positions": positions,
        "senior": False,
        "email": p.email,
        "mobile": p.mobile,
        "sn": p.sn,
        "gender": p.gender.upper(),
    }
    if p.en_name:
        body["en_name"] = p.en_name
    return body


# ---------------------------------------------------------------- the loop (in the child)


def push(client: httpx.Client, path: str, token: str, chunk: list[Any]) -> dict[str, Any]:
    answer = client.post(path, params={"access_token": token}, json=chunk).json()
    if answer["status"] != 0:
        raise RuntimeError(f"{path}: {answer['message']}")
    result: dict[str, Any] = answer["result"]
    return result


def push_all(
    client: httpx.Client, path: str, token: str, items: list[Any], batch: int, concurrency: int
) -> list[dict[str, Any]]:
    chunks = [items[i : i + batch] for i in range(0, len(items), batch)]
    if concurrency == 1:
        return [push(client, path, token, chunk) for chunk in chunks]
    with ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(lambda chunk: push(client, path, token, chunk), chunks))


def main() -> None:
    base_url, token, bodies_file = sys.argv[1:4]
    batch, concurrency = int(sys.argv[4]), int(sys.argv[5])
    loaded = json.loads(Path(bodies_file).read_text(encoding="utf-8"))
    levels, people = loaded["levels"], loaded["employees"]
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    with httpx.Client(base_url=base_url, timeout=120.0, limits=limits) as client:
        started = time.perf_counter()
        node_ids: dict[str, int] = {}
        for level in levels:
            for answer in push_all(client, f"{ORG}/import-orgs", token, level, batch, 1):
                node_ids.update(answer["successes"])
        orgs = time.perf_counter() - started
        for body in people:
            for position in body["positions"]:
                position["org_id"] = node_ids[position["org_id"]]
        started = time.perf_counter()
        answers = push_all(client, f"{ORG}/import-employees", token, people, batch, concurrency)
        employees = time.perf_counter() - started
    failures = sum(len(a["failures"]) for a in answers)
    if failures:
        raise SystemExit(f"the push loop's import failed for {failures} people")
    print(
        json.dumps(
            {
                "seconds": orgs + employees,
                "import_orgs_seconds": orgs,
                "import_employees_seconds": employees,
                "departments": len(node_ids),
                "employees": len(people),
            }
        )
    )


if __name__ == "__main__":
    main()
