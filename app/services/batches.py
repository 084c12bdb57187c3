"""Batches: atomic bulk creation, idempotent retries, submission, queries, abort, retire, lease."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert, select, update
from sqlmodel import Session, col

from app.errors import (
    BatchExists,
    BatchState,
    InvalidRequest,
    JobExists,
    MissingInputFiles,
)
from app.models import App, Batch, Job, JobInput, StoredFile, User
from app.schemas import BatchCreate, BatchParams, BatchSummary, JobSpec
from app.services import apps as apps_svc
from app.services import files as files_svc
from app.services import jobs as jobs_svc
from app.services import users as users_svc
from app.services.common import bump_change, chunks, insert_ignore, lock_files, now, table_of
from app.services.lookup import get_batch, get_batch_or_404
from app.services.store import FileStore
from app.states import JOB_ACTIVE, JobState, batch_sources
from app.states import BatchState as BS


def spec_hash(value: Any) -> str:
    """A stable digest of a request's content, to recognise a retry."""
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:32]


def _validate_jobs(app: App, jobs: Sequence[JobSpec], max_content: int) -> None:
    """Every job binds each app input exactly once and asks only for outputs the app has."""
    inputs = list(app.inputs)
    outputs = {o["name"] for o in app.outputs}
    seen: set[str] = set()
    for job in jobs:
        if job.name in seen:
            raise InvalidRequest(f"job name {job.name} appears twice", job=job.name)
        seen.add(job.name)
        names = [i.name for i in job.inputs]
        if sorted(names) != sorted(inputs):
            raise InvalidRequest(
                f"job {job.name}: inputs must bind {inputs} exactly once, got {names}",
                job=job.name,
            )
        for i in job.inputs:
            if i.content is not None and len(i.content.encode()) > max_content:
                raise InvalidRequest(
                    f"job {job.name}: content of input {i.name} exceeds {max_content} bytes",
                    job=job.name,
                )
        bad = [o for o in job.outputs or [] if o not in outputs]
        if bad:
            raise InvalidRequest(
                f"job {job.name}: app {app.name} has no output {bad[0]}", job=job.name
            )


def _stage_contents(
    session: Session, *, store: FileStore, user: User, jobs: Sequence[JobSpec], keep: float
) -> tuple[dict[str, str], dict[str, int]]:
    """Store inline ``content`` inputs as files in bulk; returns content -> md5, md5 -> size."""
    contents = sorted({i.content for j in jobs for i in j.inputs if i.content is not None})
    if not contents:
        return {}, {}
    out: dict[str, str] = {}
    with contextlib.ExitStack() as stack:
        staged = []
        for content in contents:
            tmp, md5, size = stack.enter_context(store.staged_bytes(content.encode()))
            staged.append((tmp, md5, size))
            out[content] = md5
        t = now()
        sizes = {m: n for _, m, n in staged}
        new = set(sizes) - files_svc.owned(session, user_id=user.id or 0, md5s=list(sizes))
        users_svc.check_storage_quota(session, user=user, adding=sum(sizes[m] for m in new))
        insert_ignore(
            session, StoredFile, [{"md5": m, "size": n, "created_at": t} for _, m, n in staged]
        )
        lock_files(session, [m for _, m, _ in staged])
        files_svc.claim(session, user_id=user.id or 0, md5s=list(out.values()), keep_until=t + keep)
        for tmp, md5, _ in staged:
            store.place(tmp, md5)
    return out, sizes


def _insert_jobs(
    session: Session,
    *,
    store: FileStore,
    user: User,
    app: App,
    batch: Batch,
    jobs: Sequence[JobSpec],
    keep: float,
) -> int:
    """Bulk-insert jobs and their inputs, after checking files and names; returns the count."""
    if not jobs:
        return 0
    md5s = sorted({i.md5 for j in jobs for i in j.inputs if i.md5 and not i.url})
    sizes: dict[str, int] = {}
    if md5s:
        sizes = lock_files(session, md5s)
        have = files_svc.owned(session, user_id=user.id or 0, md5s=md5s) & sizes.keys()
        missing = [m for m in md5s if m not in have]
        if missing:
            raise MissingInputFiles(
                f"{len(missing)} input file(s) not stored: upload them first", md5s=missing
            )
    names = [j.name for j in jobs]
    for name_part in chunks(names):
        taken = (
            session.execute(
                select(col(Job.name)).where(
                    col(Job.owner_id) == user.id, col(Job.name).in_(name_part)
                )
            )
            .scalars()
            .first()
        )
        if taken is not None:
            raise JobExists(f"job name {taken} is already used", job=taken)
    content_md5, content_sizes = _stage_contents(
        session, store=store, user=user, jobs=jobs, keep=keep
    )
    sizes.update(content_sizes)
    change = bump_change(session)
    t = now()
    order = {name: pos for pos, name in enumerate(app.inputs)}
    rows = [
        {
            "batch_id": batch.id,
            "owner_id": user.id,
            "name": j.name,
            "state": JobState.queued.value,
            "change": change,
            "spec_hash": spec_hash(j.model_dump(mode="json")),
            "args": list(j.args),
            "outputs_wanted": j.outputs
            if j.outputs is not None
            else [o["name"] for o in app.outputs],
            "params": j.params.model_dump(exclude_none=True) if j.params else None,
            "env": j.env,
            "attempts": 0,
            "created_at": t,
        }
        for j in jobs
    ]
    for row_part in chunks(rows, 500):
        session.execute(insert(table_of(Job)), list(row_part))
    # Core executemany is one statement per chunk; ids are read back by name in bulk.
    ids: dict[str, int] = {}
    for name_part in chunks(names):
        q = select(col(Job.name), col(Job.id)).where(
            col(Job.batch_id) == batch.id, col(Job.name).in_(name_part)
        )
        ids.update({n: i for n, i in session.execute(q).all()})
    inputs: list[dict[str, Any]] = []
    for j in jobs:
        for i in j.inputs:
            md5 = content_md5[i.content] if i.content is not None else i.md5
            inputs.append(
                {
                    "job_id": ids[j.name],
                    "name": i.name,
                    "position": order[i.name],
                    "md5": None if i.url else md5,
                    "url": i.url,
                    "url_md5": i.md5 if i.url else None,
                    "size": i.size if i.url else sizes.get(md5 or ""),
                }
            )
    for input_part in chunks(inputs, 500):
        session.execute(insert(table_of(JobInput)), list(input_part))
    stored = sorted({r["md5"] for r in inputs if r["md5"]})
    files_svc.associate(session, batch=batch, md5s=stored)
    batch.njobs += len(jobs)
    session.add(batch)
    return len(jobs)


def create(
    session: Session,
    *,
    store: FileStore,
    user: User,
    data: BatchCreate,
    backend: str,
    keep: float,
    max_content: int,
) -> tuple[Batch, bool]:
    """Create (and by default submit) a batch atomically; returns (batch, created)."""
    digest = spec_hash(data.model_dump(mode="json"))
    # Lock first: a concurrent retry waits here, then finds the batch and answers 200
    # instead of failing on the unique constraint.
    users_svc.lock_user(session, user_id=user.id or 0)
    existing = get_batch(session, owner=user, name=data.name)
    if existing is not None:
        if existing.spec_hash == digest:
            return existing, False
        raise BatchExists(f"batch {data.name} exists with different content", batch=data.name)
    app = apps_svc.get_app_for_user_or_404(session, name=data.app, user=user)
    jobs = data.jobs or []
    _validate_jobs(app, jobs, max_content)
    submit = bool(jobs) and data.submit
    if submit:
        users_svc.check_job_quota(session, user=user, adding=len(jobs))
    t = now()
    batch = Batch.model_validate(
        {
            "owner_id": user.id,
            "name": data.name,
            "app_id": app.id,
            "backend": backend,
            "state": (BS.in_progress if submit else BS.open).value,
            "spec_hash": digest,
            "params": {
                **app.params,
                **(data.params.model_dump(exclude_none=True) if data.params else {}),
            },
            "created_at": t,
            "submitted_at": t if submit else None,
            "lease_until": data.lease_until,
        }
    )
    session.add(batch)
    session.flush()
    _insert_jobs(session, store=store, user=user, app=app, batch=batch, jobs=jobs, keep=keep)
    session.flush()
    return batch, True


def add_jobs(
    session: Session,
    *,
    store: FileStore,
    user: User,
    name: str,
    jobs: Sequence[JobSpec],
    keep: float,
    max_content: int,
) -> tuple[Batch, int]:
    """Add jobs to an open batch; jobs already added with the same content are skipped."""
    # Lock first: concurrent adds (or a retry racing the original) see each other's jobs
    # and the batch's current state and job count.
    users_svc.lock_user(session, user_id=user.id or 0)
    batch = get_batch_or_404(session, owner=user, name=name)
    app = session.get_one(App, batch.app_id)
    _validate_jobs(app, jobs, max_content)
    by_name = {j.name: j for j in jobs}
    existing: dict[str, tuple[int, str]] = {}
    for part in chunks(list(by_name)):
        q = select(col(Job.name), col(Job.batch_id), col(Job.spec_hash)).where(
            col(Job.owner_id) == user.id, col(Job.name).in_(part)
        )
        existing.update({n: (b, h) for n, b, h in session.execute(q).all()})
    for jname, (bid, h) in existing.items():
        if bid != batch.id or h != spec_hash(by_name[jname].model_dump(mode="json")):
            raise JobExists(f"job name {jname} is already used", job=jname)
    new = [j for j in jobs if j.name not in existing]
    if new and batch.state != BS.open:
        raise BatchState(
            f"batch {name} is {batch.state}: jobs can only be added to an open batch",
            batch=name,
            state=batch.state,
        )
    added = _insert_jobs(session, store=store, user=user, app=app, batch=batch, jobs=new, keep=keep)
    session.flush()
    return batch, added


def submit(session: Session, *, user: User, name: str) -> Batch:
    """Open -> in progress (a second submit is a no-op)."""
    # Lock before reading the state: a concurrent retry then sees the batch submitted and
    # returns it, instead of counting its jobs against the quota a second time.
    users_svc.lock_user(session, user_id=user.id or 0)
    batch = get_batch_or_404(session, owner=user, name=name)
    if batch.state != BS.open:
        if batch.state in (BS.in_progress, BS.complete):
            return batch
        raise BatchState(f"batch {name} is {batch.state}", batch=name, state=batch.state)
    counts = jobs_svc.counts_by_state(session, batch_id=batch.id or 0)
    # Jobs aborted while the batch was open will not run: they take no quota.
    adding = sum(counts[s.value] for s in JOB_ACTIVE)
    users_svc.check_job_quota(session, user=user, adding=adding)
    change = bump_change(session)
    moved = session.execute(
        update(Batch)
        .where(col(Batch.id) == batch.id, col(Batch.state).in_(batch_sources(BS.in_progress)))
        .values(state=BS.in_progress.value, submitted_at=now())
    )
    if moved.rowcount:  # type: ignore[attr-defined]
        # Their state is unchanged but they just became runnable: let cursors see them.
        session.execute(update(Job).where(col(Job.batch_id) == batch.id).values(change=change))
        jobs_svc.complete_batches(session, batch_ids={batch.id or 0})
    session.refresh(batch)
    return batch


def _end(session: Session, *, batch: Batch, target: BS) -> Batch:
    """Abort or retire: unfinished jobs are aborted, the batch moves to ``target``."""
    if batch.state == target:
        return batch
    if batch.state not in batch_sources(target):
        raise BatchState(
            f"batch {batch.name} is {batch.state}", batch=batch.name, state=batch.state
        )
    active = (
        session.execute(
            select(col(Job.id)).where(
                col(Job.batch_id) == batch.id, col(Job.state).in_([s.value for s in JOB_ACTIVE])
            )
        )
        .scalars()
        .all()
    )
    jobs_svc.transition(session, job_ids=active, target=JobState.aborted)
    values: dict[str, Any] = {"state": target.value}
    if target == BS.retired:
        values["retired_at"] = now()
    else:
        values["completed_at"] = now()
    session.execute(
        update(Batch)
        .where(col(Batch.id) == batch.id, col(Batch.state).in_(batch_sources(target)))
        .values(**values)
    )
    session.refresh(batch)
    return batch


def abort(session: Session, *, user: User, name: str) -> Batch:
    """Abort a batch and its unfinished jobs."""
    batch = get_batch_or_404(session, owner=user, name=name)
    if batch.state == BS.retired:
        return batch
    return _end(session, batch=batch, target=BS.aborted)


def retire(session: Session, *, user: User, name: str) -> Batch:
    """Retire a batch: its files stop being protected (idempotent)."""
    return _end(session, batch=get_batch_or_404(session, owner=user, name=name), target=BS.retired)


def set_lease(session: Session, *, user: User, name: str, until: float) -> Batch:
    """Set when the batch expires (aborted and retired by the reaper)."""
    batch = get_batch_or_404(session, owner=user, name=name)
    if batch.state == BS.retired:
        raise BatchState(f"batch {name} is retired", batch=name, state=batch.state)
    batch.lease_until = until
    session.add(batch)
    session.flush()
    return batch


def reap_expired(session: Session, *, at: float, limit: int = 100) -> int:
    """Abort and retire batches whose lease has passed."""
    expired = (
        session.execute(
            select(Batch)
            .where(
                col(Batch.lease_until).is_not(None),
                col(Batch.lease_until) < at,
                col(Batch.state) != BS.retired.value,
            )
            .limit(limit)
        )
        .scalars()
        .all()
    )
    for batch in expired:
        _end(session, batch=batch, target=BS.retired)
    return len(expired)


def summary(session: Session, *, batch: Batch) -> BatchSummary:
    """The batch summary with job counts by state (one aggregate query)."""
    counts = jobs_svc.counts_by_state(session, batch_id=batch.id or 0)
    total = sum(counts.values())
    finished = counts["done"] + counts["error"] + counts["aborted"]
    app_name = session.execute(
        select(col(App.name)).where(col(App.id) == batch.app_id)
    ).scalar_one()
    return BatchSummary(
        name=batch.name,
        app=app_name,
        state=batch.state,
        created_at=batch.created_at,
        submitted_at=batch.submitted_at,
        completed_at=batch.completed_at,
        retired_at=batch.retired_at,
        lease_until=batch.lease_until,
        counts=counts,
        njobs=total,
        fraction_done=(finished / total) if total else 0.0,
        params=BatchParams.model_validate(batch.params) if batch.params else None,
    )
