"""Child process: time ``read_ldap`` alone (imports and settings excluded); prints JSON.

python -m benchmarks.ldap_read SETTINGS.toml
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main() -> None:
    began = time.perf_counter()
    from syncd.config import load_settings
    from syncd.sources.ldap import read_ldap

    imported = time.perf_counter() - began
    settings = load_settings(Path(sys.argv[1]))
    assert settings.source is not None and settings.source.ldap is not None
    started, cpu = time.perf_counter(), time.process_time()
    directory = read_ldap(settings.source.ldap)
    seconds, read_cpu = time.perf_counter() - started, time.process_time() - cpu
    result = {
        "read_seconds": seconds,
        "read_cpu_seconds": read_cpu,
        "import_seconds": imported,
        "employees": len(directory.employees),
        "departments": len(directory.departments),
        "rejected": len(directory.rejected),
        "departed": sum(1 for e in directory.employees.values() if e.state == "departed"),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
