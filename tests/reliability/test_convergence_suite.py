"""Every run converges: random histories of source changes, platform changes and kills.

Each scenario is one seeded history of a small company synced into the emulator over
HTTP. Every round makes random changes in the source (hires, leavers, moves, renames,
departments moved or dropped with leavers still in them, rejected rows, username
changes, departures and returns, new mobiles) and, behind syncd's back, random changes on
the platform by another administrator (people deleted, locked, moved, edited; nodes
renamed, moved, deleted; nodes and people syncd does not own added; most or all people
deleted with every node left empty; the whole organization wiped; the platform's clock
set back, so that what changes next is stamped before what syncd has read). Then a real
``syncd sync`` process runs, killed with SIGKILL at a random statement of the state
database more often than not, and syncd must exit 0 within two more runs (``MAX_RUNS``)
of the round's last change. The first run that says ok must have converged, the process
that was not killed after all too. After each round:

- ``--check`` plans nothing;
- no node twice (serial_no or name path), no person twice (username);
- every department and person the source holds (rows not rejected) is on the platform as
  the source says (names, parents, fields, positions; locked exactly when departed);
- nobody active in the source was locked or removed: each keeps the platform id they had
  at the end of the round before (unless another administrator deleted them), and no run
  of the round locked or removed them;
- nothing syncd does not own was changed: the nodes without a serial_no (the root, and
  those another administrator added) and the people it added are, record for record, as
  they were before syncd ran;
- leavers are locked or removed as the policy says; a department gone from the source
  stays only while something is left in it.

CI runs 12 seeds (about a minute); ``--long`` runs 48 more. The figures (scenarios, rounds,
kills, the platform changes another administrator made, and the drift syncd's runs
reported and put back, by kind) are printed at the end of the session.
"""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from syncd.errors import EXIT_OK
from syncd.runner import RunRequest, run_sync
from tests.engine.company import Company, department, employee
from tests.support.admin import AnotherAdmin

from .support import DEADLINE, KILLER, Rig, clean_env, query

SEEDS = range(12)
LONG_SEEDS = range(12, 60)
ROUNDS = 3
MAX_RUNS = 2  # runs after a round's changes (and a killed one) before syncd must have converged
POLICIES = ("lock", "remove", "lock_then_remove")
# Where to kill: statements of the state database, the ones every writing run reaches
# weighted the most (the nth of them is drawn from 1 to 4).
KILL_POINTS = (
    *["UPDATE run_items SET outcome = ?"] * 4,  # a batch's answers with its snapshot rows
    *["UPDATE run_items SET outcome = 'sent'"] * 3,  # a batch about to go
    "INSERT INTO employees",
    "INSERT INTO departments",
    "UPDATE employees SET locked",
    "DELETE FROM employees",
    "DELETE FROM departments",
    "INSERT INTO cursors",
)

# A node's fields that its ancestors' renames and moves change, or the people below it.
DERIVED_NODE_FIELDS = frozenset(
    {"path", "level", "full_name_path", "last_modified", "employee_count", "all_employee_count"}
)
# The drift notes of syncd's runs, by kind (the first pattern that matches).
REPORTED_DRIFT = (
    ("person recreated", re.compile(r"was deleted on the platform: recreating the account")),
    ("node recreated", re.compile(r"was deleted on the platform: recreating it")),
    ("person forgotten", re.compile(r"deleted on the platform")),
    ("person unlocked", re.compile(r"was locked on the platform; unlocking")),
    ("person locked again", re.compile(r"was unlocked on the platform; locking again")),
    ("person put back", re.compile(r"changed on the platform; putting back")),
    ("node put back", re.compile(r"on the platform; putting it back")),
)

FIGURES: Counter[str] = Counter()  # printed by conftest's terminal summary


# ---------------------------------------------------------------- a history


@dataclass
class History:
    """One scenario: the company as the source says, and what was done to the platform."""

    rng: random.Random
    company: Company
    policy: str
    serial: int = 100  # for new ids, names, usernames and mobiles, never reused
    rejected: set[str] = field(default_factory=set)  # usernames whose rows are broken now
    leavers: set[str] = field(default_factory=set)  # synced people gone from the source
    foreign_people: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)  # source ids whose account the admin deleted
    deleted_now: set[str] = field(default_factory=set)  # those of them deleted this round
    drift: Counter[str] = field(default_factory=Counter)  # platform changes made, by kind
    # Each person active in the source at the end of the last round: (username, platform id).
    accounts: dict[str, tuple[str, int]] = field(default_factory=dict)
    last_run: int = 0  # the id of the last run of the round before

    def next(self) -> int:
        self.serial += 1
        return self.serial

    def units(self) -> list[dict[str, str]]:
        return self.company.departments

    def people(self) -> list[dict[str, str]]:
        return self.company.employees

    def descendants(self, unit: str) -> set[str]:
        found, frontier = set(), {unit}
        while frontier:
            frontier = {d["id"] for d in self.units() if d["parent_id"] in frontier}
            found |= frontier
        return found


def first_company(rng: random.Random) -> Company:
    units = [department("D1", "Head Office")]
    for n in range(2, 9):
        parent = rng.choice(["", *[u["id"] for u in units]])
        units.append(department(f"D{n}", f"Unit {n}", parent))
    staff = []
    for n in range(1, 19):
        extra = {"positions": rng.choice(units)["id"]} if rng.random() < 0.2 else {}
        staff.append(employee(f"E{n}", f"user{n}", rng.choice(units)["id"], **extra))
    for row in staff:  # a secondary position never repeats the primary one
        if row.get("positions") == row["department"]:
            row["positions"] = ""
    return Company(units, staff)


# ---------------------------------------------------------------- source changes


def change_source(h: History) -> None:
    for row in h.people():  # last round's broken rows are mended
        if row["username"] in h.rejected:
            row["name"] = row["username"].title()
    h.rejected.clear()
    for _ in range(h.rng.randint(2, 6)):
        h.rng.choice(SOURCE_CHANGES)(h)


def hire(h: History) -> None:
    n = h.next()
    h.people().append(employee(f"E{n}", f"new{n}", h.rng.choice(h.units())["id"]))


def leave(h: History) -> None:
    candidates = [p for p in h.people() if p["username"] not in h.rejected]
    if len(candidates) > 3:
        gone = h.rng.choice(candidates)
        h.people().remove(gone)
        h.leavers.add(gone["username"])


def move(h: History) -> None:
    row = h.rng.choice(h.people())
    row["department"] = h.rng.choice(h.units())["id"]
    if row.get("positions") == row["department"]:
        row["positions"] = ""


def rename_unit(h: History) -> None:
    h.rng.choice(h.units())["name"] = f"Unit {h.next()}"


def reorganise(h: History) -> None:
    """Move a department under another (never under itself or below it)."""
    unit = h.rng.choice(h.units())
    below = h.descendants(unit["id"]) | {unit["id"]}
    unit["parent_id"] = h.rng.choice(["", *[u["id"] for u in h.units() if u["id"] not in below]])


def drop_unit(h: History) -> None:
    """A department leaves the source: its children move up, its people move or leave."""
    if len(h.units()) < 3:
        return
    unit = h.rng.choice(h.units())
    h.units().remove(unit)
    for child in h.units():
        if child["parent_id"] == unit["id"]:
            child["parent_id"] = unit["parent_id"]
    for row in list(h.people()):
        if row.get("positions") == unit["id"]:
            row["positions"] = ""
        if row["department"] == unit["id"]:
            if h.rng.random() < 0.4 and row["username"] not in h.rejected:
                h.people().remove(row)  # a leaver, locked and left in the department
                h.leavers.add(row["username"])
            else:
                row["department"] = h.rng.choice(h.units())["id"]


def break_row(h: History) -> None:
    """A row the source rejects (no name): that person is kept as they are."""
    row = h.rng.choice(h.people())
    row["name"] = ""
    h.rejected.add(row["username"])


def rename_user(h: History) -> None:
    row = h.rng.choice(h.people())
    if row["username"] not in h.rejected:
        h.leavers.add(row["username"])  # the old account is removed, the new one made
        row["username"] = f"renamed{h.next()}"
        row["email"] = f"{row['username']}@acme.example"


def depart_or_return(h: History) -> None:
    row = h.rng.choice(h.people())
    row["status"] = "active" if row["status"] == "departed" else "departed"


def new_mobile(h: History) -> None:
    h.rng.choice(h.people())["mobile"] = f"137{h.next():08d}"


SOURCE_CHANGES = (
    hire,
    leave,
    move,
    rename_unit,
    reorganise,
    drop_unit,
    break_row,
    rename_user,
    depart_or_return,
    new_mobile,
)


# ---------------------------------------------------------------- platform changes


def change_platform(h: History, admin: AnotherAdmin, rig: Rig) -> None:
    h.deleted_now.clear()
    for _ in range(h.rng.randint(1, 4)):
        state = rig.emulator.state()
        there = {e["username"] for e in state["employees"]}
        held = {r["username"] for r in query(rig.database, "SELECT username FROM employees")}
        owned = (held & there) - h.foreign_people
        kind = h.rng.choice(PLATFORM_CHANGES)
        if kind(h, admin, state, sorted(owned)):
            h.drift[kind.__name__] += 1


def delete_person(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    if not owned:
        return False
    username = h.rng.choice(owned)
    h.deleted_now |= {row["id"] for row in h.people() if row["username"] == username}
    h.deleted |= h.deleted_now
    admin.delete_person(username)
    return True


def lock_or_unlock_person(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    if not owned:
        return False
    username = h.rng.choice(owned)
    if admin.employee(username)["locked"]:
        admin.unlock(username)
    else:
        admin.lock(username)
    return True


def move_person(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    serials = [n["serial_no"] for n in state["nodes"] if n.get("serial_no")]
    if not owned or not serials:
        return False
    admin.move_person(h.rng.choice(owned), h.rng.choice(serials))
    return True


def edit_person(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    if not owned:
        return False
    admin.edit(h.rng.choice(owned), mobile=f"136{h.next():08d}", name=f"Edited {h.next()}")
    return True


def rename_node(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    serials = [n["serial_no"] for n in state["nodes"] if n.get("serial_no")]
    if not serials:
        return False
    admin.rename_node(h.rng.choice(serials), f"Renamed {h.next()}")
    return True


def move_node(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    nodes = [n for n in state["nodes"] if n.get("serial_no")]
    if not nodes:
        return False
    node = h.rng.choice(nodes)
    below = {node["id"]}
    while True:  # the node and its subtree: not a place to move it to
        more = {n["id"] for n in state["nodes"] if n.get("parent_org_id") in below} - below
        if not more:
            break
        below |= more
    targets = [n.get("serial_no") for n in nodes if n["id"] not in below]
    admin.move_node(node["serial_no"], h.rng.choice([None, *targets]))
    return True


def delete_node(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    parents = {n.get("parent_org_id") for n in state["nodes"]}
    empty = [
        n["serial_no"]
        for n in state["nodes"]
        if n.get("serial_no") and not n["all_employee_count"] and n["id"] not in parents
    ]
    if not empty:
        return False
    admin.delete_node(h.rng.choice(empty))
    return True


def add_foreign(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    serials = [n["serial_no"] for n in state["nodes"] if n.get("serial_no")]
    parent = h.rng.choice([None, *serials])
    admin.add_node(f"Guest unit {h.next()}", parent)
    username = f"guest{h.next()}"
    admin.add_person(username, h.rng.choice([None, *serials]))
    h.foreign_people.add(username)
    return True


def set_clock_back(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    """The platform's clock is set back (a minute to half an hour): what changes next is
    stamped before what syncd has already read."""
    admin.emulator.set_clock_back(h.rng.randint(60, 1800))
    return True


def delete_most_people(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    """Most of syncd's people deleted, or all of them, and every node left empty."""
    if not owned:
        return False
    gone = h.rng.sample(owned, max(1, len(owned) * h.rng.randint(6, 10) // 10))
    for username in gone:
        h.deleted_now |= {row["id"] for row in h.people() if row["username"] == username}
        admin.delete_person(username)
    h.deleted |= h.deleted_now
    while True:  # leaves first, until none is empty
        nodes = admin.emulator.state()["nodes"]
        parents = {n.get("parent_org_id") for n in nodes}
        empty = [
            n["serial_no"]
            for n in nodes
            if n.get("serial_no") and not n["all_employee_count"] and n["id"] not in parents
        ]
        if not empty:
            return True
        for serial in empty:
            admin.delete_node(serial)


def wipe(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    """The organization wiped: every node but the root, every employee and user."""
    h.deleted_now |= {row["id"] for row in h.people()}
    h.deleted |= h.deleted_now
    h.foreign_people.clear()
    admin.emulator.reset(data=True)
    return True


PLATFORM_CHANGES = (
    delete_person,
    lock_or_unlock_person,
    move_person,
    edit_person,
    rename_node,
    move_node,
    delete_node,
    add_foreign,
    set_clock_back,
    delete_most_people,
    wipe,
)


# ---------------------------------------------------------------- runs


def sync_killed_somewhere(h: History, rig: Rig) -> int | None:
    """One `syncd sync` process, killed at a random statement: its exit code, None if it
    was killed."""
    rig.company.write(rig.folder)
    rig.write_config()
    point = h.rng.choice(KILL_POINTS)
    env = clean_env({"KILL_SQL": point, "KILL_NTH": str(h.rng.randint(1, 5)), "KILL_WHEN": "after"})
    done = subprocess.run(
        [sys.executable, str(KILLER), "sync", "--config", str(rig.config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    killed = done.returncode == -signal.SIGKILL
    assert killed or done.returncode in (0, 1), done.stdout + done.stderr
    return None if killed else done.returncode


def sync_until_converged(rig: Rig) -> int:
    """Runs until one exits 0; returns how many it took."""
    for n in range(1, MAX_RUNS + 1):
        result = rig.sync(allow_removals=1000)
        if result.exit_code == EXIT_OK:
            return n
    raise AssertionError(f"no run exited 0 in {MAX_RUNS}: {result.error}")


# ---------------------------------------------------------------- invariants


def assert_invariants(h: History, rig: Rig) -> None:
    check = run_sync(rig.settings(), RunRequest(dry_run=True))
    assert check.plan is not None and check.plan.changes == (), [
        c.message for c in check.plan.changes
    ]
    state = rig.emulator.state()
    nodes = {n["id"]: n for n in state["nodes"]}
    by_serial = {n["serial_no"]: n for n in state["nodes"] if n.get("serial_no")}
    serials = [n["serial_no"] for n in state["nodes"] if n.get("serial_no")]
    assert len(serials) == len(set(serials)), f"a serial_no twice: {serials}"
    paths = [n["full_name_path"] for n in state["nodes"]]
    assert len(paths) == len(set(paths)), f"a name path twice: {sorted(paths)}"
    people = {e["username"]: e for e in state["employees"]}
    assert len(people) == len(state["employees"]), "a username twice"

    def serial_of(node_id: int) -> str | None:
        return nodes[node_id].get("serial_no") or None

    for unit in h.units():
        node = by_serial.get(unit["id"])
        assert node is not None, f"department {unit['id']} missing"
        assert node["name"] == unit["name"], (unit, node["name"])
        assert serial_of(node["parent_org_id"]) == (unit["parent_id"] or None), unit
    held = {r["source_id"]: r["username"] for r in query(rig.database, "SELECT * FROM employees")}
    for row in h.people():
        if row["username"] in h.rejected:
            continue
        username = row["username"]
        if row["status"] == "departed":  # a departed person's account keeps its username
            username = held.get(row["id"], username)
        p = people.get(username)
        if p is None and row["status"] == "departed" and row["id"] in h.deleted:
            continue  # deleted on the platform while departed: not made again
        assert p is not None, f"{row['username']} missing from the platform"
        primary = [serial_of(x["org_id"]) for x in p["positions"] if x["primary"]]
        others = sorted(serial_of(x["org_id"]) or "" for x in p["positions"] if not x["primary"])
        # The source drops a secondary position in the primary department.
        wanted_others = sorted(
            x for x in row.get("positions", "").split(";") if x and x != row["department"]
        )
        if username == row["username"]:
            fields = (p["name"], p["mobile"], p["email"])
            assert fields == (row["name"], row["mobile"], row["email"]), row
        assert (primary, others) == ([row["department"]], wanted_others), (row, p["positions"])
        assert p["locked"] is (row["status"] == "departed"), row
    in_source = {row["username"] for row in h.people()}
    # A departed person's old username is still theirs: not a leaver.
    in_source |= {held[row["id"]] for row in h.people() if row["id"] in held}
    for username in h.leavers - in_source:
        p = people.get(username)
        if h.policy == "remove":
            assert p is None, f"leaver {username} not removed"
        else:
            assert p is None or p["locked"], f"leaver {username} not locked"
    source_units = {u["id"] for u in h.units()}
    for serial, node in by_serial.items():
        if serial not in source_units:  # kept only while something is left in it
            has_children = any(n.get("parent_org_id") == node["id"] for n in state["nodes"])
            assert node["all_employee_count"] or has_children, f"{serial} kept empty"
    ids = {r["source_id"]: r["node_id"] for r in query(rig.database, "SELECT * FROM departments")}
    assert ids == {s: n["id"] for s, n in by_serial.items()}
    for r in query(rig.database, "SELECT username, employee_id FROM employees"):
        if r["username"] not in h.rejected:  # a rejected row's record is left as it is
            assert r["username"] in people, f"{r['username']} held, not on the platform"
            assert people[r["username"]]["id"] == r["employee_id"], r


def not_syncds(h: History, rig: Rig) -> dict[str, dict[Any, Any]]:
    """What syncd does not own, whole: the nodes without a serial_no (the root, those
    another administrator added) less what moves above them change, and the people another
    administrator added, with their positions as placed (node, primary, chief, title)."""
    state = rig.emulator.state()
    nodes = {
        n["id"]: {k: v for k, v in n.items() if k not in DERIVED_NODE_FIELDS}
        for n in state["nodes"]
        if not n.get("serial_no")
    }
    people = {
        e["username"]: {
            **e,
            "positions": [
                (p["org_id"], p["primary"], p["chief"], p["job_title"]) for p in e["positions"]
            ],
        }
        for e in state["employees"]
        if e["username"] in h.foreign_people
    }
    return {"nodes": nodes, "people": people}


def active(h: History) -> dict[str, str]:
    """Source id -> username of the people active in the source (rows not rejected)."""
    return {
        row["id"]: row["username"]
        for row in h.people()
        if row["status"] == "active" and row["username"] not in h.rejected
    }


def accounts(h: History, rig: Rig) -> dict[str, tuple[str, int]]:
    """Each person active in the source: their username and platform id."""
    ids = {e["username"]: e["id"] for e in rig.emulator.state()["employees"]}
    return {k: (u, ids[u]) for k, u in active(h).items() if u in ids}


def assert_nobody_active_locked_or_removed(h: History, rig: Rig) -> None:
    """The people active in the source now keep the account they had at the end of the
    round before (unless another administrator deleted it), and no run of this round
    locked or removed one of them (an old username's account aside)."""
    now = accounts(h, rig)
    for key, (username, before) in h.accounts.items():
        if key in now and now[key][0] == username and key not in h.deleted_now:
            assert now[key][1] == before, f"{username}, active, lost account {before}: {now[key]}"
    wanted = active(h)
    acted = query(
        rig.database,
        "SELECT key, display, action FROM run_items WHERE run_id > ? "
        "AND action IN ('lock', 'remove') AND outcome IN ('ok', 'sent')",
        h.last_run,
    )
    touched = [r for r in acted if wanted.get(r["key"]) == r["display"]]
    assert not touched, f"active in the source, and locked or removed: {touched}"


def count_reported_drift(h: History, rig: Rig) -> None:
    """The drift this round's runs reported (and put back), by kind, each record once."""
    runs = query(
        rig.database, "SELECT summary FROM runs WHERE id > ? AND mode = 'apply'", h.last_run
    )
    seen = set()
    for run in runs:
        for note in json.loads(run["summary"] or "{}").get("notes") or ():
            if note["kind"] == "drift":
                kind = next((k for k, p in REPORTED_DRIFT if p.search(note["message"])), "other")
                seen.add((kind, note["key"]))
    FIGURES.update(f"reported: {kind}" for kind, _ in seen)


# ---------------------------------------------------------------- the suite


def run_scenario(rig: Rig, seed: int) -> None:
    rng = random.Random(seed)
    h = History(rng, first_company(rng), rng.choice(POLICIES))
    rig.company = h.company
    rig.sync_settings.update(
        leaver_policy=h.policy,
        username_change="remove_and_create",
        max_removal_ratio=1.0,
        max_removals=1000,
    )
    assert sync_until_converged(rig) == 1
    admin = AnotherAdmin(rig.emulator)
    FIGURES["scenarios"] += 1
    h.accounts = accounts(h, rig)
    h.last_run = rig.runs()[-1]["id"]
    for _ in range(ROUNDS):
        change_source(h)
        change_platform(h, admin, rig)
        before = not_syncds(h, rig)
        exit_code = None
        if rng.random() < 0.8:
            exit_code = sync_killed_somewhere(h, rig)
            FIGURES["kills"] += exit_code is None
        if exit_code == EXIT_OK:  # not killed after all, and it says ok: it converged
            FIGURES["runs"] += 1
        else:
            FIGURES["runs"] += sync_until_converged(rig)
        assert_invariants(h, rig)
        assert not_syncds(h, rig) == before, "syncd changed what it does not own"
        assert_nobody_active_locked_or_removed(h, rig)
        count_reported_drift(h, rig)
        h.accounts = accounts(h, rig)
        h.last_run = rig.runs()[-1]["id"]
        FIGURES["rounds"] += 1
    for kind, n in h.drift.items():
        FIGURES[f"drift: {kind}"] += n


@pytest.mark.parametrize("seed", SEEDS)
def test_random_histories_converge(rig: Rig, seed: int) -> None:
    run_scenario(rig, seed)


@pytest.mark.long
@pytest.mark.parametrize("seed", LONG_SEEDS)
def test_more_random_histories_converge(rig: Rig, seed: int) -> None:
    run_scenario(rig, seed)


def summary() -> list[str]:
    """The suite's figures, for the session's end."""
    if not FIGURES["scenarios"]:
        return []

    def kinds(prefix: str) -> str:
        found = sorted((k, n) for k, n in FIGURES.items() if k.startswith(prefix))
        return ", ".join(f"{k.removeprefix(prefix)} {n}" for k, n in found) or "none"

    return [
        f"convergence suite: {FIGURES['scenarios']} scenarios, {FIGURES['rounds']} rounds, "
        f"{FIGURES['kills']} syncd processes killed with SIGKILL, {FIGURES['runs']} runs to "
        "converge",
        f"  changes another administrator made behind syncd's back: {kinds('drift: ')}",
        f"  drift syncd's runs reported and put back (records, once a round): "
        f"{kinds('reported: ')}",
    ]
