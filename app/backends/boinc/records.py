"""The SQL of the ``boinc`` backend's sending: claims, what was sent, shared values.

Every write here is a guarded update (the WHERE clause states what must still be true), so two
workers never send the same batch, and a worker that lost its claim cannot record over the one
that took it over. Job state changes go through ``app.services.jobs.transition``. Polling and
propagation SQL is in ``sync_records``.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlmodel import Session, col

from app.models import Batch, BoincBatch, BoincMeta, Job, Worker
from app.services import jobs as jobs_svc
from app.services.common import chunks, insert_ignore, now
from app.states import JOB_ACTIVE, BatchState, JobState

BACKEND = "boinc"
ACTIVE = [s.value for s in JOB_ACTIVE]
TOKEN_KEY = "name_token"
POLLER_KEY = "poller"


def _rowcount(result: Any) -> int:
    return int(result.rowcount)


def _lapsed(holder: Any, until: Any, t: float, dead_before: float | None) -> Any:
    """A claim or lease has lapsed: its time is up, or its holder is a worker whose heartbeat
    stopped before ``dead_before`` (killed without handing it back). A holder with no worker
    row is not taken for dead: only its time runs out."""
    if dead_before is None:
        return until < t
    dead = select(col(Worker.id)).where(col(Worker.last_seen) < dead_before)
    return or_(until < t, holder.in_(dead))


# ---- shared values -------------------------------------------------------------------------


def name_token(session: Session) -> str:
    """The random token of this gateway database's BOINC names (made on first use)."""
    insert_ignore(
        session,
        BoincMeta,
        [{"key": TOKEN_KEY, "value": secrets.token_hex(4), "holder": None, "until": 0.0}],
    )
    value = session.execute(
        select(col(BoincMeta.value)).where(col(BoincMeta.key) == TOKEN_KEY)
    ).scalar_one()
    return str(value)


def take_lease(
    session: Session, *, key: str, worker: str, until: float, dead_before: float | None = None
) -> bool:
    """Hold (or renew) the named lease until ``until``; False when another worker holds it
    (and is alive, when ``dead_before`` is given)."""
    insert_ignore(session, BoincMeta, [{"key": key, "value": None, "holder": None, "until": 0.0}])
    result = session.execute(
        update(BoincMeta)
        .where(
            col(BoincMeta.key) == key,
            or_(
                col(BoincMeta.holder) == worker,
                _lapsed(col(BoincMeta.holder), col(BoincMeta.until), now(), dead_before),
            ),
        )
        .values(holder=worker, until=until)
    )
    return _rowcount(result) == 1


def drop_lease(session: Session, *, key: str, worker: str) -> None:
    """Give the lease up (another worker may take it at once)."""
    session.execute(
        update(BoincMeta)
        .where(col(BoincMeta.key) == key, col(BoincMeta.holder) == worker)
        .values(until=0.0)
    )


# ---- sending -------------------------------------------------------------------------------


def sendable(session: Session, *, limit: int, dead_before: float | None = None) -> list[int]:
    """Boinc batches nobody is sending: submitted and never tried, or due for a retry (a
    claim lapses when its time is up or, given ``dead_before``, when its worker died)."""
    t = now()
    q = (
        select(col(Batch.id))
        .outerjoin(BoincBatch, col(BoincBatch.batch_id) == col(Batch.id))
        .where(
            col(Batch.backend) == BACKEND,
            or_(
                and_(
                    col(Batch.state) == BatchState.in_progress.value,
                    col(BoincBatch.batch_id).is_(None),
                ),
                and_(
                    col(BoincBatch.phase) == "sending",
                    _lapsed(
                        col(BoincBatch.claimed_by), col(BoincBatch.claimed_until), t, dead_before
                    ),
                    col(BoincBatch.retry_at) <= t,
                    # A batch ended while an attempt was under way may exist on BOINC: the
                    # next attempt looks it up and tidies it.
                    or_(
                        col(Batch.state) == BatchState.in_progress.value,
                        col(BoincBatch.attempts) > 0,
                    ),
                ),
            ),
        )
        .order_by(col(Batch.id))
        .limit(limit)
    )
    return list(session.execute(q).scalars())


def claim_send(
    session: Session, *, batch_id: int, worker: str, until: float, dead_before: float | None = None
) -> int | None:
    """Claim a batch for sending; returns the attempt number, None if it is not ours to send.
    A claim held by a worker whose heartbeat stopped before ``dead_before`` is taken over."""
    insert_ignore(
        session,
        BoincBatch,
        [
            {
                "batch_id": batch_id,
                "phase": "sending",
                "claimed_by": None,
                "claimed_until": 0.0,
                "attempts": 0,
                "retry_at": 0.0,
                "last_error": None,
                "poll_since": 0.0,
                "expire_sent": None,
                "aborted_sent": False,
                "retired_sent": False,
            }
        ],
    )
    t = now()
    attempts = session.execute(
        update(BoincBatch)
        .where(
            col(BoincBatch.batch_id) == batch_id,
            col(BoincBatch.phase) == "sending",
            _lapsed(col(BoincBatch.claimed_by), col(BoincBatch.claimed_until), t, dead_before),
            col(BoincBatch.retry_at) <= t,
        )
        .values(claimed_by=worker, claimed_until=until, attempts=col(BoincBatch.attempts) + 1)
        .returning(col(BoincBatch.attempts))
    ).scalar()
    if attempts is None:
        return None
    state = session.execute(select(col(Batch.state)).where(col(Batch.id) == batch_id)).scalar()
    if state != BatchState.in_progress.value and attempts == 1:
        # Aborted or retired before anything reached BOINC: nothing to send, ever.
        _set_phase(session, batch_id=batch_id, worker=worker, phase="skipped")
        mirror(session, batch_id=batch_id, backend_state="skipped")
        return None
    return int(attempts)


def renew_claim(session: Session, *, batch_id: int, worker: str, until: float) -> bool:
    """Extend this worker's claim (False: it was lost to another worker)."""
    result = session.execute(
        update(BoincBatch)
        .where(
            col(BoincBatch.batch_id) == batch_id,
            col(BoincBatch.claimed_by) == worker,
            col(BoincBatch.phase) == "sending",
        )
        .values(claimed_until=until)
    )
    return _rowcount(result) == 1


def release_claim(
    session: Session, *, batch_id: int, worker: str, retry_at: float, error: str
) -> None:
    """Give the batch back for a later attempt (after a retryable failure)."""
    session.execute(
        update(BoincBatch)
        .where(col(BoincBatch.batch_id) == batch_id, col(BoincBatch.claimed_by) == worker)
        .values(claimed_by=None, claimed_until=0.0, retry_at=retry_at, last_error=error[:2000])
    )


def _set_phase(session: Session, *, batch_id: int, worker: str, phase: str, **values: Any) -> bool:
    result = session.execute(
        update(BoincBatch)
        .where(
            col(BoincBatch.batch_id) == batch_id,
            col(BoincBatch.claimed_by) == worker,
            col(BoincBatch.phase) == "sending",
        )
        .values(phase=phase, claimed_by=None, claimed_until=0.0, **values)
    )
    return _rowcount(result) == 1


def mirror(session: Session, *, batch_id: int, **values: Any) -> None:
    """Copy what BOINC has of a batch onto its ``batches`` row (``backend_*`` columns).

    Callers do this last: writers take the change counter before row locks, and a job
    transition in the same transaction takes the counter, then the batch row.
    """
    session.execute(update(Batch).where(col(Batch.id) == batch_id).values(**values))


def fail_jobs(session: Session, *, job_ids: Sequence[int], message: str) -> list[int]:
    """Active jobs to ``error`` with a message for people."""
    return jobs_svc.transition(
        session, job_ids=job_ids, target=JobState.error, values={"error": message[:4000]}
    )


def active_jobs(session: Session, *, batch_ids: Sequence[int]) -> list[int]:
    """The queued and in-progress jobs of some batches."""
    ids: list[int] = []
    for part in chunks(list(batch_ids)):
        ids.extend(
            session.execute(
                select(col(Job.id)).where(col(Job.batch_id).in_(part), col(Job.state).in_(ACTIVE))
            ).scalars()
        )
    return ids


def record_sent(
    session: Session,
    *,
    batch_id: int,
    worker: str,
    boinc_id: int,
    synced_change: int,
    expire_sent: float | None,
    invalid: dict[int, str],
    parts: int = 1,
) -> bool:
    """The batch is in BOINC: remember its id (of part 0) and how many BOINC batches it went
    as, the change its job list was read at, errors."""
    if not _set_phase(
        session,
        batch_id=batch_id,
        worker=worker,
        phase="sent",
        parts=parts,
        poll_since=0.0,
        expire_sent=expire_sent,
        last_error=None,
    ):
        return False
    for message, ids in _by_message(invalid).items():
        fail_jobs(session, job_ids=ids, message=message)
    mirror(
        session,
        batch_id=batch_id,
        backend_state="sent",
        backend_id=boinc_id,
        backend_synced_change=synced_change,
    )
    return True


def record_unsent(
    session: Session,
    *,
    batch_id: int,
    worker: str,
    phase: str,
    message: str | None,
    invalid: dict[int, str],
) -> bool:
    """Nothing went (``skipped``) or BOINC refused the batch (``failed``, active jobs fail)."""
    if not _set_phase(session, batch_id=batch_id, worker=worker, phase=phase, last_error=message):
        return False
    for msg, ids in _by_message(invalid).items():
        fail_jobs(session, job_ids=ids, message=msg)
    if message is not None:
        fail_jobs(session, job_ids=active_jobs(session, batch_ids=[batch_id]), message=message)
    mirror(session, batch_id=batch_id, backend_state=phase)
    return True


def _by_message(invalid: dict[int, str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for job_id, message in invalid.items():
        out.setdefault(message, []).append(job_id)
    return out


def release_worker(session: Session, *, worker: str) -> None:
    """A stopping worker hands its sending claims and the poller lease back at once."""
    session.execute(
        update(BoincBatch)
        .where(col(BoincBatch.claimed_by) == worker, col(BoincBatch.phase) == "sending")
        .values(claimed_by=None, claimed_until=0.0)
    )
    drop_lease(session, key=POLLER_KEY, worker=worker)
