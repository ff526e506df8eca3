"""Nobody wrongly out of a forest: random histories of an Active Directory forest whose
child domain is read, or not.

Each scenario is one seeded history of a small company in two domains of a forest. A
domain controller (a slapd with the AD-like schema) holds the root domain and a
continuation reference to the child domain; a second slapd, playing the Global Catalog,
holds the child domain. The truth is kept apart from syncd: each person's domain and
state (active; departed, ``userAccountControl`` 514; gone, the entry deleted). Each round
draws HR's events (hires in either domain, leavers, departures, returns, moves from one
domain to the other, which keep the ``objectGUID`` as AD's do) and how the catalog is
set: named, not named (a settings file put back from before it was, the key taken out),
or named while it is down. Then syncd runs with one of the leaver policies, a full read
or, from the third round, an incremental one (``uSNChanged`` since the last mark: the
child domain read in full through the catalog, which publishes no mark of its own), and
the platform is checked over HTTP after every run:

- nobody active is locked or removed: an account of theirs that was unlocked stays, the
  same account, unlocked;
- nobody departed or gone gains access: no account of theirs is unlocked or made;
- a run that did not read the child domain does not end 0: who left or departed there is
  unknown, and the run says so (partial), full or incremental;
- a full read of the whole forest that ended 0 leaves every active person with an
  unlocked account and nobody else with one (the forest's state reached, not just no
  harm done).

A domain not read hides who left it: such a run makes nobody a leaver and ends partial
(``Directory.leavers_unknown_because``). Violations do not stop a scenario; it fails at its
end with its seed, the rounds' events and outcomes, and each violation. CI runs 6 seeds;
``--long`` runs 100 more.
"""

from __future__ import annotations

import base64
import itertools
import random
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest

from syncd.errors import EXIT_OK
from syncd.run.runner import RunRequest, run_sync
from tests.support.slapd import Slapd, running_slapd

from .support import Rig, figure_kinds, toml_value

SEEDS = range(6)
LONG_SEEDS = range(6, 106)
ROUNDS = 7
AD_SCHEMA = Path(__file__).resolve().parents[1] / "data" / "ldap" / "ad-lite.schema"
Domain = Literal["root", "child"]
State = Literal["active", "departed", "gone"]
Catalog = Literal["named", "not named", "down"]
Read = Literal["full", "incremental"]
EVENTS = ["hire", "hire", "leave", "depart", "return", "move", "move", "namesake"]
AFTER: dict[str, State] = {"leave": "gone", "depart": "departed", "return": "active"}
_bases = itertools.count(1)
FIGURES: Counter[str] = Counter()


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slapd]:
    """The root domain's controller."""
    with running_slapd(tmp_path_factory.mktemp("dc"), schemas=[AD_SCHEMA]) as server:
        yield server


@pytest.fixture(scope="module")
def catalog_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slapd]:
    """The Global Catalog: it holds the child domain."""
    with running_slapd(tmp_path_factory.mktemp("gc"), schemas=[AD_SCHEMA]) as server:
        yield server


@pytest.fixture
def catalog(catalog_server: Slapd) -> Iterator[Slapd]:
    """The catalog, running again after the test whatever the test did to it."""
    yield catalog_server
    catalog_server.start()


@dataclass
class Person:
    n: int
    domain: Domain
    state: State = "active"
    username: str = ""  # p01, p02, ...; or a namesake's
    namesake: bool = False  # another person of the forest has or had this username

    def __post_init__(self) -> None:
        self.username = self.username or f"p{self.n:02d}"

    @property
    def guid(self) -> str:
        return base64.b64encode(self.raw_guid).decode()

    @property
    def source_id(self) -> str:
        """The objectGUID as syncd shows it, and marks the account with."""
        return str(uuid.UUID(bytes_le=self.raw_guid))

    @property
    def raw_guid(self) -> bytes:
        return bytes([self.n]) * 16


@dataclass
class Forest:
    """The truth, and the entries the two servers hold for it."""

    rng: random.Random
    base: str
    people: list[Person] = field(default_factory=list)
    held: dict[int, tuple[Domain, State]] = field(default_factory=dict)  # what slapd holds
    usn: int = 100  # the entries' uSNChanged, counted as a controller counts its changes

    def unit(self, domain: Domain) -> str:
        return f"ou=Staff,{self.base}" if domain == "root" else f"ou=Field,dc=child,{self.base}"

    def dn(self, p: Person, domain: Domain) -> str:
        return f"cn=Person {p.n},{self.unit(domain)}"

    def events(self) -> list[str]:
        """This round's events, applied to the truth."""
        done: list[str] = []
        for _ in range(self.rng.choice([1, 1, 2, 3])):
            kind = self.rng.choice(EVENTS)
            wanted = {"depart": "active", "return": "departed"}.get(kind)
            some = [p for p in self.people if p.state != "gone" and wanted in (None, p.state)]
            if kind == "namesake":  # sAMAccountName is unique within a domain only
                twin = self.rng.choice(self.people)
                other: Domain = "child" if twin.domain == "root" else "root"
                p = Person(len(self.people) + 1, other, username=twin.username, namesake=True)
                twin.namesake = True
                self.people.append(p)
            elif kind == "hire" or not some:
                p = Person(len(self.people) + 1, self.rng.choice(["root", "child"]))
                self.people.append(p)
                kind = "hire"
            else:
                p = self.rng.choice(some)
                if kind == "move":
                    p.domain = "child" if p.domain == "root" else "root"
                else:
                    p.state = AFTER[kind]
            FIGURES[f"event: {kind}"] += 1
            done.append(f"{kind} {p.username} ({p.domain})")
        return done

    def write(self, controller: Slapd, catalog: Slapd) -> None:
        """Both servers brought to the truth: an entry changed is deleted and added again
        where it now is, with its objectGUID."""
        servers = {"root": controller, "child": catalog}
        for p in self.people:
            was = self.held.get(p.n)
            now = None if p.state == "gone" else (p.domain, p.state)
            if was == now:
                continue
            if was is not None:
                servers[was[0]].modify(f"dn: {self.dn(p, was[0])}\nchangetype: delete\n")
            if now is not None:
                control = 514 if p.state == "departed" else 512
                self.usn += 1
                servers[p.domain].add_ldif(
                    f"dn: {self.dn(p, p.domain)}\nobjectClass: user\ncn: Person {p.n}\n"
                    f"sn: P{p.n}\nsAMAccountName: {p.username}\nobjectGUID:: {p.guid}\n"
                    f"objectCategory: person\nuserAccountControl: {control}\n"
                    f"uSNChanged: {self.usn}\n"
                )
                self.held[p.n] = now
            else:
                del self.held[p.n]


def first_forest(rng: random.Random, base: str, controller: Slapd, catalog: Slapd) -> Forest:
    """The two domains, with an OU each, and eight people (three departed)."""
    forest = Forest(rng, base)
    name = base.split(",")[0].removeprefix("ou=")
    unit = "objectClass: organizationalUnit\nobjectClass: adObject\n"
    controller.add_ldif(
        f"dn: {base}\nobjectClass: organizationalUnit\nou: {name}\n\n"
        f"dn: ou=Staff,{base}\n{unit}ou: Staff\nobjectGUID:: {'AQ' * 10}AQ==\n"
    )
    controller.add_ldif(
        f"dn: dc=child,{base}\nobjectClass: referral\nobjectClass: extensibleObject\n"
        f"dc: child\nref: {catalog.url}/dc=child,{base}\n",
        manage_dsa_it=True,
    )
    catalog.add_ldif(
        f"dn: {base}\nobjectClass: organizationalUnit\nou: {name}\n\n"
        f"dn: dc=child,{base}\nobjectClass: domain\ndc: child\n\n"
        f"dn: ou=Field,dc=child,{base}\n{unit}ou: Field\nobjectGUID:: {'Ag' * 10}Ag==\n"
    )
    for n in range(1, 9):  # some disabled, as a directory has: a read calls someone departed
        forest.people.append(
            Person(n, "root" if n % 2 else "child", "departed" if n > 5 else "active")
        )
    return forest


def source_lines(controller: Slapd, base: str, catalog: Slapd | None) -> list[str]:
    values = {
        "flavor": "active_directory",
        "urls": [controller.url],
        "bind_dn": controller.bind_dn,
        "bind_password": controller.password,
        "users_base": base,
        "connect_timeout": 2.0,
        "read_timeout": 10.0,
    }
    if catalog is not None:
        values["global_catalog"] = catalog.url
    return ["[source]", 'kind = "ldap"', "[source.ldap]"] + [
        f"{k} = {toml_value(v)}" for k, v in values.items()
    ]


@dataclass(frozen=True)
class Account:
    id: int  # the platform's
    username: str
    locked: bool


def accounts(rig: Rig) -> dict[str, Account]:
    """The platform's accounts by the source id they carry (syncd's mark)."""
    return {
        e["extension_id"]: Account(e["id"], e["username"], bool(e["locked"]))
        for e in rig.emulator.state()["employees"]
    }


Found = list[tuple[str, str]]  # (kind, what happened)


def harm(forest: Forest, before: dict[str, Account], after: dict[str, Account]) -> Found:
    """What no run may do, whatever it read: by the person each account is marked for."""
    found = []
    for p in forest.people:
        had, has = before.get(p.source_id), after.get(p.source_id)
        if p.state == "active" and had is not None and not had.locked and has != had:
            found.append(("wrongly out", f"{p.username}, active in {p.domain}: {had} -> {has}"))
        if p.state != "active" and has is not None and not has.locked and had != has:
            found.append(("wrongly in", f"{p.username}, {p.state}: {had} -> {has}"))
    ids = {a.id: mark for mark, a in before.items()}
    for mark, a in after.items():
        if ids.get(a.id, mark) != mark:
            found.append(("handed on", f"account {a.id} ({a.username}): {ids[a.id]} -> {mark}"))
    return found


def unreached(forest: Forest, after: dict[str, Account]) -> Found:
    """Where a whole read that ended 0 left the platform short of the forest's state. A
    namesake without an account is not: their username is another person's, a conflict
    until that person gives it up; one with an account is theirs to keep in step."""
    found = []
    for p in forest.people:
        has = after.get(p.source_id)
        if p.namesake and has is None:
            continue
        if (has is not None and not has.locked) is not (p.state == "active"):
            found.append(("not reached", f"{p.username}, {p.state} in {p.domain}: {has}"))
    return found


def run_forest(rig: Rig, controller: Slapd, catalog: Slapd, seed: int) -> None:
    rng = random.Random(seed)
    base = f"ou=forest-{seed}-{next(_bases)},{controller.suffix}"
    forest = first_forest(rng, base, controller, catalog)
    policy = rng.choice(["lock", "remove", "lock_then_remove"])
    rig.sync_settings.update(
        leaver_policy=policy, max_removal_ratio=1.0, max_reactivations=100, max_updates=1000
    )
    history = [f"seed {seed}, leaver_policy {policy}"]
    violations: list[str] = []
    for round_no in range(ROUNDS):
        events = forest.events() if round_no else ["hire the first eight"]
        setting: Catalog = (
            rng.choice(["named", "named", "not named", "down"]) if round_no else "named"
        )
        forest.write(controller, catalog)
        if setting == "down":
            catalog.stop()
        rig.source_lines = source_lines(
            controller, base, None if setting == "not named" else catalog
        )
        read: Read = "incremental" if round_no > 1 and rng.random() < 0.3 else "full"
        before = accounts(rig)
        try:
            result = run_sync(rig.settings(), RunRequest(read=read))
        finally:
            catalog.start()
        after = accounts(rig)
        FIGURES[f"runs: {read}, catalog {setting}, exit {result.exit_code}"] += 1
        history.append(
            f"round {round_no}: {', '.join(events)}; {read} read, catalog {setting}: "
            f"exit {result.exit_code} ({result.outcome}{': ' if result.error else ''}"
            f"{result.error or ''})"
        )
        found = harm(forest, before, after)
        if setting == "not named" and result.exit_code == EXIT_OK:
            found.append(("told ok", "a run that did not read the child domain ended 0"))
        if (read, setting, result.exit_code) == ("full", "named", EXIT_OK):
            found += unreached(forest, after)
        violations += [f"round {round_no}: {kind}: {what}" for kind, what in found]
        FIGURES.update(f"violation: {kind}" for kind, _ in found)
    FIGURES["scenarios"] += 1
    if violations:
        FIGURES["scenarios with violations"] += 1
        pytest.fail("\n".join([*history, "violations:", *violations]), pytrace=False)


def summary() -> list[str]:
    """The suite's figures, for the session's end."""
    if not FIGURES["scenarios"]:
        return []
    return [
        f"forest suite: {FIGURES['scenarios']} scenarios; runs: {figure_kinds(FIGURES, 'runs: ')}",
        f"  events: {figure_kinds(FIGURES, 'event: ')}",
        f"  violations ({FIGURES['scenarios with violations']} scenarios): "
        + figure_kinds(FIGURES, "violation: "),
    ]


@pytest.mark.servers
@pytest.mark.parametrize(
    "seed", [*SEEDS, *(pytest.param(seed, marks=pytest.mark.long) for seed in LONG_SEEDS)]
)
def test_nobody_wrongly_out_of_a_forest(
    rig: Rig, controller: Slapd, catalog: Slapd, seed: int
) -> None:
    run_forest(rig, controller, catalog, seed)
