"""Realistic synthetic companies, deterministic from a seed, written as CSV and LDIF.

A company of N people has about N/50 departments, up to six levels deep, named in
Chinese and English; people have Chinese or English names, 3% hold a second position
and 2% have departed. Ids never depend on names, so a renamed person or department
keeps its id, as in a real HR system.
"""

from __future__ import annotations

import base64
import csv
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

MAX_DEPTH = 6
PEOPLE_PER_DEPARTMENT = 50
SECOND_POSITION_RATE = 0.03
DEPARTED_RATE = 0.02
TOP_LEVEL = 8
LDAP_SUFFIX = "dc=corp,dc=example"
LDAP_PEOPLE_BASE = f"ou=Corp,{LDAP_SUFFIX}"  # the root organization: its OUs are departments
DEPARTED_TYPE = "departed"  # LDAP employeeType of departed people (matched by departed_filter)
# When the LDIF's entries were last changed: departments at the start, then each person a
# minute after the one before, as in a directory edited over months (not all at load time).
LDAP_CHANGED_FROM = datetime(2025, 1, 1, tzinfo=UTC)

DEPARTMENT_WORDS_EN = (
    "Sales", "Engineering", "Finance", "Marketing", "Operations", "Legal", "Support",
    "Research", "Logistics", "Procurement", "Quality", "Design", "Security", "Platform",
)  # fmt: skip
DEPARTMENT_WORDS_ZH = (
    "研发部", "销售部", "财务部", "市场部", "运营部", "法务部", "客服部", "采购部",
    "质量部", "设计部", "安全部", "人力资源部", "行政部", "物流部",
)  # fmt: skip
SURNAMES_ZH = (
    ("王", "wang"), ("李", "li"), ("张", "zhang"), ("刘", "liu"), ("陈", "chen"),
    ("杨", "yang"), ("黄", "huang"), ("赵", "zhao"), ("吴", "wu"), ("周", "zhou"),
    ("徐", "xu"), ("孙", "sun"), ("马", "ma"), ("朱", "zhu"), ("胡", "hu"), ("郭", "guo"),
)  # fmt: skip
GIVEN_ZH = (
    ("伟", "wei"), ("芳", "fang"), ("娜", "na"), ("敏", "min"), ("静", "jing"),
    ("丽", "li"), ("强", "qiang"), ("磊", "lei"), ("军", "jun"), ("洋", "yang"),
    ("勇", "yong"), ("艳", "yan"), ("杰", "jie"), ("涛", "tao"), ("明", "ming"),
    ("超", "chao"), ("秀英", "xiuying"), ("晓东", "xiaodong"), ("海燕", "haiyan"),
)  # fmt: skip
FIRST_EN = (
    "James", "Mary", "John", "Linda", "Robert", "Susan", "Michael", "Karen", "David",
    "Emma", "Daniel", "Olivia", "Thomas", "Sophia", "Paul", "Grace", "Mark", "Alice",
)  # fmt: skip
LAST_EN = (
    "Smith", "Johnson", "Brown", "Taylor", "Miller", "Wilson", "Moore", "Clark",
    "Lewis", "Walker", "Hall", "Young", "King", "Wright", "Scott", "Green",
)  # fmt: skip
TITLES = (
    "Engineer", "Senior Engineer", "Manager", "Analyst", "Accountant", "Designer",
    "工程师", "高级工程师", "经理", "专员", "主管", "总监",
)  # fmt: skip

EMPLOYEE_COLUMNS = (
    "id", "username", "name", "en_name", "department", "positions", "job_title",
    "email", "mobile", "sn", "gender", "status",
)  # fmt: skip
DEPARTMENT_COLUMNS = ("id", "name", "parent_id", "sort_order")


@dataclass(frozen=True, slots=True)
class Unit:
    """A department: ``id`` is stable, ``parent`` is another unit's id (None: top level)."""

    id: str
    name: str
    parent: str | None
    sort_order: int


@dataclass(frozen=True, slots=True)
class Person:
    id: str
    username: str
    name: str
    en_name: str
    department: str  # a unit id
    second: str | None  # a second position's unit id
    job_title: str
    email: str
    mobile: str
    sn: str
    gender: str
    departed: bool = False


@dataclass
class Company:
    units: dict[str, Unit]
    people: dict[str, Person]
    next_person: int  # the number the next hire's id and username are made from
    _paths: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)

    def depth(self, unit_id: str) -> int:
        return len(self.path(unit_id))

    def path(self, unit_id: str) -> tuple[str, ...]:
        """Names from the top-level department down to this one."""
        cached = self._paths.get(unit_id)
        if cached is None:
            unit = self.units[unit_id]
            above = self.path(unit.parent) if unit.parent is not None else ()
            cached = self._paths[unit_id] = (*above, unit.name)
        return cached

    def ordered_units(self) -> list[Unit]:
        """Parents before children."""
        return sorted(self.units.values(), key=lambda u: (self.depth(u.id), u.id))

    def copy(self) -> Company:
        return Company(dict(self.units), dict(self.people), self.next_person)


# ---------------------------------------------------------------- making a company


def make_company(people: int, seed: int = 1) -> Company:
    """A company of ``people`` people, the same for the same arguments."""
    rng = random.Random(seed)
    units = _make_units(max(1, people // PEOPLE_PER_DEPARTMENT), rng)
    unit_ids = list(units)
    staff: dict[str, Person] = {}
    for number in range(people):
        person = new_person(number, rng, unit_ids)
        staff[person.id] = person
    return Company(units, staff, people)


def _make_units(count: int, rng: random.Random) -> dict[str, Unit]:
    units: dict[str, Unit] = {}
    depth: dict[str, int] = {}
    can_parent: list[str] = []  # units shallower than MAX_DEPTH
    for index in range(count):
        unit_id = f"D{index:06d}"
        parent = None if index < TOP_LEVEL or not can_parent else rng.choice(can_parent)
        words = DEPARTMENT_WORDS_ZH if rng.random() < 0.5 else DEPARTMENT_WORDS_EN
        # The index makes every name unique, so no two siblings ever share a name.
        name = f"{rng.choice(words)} {index}"
        units[unit_id] = Unit(unit_id, name, parent, sort_order=index % 100)
        depth[unit_id] = 1 if parent is None else depth[parent] + 1
        if depth[unit_id] < MAX_DEPTH:
            can_parent.append(unit_id)
    return units


def new_person(number: int, rng: random.Random, unit_ids: list[str]) -> Person:
    """Person ``number``: ids, usernames, emails and mobiles are unique by number."""
    if rng.random() < 0.6:
        surname, surname_py = rng.choice(SURNAMES_ZH)
        given, given_py = rng.choice(GIVEN_ZH)
        name, username = surname + given, f"{surname_py}.{given_py}{number}"
        en_name = rng.choice(FIRST_EN) if rng.random() < 0.3 else ""
    else:
        first, last = rng.choice(FIRST_EN), rng.choice(LAST_EN)
        name, username = f"{first} {last}", f"{first}.{last}{number}".lower()
        en_name = ""
    department = rng.choice(unit_ids)
    second = None
    if rng.random() < SECOND_POSITION_RATE and len(unit_ids) > 1:
        second = rng.choice([u for u in rng.sample(unit_ids, 2) if u != department])
    return Person(
        id=f"E{number:08d}",
        username=username,
        name=name,
        en_name=en_name,
        department=department,
        second=second,
        job_title=rng.choice(TITLES),
        email=f"{username}@corp.example",
        mobile=f"13{number:09d}",
        sn=f"W{number:08d}",
        gender=rng.choice(("male", "female")),
        departed=rng.random() < DEPARTED_RATE,
    )


def renamed(person: Person, rng: random.Random) -> Person:
    """The same person under a new display name (username, email and ids unchanged)."""
    if any("\u4e00" <= ch <= "\u9fff" for ch in person.name):
        return replace(person, name=rng.choice(SURNAMES_ZH)[0] + person.name[1:])
    return replace(
        person, name=f"{person.name.split()[0]} {rng.choice(LAST_EN)}-{rng.randrange(99)}"
    )


# ---------------------------------------------------------------- CSV


def write_two_files(company: Company, folder: Path) -> tuple[Path, Path]:
    """employees.csv (department ids) and departments.csv; returns (employees, departments)."""
    folder.mkdir(parents=True, exist_ok=True)
    departments = folder / "departments.csv"
    with departments.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(DEPARTMENT_COLUMNS)
        for u in company.ordered_units():
            writer.writerow((u.id, u.name, u.parent or "", u.sort_order))
    employees = folder / "employees.csv"
    _write_people(employees, company, lambda unit_id: unit_id)
    return employees, departments


def write_paths(company: Company, folder: Path) -> Path:
    """One employees.csv whose department cells hold name paths ("Sales 1/Support 7")."""
    folder.mkdir(parents=True, exist_ok=True)
    employees = folder / "employees.csv"
    _write_people(employees, company, lambda unit_id: "/".join(company.path(unit_id)))
    return employees


def _write_people(path: Path, company: Company, department: Callable[[str], str]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(EMPLOYEE_COLUMNS)
        for p in company.people.values():
            writer.writerow(
                (
                    p.id,
                    p.username,
                    p.name,
                    p.en_name,
                    department(p.department),
                    department(p.second) if p.second else "",
                    p.job_title,
                    p.email,
                    p.mobile,
                    p.sn,
                    p.gender,
                    "departed" if p.departed else "active",
                )
            )


# ---------------------------------------------------------------- LDIF


def write_ldif(company: Company, path: Path) -> Path:
    """The company as an OU tree under LDAP_PEOPLE_BASE (suffix entry not included).

    Second positions have no place in an OU tree and are left out; departed people carry
    ``employeeType: departed``. Entries carry ``modifyTimestamp`` (``slapadd`` keeps it),
    spread from LDAP_CHANGED_FROM: an incremental read after a full one finds only the
    people changed last, as in a real directory, not everyone loaded in the same second.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for chunk in ldif_entries(company):
            fh.write(chunk)
    return path


def ldif_entries(company: Company) -> Iterator[str]:
    dns: dict[str, str] = {}
    loaded = _changed(LDAP_CHANGED_FROM)
    yield f"dn: {LDAP_PEOPLE_BASE}\nobjectClass: organizationalUnit\nou: Corp\n{loaded}\n"
    for u in company.ordered_units():
        parent = LDAP_PEOPLE_BASE if u.parent is None else dns[u.parent]
        dn = dns[u.id] = f"ou={u.name},{parent}"
        yield f"{_line('dn', dn)}objectClass: organizationalUnit\n{_line('ou', u.name)}{loaded}\n"
    for number, p in enumerate(company.people.values(), start=1):
        surname = p.name.split()[-1] if " " in p.name else p.name[:1]
        lines = [
            _line("dn", f"uid={p.username},{dns[p.department]}"),
            "objectClass: inetOrgPerson\n",
            _line("uid", p.username),
            _line("cn", p.name),
            _line("sn", surname),
            _line("mail", p.email),
            _line("mobile", p.mobile),
            _line("employeeNumber", p.sn),
            _line("title", p.job_title),
            _line("employeeType", DEPARTED_TYPE if p.departed else "staff"),
            _changed(LDAP_CHANGED_FROM + timedelta(minutes=number)),
            "\n",
        ]
        yield "".join(lines)


def _changed(moment: datetime) -> str:
    return f"modifyTimestamp: {moment.strftime('%Y%m%d%H%M%SZ')}\n"


def _line(attribute: str, value: str) -> str:
    """One LDIF line; values beyond ASCII are base64 (RFC 2849 SAFE-STRING is ASCII only)."""
    if value.isascii():
        return f"{attribute}: {value}\n"
    return f"{attribute}:: {base64.b64encode(value.encode('utf-8')).decode('ascii')}\n"
