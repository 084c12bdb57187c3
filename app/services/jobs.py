"""Jobs: guarded state transitions (through ``app.states``), claims for dispatchers, details."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, func, select, text, update
from sqlmodel import Session, col

from app.errors import JobNotFound, OutputNotFound
from app.models import Batch, Job, JobInput, JobOutput, User
from app.schemas import FileRef, JobOut
from app.services.common import bump_change, chunks, is_postgres, now
from app.services.lookup import get_job_or_404
from app.states import BatchState, JobState, batch_sources, job_sources


def transition(
    session: Session,
    *,
    job_ids: Sequence[int],
    target: JobState,
    values: dict[str, Any] | None = None,
    worker_id: str | None = None,
) -> list[int]:
    """Move jobs to ``target`` where the transition table allows it; returns the moved ids.

    One change number is taken for the whole call; ``worker_id`` additionally requires the
    job to still be claimed by that worker (a requeued job is not finished by a ghost).
    """
    if not job_ids:
        return []
    change = bump_change(session)
    moved: list[int] = []
    batch_ids: set[int] = set()
    sets: dict[str, Any] = {"state": target.value, "change": change, **(values or {})}
    if target in (JobState.done, JobState.error, JobState.aborted):
        sets.setdefault("finished_at", now())
    for part in chunks(list(job_ids)):
        stmt = (
            update(Job)
            .where(col(Job.id).in_(part), col(Job.state).in_(job_sources(target)))
            .values(**sets)
            .returning(col(Job.id), col(Job.batch_id))
        )
        if worker_id is not None:
            stmt = stmt.where(col(Job.worker_id) == worker_id)
        for job_id, batch_id in session.execute(stmt).all():
            moved.append(job_id)
            batch_ids.add(batch_id)
    # The batches come back with the update: no second query to find them.
    complete_batches(session, batch_ids=batch_ids)
    return moved


def complete_batches(session: Session, *, batch_ids: set[int]) -> None:
    """Mark in-progress batches whose every job is terminal as complete."""
    if not batch_ids:
        return
    active = [JobState.queued.value, JobState.in_progress.value]
    unfinished = (
        select(col(Job.id))
        .where(col(Job.batch_id) == col(Batch.id), col(Job.state).in_(active))
        .exists()
    )
    session.execute(
        update(Batch)
        .where(
            col(Batch.id).in_(sorted(batch_ids)),
            col(Batch.state).in_(batch_sources(BatchState.complete)),
            ~unfinished,
        )
        .values(state=BatchState.complete.value, completed_at=now())
    )


def _runnable(backend: str) -> Select[int | None]:
    return (
        select(col(Job.id))
        .join(Batch, col(Batch.id) == col(Job.batch_id))
        .where(
            col(Job.state) == JobState.queued.value,
            col(Batch.state) == BatchState.in_progress.value,
            col(Batch.backend) == backend,
        )
        .order_by(col(Job.id))
    )


def has_runnable(session: Session, *, backend: str) -> bool:
    """Cheap, lock-free check that ``claim`` would find work (idle polls take no write lock)."""
    return session.execute(_runnable(backend).limit(1)).first() is not None


def claim(session: Session, *, worker_id: str, backend: str, limit: int) -> list[int]:
    """Claim up to ``limit`` queued jobs of submitted batches for ``worker_id``.

    PostgreSQL: ``FOR UPDATE SKIP LOCKED`` lets several workers claim without waiting on
    each other; SQLite: the write transaction is exclusive. Either way a job is claimed once.
    """
    if limit <= 0:
        return []
    # The counter first, as every writer does, so row locks are never waited on in reverse.
    change = bump_change(session)
    runnable = _runnable(backend).limit(limit)
    if is_postgres(session):
        runnable = runnable.with_for_update(of=Job, skip_locked=True)
    ids = list(session.execute(runnable).scalars())
    if not ids:
        return []
    return list(
        session.execute(
            update(Job)
            .where(col(Job.id).in_(ids), col(Job.state) == JobState.queued.value)
            .values(
                state=JobState.in_progress.value,
                change=change,
                worker_id=worker_id,
                attempts=col(Job.attempts) + 1,
                started_at=now(),
            )
            .returning(col(Job.id))
        ).scalars()
    )


def requeue_lost(
    session: Session, *, backend: str, live_workers: Sequence[str], max_attempts: int
) -> tuple[int, int]:
    """Jobs claimed by workers that are gone: requeue, or fail after ``max_attempts``."""
    lost = (
        select(col(Job.id), col(Job.attempts))
        .join(Batch, col(Batch.id) == col(Job.batch_id))
        .where(
            col(Job.state) == JobState.in_progress.value,
            col(Batch.backend) == backend,
            col(Job.worker_id).not_in(list(live_workers)) | col(Job.worker_id).is_(None),
        )
    )
    rows = session.execute(lost).all()
    retry = [r[0] for r in rows if r[1] < max_attempts]
    give_up = [r[0] for r in rows if r[1] >= max_attempts]
    requeued = transition(
        session, job_ids=retry, target=JobState.queued, values={"worker_id": None}
    )
    failed = transition(
        session,
        job_ids=give_up,
        target=JobState.error,
        values={"error": f"worker lost {max_attempts} times; giving up"},
    )
    return len(requeued), len(failed)


def counts_by_state(session: Session, *, batch_id: int) -> dict[str, int]:
    """Jobs of a batch by state, in one aggregate query."""
    rows = session.execute(
        select(col(Job.state), func.count())
        .where(col(Job.batch_id) == batch_id)
        .group_by(col(Job.state))
    ).all()
    counts = {s.value: 0 for s in JobState}
    counts.update({state: int(n) for state, n in rows})
    return counts


def job_out(session: Session, *, job: Job) -> JobOut:
    """The full view of a job."""
    batch_name, app_name = session.execute(
        text(
            "SELECT b.name, a.name FROM batches b JOIN apps a ON a.id = b.app_id WHERE b.id = :id"
        ),
        {"id": job.batch_id},
    ).one()
    inputs = session.execute(
        select(JobInput).where(col(JobInput.job_id) == job.id).order_by(col(JobInput.position))
    ).scalars()
    outputs = session.execute(
        select(JobOutput).where(col(JobOutput.job_id) == job.id).order_by(col(JobOutput.name))
    ).scalars()
    return JobOut(
        name=job.name,
        state=job.state,
        batch=batch_name,
        app=app_name,
        args=list(job.args),
        env=job.env,
        inputs=[
            FileRef(name=i.name, md5=i.md5 or i.url_md5, size=i.size, url=i.url) for i in inputs
        ],
        outputs_wanted=list(job.outputs_wanted),
        outputs=[FileRef(name=o.name, md5=o.md5, size=o.size) for o in outputs],
        exit_code=job.exit_code,
        wall_seconds=job.wall_seconds,
        cpu_seconds=job.cpu_seconds,
        error=job.error,
        attempts=job.attempts,
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        change=str(job.change),
    )


def get_output_or_404(session: Session, *, user: User, job_name: str, output: str) -> JobOutput:
    """One output of the user's job."""
    job = get_job_or_404(session, owner=user, name=job_name)
    row: JobOutput | None = (
        session.execute(
            select(JobOutput).where(col(JobOutput.job_id) == job.id, col(JobOutput.name) == output)
        )
        .scalars()
        .first()
    )
    if row is None:
        raise OutputNotFound(
            f"job {job_name} has no output {output} (state {job.state})",
            job=job_name,
            output=output,
        )
    return row


def abort_named(session: Session, *, user: User, names: Sequence[str]) -> int:
    """Abort the user's jobs by name: all names checked first; finished jobs are left alone."""
    wanted = list(dict.fromkeys(names))
    found: dict[str, int] = {}
    for part in chunks(wanted):
        q = select(col(Job.name), col(Job.id)).where(
            col(Job.owner_id) == user.id, col(Job.name).in_(part)
        )
        found.update({n: i for n, i in session.execute(q).all()})
    missing = [n for n in wanted if n not in found]
    if missing:
        raise JobNotFound(
            f"no job named {missing[0]}"
            + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""),
            job=missing[0],
            jobs=missing[:100],
        )
    return len(transition(session, job_ids=list(found.values()), target=JobState.aborted))
