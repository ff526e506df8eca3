"""Child process: the same three searches with plain ldap3, the baseline syncd's reader beats.

python -m benchmarks.ldap3_plain URL BIND_DN PASSWORD_FILE BASE FILTERS_JSON

``paged_search(generator=True)`` (streamed, as any careful ldap3 user writes it) with
ldap3's default decoding; every entry's attributes are touched once. Prints JSON.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import ldap3


def main() -> None:
    url, bind_dn, password_file, base, filters = sys.argv[1:6]
    password = Path(password_file).read_text().strip()
    started, cpu = time.perf_counter(), time.process_time()
    connection = ldap3.Connection(ldap3.Server(url), bind_dn, password, auto_bind=True)
    entries = 0
    for search_filter, attributes in json.loads(filters):
        for entry in connection.extend.standard.paged_search(
            base, search_filter, attributes=attributes, paged_size=1000, generator=True
        ):
            if entry.get("type") == "searchResEntry":
                entries += len(entry["attributes"]) > 0
    connection.unbind()
    result = {
        "read_seconds": time.perf_counter() - started,
        "read_cpu_seconds": time.process_time() - cpu,
        "entries": entries,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
