"""Evidence over memory, generated (issue 32): random histories of hires, leavers, recycled
usernames, syncs, backups and restores (with ``last-run``, onto a new host without it, a
state directory rolled back with it), each run answered as an admin would (a database
found behind is rebuilt). After every run: no account ever carries another source id than
the one it was made for, and after a clean run nobody the source does not call active
can sign in with an account syncd wrote. Leavers are locked or removed: a removed one's
username is free for a new hire's account, which a database restored from before holds
under the former holder (found by the identity campaign, seed 628)."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from random import Random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncd.cli import run_cli
from syncd.emulator import RunningEmulator
from syncd.errors import EXIT_FAILED, EXIT_OK
from tests.engine.company import World, employee, small_company
from tests.support.examples import examples

STEPS = st.lists(st.sampled_from(("hire", "leave", "recycle", "sync", "turnover")), max_size=4)
RESTORES = st.sampled_from(("restore", "new_host", "rollback"))
POLICIES = st.sampled_from(("lock", "remove", "lock_then_remove"))
# Before the backup, between it and the restore (someone hired and synced there), after.
HISTORIES = st.builds(
    lambda before, between, how, after: [
        *before,
        "sync",
        "backup",
        "hire",
        *between,
        "sync",
        how,
        *after,
    ],
    STEPS,
    STEPS,
    RESTORES,
    STEPS,
)


@dataclass
class History:
    world: World
    hired: int = 10
    gone: list[str] = field(default_factory=list)  # usernames of people who left
    owners: dict[int, str | None] = field(default_factory=dict)  # account id -> extension_id
    backed_up: bool = False
    chance: Random = field(default_factory=Random)  # who leaves, whose username is recycled

    @property
    def state(self) -> Path:
        return self.world.folder / "state"

    @property
    def copies(self) -> Path:
        return self.world.folder / "copies"

    def hire(self, username: str | None = None) -> None:
        n = self.hired = self.hired + 1
        name = username or f"user{n}"
        self.world.company.employees.append(
            employee(f"E{n}", name, "D3", name=f"Person {n}", mobile=f"1390000{n:04d}")
        )

    def leave(self) -> None:
        """The newest hire, or anyone, leaves."""
        people = self.world.company.employees
        if len(people) > 1:
            at = -1 if self.chance.random() < 0.5 else self.chance.randrange(len(people))
            self.gone.append(people.pop(at)["username"])

    def turnover(self) -> None:
        """Someone leaves, a sync, their username given to a new hire, a sync."""
        self.leave()
        self.sync()
        self.recycle(newest=True)
        self.sync()

    def recycle(self, newest: bool = False) -> None:
        taken = {e["username"] for e in self.world.company.employees}
        free = [u for u in self.gone if u not in taken]
        if free:
            self.hire(free[-1] if newest else self.chance.choice(free))

    def backup(self) -> None:
        database = self.state / "syncd.db"
        if not database.exists():
            return
        shutil.rmtree(self.copies, ignore_errors=True)
        self.copies.mkdir()
        with closing(sqlite3.connect(database)) as db:  # `syncd state backup`'s copy
            db.execute("VACUUM INTO ?", [str(self.copies / "syncd.db")])
        shutil.copytree(self.state, self.copies / "directory")  # a VM snapshot's
        self.backed_up = True

    def restore(self, how: str) -> None:
        if not self.backed_up:
            return
        if how == "rollback":  # the whole directory, last-run and all
            shutil.rmtree(self.state)
            shutil.copytree(self.copies / "directory", self.state)
            return
        if how == "new_host":  # the nightly backup alone
            shutil.rmtree(self.state)
            self.state.mkdir(mode=0o700)
        for leftover in self.state.glob("syncd.db*"):
            leftover.unlink()
        shutil.copy(self.copies / "syncd.db", self.state / "syncd.db")

    def sync(self) -> None:
        """A run, and the admin's answer to a database found behind: rebuild, run again."""
        result = self.world.sync()
        if result.exit_code == EXIT_FAILED and "is behind the platform" in (result.error or ""):
            self.check_accounts()  # nothing was changed meanwhile
            config = str(self.world.folder / "syncd.toml")
            assert run_cli(["state", "rebuild", "--config", config]) == EXIT_OK
            result = self.world.sync()
        assert result.exit_code == EXIT_OK, result.error
        self.check_accounts()
        active = {e["id"] for e in self.world.company.employees if e["status"] == "active"}
        for account in self.world.emulator.state()["employees"]:
            extension_id = account.get("extension_id")
            if extension_id and not account["locked"]:
                assert extension_id in active, (account["username"], extension_id)

    def check_accounts(self) -> None:
        """An account keeps the source id it was made for: never handed to another."""
        for account in self.world.emulator.state()["employees"]:
            first = self.owners.setdefault(account["id"], account.get("extension_id"))
            assert account.get("extension_id") == first, (account["username"], first)


@settings(
    max_examples=examples(15),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(HISTORIES, POLICIES, st.randoms(use_true_random=False))
def test_restores_and_recycled_usernames_never_give_an_account_to_another(
    emulator_server: RunningEmulator, events: list[str], policy: str, chance: Random
) -> None:
    emulator_server.reset(data=True)
    with tempfile.TemporaryDirectory() as folder:
        limits = {"max_removal_ratio": 1.0, "leaver_policy": policy}
        world = World(Path(folder), emulator_server, small_company(), limits)
        history = History(world, chance=chance)
        history.sync()
        for event in [*events, "sync"]:
            if event in ("restore", "new_host", "rollback"):
                history.restore(event)
            else:
                getattr(history, event)()
