"""Owner-scoped lookups shared by several services (another user's row is a 404)."""

from __future__ import annotations

from sqlalchemy import select
from sqlmodel import Session, col

from app.errors import BatchNotFound, JobNotFound
from app.models import Batch, Job, User


def get_batch(session: Session, *, owner: User, name: str) -> Batch | None:
    """The owner's batch called ``name``."""
    batch: Batch | None = (
        session.execute(
            select(Batch).where(col(Batch.owner_id) == owner.id, col(Batch.name) == name)
        )
        .scalars()
        .first()
    )
    return batch


def get_batch_or_404(session: Session, *, owner: User, name: str) -> Batch:
    """The owner's batch, or 404 ``batch_not_found`` with ``no batch named <name>``."""
    batch = get_batch(session, owner=owner, name=name)
    if batch is None:
        raise BatchNotFound(f"no batch named {name}", batch=name)
    return batch


def get_job_or_404(session: Session, *, owner: User, name: str) -> Job:
    """The owner's job, or 404 ``job_not_found``."""
    job: Job | None = (
        session.execute(select(Job).where(col(Job.owner_id) == owner.id, col(Job.name) == name))
        .scalars()
        .first()
    )
    if job is None:
        raise JobNotFound(f"no job named {name}", job=name)
    return job
