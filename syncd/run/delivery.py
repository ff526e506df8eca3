"""A run's apply step: its plan's changes sent through the executor, then what the platform
holds settled and the cursors advanced (``syncd.run.runner`` calls these once a plan is decided
and may be applied; the run's summary and outcome stay the runner's).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial

from syncd import snapshot as store
from syncd.config import Settings, platform_of
from syncd.errors import EXIT_OK, EXIT_PARTIAL
from syncd.executor import ApplyResult, Executor, Lease, Pipeline, Progress
from syncd.model import Directory, Kind
from syncd.plan import Plan, PlatformView, Snapshot
from syncd.platform import PlatformClient
from syncd.run import cursors, known_problems
from syncd.sources.photos import photo_reader
from syncd.survey.settle import settle


def deliver(
    settings: Settings,
    state: store.StateStore,
    client: PlatformClient,
    run_id: int,
    the_plan: Plan,
    snapshot: Snapshot,
    view: PlatformView,
    directory: Directory | None,
    *,
    now_ms: Callable[[], int],
    progress: Progress,
    stop: threading.Event,
    lease: Lease | None,
) -> ApplyResult:
    """Send the plan's changes (their journal rows already recorded); the result holds the
    known problems this run found and has not told yet, unless it was interrupted."""
    applied = ApplyResult()
    if the_plan.changes:  # else no executor: its set-up goes over the whole snapshot
        assert directory is not None  # only an unchanged source is not read: no changes
        photos = photo_reader(settings.source) if settings.source else None
        if snapshot.partial:  # the executor's set-up goes over everyone, as syncd left them
            snapshot = state.with_people(snapshot)
        platform = platform_of(settings)
        pipeline = Pipeline(
            client,
            state,
            run_id,
            snapshot,
            root_id=view.root_id,
            root_name=view.root_name,
            paths=current_paths(snapshot, view, the_plan),
            department_path=partial(_directory_path, directory, view.root_name),
            batch_size=platform.batch_size,
            concurrency=platform.concurrency,
            now_ms=now_ms,  # the injected time too (locked_since, grace periods)
            progress=progress,
            stop=stop,
            lease=lease,
        )
        try:
            applied = Executor(pipeline, snapshot, photos).apply(the_plan)
        finally:
            if photos is not None:
                photos.close()
    if applied.interrupted:  # told by the next run, with what a killed run found
        applied.new_problems = []
    else:
        applied.new_problems += known_problems.untold(state, run_id)
    return applied


def outcome_of(applied: ApplyResult) -> tuple[str, int]:
    """The run's outcome and exit code once its plan was applied without a run-level error."""
    if applied.interrupted:
        return "interrupted", EXIT_PARTIAL
    if applied.failed or applied.new_problems:
        # A new known problem is told once, as a partial run (exit 1), though its person
        # was written (without the value): the next runs, with nothing new, exit 0.
        return "partial", EXIT_PARTIAL
    return "ok", EXIT_OK


def advance(
    settings: Settings,
    state: store.StateStore,
    client: PlatformClient,
    applied: ApplyResult,
    the_plan: Plan,
    snapshot: Snapshot,
    view: PlatformView,
    directory: Directory | None,
) -> None:
    """Move the cursors on past what this run read and applied (a clean run's changes
    settled first on the platform when the drift check is on)."""
    clean = not applied.failed and not applied.interrupted
    mark = directory.cursor if directory is not None else None
    settled = None
    if clean and the_plan.changes and settings.sync.drift_check:
        concurrency = platform_of(settings).concurrency
        settled = settle(client, view, the_plan, snapshot, concurrency)
    cursors.advance(state, view, the_plan, mark, clean=clean, settled=settled)


def _directory_path(directory: Directory, root_name: str, department_id: str) -> str | None:
    if department_id not in directory.departments:
        return None
    return "/".join((root_name, *directory.path(department_id)))


def current_paths(snapshot: Snapshot, view: PlatformView, the_plan: Plan) -> dict[str, str]:
    """Each synced department's name path on the platform (from a full listing when there is
    one), and each adopted node's: new departments are created under them before the
    adoptions themselves are applied."""
    listed = view.name_paths() if view.complete_listing else {}
    paths = {k: listed.get(d.node_id, d.name_path) for k, d in snapshot.departments.items()}
    found = view.name_paths()  # only the nodes whose whole chain was listed
    for c in the_plan.changes:
        if c.kind is Kind.DEPARTMENT and c.platform_before is not None and c.target_id in found:
            paths.setdefault(c.key, found[c.target_id])
    return paths
