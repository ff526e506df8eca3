"""Groups to tags at scale: a people read with and without group rules, side by side.

python -m benchmarks.group_tags [PEOPLE]

A real slapd is loaded (slapadd) with PEOPLE people (default 100,000) and groups: "all"
(everyone, as groupOfNames), "half" (every other person) nesting "tenth" (every tenth),
and 20 small teams of 50. Rules tag the members of all, half (nested tenth included) and
one team. Prints each read's wall and CPU seconds, best of three.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from syncd.config import LdapSource
from syncd.sources.ldap import read_ldap
from tests.support.slapd import running_slapd, synthetic_people_ldif

SUFFIX = "dc=acme,dc=example"
PEOPLE = f"ou=People,{SUFFIX}"
GROUPS = f"ou=Groups,{SUFFIX}"


def person(i: int) -> str:
    d, t = i % 10, (i // 10) % 10
    return f"uid=user{i:06d},ou=Team {d}-{t},ou=Division {d},{PEOPLE}"


def groups_ldif(count: int) -> str:
    def group(name: str, members: list[str]) -> str:
        lines = [f"dn: cn={name},{GROUPS}", "objectClass: groupOfNames", f"cn: {name}"]
        return "\n".join(lines + [f"member: {m}" for m in members]) + "\n\n"

    text = f"dn: {GROUPS}\nobjectClass: organizationalUnit\nou: Groups\n\n"
    text += group("all", [person(i) for i in range(count)])
    text += group("tenth", [person(i) for i in range(0, count, 10)])
    text += group("half", [person(i) for i in range(0, count, 2)] + [f"cn=tenth,{GROUPS}"])
    for t in range(20):
        text += group(f"team{t}", [person(i) for i in range(t * 50, t * 50 + 50)])
    return text


def timed(settings: LdapSource) -> dict[str, Any]:
    best: dict[str, Any] = {}
    for _ in range(3):
        wall, cpu = time.perf_counter(), time.process_time()
        directory = read_ldap(settings)
        run = {
            "seconds": round(time.perf_counter() - wall, 2),
            "cpu_seconds": round(time.process_time() - cpu, 2),
            "people": len(directory.employees),
            "tagged": sum(1 for e in directory.employees.values() if e.tags),
        }
        if not best or run["seconds"] < best["seconds"]:
            best = run
    return best


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    ldif = (
        f"dn: {PEOPLE}\nobjectClass: organizationalUnit\nou: People\n\n"
        + synthetic_people_ldif(PEOPLE, count)
        + "\n"
        + groups_ldif(count)
    )
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "data.ldif"
        source.write_text(ldif)
        with running_slapd(Path(folder) / "slapd", suffix=SUFFIX, ldif=source) as slapd:
            base: dict[str, Any] = {
                "urls": [slapd.url],
                "bind_dn": slapd.bind_dn,
                "bind_password": SecretStr(slapd.password),
                "users_base": PEOPLE,
                "page_size": 1000,
                "read_timeout": 600.0,
            }
            rules = [
                {"group": "all", "tag_group": "G", "tag": "all"},
                {"group": "half", "tag_group": "G", "tag": "half"},
                {"group": "team3", "tag_group": "G", "tag": "team3"},
            ]
            plain = timed(LdapSource(**base))
            tagged = timed(LdapSource(**base, group_tags=rules, groups_base=GROUPS))
    print(json.dumps({"people": count, "without_rules": plain, "with_rules": tagged}))


if __name__ == "__main__":
    main()
