"""Where a state database stands: the platform it is bound to, the newest run id this
state directory ever gave, and whether it was checked against the platform since it was
made, restored or found behind.

- **Bound to one platform.** The platform's identity (base URL, domain, organization,
  application) is kept in the database on first use (cursor ``platform.identity``): a
  database pointed at another platform would take every record it holds for deleted there.
- **Run ids are not given twice** while ``last-run`` stays. The newest id is also kept
  beside the database, in the state directory (``last-run``): a database restored from
  an older backup, or lost and made anew, continues after it rather than from its own
  newest run, so a run id already seen in a report, a notification or a log is never
  reused. A state directory rolled back or lost whole takes ``last-run`` with it: ids
  can then be given again (nothing outside the state directory records them), though
  the database is still found behind by the platform's evidence.
- **Behind.** A database whose newest run is older than ``last-run`` (restored, or lost
  and made anew), or one never checked (new, or made by an older syncd), is *unchecked*
  (no cursor ``state.checked``): the next complete read compares what the platform holds
  with it before anything is planned (``syncd.run.rebuild``). ``last-run`` is only a hint: a
  database copied to a new host without it, or rolled back with it, is found behind by
  the platform's evidence (``syncd.run.rebuild.behind``), which lets go of the mark too.
- **Others' records.** The source ids of the records a check found and the admin said
  are another program's or installation's (``syncd state accept``: cursor
  ``state.others``), never counted as syncd's again; those a check found and nobody
  decided on yet are kept as ``state.found``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Collection
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine

from syncd.errors import StateError
from syncd.snapshot import sql
from syncd.snapshot.engine import describe, get_cursor, json_object, set_cursor, state_dir, write

log = logging.getLogger(__name__)

LAST_RUN = "last-run"  # in the state directory
IDENTITY = "platform.identity"
CHECKED = "state.checked"
OTHERS = "state.others"  # source ids on the platform accepted as another program's
FOUND = "state.found"  # source ids the last continuity check found unknown


def last_run_path(engine: Engine) -> Path:
    return state_dir(engine) / LAST_RUN


def last_run_given(engine: Engine) -> int:
    """The newest run id this state directory gave (0: none, or the file is unreadable)."""
    path = last_run_path(engine)
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("run_id", 0)
    except FileNotFoundError:
        return 0
    except (OSError, ValueError, AttributeError) as exc:
        log.warning("%s: cannot be read (%s); run ids continue from the state database", path, exc)
        return 0
    return value if isinstance(value, int) and value > 0 else 0


def next_run_id(conn: Connection, engine: Engine) -> int:
    """The id of a run starting now: after the database's newest and ``last-run``'s.

    A database behind ``last-run`` is marked unchecked (``CHECKED`` let go of) here, in
    the transaction that starts the run, before the run can plan anything.
    """
    newest = sql.run(conn, "SELECT MAX(id) FROM runs").scalar() or 0
    given = last_run_given(engine)
    if given > newest:
        log.warning(
            "state database %s: its newest run is %d, but run %d was given here since: it "
            "was restored from an older backup or made anew; it is checked against the "
            "platform at the next complete read",
            describe(engine),
            newest,
            given,
        )
        sql.run(conn, "DELETE FROM cursors WHERE name = ?", (CHECKED,))
    return max(int(newest), given) + 1


def remember_run(engine: Engine, run_id: int) -> None:
    """Keep ``run_id`` as the newest given, beside the database (replaced whole)."""
    path = last_run_path(engine)
    temporary = path.with_name(f".{LAST_RUN}.{os.getpid()}.{threading.get_ident()}")
    try:
        temporary.write_text(json.dumps({"run_id": run_id}) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise StateError(f"{path}: cannot be written: {exc.strerror}") from exc


def checked(engine: Engine) -> bool:
    """Whether the database was compared with the platform since it was made or restored."""
    return get_cursor(engine, CHECKED) is not None


def set_checked(engine: Engine, how: str, at_ms: int) -> None:
    with write(engine) as conn:
        set_cursor(conn, CHECKED, json.dumps({"how": how, "at": at_ms}))


def bound_identity(engine: Engine) -> dict[str, Any] | None:
    stored = get_cursor(engine, IDENTITY)
    return None if stored is None else json_object(stored)


def bind(engine: Engine, identity: dict[str, Any]) -> None:
    with write(engine) as conn:
        set_cursor(conn, IDENTITY, json.dumps(identity, sort_keys=True))


def set_unchecked(engine: Engine) -> None:
    """Let go of the mark: the next complete read compares the database with the platform."""
    with write(engine) as conn:
        sql.run(conn, "DELETE FROM cursors WHERE name = ?", (CHECKED,))


def _ids(engine: Engine, name: str) -> frozenset[str]:
    stored = get_cursor(engine, name)
    if stored is None:
        return frozenset()
    value = json.loads(stored)
    return frozenset(str(v) for v in value) if isinstance(value, list) else frozenset()


def others(engine: Engine) -> frozenset[str]:
    """The source ids on the platform accepted as another program's or installation's."""
    return _ids(engine, OTHERS)


def set_found(engine: Engine, ids: Collection[str]) -> None:
    """Keep the source ids a continuity check found unknown, for ``accept``."""
    with write(engine) as conn:
        set_cursor(conn, FOUND, json.dumps(sorted(ids)))


def accept_found(engine: Engine, at_ms: int) -> int:
    """The records the last check found are others': kept as such; the database checked.
    How many were accepted."""
    found, accepted = _ids(engine, FOUND), others(engine)
    with write(engine) as conn:
        set_cursor(conn, OTHERS, json.dumps(sorted(accepted | found)))
        sql.run(conn, "DELETE FROM cursors WHERE name = ?", (FOUND,))
        set_cursor(conn, CHECKED, json.dumps({"how": "accepted", "at": at_ms}))
    return len(found)


def unknown_ids(engine: Engine, ids: Collection[str]) -> set[str]:
    """Which of these source ids the database holds no person for."""
    if not ids:
        return set()
    with engine.connect() as conn:
        among, values = sql.among(conn, ids)
        query = "SELECT source_id FROM employees WHERE source_id " + among  # noqa: S608
        rows = sql.run(conn, query, (values,))
        held = {str(r[0]) for r in rows}
    return set(ids) - held
