"""Polling: one ``query_batch2`` per BOINC account for all its active batches.

Each sent batch keeps the ``min_mod_time`` of its next poll; batches sharing an account and a
cursor go in one call, so the cost follows the number of changed jobs, not of jobs. After a
poll every polled batch gets the earliest of the new cursors (an earlier cursor only lists
more), which keeps them in one group. The cursor advances only once every finished job it
listed is recorded; until then the same jobs are listed again and deduplicated by their state
in the database. Jobs that BOINC sent to a volunteer do not change ``workunit.mod_time``
(protocol reference 2.7), so a full listing every ``BGW_BOINC_FULL_POLL_SECONDS`` shows them.

BOINC status -> gateway state: UNSENT -> queued, IN_PROGRESS -> in_progress, DONE -> outputs
fetched, then done (or error when the app failed or outputs are missing), ERROR -> error.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

import structlog
from sqlmodel import Session

from app.backends.boinc import models as m
from app.backends.boinc import records, sync_records
from app.backends.boinc.context import Context, MappingError, Target, describe
from app.backends.boinc.errors import BoincPermanentError
from app.backends.boinc.results import ExitStatuses, finish
from app.backends.boinc.rpc import BoincClient
from app.models import App
from app.services import jobs as jobs_svc
from app.services.common import now
from app.states import JobState

log = structlog.get_logger(__name__)

_NAMED = re.compile(r"^(?:no batch named|not owner of) (.+)$")


@dataclass
class PollResult:
    """What one poll did."""

    started: int = 0
    finished: int = 0
    backlog: bool = False


def _lose(ctx: Context, row: sync_records.PollRow, exc: BoincPermanentError) -> None:
    message = f"BOINC refused to report on batch {row.name}: {describe(exc)}"
    log.warning("boinc.batch_lost", batch_id=row.batch_id, error=describe(exc))
    with ctx.db.session() as session:
        sync_records.lose_batch(session, batch_id=row.batch_id, message=message)


def _query(
    ctx: Context, client: BoincClient, rows: list[sync_records.PollRow], since: float
) -> m.QueryBatch2Result | None:
    """query_batch2 for the rows; a batch BOINC refuses is dropped (its jobs fail)."""
    rows = list(rows)
    while rows:
        by_name = {name: r for r in rows for name in ctx.namer.parts(r.batch_id, r.name, r.parts)}
        try:
            return client.query_batch2(list(by_name), since)
        except BoincPermanentError as exc:
            culprit = _culprit(exc, by_name)
            # Not about one batch (e.g. a bad authenticator): every batch of the account.
            lost = rows if culprit is None else [culprit]
            for row in lost:
                _lose(ctx, row, exc)
            rows = [r for r in rows if r not in lost]
    return None


def _culprit(
    exc: BoincPermanentError, by_name: dict[str, sync_records.PollRow]
) -> sync_records.PollRow | None:
    match = _NAMED.match(exc.message.strip())
    return by_name.get(match.group(1).strip()) if match else None


def poll(
    ctx: Context,
    *,
    full: bool,
    target: Callable[[App, str], Target],
    apps: Callable[[int], App],
    keep_lease: Callable[[], object],
) -> PollResult:
    """Poll every sent batch with unfinished jobs; record what changed."""
    with ctx.db.read_session() as session:
        rows = sync_records.pollable(session)
    groups: dict[tuple[str, float], list[sync_records.PollRow]] = {}
    for row in rows:
        auth = ctx.authenticator(row.own_auth)
        groups.setdefault((auth, 0.0 if full else row.poll_since), []).append(row)
    statuses: dict[str, str] = {}
    polled: list[int] = []
    cursors: list[float] = []
    for (auth, since), group in groups.items():
        reply = _query(ctx, ctx.clients.get(auth), group, since)
        if reply is None:
            continue
        for job in reply.jobs:
            statuses[job.name] = job.status
        polled.extend(r.batch_id for r in group)
        cursors.append(reply.next_min_mod_time)
    result = _apply(ctx, statuses, target=target, apps=apps, keep_lease=keep_lease)
    if polled and not result.backlog:
        with ctx.db.session() as session:
            sync_records.set_poll_since(session, batch_ids=polled, value=min(cursors))
    return result


def _apply(
    ctx: Context,
    statuses: dict[str, str],
    *,
    target: Callable[[App, str], Target],
    apps: Callable[[int], App],
    keep_lease: Callable[[], object],
) -> PollResult:
    by_id = {i: s for n, s in statuses.items() if (i := ctx.namer.job_id(n)) is not None}
    if not by_id:
        return PollResult()
    with ctx.db.read_session() as session:
        jobs = sync_records.job_rows(session, job_ids=list(by_id))
    active = {JobState.queued.value, JobState.in_progress.value}
    start = [j.id for j in jobs.values() if j.state == "queued" and by_id[j.id] == "IN_PROGRESS"]
    ended = [j for j in jobs.values() if j.state in active and by_id[j.id] in ("DONE", "ERROR")]
    result = PollResult()
    if start:
        with ctx.db.session() as session:
            result.started = len(_start(session, start))
    limit = max(1, ctx.settings.boinc_fetch_per_step)
    result.backlog = len(ended) > limit
    exits = ExitStatuses()
    work: list[tuple[sync_records.JobRow, BoincClient, App, tuple[str, ...]]] = []
    for job in ended[:limit]:
        try:
            app = apps(job.app_id)
            auth = ctx.authenticator(job.own_auth)
            work.append((job, ctx.clients.get(auth), app, target(app, auth).output_order))
        except (BoincPermanentError, MappingError) as exc:
            _unfinishable(ctx, job, exc)
            result.finished += 1

    def one(item: tuple[sync_records.JobRow, BoincClient, App, tuple[str, ...]]) -> None:
        job, client, app, order = item
        try:
            finish(ctx, client, job, by_id[job.id], app, order, exits)
        except (BoincPermanentError, MappingError) as exc:
            _unfinishable(ctx, job, exc)

    # Each job costs round trips (query_completed_job, one download per output): over a
    # real network they are latency-bound, so several jobs are fetched at a time.
    threads = max(1, min(ctx.settings.boinc_fetch_threads, len(work)))
    with ThreadPoolExecutor(threads, thread_name_prefix="boinc-fetch") as pool:
        futures = [pool.submit(one, item) for item in work]
        for k, future in enumerate(as_completed(futures)):
            if k and k % 10 == 0:
                keep_lease()
            future.result()  # a retryable error ends the round (the rest still finish)
            result.finished += 1
    return result


def _unfinishable(ctx: Context, job: sync_records.JobRow, exc: Exception) -> None:
    log.warning("boinc.job_unfinishable", job=job.name, error=describe(exc))
    with ctx.db.session() as session:
        records.fail_jobs(session, job_ids=[job.id], message=f"BOINC: {describe(exc)}")


def _start(session: Session, job_ids: list[int]) -> list[int]:
    return jobs_svc.transition(
        session, job_ids=job_ids, target=JobState.in_progress, values={"started_at": now()}
    )
