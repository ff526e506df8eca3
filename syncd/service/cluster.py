"""``syncd status``'s part on leadership: who holds the lease, and the instances standing by,
with whether each one's last dry plan agrees with the leader's (docs/ha.md).

Two plans are compared only when both were made from the same snapshot (the same newest
real run before them, ``plan_basis``): a standby that planned before the leader's last
apply, or while it applied, is "not comparable yet" rather than "differs".
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from syncd.run.leadership import STALE_AFTER_LEASES
from syncd.snapshot import StateStore, leases


def read_cluster(state: StateStore, lease_seconds: int) -> dict[str, Any] | None:
    """The lease and the members as ``syncd status --output json`` gives them; None when
    no instance ever used the lease (a database of an older syncd)."""
    # SQLite: the lease's own file; PostgreSQL: its tables (the store closes it).
    with state.leases.read() as conn:
        held = leases.holder(conn)
        members, now = leases.members(conn)
    if held is None and not members:
        return None
    leading = held.holder if held is not None and held.live else None
    plans = {m["instance"]: m for m in members}
    theirs = plans.get(leading) if leading is not None else None
    shown = []
    for m in members:
        ago = max(now - int(m["last_seen"]), 0) / 1000
        plan = None
        if m["plan_digest"] is not None:
            plan = {
                "run_id": m["plan_run"],
                "basis_run": m["plan_basis"],
                "digest": m["plan_digest"],
                "counts": m["plan_counts"],
            }
        shown.append(
            {
                "instance": m["instance"],
                "host": m["host"],
                "pid": m["pid"],
                "role": "leader" if m["instance"] == leading else m["role"],
                "last_seen_seconds": round(ago, 1),
                "alive": ago <= STALE_AFTER_LEASES * lease_seconds,
                "plan": plan,
                "plan_agrees": None if m["instance"] == leading else _agrees(m, theirs),
            }
        )
    return {
        "leader": None if held is None or not held.live else _leader(held, now),
        "epoch": held.epoch if held is not None else 0,
        "members": shown,
    }


def _leader(held: leases.Holder, now: int) -> dict[str, Any]:
    return {
        "instance": held.holder,
        "host": held.host,
        "pid": held.pid,
        "role": held.role,  # leader (a daemon) or shell (a one-off sync)
        "epoch": held.epoch,
        "since_ms": held.acquired_at,
        "renewed_seconds_ago": round(max(now - int(held.renewed_at or now), 0) / 1000, 1),
        "expires_in_seconds": round((held.expires_at - now) / 1000, 1),
    }


def _agrees(member: dict[str, Any], leader: dict[str, Any] | None) -> bool | None:
    """Whether a standby's last plan is the leader's, made from the same snapshot; None
    when they cannot be compared (no plan yet, or made from different snapshots)."""
    if leader is None or member["plan_digest"] is None or leader["plan_digest"] is None:
        return None
    basis = member["plan_basis"]
    if basis is None or basis != leader["plan_basis"]:
        return None
    return bool(member["plan_digest"] == leader["plan_digest"])


def print_cluster(console: Console, cluster: dict[str, Any] | None) -> None:
    """Lines for the leader and each other instance, as the JSON says."""
    if cluster is None:
        return
    leader = cluster["leader"]
    if leader is None:
        console.print(
            Text.assemble("leader     none", f" (the lease, epoch {cluster['epoch']}, is free: "
            "the next instance to sync takes it)")
        )  # fmt: skip
    else:
        what = "a shell sync" if leader["role"] == "shell" else "daemon"
        console.print(
            f"leader     pid {leader['pid']} on {leader['host']} ({what}), epoch "
            f"{leader['epoch']}, renewed {leader['renewed_seconds_ago']:g} s ago"
        )
    for m in cluster["members"]:
        if m["role"] == "leader":
            continue
        seen = f"seen {m['last_seen_seconds']:g} s ago" + ("" if m["alive"] else " (gone?)")
        console.print(f"{m['role']:<10} pid {m['pid']} on {m['host']}, {seen}, {_plan_words(m)}")


def _plan_words(member: dict[str, Any]) -> str:
    plan = member["plan"]
    if plan is None:
        return "no plan yet"
    changes = sum(plan["counts"].values())
    made = f"run {plan['run_id']}: {changes} changes"
    agrees = member["plan_agrees"]
    if agrees is None:
        return f"plan not comparable with the leader's yet ({made})"
    return f"plan {'agrees with' if agrees else 'DIFFERS from'} the leader's ({made})"
