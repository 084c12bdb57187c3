"""The SQL of the ``boinc`` backend's polling and propagation: what to poll, what to tell BOINC.

Sending's SQL (claims, what was sent) is in ``records``; job state changes go through
``app.services.jobs.transition``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlmodel import Session, col

from app.backends.boinc.records import ACTIVE, BACKEND, active_jobs, fail_jobs, mirror
from app.models import Batch, BoincBatch, Job, StoredFile, User
from app.services import files as files_svc
from app.services.common import chunks, insert_ignore, lock_files, now
from app.services.store import FileStore
from app.states import BatchState, JobState

# ---- polling -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PollRow:
    """A sent batch with unfinished jobs."""

    batch_id: int
    name: str
    boinc_id: int
    own_auth: str | None
    poll_since: float
    parts: int = 1


def pollable(session: Session) -> list[PollRow]:
    """Sent batches that still have queued or in-progress jobs in the gateway."""
    unfinished = (
        select(col(Job.id))
        .where(col(Job.batch_id) == col(Batch.id), col(Job.state).in_(ACTIVE))
        .exists()
    )
    q = (
        select(
            col(Batch.id),
            col(Batch.name),
            col(Batch.backend_id),
            col(User.boinc_authenticator),
            col(BoincBatch.poll_since),
            col(BoincBatch.parts),
        )
        .join(Batch, col(Batch.id) == col(BoincBatch.batch_id))
        .join(User, col(User.id) == col(Batch.owner_id))
        .where(col(BoincBatch.phase) == "sent", unfinished)
        .order_by(col(Batch.id))
    )
    return [
        PollRow(b, n, bid or 0, a, float(p), int(k))
        for b, n, bid, a, p, k in session.execute(q).all()
    ]


def set_poll_since(session: Session, *, batch_ids: Sequence[int], value: float) -> None:
    """The min_mod_time of the next poll of these batches."""
    for part in chunks(list(batch_ids)):
        session.execute(
            update(BoincBatch)
            .where(col(BoincBatch.batch_id).in_(part), col(BoincBatch.phase) == "sent")
            .values(poll_since=value)
        )


def lose_batch(session: Session, *, batch_id: int, message: str) -> None:
    """BOINC no longer knows a sent batch (or refuses it to us): its active jobs fail."""
    session.execute(
        update(BoincBatch)
        .where(col(BoincBatch.batch_id) == batch_id, col(BoincBatch.phase) == "sent")
        .values(phase="failed", last_error=message[:2000])
    )
    fail_jobs(session, job_ids=active_jobs(session, batch_ids=[batch_id]), message=message)
    mirror(session, batch_id=batch_id, backend_state="failed")


@dataclass(frozen=True, slots=True)
class JobRow:
    """What finishing a job needs to know about it."""

    id: int
    name: str
    state: str
    batch_id: int
    boinc_batch_id: int
    owner_id: int
    app_id: int
    own_auth: str | None
    outputs_wanted: tuple[str, ...]
    batch_name: str = ""
    parts: int = 1


def job_rows(session: Session, *, job_ids: Sequence[int]) -> dict[int, JobRow]:
    """Jobs by id, with their batch's BOINC id and their owner's own authenticator."""
    out: dict[int, JobRow] = {}
    for part in chunks(sorted(set(job_ids))):
        q = (
            select(
                col(Job.id),
                col(Job.name),
                col(Job.state),
                col(Job.batch_id),
                col(Batch.backend_id),
                col(Job.owner_id),
                col(Batch.app_id),
                col(User.boinc_authenticator),
                col(Job.outputs_wanted),
                col(Batch.name),
                col(BoincBatch.parts),
            )
            .join(Batch, col(Batch.id) == col(Job.batch_id))
            .join(User, col(User.id) == col(Job.owner_id))
            .outerjoin(BoincBatch, col(BoincBatch.batch_id) == col(Batch.id))
            .where(col(Job.id).in_(part), col(Batch.backend) == BACKEND)
        )
        for row in session.execute(q).all():
            jid, name, state, bid, boinc_id, owner, app_id, auth, wanted, bname, parts = row
            out[jid] = JobRow(
                jid,
                name,
                state,
                bid,
                boinc_id or 0,
                owner,
                app_id,
                auth,
                tuple(wanted),
                bname,
                int(parts or 1),
            )
    return out


def store_files(
    session: Session,
    *,
    store: FileStore,
    owner_id: int,
    staged: Sequence[tuple[Path, str, int]],
    keep_until: float,
) -> None:
    """Record fetched bytes as the owner's files and move them into place (in the caller's
    transaction, so garbage collection never sees a row without bytes)."""
    if not staged:
        return
    t = now()
    insert_ignore(
        session, StoredFile, [{"md5": m, "size": s, "created_at": t} for _, m, s in staged]
    )
    lock_files(session, [m for _, m, _ in staged])
    files_svc.claim(
        session, user_id=owner_id, md5s=[m for _, m, _ in staged], keep_until=keep_until
    )
    for tmp, md5, _ in staged:
        store.place(tmp, md5)


# ---- propagation ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BatchOp:
    """A sent batch whose abort, retirement or lease BOINC has not been told about yet."""

    batch_id: int
    boinc_id: int
    own_auth: str | None
    state: str
    name: str
    parts: int
    lease_until: float | None
    expire_sent: float | None
    aborted_sent: bool
    retired_sent: bool
    synced_change: int


def _lease_differs() -> Any:
    return and_(
        col(Batch.state) != BatchState.retired.value,
        func.coalesce(col(Batch.lease_until), 0.0)
        != func.coalesce(col(BoincBatch.expire_sent), 0.0),
    )


def batch_ops(session: Session, *, limit: int = 100) -> list[BatchOp]:
    """Sent batches with an abort, retirement or lease change still to send."""
    q = (
        select(
            col(Batch.id),
            col(Batch.backend_id),
            col(User.boinc_authenticator),
            col(Batch.state),
            col(Batch.lease_until),
            col(BoincBatch.expire_sent),
            col(BoincBatch.aborted_sent),
            col(BoincBatch.retired_sent),
            col(Batch.backend_synced_change),
            col(Batch.name),
            col(BoincBatch.parts),
        )
        .join(Batch, col(Batch.id) == col(BoincBatch.batch_id))
        .join(User, col(User.id) == col(Batch.owner_id))
        .where(
            col(BoincBatch.phase) == "sent",
            or_(
                and_(
                    col(Batch.state) == BatchState.aborted.value,
                    col(BoincBatch.aborted_sent).is_(False),
                ),
                and_(
                    col(Batch.state) == BatchState.retired.value,
                    col(BoincBatch.retired_sent).is_(False),
                ),
                _lease_differs(),
            ),
        )
        .order_by(col(Batch.id))
        .limit(limit)
    )
    return [
        BatchOp(b, bid or 0, a, s, name, int(k), lease, exp, bool(ab), bool(rt), int(sync))
        for b, bid, a, s, lease, exp, ab, rt, sync, name, k in session.execute(q).all()
    ]


def mark_batch_op(session: Session, *, batch_id: int, **values: Any) -> None:
    """Remember what BOINC was told about a batch."""
    session.execute(update(BoincBatch).where(col(BoincBatch.batch_id) == batch_id).values(**values))
    if "phase" in values:
        mirror(session, batch_id=batch_id, backend_state=values["phase"])


def _unsynced_aborts(upto: int) -> Any:
    return (
        select(col(Job.id), col(Job.name), col(Job.batch_id), col(User.boinc_authenticator))
        .join(Batch, col(Batch.id) == col(Job.batch_id))
        .join(BoincBatch, col(BoincBatch.batch_id) == col(Batch.id))
        .join(User, col(User.id) == col(Batch.owner_id))
        .where(
            col(BoincBatch.phase) == "sent",
            col(BoincBatch.aborted_sent).is_(False),
            col(Job.state) == JobState.aborted.value,
            col(Job.change) > col(Batch.backend_synced_change),
            col(Job.change) <= upto,
        )
    )


def unsynced_aborts(
    session: Session, *, upto: int, batch_id: int | None = None, limit: int | None = None
) -> list[tuple[int, str, int, str | None]]:
    """Jobs aborted in the gateway (up to change ``upto``) that BOINC was not told about.

    Without ``batch_id``: only batches still in progress or complete (an aborted or retired
    batch is aborted on BOINC as a whole).
    """
    q = _unsynced_aborts(upto)
    if batch_id is None:
        q = q.where(col(Batch.state).in_([BatchState.in_progress.value, BatchState.complete.value]))
    else:
        q = q.where(col(Batch.id) == batch_id)
    q = q.order_by(col(Job.id))
    if limit is not None:
        q = q.limit(limit)
    return [(j, n, b, a) for j, n, b, a in session.execute(q).all()]


def mark_synced(session: Session, *, batch_ids: Sequence[int], upto: int) -> None:
    """Aborted jobs up to change ``upto`` of these batches have been propagated."""
    for part in chunks(sorted(set(batch_ids))):
        session.execute(
            update(Batch)
            .where(col(Batch.id).in_(part), col(Batch.backend_synced_change) < upto)
            .values(backend_synced_change=upto)
        )
