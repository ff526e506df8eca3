"""The scenarios: syncs from CSV (initial, no change, churn), the LDAP read, planning alone,
and the platform's floor (the same writes from a minimal raw HTTP loop).

Each returns Result rows; a row's ``wall``, ``cpu`` and ``peak_rss_mb`` are those of the
measured process alone (syncd, the LDAP reader, the planner), never of the harness or
of the emulator, which runs in a process of its own.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchmarks.generate import (
    LDAP_PEOPLE_BASE,
    LDAP_SUFFIX,
    Company,
    make_company,
    write_ldif,
    write_paths,
    write_two_files,
)
from benchmarks.harness import (
    SYNCD,
    Emulator,
    Measured,
    Platform,
    app_token,
    child_json,
    csv_source,
    items_sent,
    last_run_items,
    measure,
    minimum_writes,
    python_child,
    short_endpoint,
    write_calls,
    write_settings,
)
from benchmarks.mutate import churn


@dataclass
class Result:
    scenario: str
    people: int
    wall: float
    cpu: float | None = None
    peak_rss_mb: float | None = None
    calls: dict[str, int] = field(default_factory=dict)  # every API request, by endpoint
    writes: int | None = None
    min_writes: int | None = None
    items_sent: int | None = None
    runs: list[float] = field(default_factory=list)  # wall of every repetition
    detail: dict[str, Any] = field(default_factory=dict)
    target: str = ""
    met: bool | None = None


@dataclass
class Context:
    out: Path
    emulator: Emulator | None
    platform: Platform
    seed: int
    repeat: Callable[[int], int]  # people -> repetitions (best of)
    log: Callable[[str], None]


def best(results: Sequence[Result]) -> Result:
    """The fastest repetition, with every repetition's wall time kept."""
    chosen = min(results, key=lambda r: r.wall)
    chosen.runs = [round(r.wall, 3) for r in results]
    return chosen


# ---------------------------------------------------------------- syncs from CSV


SYNC_SCENARIOS = ("initial", "resync", "churn")


def csv_syncs(people: int, wanted: Sequence[str], ctx: Context) -> list[Result]:
    """Initial sync into an empty emulator, the same again with nothing changed, 1% churn.

    Each repetition runs the whole chain from an empty platform and state; a scenario's
    row is its fastest repetition.
    """
    emulator = ctx.emulator
    assert emulator is not None
    folder = ctx.out / f"csv-{people}"
    company = make_company(people, ctx.seed)
    changed, done = churn(company, 0.01, ctx.seed + 1)
    ctx.log(f"  churn: {dict(done)}")
    data, state = folder / "two_files", folder / "state"
    employees, departments = data / "employees.csv", data / "departments.csv"
    settings = write_settings(
        folder / "syncd.toml",
        state,
        csv_source(employees, departments),
        ctx.platform,
        removals=people,
    )
    write_paths(company, folder / "paths")  # the other layout, for whoever wants to try it
    last = max(SYNC_SCENARIOS.index(s) for s in wanted)
    collected: dict[str, list[Result]] = {s: [] for s in SYNC_SCENARIOS}
    for rep in range(ctx.repeat(people)):
        shutil.rmtree(state, ignore_errors=True)
        write_two_files(company, data)
        emulator.reset(data=True)
        collected["initial"].append(_sync("initial sync (CSV)", people, settings, folder, rep, ctx))
        if last >= 1:
            for again in range(3):  # cheap: always best of three
                emulator.reset(data=False)
                run = _sync("no-change re-sync", people, settings, folder, rep * 3 + again, ctx)
                collected["resync"].append(run)
        if last >= 2:
            write_two_files(changed, data)
            emulator.reset(data=False)
            collected["churn"].append(_sync("1% churn", people, settings, folder, rep, ctx))
    return [best(collected[s]) for s in SYNC_SCENARIOS if s in wanted and collected[s]]


def _sync(name: str, people: int, settings: Path, folder: Path, rep: int, ctx: Context) -> Result:
    emulator = ctx.emulator
    assert emulator is not None
    tag = name.split()[0].replace("-", "")
    run = measure([SYNCD, "sync", "--config", settings], folder / f"{tag}-{rep}.log")
    if run.exit_code != 0:
        raise RuntimeError(f"{name}: syncd exited {run.exit_code}:\n{run.output[-3000:]}")
    raw = emulator.requests()
    requests = {short_endpoint(k): n for k, n in raw.items()}
    items = last_run_items(folder / "state")
    failed = {k: n for k, n in items.items() if k.endswith(" failed")}
    if failed:  # timings of a sync that did not do its work would mean nothing
        raise RuntimeError(f"{name}: items failed: {failed}; see {folder}")
    result = Result(
        name,
        people,
        run.wall,
        run.cpu,
        run.peak_rss_mb,
        calls=requests,
        writes=sum(write_calls(raw).values()),
        min_writes=minimum_writes(items, ctx.platform.batch_size),
        items_sent=items_sent(items),
        detail={"items": items},
    )
    ctx.log(
        f"  {name:<22} {run.wall:7.2f} s  cpu {run.cpu:6.2f} s  rss {run.peak_rss_mb:6.0f} MB  "
        f"writes {result.writes} (min {result.min_writes})  sent {result.items_sent}"
    )
    return result


# ---------------------------------------------------------------- the platform's floor


def floor(people: int, ctx: Context) -> Result:
    """The emulator's own time for the initial sync's writes, sent by a minimal raw loop.

    The same import-orgs bodies (one level at a time, parents first, as syncd sends them)
    and import-employees bodies (departed people are not created), in batches of the
    configured size with the configured concurrency; bodies are built before the clock
    starts, serialised inside it.
    """
    emulator = ctx.emulator
    assert emulator is not None
    company = make_company(people, ctx.seed)
    runs = []
    for _ in range(ctx.repeat(people)):
        emulator.reset(data=True)
        runs.append(_floor_once(company, emulator, ctx.platform))
        ctx.log(f"  floor {runs[-1].wall:7.2f} s  ({runs[-1].detail})")
    return best(runs)


def _floor_once(company: Company, emulator: Emulator, platform: Platform) -> Result:
    batch, concurrency = platform.batch_size, platform.concurrency
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    with httpx.Client(base_url=emulator.base_url, timeout=120.0, limits=limits) as client:
        token = app_token(client)
        org = "/v1/admin/organizations/acme"
        started = time.perf_counter()
        node_ids: dict[str, int] = {}
        for level in _levels(company):
            bodies = [_node_body(company, unit_id) for unit_id in level]
            for answer in _post_all(client, f"{org}/import-orgs", token, bodies, batch, 1):
                for path, node_id in answer["successes"].items():
                    node_ids[path] = node_id
        orgs = time.perf_counter() - started
        by_unit = {u: node_ids["Acme/" + "/".join(company.path(u))] for u in company.units}
        people = [_person_body(p, by_unit) for p in company.people.values() if not p.departed]
        started = time.perf_counter()
        answers = _post_all(client, f"{org}/import-employees", token, people, batch, concurrency)
        employees = time.perf_counter() - started
    failures = sum(len(a["failures"]) for a in answers)
    if failures:
        raise RuntimeError(f"the floor's raw import failed for {failures} people")
    calls = math.ceil(len(people) / batch)
    return Result(
        "platform floor (raw httpx)",
        len(company.people),
        orgs + employees,
        calls={"POST import-employees": calls},
        writes=calls + sum(math.ceil(len(level) / batch) for level in _levels(company)),
        items_sent=len(people) + len(company.units),
        detail={
            "import_orgs_seconds": round(orgs, 3),
            "import_employees_seconds": round(employees, 3),
        },
    )


def _levels(company: Company) -> Iterator[list[str]]:
    by_depth: dict[int, list[str]] = {}
    for unit in company.ordered_units():
        by_depth.setdefault(company.depth(unit.id), []).append(unit.id)
    for depth in sorted(by_depth):
        yield by_depth[depth]


def _node_body(company: Company, unit_id: str) -> dict[str, Any]:
    unit = company.units[unit_id]
    parent = "/".join(("Acme", *company.path(unit.parent))) if unit.parent else "Acme"
    return {
        "name": unit.name,
        "serial_no": unit.id,
        "sort_order": unit.sort_order,
        "type": "DEPT",
        "parent_path": parent,
    }


def _person_body(p: Any, node_ids: dict[str, int]) -> dict[str, Any]:
    positions = [
        {
            "primary": True,
            "chief": False,
            "job_title": p.job_title,
            "org_id": node_ids[p.department],
        }
    ]
    if p.second:
        positions.append({"primary": False, "chief": False, "org_id": node_ids[p.second]})
    body = {
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


def _post_all(
    client: httpx.Client, path: str, token: str, bodies: list[Any], batch: int, concurrency: int
) -> list[dict[str, Any]]:
    def post(chunk: list[Any]) -> dict[str, Any]:
        answer = client.post(path, params={"access_token": token}, json=chunk).json()
        if answer["status"] != 0:
            raise RuntimeError(f"{path}: {answer['message']}")
        result: dict[str, Any] = answer["result"]
        return result

    chunks = [bodies[i : i + batch] for i in range(0, len(bodies), batch)]
    if concurrency == 1:
        return [post(chunk) for chunk in chunks]
    with ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(post, chunks))


# ---------------------------------------------------------------- the LDAP read


LDAP_FILTERS = (
    ("departments", "(objectClass=organizationalUnit)", ("entryUUID", "ou")),
    ("departed", "(&(objectClass=inetOrgPerson)(employeeType=departed))", ("entryUUID",)),
    (
        "people",
        "(objectClass=inetOrgPerson)",
        ("entryUUID", "uid", "cn", "mail", "mobile", "telephoneNumber", "employeeNumber", "title",
         "modifyTimestamp"),
    ),
)  # fmt: skip


def ldap_read(people: int, ctx: Context) -> Result:
    """syncd's LDAP read of N people from a local slapd, next to ldapsearch reading the same.

    ldapsearch makes the same three paged searches (pages of 1000) syncd makes: the OUs,
    the departed people's ids, then everyone with the attributes syncd asks for; its
    LDIF goes to /dev/null. syncd is measured twice: ``read_ldap`` alone in a child
    process (imports and settings excluded), and ``syncd check`` end to end.
    """
    from tests.support.slapd import Slapd  # the tests' real slapd, on loopback

    folder = ctx.out / f"ldap-{people}"
    ldif = write_ldif(make_company(people, ctx.seed), folder / "company.ldif")
    slapd = Slapd(folder / "slapd", suffix=LDAP_SUFFIX)
    started = time.perf_counter()
    slapd.slapadd(ldif)
    ctx.log(f"  slapadd of {people} people: {time.perf_counter() - started:.1f} s")
    password_file = folder / "admin.pw"
    password_file.write_text(slapd.password)
    password_file.chmod(0o600)
    with slapd:
        source = "\n".join(
            [
                "[source]",
                'kind = "ldap"',
                "[source.ldap]",
                f'urls = ["{slapd.url}"]',
                f'bind_dn = "{slapd.bind_dn}"',
                f'bind_password_file = "{password_file}"',
                f'users_base = "{LDAP_PEOPLE_BASE}"',
                'departed_filter = "(employeeType=departed)"',
                "page_size = 1000",
                "",
            ]
        )
        settings = write_settings(folder / "syncd.toml", folder / "state", source, ctx.platform, 0)
        rows = [
            _ldap_once(slapd.url, slapd.bind_dn, password_file, settings, folder, ctx)
            for _ in range(ctx.repeat(people))
        ]
    shutil.rmtree(slapd.data_dir, ignore_errors=True)  # hundreds of MB; the LDIF stays
    return best(rows)


def _ldap_once(
    url: str, bind_dn: str, password_file: Path, settings: Path, folder: Path, ctx: Context
) -> Result:
    ldapsearch = 0.0
    for _, search_filter, attributes in LDAP_FILTERS:
        command = ["ldapsearch", "-x", "-LLL", "-H", url, "-D", bind_dn, "-y", str(password_file)]
        command += ["-b", LDAP_PEOPLE_BASE, "-E", "pr=1000/noprompt", search_filter, *attributes]
        run = measure(command, None)
        if run.exit_code != 0:
            raise RuntimeError(f"ldapsearch exited {run.exit_code}")
        ldapsearch += run.wall
    reader = measure(python_child("benchmarks.ldap_read", str(settings)), folder / "read.log")
    read = child_json(reader)
    searches = json.dumps([[f, list(a)] for _, f, a in LDAP_FILTERS])
    plain = child_json(
        measure(
            python_child(
                "benchmarks.ldap3_plain",
                url,
                bind_dn,
                str(password_file),
                LDAP_PEOPLE_BASE,
                searches,
            ),
            folder / "ldap3-plain.log",
        )
    )
    check = measure([SYNCD, "check", "--config", settings], folder / "check.log")
    if check.exit_code != 0:
        raise RuntimeError(f"syncd check exited {check.exit_code}:\n{check.output[-2000:]}")
    result = Result(
        "LDAP read (read_ldap)",
        read["employees"],
        read["read_seconds"],
        read["read_cpu_seconds"],
        reader.peak_rss_mb,
        detail={
            "ldapsearch_seconds": round(ldapsearch, 3),
            "ratio": round(read["read_seconds"] / ldapsearch, 2),
            "plain_ldap3_seconds": round(plain["read_seconds"], 3),
            "plain_ldap3_ratio": round(plain["read_seconds"] / ldapsearch, 2),
            "syncd_check_seconds": round(check.wall, 3),
            "syncd_check_ratio": round(check.wall / ldapsearch, 2),
            "syncd_check_rss_mb": round(check.peak_rss_mb, 1),
            "departments": read["departments"],
            "departed": read["departed"],
        },
    )
    ctx.log(
        f"  ldap read {result.wall:6.2f} s  ldapsearch {ldapsearch:5.2f} s  "
        f"ratio {result.detail['ratio']}  syncd check {check.wall:5.2f} s "
        f"(ratio {result.detail['syncd_check_ratio']})  plain ldap3 {plain['read_seconds']:5.2f} s "
        f"(ratio {result.detail['plain_ldap3_ratio']})"
    )
    return result


# ---------------------------------------------------------------- planning alone


def planning(people: int, ctx: Context) -> Result:
    """plan() with 1% churn, source and snapshot in memory, in a process of its own."""
    run: Measured = measure(
        python_child("benchmarks.plan_only", "--people", str(people), "--seed", str(ctx.seed)),
        ctx.out / f"plan-{people}.log",
    )
    found = child_json(run)
    result = Result(
        "planning alone (1% churn)",
        people,
        found["plan_seconds"],
        found["plan_cpu_seconds"],
        run.peak_rss_mb,
        detail={
            "changes": found["changes"],
            "build_inputs_seconds": round(found["build_seconds"], 2),
            "journal_rows_seconds": round(found["item_rows_seconds"], 3),
            "process_wall_seconds": round(run.wall, 2),
            "process_cpu_seconds": round(run.cpu, 2),
            "rss_after_inputs_mb": round(found["rss_after_inputs_mb"], 1),
        },
    )
    ctx.log(
        f"  plan {result.wall:6.2f} s for {found['changes']} changes; process peak RSS "
        f"{run.peak_rss_mb:.0f} MB (inputs alone {found['rss_after_inputs_mb']:.0f} MB)"
    )
    return result
