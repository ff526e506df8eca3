"""One sync: gather, plan, guard, record the plan, deliver it (``delivery``), record the run.

Every run, dry or real, leaves a row in ``runs`` with its plan items and outcome; a run
that cannot start (settings, lock) raises before anything is recorded.
"""

from __future__ import annotations

import gc
import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from syncd import snapshot as store
from syncd._gc import collection_paused
from syncd.clock import Stopwatch, now_ms
from syncd.config import Settings, platform_of
from syncd.errors import (
    EXIT_BLOCKED,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_PARTIAL,
    SyncdError,
)
from syncd.executor import ApplyResult, NoProgress, Progress, item_rows, lease_lost
from syncd.logs import redact
from syncd.model import Directory
from syncd.plan import (
    ACCESS_KEPT,
    Departures,
    GuardDecision,
    Note,
    Plan,
    Planning,
    PlatformView,
    Snapshot,
    SyncedEmployee,
    check_guards,
    departures,
)
from syncd.platform import PlatformClient
from syncd.report.value import scheduled_summary
from syncd.run import cursors, delivery, known_problems, rebuild, unchanged
from syncd.run.leadership import Lease, Turn, run_turn
from syncd.run.lock import run_lock
from syncd.run.policy import limits_of, policy_of
from syncd.run.recovery import Recovery, recover
from syncd.run.runs import apply_retention
from syncd.sources import describe_sources, read_source, set_aside, source_kind
from syncd.survey.view import adopting, newcomers, read_platform, with_adoptions

if TYPE_CHECKING:
    from syncd.run.saved_plan import SavedPlan

log = logging.getLogger("syncd.runner")


@dataclass(frozen=True)
class RunRequest:
    dry_run: bool = False
    read: Literal["full", "incremental"] = "full"
    allow_removals: int | None = None
    allow_reactivations: int | None = None
    allow_updates: int | None = None
    trigger: str = "shell"
    save_plan: Path | None = None  # a dry run: write its plan there for `syncd apply`
    saved: SavedPlan | None = None  # apply this saved plan, if it is the plan made now
    # The time the plan is made for, in ms (tests set the date; None: the wall clock).
    now_ms: int | None = None


@dataclass
class RunResult:
    run_id: int
    outcome: str  # ok, partial, failed, blocked, interrupted
    exit_code: int
    dry_run: bool
    plan: Plan | None = None
    directory: Directory | None = None  # None when the source was not read
    source: dict[str, Any] | None = None  # what the read found, or what an unchanged run's did
    guards: list[GuardDecision] = field(default_factory=list)
    applied: ApplyResult | None = None
    error: str | None = None
    finished_at: int | None = None  # ms, as recorded


# ---------------------------------------------------------------- one sync


def run_sync(
    settings: Settings,
    request: RunRequest,
    *,
    state: store.StateStore | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    lock_wait_seconds: float = 0.0,
    on_planned: Callable[[RunResult], bool | None] | None = None,
    lease: Lease | None = None,
) -> RunResult:
    """Run one sync under the run lock; raises only when it cannot start.
    A real run writes under the lease (``leadership``): the daemon's ``lease``, or its own
    (LeaseHeld, exit 4, when another instance holds it).

    ``on_planned(result)`` is called once the plan is recorded and the guards have
    decided, before anything is sent (a terminal shows the plan there, and asks): False
    means not to apply it, and the run ends as interrupted with nothing sent.
    """
    own_store = state is None
    state = state or store.StateStore.open(settings.database, settings.database_url)
    purpose = f"{request.trigger} {'dry run' if request.dry_run else 'sync'}"
    try:
        with run_lock(settings.state_dir, purpose, lock_wait_seconds):
            # What an earlier run in this process froze goes back to the collector (_sync).
            gc.unfreeze()
            with run_turn(settings, state, dry_run=request.dry_run, lease=lease) as (
                turn,
                by,
            ):
                state.interrupt_stale_runs(now_ms(), by.alive())
                run = _Run(settings, request, state, progress, stop, on_planned, (turn, by))
                result = run.execute()
        # Outside the lock: a slow notification must not hold up the next sync.
        after_run(settings, state, result.run_id)
    finally:
        if own_store:
            state.close()  # its connections are closed now, not whenever it is collected
    return result


def after_run(settings: Settings, state: store.StateStore, run_id: int) -> None:
    """Once a run is recorded: apply retention, and notify whoever the settings name."""
    from syncd.run.notifications import notify_all  # smtplib, and httpx when there is a message

    apply_retention(settings, state)
    notify_all(settings, state, run_id)


class _StoppedEarly(Exception):  # a signal, not an error: caught in _Run.execute
    """A signal came while the run read or planned: nothing was sent, so it ends at once."""


class _Run:
    def __init__(
        self,
        settings: Settings,
        request: RunRequest,
        state: store.StateStore,
        progress: Progress | None,
        stop: threading.Event | None,
        on_planned: Callable[[RunResult], bool | None] | None,
        turn: tuple[Turn | None, Lease],
    ) -> None:
        self.settings = settings
        self.turn, self.lease = turn  # the turn: None for a dry run
        self.request = request
        # A real run's writes are fenced in the store: each transaction is refused, before
        # its commit, once another instance holds the lease (StateStore.fenced).
        self.state = state.fenced(self.turn.fence) if self.turn is not None else state
        self.progress = progress or NoProgress()
        self.stop = stop or threading.Event()
        self.on_planned = on_planned
        self.policy = policy_of(settings)
        self.started = now_ms()
        self.steps = Stopwatch()  # the summary's steps_ms: where the run's time went
        self.summary: dict[str, Any] = {}
        self.recovery_note: str | None = None
        read = "full" if source_kind(settings) != "ldap" else request.read
        self.run_id = state.start_run(
            trigger=request.trigger,
            mode="dry_run" if request.dry_run else "apply",
            read=read,
            source=describe_sources(settings),
            started_at=self.started,
            epoch=self.turn.epoch if self.turn is not None else None,
            instance=self.lease.me.instance,
        )
        self.result = RunResult(self.run_id, "failed", EXIT_FAILED, request.dry_run)

    def execute(self) -> RunResult:
        client: PlatformClient | None = None
        try:
            client = PlatformClient(platform_of(self.settings), self.state.tokens)
            self._sync(client)
        except _StoppedEarly:
            self.result.outcome, self.result.exit_code = "interrupted", EXIT_PARTIAL
            log.info("run %d interrupted before anything was sent", self.run_id)
        except SyncdError as exc:
            self._ended_by(exc)
        finally:
            if client is not None:
                self.summary["retries"] = client.retries
                self.summary["calls"] = dict(client.calls)
                client.close()
            self._finish()
        return self.result

    def _ended_by(self, exc: SyncdError) -> None:
        """A run-level error: the run failed; or, when it is the lease lost, interrupted
        (the store refused a write, or a write failed once the lease is surely another's:
        a takeover ends the former holder's PostgreSQL sessions), as a fenced batch is."""
        if lease_lost(self.turn, exc):
            self.result.outcome, self.result.exit_code = "interrupted", EXIT_PARTIAL
            fenced = self.turn.fenced if self.turn is not None else None
            self.result.error = f"fenced: {fenced}" if fenced else redact(str(exc))
            log.warning("run %d interrupted: %s", self.run_id, self.result.error)
            return
        self.result.outcome, self.result.exit_code = "failed", EXIT_FAILED
        self.result.error = redact(str(exc))
        log.error("run %d failed: %s", self.run_id, self.result.error)

    def _sync(self, client: PlatformClient) -> None:
        """The run, top to bottom: recover what a crash left in flight; gather the
        snapshot, the platform and the source (or the memo of the same inputs); check
        continuity; plan; guard (the saved plan's check among the guards); record the plan;
        deliver it; remember a run that planned nothing."""
        rebuild.check_binding(self.state, self.settings)  # before anything is read there
        recovered = self._recover(client)
        self.steps.lap("recover")
        # A state database made, restored or lost since it was last compared with the
        # platform is compared on this read (which is then made in full): rebuild.py.
        unchecked = not self.state.checked()
        # A plan made from a saved one's inputs, or after recovery changed the snapshot,
        # is made in full: no memo.
        memorable = not (recovered or self.request.saved or self.request.save_plan or unchecked)
        digest = unchanged.source_digest(self.settings) if memorable else None
        snapshot, view, read = self._gather(client, digest, unchecked)
        self.steps.lap("read")
        # After the platform's reads (the slow part): a standby whose dry run was
        # abandoned (it took the lease meanwhile) plans no more.
        self._step("planning")
        if isinstance(read, unchanged.Memo):
            the_plan, guards = self._recalled(read)
            directory = None
        else:
            directory = read
            snapshot, view = self._continuity(client, view, snapshot, directory, unchecked)
            self.steps.lap("read")
            self._step("planning")  # the continuity check may have read the platform again
            the_plan = self._plan(snapshot, view, directory)
            the_plan, guards = self._guard(the_plan, snapshot, directory)
        self.steps.lap("plan")
        self._record(the_plan, guards)
        self.steps.lap("journal")
        if self._may_deliver(guards):
            self._deliver(client, the_plan, snapshot, view, directory)
        if digest is not None and directory is not None:
            self._remember(digest, the_plan, guards, snapshot, view, directory)

    def _recover(self, client: PlatformClient) -> bool:
        """Resolve what a run that died left sent without an answer (only a writer does);
        whether that changed the snapshot."""
        mine = self.turn is not None or self.lease.may_recover()
        recovery = (
            recover(client, self.state, now_ms(), self.policy.extended_fields)
            if mine
            else Recovery()
        )
        self.summary["recovered"] = recovery.resolved
        self.recovery_note = recovery.note
        return bool(recovery.resolved)

    def _gather(
        self, client: PlatformClient, digest: str | None, unchecked: bool
    ) -> tuple[Snapshot, PlatformView, Directory | unchanged.Memo]:
        """The snapshot, the platform's view and the source's directory (or the memo)."""
        # A saved plan's fingerprint and a continuity check go over everyone syncd holds.
        whole = bool(self.request.saved or self.request.save_plan or unchecked)
        snapshot, view, read = self._inputs(client, digest, whole)
        # Known problems whose holder gave the value up are tried again: a plan is made.
        # Holders followed: the problems of values passed on name their holder now.
        snapshot, released = known_problems.follow(client, self.state, snapshot)
        if released and isinstance(read, unchanged.Memo):
            snapshot, view, read = self._inputs(client, None, whole)
        return snapshot, replace(view, released=released), read

    def _plan(self, snapshot: Snapshot, view: PlatformView, directory: Directory) -> Plan:
        """The plan: plain values, made from what was gathered."""
        with collection_paused(freeze=True):
            # The fields planning weighs, then those of the people the draft changes: each
            # read once, in one query, before planning goes on; the plan is plain values.
            snapshot = self.state.weighed_fields(snapshot, directory, view)
            planning = Planning(directory, snapshot, view, self.policy, self._now())
            while (wanted := planning.wanted()) is not None:
                planning.give(self.state.written_fields(wanted))
            the_plan = planning.plan()
        if told := set_aside.notes(self.summary["source"]):  # replayed from the summary after
            the_plan = replace(the_plan, notes=(*the_plan.notes, *told))
        return the_plan

    def _guard(
        self, the_plan: Plan, snapshot: Snapshot, directory: Directory
    ) -> tuple[Plan, list[GuardDecision]]:
        """The guards' decisions; a saved plan being applied is one of them (first), and
        a plan asked to be saved is written with them."""
        limits = limits_of(self.settings, self.request)
        guards = check_guards(the_plan, directory, snapshot, limits)
        saved, save_to = self.request.saved, self.request.save_plan
        if saved is None and save_to is None:
            return the_plan, guards
        from syncd.run import saved_plan  # approve-then-apply only

        if saved is not None:
            now = saved_plan.Situation(directory, snapshot, self.policy, limits)
            recorded = self.state.cursor(saved.identity)  # applied before: its record
            applied = None if recorded is None else store.json_object(recorded)
            decision, note = saved_plan.check(saved, self.settings, the_plan, now, applied)
            guards.insert(0, decision)
            if note is not None:  # the same changes from moved inputs: said on screen too
                the_plan = replace(the_plan, notes=(*the_plan.notes, note))
        if save_to is not None:
            saved_plan.write(
                save_to,
                run_id=self.run_id,
                settings=self.settings,
                plan=the_plan,
                guards=guards,
                directory=directory,
                snapshot=snapshot,
                policy=self.policy,
                limits=limits,
            )
        return the_plan, guards

    def _continuity(
        self,
        client: PlatformClient,
        view: PlatformView,
        snapshot: Snapshot,
        directory: Directory,
        unchecked: bool,
    ) -> tuple[Snapshot, PlatformView]:
        """Compare the database with the platform when it is unchecked, or when the read
        came upon evidence that it is behind (``last-run`` missing, or rolled back with
        it: ``rebuild.behind``); the snapshot, holding everyone if it was compared, and the
        view, with the accounts it followed (``PlatformView.followed``)."""
        if not unchecked and view.marked:
            unchecked = bool(rebuild.behind(self.state, view, snapshot, directory, self.settings))
            if unchecked and snapshot.partial:
                snapshot = self.state.with_people(snapshot)
        if not unchecked:
            return snapshot, view
        settings = self.settings
        followed = rebuild.check_continuity(self.state, client, view, snapshot, directory, settings)
        return snapshot, replace(view, followed=followed) if followed else view

    def _inputs(
        self, client: PlatformClient, digest: str | None, whole: bool
    ) -> tuple[Snapshot, PlatformView, Directory | unchanged.Memo]:
        """The snapshot, the platform's view, and the directory read from the source, or the
        memo of a run that planned nothing from the same inputs (then nothing more is read).
        ``whole``: the snapshot holds everyone, not only those the plan asks about."""
        # The directory, the snapshot and the plan live through the run, and after it in
        # the result: made with the cyclic collector off and frozen at once, they are never
        # gone over (its passes found nothing to free, and cost as much as loading the
        # snapshot, applying took a tenth more CPU, and a shell sync's exit 0.25 s). They
        # stay frozen until the next run_sync in this process unfreezes them; values
        # without reference cycles are freed as usual all the same.
        match_by = self.settings.sync.match_by
        # The platform is read first, then the source. Read beside the source (Python's
        # work, holding the interpreter lock), its reader waited for the lock after each
        # answer: a no-change re-sync of 100,000 people from CSV read the platform in
        # 0.7 s instead of 0.04 s, and spent 3% more CPU on the switches. It asks what
        # syncd holds by queries of its own (Held); the plan's snapshot is loaded apart,
        # what decides first, the people after the read (store.people_for).
        platform_cursors, complete = cursors.platform_cursors(self.state), self._expects_complete()
        with collection_paused(freeze=True):
            head = self.state.load_snapshot(everyone=False)
        held = self.state.held(dict(head.departments), head.headcount)
        self._step("reading the platform")
        census, names = cursors.census(self.state), cursors.names(self.state)
        read = read_platform(client, held, complete, platform_cursors, self.settings, census, names)
        memo = unchanged.recall(self.state, digest, head, self._now())
        if memo is not None:
            view = adopting(read, client, head, memo.newcomers, match_by)
            if unchanged.view_digest(view) == memo.view:
                return head, view, memo
        with collection_paused(freeze=True):
            directory = self._read(head, held.employees)
            snapshot = self.state.people_for(
                head, directory, read, everyone=whole, loaded=held.everyone()
            )
        view = with_adoptions(read, client, snapshot, directory, match_by)
        snapshot = self.state.with_history(snapshot, view)  # evidence: adoption
        return snapshot, view, directory

    def _record(self, the_plan: Plan, guards: list[GuardDecision]) -> None:
        """Journal the plan (an item for each change) and the run's summary so far, before
        anything is sent: a run killed while it applies still tells what it planned."""
        self.result.plan, self.result.guards = the_plan, guards
        self.summary["guards"] = [asdict(g) for g in guards]
        self.summary["notes"] = [asdict(n) for n in the_plan.notes]
        if self.recovery_note is not None:
            self.summary["notes"].append(asdict(Note("recovery", "", self.recovery_note)))
        self.summary["planned"] = {
            f"{k.value}.{a.value}": n for (k, a), n in the_plan.counts().items()
        }
        if the_plan.scheduled:  # what the clock will do: not changes
            self.summary["scheduled"] = scheduled_summary(the_plan.scheduled)
        with self.state.transaction() as tx:
            tx.insert_items(self.run_id, item_rows(the_plan.changes))  # streamed
            tx.set_summary(self.run_id, self.summary)

    def _may_deliver(self, guards: list[GuardDecision]) -> bool:
        """Whether the recorded plan is sent: asked first (``on_planned``: a terminal shows
        it), then not when a guard blocks it, the run is dry, or a signal came."""
        declined = self.on_planned is not None and self.on_planned(self.result) is False
        blocked = [g for g in guards if not g.passed]
        if blocked:
            self.result.outcome, self.result.exit_code = "blocked", EXIT_BLOCKED
            self.result.error = "; ".join(g.message for g in blocked)
            log.error("run %d blocked by a guard: %s", self.run_id, self.result.error)
            return False
        if self.request.dry_run:
            self.result.outcome, self.result.exit_code = "ok", EXIT_OK
            return False
        if self.stop.is_set() or declined:
            self.result.outcome, self.result.exit_code = "interrupted", EXIT_PARTIAL
            why = "the plan was declined" if declined else "interrupted"
            log.info("run %d %s before anything was sent", self.run_id, why)
            return False
        return True

    def _remember(
        self,
        digest: str,
        the_plan: Plan,
        guards: list[GuardDecision],
        snapshot: Snapshot,
        view: PlatformView,
        directory: Directory,
    ) -> None:
        """If this run planned nothing, the next one from the same inputs need not plan."""
        if the_plan.changes or the_plan.unweighed_since is not None or not directory.complete:
            return
        if not all(g.passed for g in guards):
            return
        memo = unchanged.Memo(
            run_id=self.run_id,
            source=digest,
            view=unchanged.view_digest(view),
            newcomers=tuple(newcomers(snapshot, directory, view.named)),
            employees=snapshot.headcount,
            departments=len(snapshot.departments),
            removal_due=the_plan.removal_due,
        )
        unchanged.remember(self.state, memo)

    def _recalled(self, memo: unchanged.Memo) -> tuple[Plan, list[GuardDecision]]:
        """What this run reports of a source it did not read: what the memo's run read."""
        the_plan, guards, self.summary["source"] = unchanged.replayed(self.state, memo)
        self.result.source = self.summary["source"]
        self.state.copy_rejected(memo.run_id, self.run_id)
        return the_plan, guards

    def _now(self) -> int:
        """The time the plan is made for: the request's (tests), else the wall clock."""
        return self.request.now_ms if self.request.now_ms is not None else now_ms()

    def _step(self, doing: str, read: int | None = None) -> None:
        """Tell the progress what is under way; a signal before anything is sent stops the
        run here, at once, rather than after the read and the plan."""
        if self.stop.is_set():
            raise _StoppedEarly
        self.progress.step(doing, read)

    def _read(self, snapshot: Snapshot, held: Mapping[str, SyncedEmployee]) -> Directory:
        """The source's directory, with what syncd holds weighed in (``Directory.as_held``:
        ``held``, syncd's people as the database answers)."""
        since = None
        if self.request.read == "incremental" and source_kind(self.settings) == "ldap":
            since = cursors.source_mark(self.state)
        self._step("reading the source")
        read = read_source(
            self.settings,
            since=since,
            count=lambda n: self._step("reading the source", n),
            # Several sources are joined knowing what syncd last wrote of everyone.
            synced=self.state.with_people(snapshot).employees if self.settings.joined else None,
            synced_names={
                k: d.name_path.rsplit("/", 1)[-1] for k, d in snapshot.departments.items()
            },
        )
        # Asked of the database here, for the few rows concerned: the directory stays a value.
        directory = read.as_held(
            lambda k: None if (e := held.get(k)) is None else e.username,
            joined=self.settings.joined,
        )
        self.result.directory = directory
        self.summary["source"] = {
            "kind": source_kind(self.settings),
            "where": describe_sources(self.settings),
            "read": "full" if directory.complete else "incremental",
            "departments": len(directory.departments),
            "employees": len(directory.employees),
            "rejected": len(directory.rejected),
            **set_aside.counts(directory, people_held=snapshot.headcount > 0),
        }
        self.result.source = self.summary["source"]
        self.state.insert_rejected(
            self.run_id,
            [
                {"kind": r.kind.value, "where": r.where, "key": r.key, "reason": r.reason}
                for r in directory.rejected
            ],
        )
        return directory

    def _expects_complete(self) -> bool:
        """Whether the source read will be complete: CSV always, LDAP unless incremental
        with a mark to read from (if a guess is wrong, the run only reads more or finds
        no one deleted on the platform)."""
        return (
            source_kind(self.settings) != "ldap"
            or self.request.read == "full"
            or cursors.source_mark(self.state) is None
        )

    def _deliver(
        self,
        client: PlatformClient,
        the_plan: Plan,
        snapshot: Snapshot,
        view: PlatformView,
        directory: Directory | None,
    ) -> None:
        if self.request.saved is not None:  # applied once: recorded before anything is sent
            from syncd.run import saved_plan

            saved = self.request.saved
            with self.state.transaction() as tx:
                tx.set_cursor(saved.identity, saved_plan.applied_record(saved, self.run_id))
        applied = delivery.deliver(
            self.settings,
            self.state,
            client,
            self.run_id,
            the_plan,
            snapshot,
            view,
            directory,
            now_ms=self._now,
            progress=self.progress,
            stop=self.stop,
            lease=self.turn,
        )
        self.result.applied = applied
        self._record_applied(the_plan, snapshot, directory, applied)
        self.steps.lap("send")
        if applied.error is not None:
            raise applied.error
        self.result.outcome, self.result.exit_code = delivery.outcome_of(applied)
        if applied.new_problems:
            told = known_problems.notes(applied.new_problems)
            self.summary["notes"] = [*self.summary.get("notes", ()), *map(asdict, told)]
            self.result.plan = replace(the_plan, notes=(*the_plan.notes, *told))
        delivery.advance(
            self.settings, self.state, client, applied, the_plan, snapshot, view, directory
        )
        self.steps.lap("read back")

    def _record_applied(
        self,
        the_plan: Plan,
        snapshot: Snapshot,
        directory: Directory | None,
        applied: ApplyResult,
    ) -> None:
        """What the apply leaves besides the snapshot: the dates, the departures, counts."""
        # For the people syncd holds now; the dates of those it let go of go too.
        dates = the_plan.dates if the_plan.dates or the_plan.changes else None
        # The guard on access granted's memory: ids only.
        gone = departures(the_plan, directory, snapshot) if directory is not None else Departures()
        self.state.record_applied(
            dates, gone.departed, gone.returned, gone.let_go, gone.deleted, run_id=self.run_id
        )
        self.summary["known_problems"] = len(known_problems.rows(self.state))  # not failing
        self.summary["results"] = {f"{k}.{a}.{o}": n for (k, a, o), n in applied.counts.items()}

    def _judge_run(self) -> None:
        """A run that would end ok is partial when its read set aside rows for a status
        value nobody named, or most of the source, or rows that keep it from looking for
        leavers (syncd.sources.set_aside); or when people who left keep their access because
        the accounts under their usernames are not theirs (plan.ACCESS_KEPT). Both as the
        summary records them."""
        told = set_aside.problems(self.summary.get("source") or {})
        told += [n["message"] for n in self.summary.get("notes", ()) if n["kind"] == ACCESS_KEPT]
        if not told or self.result.outcome != "ok":
            return
        self.result.outcome, self.result.exit_code = "partial", EXIT_PARTIAL
        self.result.error = "; ".join(told)
        log.warning("run %d partial: %s", self.run_id, self.result.error)

    def _finish(self) -> None:
        self._judge_run()
        self.result.finished_at = finished = now_ms()
        self.summary["error"] = self.result.error
        self.summary["duration_ms"] = finished - self.started
        self.summary["steps_ms"] = self.steps.taken
        self.state.finish_run(
            self.run_id,
            outcome=self.result.outcome,
            exit_code=self.result.exit_code,
            finished_at=finished,
            summary=json.dumps(self.summary, ensure_ascii=False),
        )
