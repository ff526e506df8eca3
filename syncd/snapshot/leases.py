"""The lease that says which syncd may write to the platform, and the instances sharing the store.

One row of ``leadership`` (name ``platform``): the holder (``host/pid/token``), its
epoch, and when the lease expires. Expiries are judged by the store's clock: the
server's (``clock_timestamp()``) on PostgreSQL, the host's on SQLite (every process on
one file shares it), so hosts whose clocks disagree still agree on who holds it. Taking
the lease from another holder (one whose lease expired) adds one to the epoch; renewing
one's own keeps it. ``members``: each instance using the store, its role, when it was
last seen, and the digest and counts of its last plan (a standby's dry plan is compared
with the leader's by ``syncd status``).

Every statement here is plain SQL both engines run; times are milliseconds since the epoch.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Connection, Row, inspect, text

LEASE = "platform"  # the one lease: the right to write to the platform
# Whether run ``r`` planned any item: MIN(seq), not EXISTS, is one probe of the
# (run_id, seq) key on either engine, where PostgreSQL's planner made EXISTS a hash of every
# run's items (15 ms at 100,000 people) and a LIMIT 1 a scan of them for each run.
RUN_HAS_ITEMS = "(SELECT MIN(i.seq) FROM run_items i WHERE i.run_id = r.id) IS NOT NULL"
KEEP_MEMBERS_MS = 24 * 3600 * 1000  # a member unseen for a day is forgotten
# This process's part of its instance name (``host/pid/PROCESS``): its PostgreSQL sessions
# carry it too (``session_name``), so an instance that takes the lease over can end the
# sessions of the one it took it from (``syncd.snapshot.postgres.end_sessions``).
PROCESS = secrets.token_hex(4)


def session_name(instance: str) -> str:
    """The application_name of ``instance``'s PostgreSQL sessions (its last part)."""
    return f"syncd {instance.rsplit('/', 1)[-1]}"


TABLES = (
    """
    CREATE TABLE IF NOT EXISTS leadership (
        name VARCHAR PRIMARY KEY,
        holder VARCHAR,
        host VARCHAR,
        pid INTEGER,
        machine VARCHAR,
        place VARCHAR,
        role VARCHAR,
        epoch BIGINT NOT NULL DEFAULT 0,
        acquired_at BIGINT,
        renewed_at BIGINT,
        expires_at BIGINT NOT NULL DEFAULT 0
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS members (
        instance VARCHAR PRIMARY KEY,
        host VARCHAR NOT NULL,
        pid INTEGER NOT NULL,
        machine VARCHAR,
        place VARCHAR,
        role VARCHAR NOT NULL,
        started_at BIGINT NOT NULL,
        last_seen BIGINT NOT NULL,
        plan_run BIGINT,
        plan_basis BIGINT,
        plan_digest VARCHAR,
        plan_counts VARCHAR,
        planned_at BIGINT
    )
    """,
)


def create_lease_tables(conn: Connection) -> None:
    """The lease and members tables (SQLite: in the lease's own file, ``lease_store``)."""
    for statement in TABLES:
        conn.exec_driver_sql(statement)


def create_tables(conn: Connection) -> None:
    """The lease and members tables, and the runs' epoch and instance columns (schema 8)."""
    create_lease_tables(conn)
    columns = {c["name"] for c in inspect(conn).get_columns("runs")}
    for column, kind in (("epoch", "BIGINT"), ("instance", "VARCHAR")):
        if column not in columns:
            conn.exec_driver_sql(f"ALTER TABLE runs ADD COLUMN {column} {kind}")


def now_sql(conn: Connection) -> str:
    """The store's clock in ms, as SQL: the server's on PostgreSQL (the time of the
    statement, not of the transaction), the host's on SQLite."""
    if conn.dialect.name == "postgresql":
        return "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
    return "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"


@dataclass(frozen=True)
class Holder:
    """The lease as the store holds it, and the store's clock when it was read."""

    holder: str | None
    host: str | None
    pid: int | None
    machine: str | None
    place: str | None
    role: str | None
    epoch: int
    acquired_at: int | None
    renewed_at: int | None
    expires_at: int
    now: int

    @property
    def live(self) -> bool:
        return self.holder is not None and self.expires_at > self.now

    def document(self) -> dict[str, Any]:
        return {
            "instance": self.holder,
            "host": self.host,
            "pid": self.pid,
            "role": self.role,
            "epoch": self.epoch,
            "acquired_at": self.acquired_at,
            "renewed_at": self.renewed_at,
            "expires_at": self.expires_at,
            "live": self.live,
        }


def not_held(current: Holder | None, instance: str | None, epoch: int | None) -> str | None:
    """Why ``current`` (the lease as read) does not name ``instance`` and ``epoch`` as its
    live holder, or None when it does."""
    if current is None or current.holder is None:
        return "the lease is gone from the state store"
    if current.holder != instance or current.epoch != epoch:
        return (
            f"the lease (epoch {epoch}) was taken over by pid {current.pid} on "
            f"{current.host} (epoch {current.epoch})"
        )
    if not current.live:
        return f"the lease (epoch {epoch}) expired in the state store"
    return None


_COLUMNS = "holder, host, pid, machine, place, role, epoch, acquired_at, renewed_at, expires_at"


def _ensure_row(conn: Connection) -> None:
    conn.execute(
        text(
            "INSERT INTO leadership (name, epoch, expires_at) VALUES (:n, 0, 0) "
            "ON CONFLICT (name) DO NOTHING"
        ),
        {"n": LEASE},
    )


def _with_now(
    conn: Connection, columns: str, where: str, params: Mapping[str, Any]
) -> Row[*tuple[Any, ...]] | None:
    """The first row of ``SELECT columns FROM where``, the store's clock its last column."""
    sql = f"SELECT {columns}, {now_sql(conn)} FROM {where}"  # noqa: S608 - our constants
    return conn.execute(text(sql), params).first()


def holder(conn: Connection) -> Holder | None:
    """Who holds the lease (or held it last), with the store's clock; None: nobody ever."""
    row = _with_now(conn, _COLUMNS, "leadership WHERE name = :n", {"n": LEASE})
    if row is None:
        return None
    who, host, pid, machine, place, role, epoch, acquired, renewed, expires, now = row
    return Holder(
        who, host, pid, machine, place, role, int(epoch), acquired, renewed, int(expires), int(now)
    )


@dataclass(frozen=True)
class Claimant:
    """An instance asking for the lease: who it is, and for how long."""

    instance: str
    host: str
    pid: int
    machine: str | None
    place: str | None  # the state directory: a holder's own installation, restarted
    role: str
    lease_ms: int


def acquire(conn: Connection, me: Claimant, dead: str | None = None) -> Holder | None:
    """Take the lease if it is free, expired, already mine, or held by ``dead`` (a holder
    the caller knows has died); renews it when mine. The lease as it is now, or None
    when another holds it. Run in a write transaction (the caller's).

    On PostgreSQL this transaction's commit waits for its flush, whatever the session's
    ``synchronous_commit = off`` (snapshot.postgres): a lease taken, and its epoch, survive
    a crash of the server, so an epoch is never given twice."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SET LOCAL synchronous_commit = on"))
    _ensure_row(conn)
    now = now_sql(conn)
    row = conn.execute(
        text(
            "UPDATE leadership SET "  # noqa: S608 - now is one of two constants
            "epoch = CASE WHEN holder = :instance THEN epoch ELSE epoch + 1 END, "
            f"acquired_at = CASE WHEN holder = :instance THEN acquired_at ELSE {now} END, "
            "holder = :instance, host = :host, pid = :pid, machine = :machine, place = :place, "
            f"role = :role, renewed_at = {now}, expires_at = {now} + :lease_ms "
            f"WHERE name = :n AND (holder = :instance OR expires_at <= {now} OR holder = :dead) "
            f"RETURNING epoch, acquired_at, renewed_at, expires_at"
        ),
        {**asdict(me), "n": LEASE, "dead": dead or ""},
    ).first()
    if row is None:
        return None
    epoch, acquired, renewed, expires = (int(v) for v in row)
    return Holder(
        me.instance, me.host, me.pid, me.machine, me.place, me.role,
        epoch, acquired, renewed, expires, renewed,
    )  # fmt: skip


def release(conn: Connection, instance: str, epoch: int) -> None:
    """Let the lease go at once (it expires now): a standby takes it at its next try."""
    conn.execute(
        text(
            f"UPDATE leadership SET expires_at = {now_sql(conn)} "  # noqa: S608
            "WHERE name = :n AND holder = :me AND epoch = :e"
        ),
        {"n": LEASE, "me": instance, "e": epoch},
    )


# ---------------------------------------------------------------- members


def join(conn: Connection, me: Claimant) -> None:
    """Say this instance uses the store (or is still alive); forget those unseen for a day."""
    now = now_sql(conn)
    conn.execute(
        text(
            "INSERT INTO members (instance, host, pid, machine, place, role, started_at, "  # noqa: S608
            f"last_seen) VALUES (:instance, :host, :pid, :machine, :place, :role, {now}, {now}) "
            f"ON CONFLICT (instance) DO UPDATE SET last_seen = {now}, role = excluded.role"
        ),
        asdict(me),  # its lease_ms unused
    )
    conn.execute(
        text(f"DELETE FROM members WHERE last_seen < {now} - :keep"),  # noqa: S608
        {"keep": KEEP_MEMBERS_MS},
    )


def last_seen(conn: Connection, instance: str) -> tuple[int, str | None, int, int] | None:
    """A member's pid, machine, and when it was last seen, with the store's clock now;
    None when it is not a member (left, or forgotten)."""
    row = _with_now(conn, "pid, machine, last_seen", "members WHERE instance = :i", {"i": instance})
    if row is None:
        return None
    pid, machine, seen, now = row
    return int(pid), machine, int(seen), int(now)


def leave(conn: Connection, instance: str) -> None:
    conn.execute(text("DELETE FROM members WHERE instance = :me"), {"me": instance})


def record_plan(
    conn: Connection,
    instance: str,
    *,
    run_id: int,
    basis: int | None,
    digest: str,
    counts: Mapping[str, int],
) -> None:
    """The digest and counts of the plan this instance made last (its run ``run_id``),
    from the snapshot as the run ``basis`` left it (None: not known for sure)."""
    conn.execute(
        text(
            "UPDATE members SET plan_run = :r, plan_basis = :b, plan_digest = :d, "  # noqa: S608
            f"plan_counts = :c, planned_at = {now_sql(conn)} WHERE instance = :me"
        ),
        {
            "r": run_id,
            "b": basis,
            "d": digest,
            "c": json.dumps(dict(counts), sort_keys=True),
            "me": instance,
        },
    )


def members(conn: Connection) -> tuple[list[dict[str, Any]], int]:
    """Every member as stored, oldest first, and the store's clock."""
    now = int(conn.execute(text(f"SELECT {now_sql(conn)}")).scalar_one())
    rows = conn.execute(
        text(
            "SELECT instance, host, pid, machine, place, role, started_at, last_seen, plan_run, "
            "plan_basis, plan_digest, plan_counts, planned_at FROM members ORDER BY started_at"
        )
    )
    found = []
    for r in rows:
        member = dict(r._mapping)
        try:
            member["plan_counts"] = json.loads(member["plan_counts"] or "{}")
        except ValueError:
            member["plan_counts"] = {}
        found.append(member)
    return found, now


def plan_basis(conn: Connection, run_id: int, started_at: int, finished_at: int) -> int | None:
    """The newest real run that may have changed the snapshot before run ``run_id``
    planned (0: none), or None when another may have changed it while the run read and
    planned (a real run with items that was under way at some time during it)."""
    overlapping = conn.execute(
        text(
            "SELECT 1 FROM runs r WHERE r.id <> :r AND r.mode = 'apply' "  # noqa: S608
            "AND (r.finished_at IS NULL OR r.finished_at > :s) AND r.started_at < :f "
            f"AND {RUN_HAS_ITEMS} LIMIT 1"
        ),
        {"r": run_id, "s": started_at, "f": finished_at},
    ).first()
    if overlapping is not None:
        return None
    newest = conn.execute(
        text(
            "SELECT MAX(r.id) FROM runs r WHERE r.id < :r AND r.mode = 'apply' "  # noqa: S608
            f"AND {RUN_HAS_ITEMS}"
        ),
        {"r": run_id},
    ).scalar()
    return int(newest or 0)
