"""Who owns the state directory, and what a command run as root leaves there as root's.

``sudo syncd sync --dry-run`` in a state directory that belongs to the ``syncd`` user
writes ``run.lock``, ``token.lock``, ``last-run`` and the database's files as root: the
service's next run (as ``syncd``) then fails on them. A run as root there is warned
before it starts, and told after it which files it left as root's, each named, with the
``chown`` that gives them back.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

# What a run may write in the state directory (the database's own files beside them).
RUN_FILES = ("run.lock", "token.lock", "last-run")


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def foreign_owner(state_dir: Path) -> int | None:
    """The uid the state directory belongs to when this process runs as root and it is
    another user's; None otherwise (not root, the directory root's, or not made yet)."""
    if os.geteuid() != 0:
        return None
    try:
        owner = state_dir.stat().st_uid
    except OSError:
        return None
    return owner if owner != 0 else None


def not_owned_by(state_dir: Path, uid: int) -> list[Path]:
    """Every file directly in the state directory that ``uid`` does not own, by name."""
    try:
        entries = sorted(state_dir.iterdir())
    except OSError:
        return []
    found = []
    for path in entries:
        try:
            if path.lstat().st_uid != uid:
                found.append(path)
        except OSError:
            continue
    return found


def root_run_warning(state_dir: Path, owner: int, database: str | None) -> str:
    """Said before a run as root in another user's state directory."""
    name = user_name(owner)
    files = [*([database, f"{database}-wal", f"{database}-shm"] if database else []), *RUN_FILES]
    return (
        f"running as root in {state_dir}, which belongs to {name}: the files this run writes "
        f"there ({', '.join(files)}) will belong to root, and {name}'s runs (the service, the "
        f"timer) will fail on them; run syncd as {name} instead: sudo -u {name} syncd ..."
    )


def chown_advice(state_dir: Path, owner: int) -> str | None:
    """Said after a run as root: the files now not the owner's, each named, and the
    ``chown`` that gives them all back; None when there are none."""
    taken = not_owned_by(state_dir, owner)
    if not taken:
        return None
    name = user_name(owner)
    paths = " ".join(str(p) for p in taken)
    return (
        f"{len(taken)} file{'s' if len(taken) > 1 else ''} in {state_dir} now belong to root, "
        f"not {name}: {', '.join(p.name for p in taken)}; give them back before {name}'s "
        f"next run: sudo chown {name}: {paths}"
    )
