"""Read side of batches and jobs: lists with cursor pagination and change-cursor queries."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlmodel import Session, col

from app.errors import BatchNotFound
from app.models import App, Batch, Job, User
from app.schemas import BatchQueryGroup, BatchQueryResult, JobListItem, JobStateItem
from app.services.common import chunks, current_change, decode_id_cursor, encode_cursor
from app.services.lookup import get_batch_or_404


def list_batches(
    session: Session,
    *,
    user: User,
    state: str | None,
    app: str | None,
    limit: int,
    cursor: str | None,
) -> tuple[list[Batch], str | None]:
    """The user's batches, newest first."""
    q = select(Batch).where(col(Batch.owner_id) == user.id).order_by(col(Batch.id).desc())
    after = decode_id_cursor(cursor)
    if after is not None:
        q = q.where(col(Batch.id) < after)
    if state:
        q = q.where(col(Batch.state) == state)
    if app:
        q = q.join(App, col(App.id) == col(Batch.app_id)).where(col(App.name) == app)
    rows = list(session.execute(q.limit(limit + 1)).scalars())
    page = rows[:limit]
    return page, encode_cursor(page[-1].id) if len(rows) > limit else None


def list_jobs(
    session: Session,
    *,
    user: User,
    batch_name: str,
    state: str | None,
    since: int,
    limit: int,
    cursor: str | None,
) -> tuple[list[JobListItem], str | None]:
    """A batch's jobs in creation order; ``since`` keeps only jobs changed after that cursor."""
    batch = get_batch_or_404(session, owner=user, name=batch_name)
    q = (
        select(
            col(Job.id),
            col(Job.name),
            col(Job.state),
            col(Job.exit_code),
            col(Job.error),
            col(Job.change),
        )
        .where(col(Job.batch_id) == batch.id)
        .order_by(col(Job.id))
    )
    after = decode_id_cursor(cursor)
    if after is not None:
        q = q.where(col(Job.id) > after)
    if state:
        q = q.where(col(Job.state) == state)
    if since:
        q = q.where(col(Job.change) > since)
    rows = session.execute(q.limit(limit + 1)).all()
    page = rows[:limit]
    items = [
        JobListItem(name=n, state=s, exit_code=e, error=err, change=str(c))
        for _, n, s, e, err, c in page
    ]
    return items, encode_cursor(page[-1][0]) if len(rows) > limit else None


def query_batches(
    session: Session, *, user: User, names: Sequence[str], since: int
) -> BatchQueryResult:
    """Jobs changed after ``since`` in each named batch, groups in request order.

    The cursor is read before the jobs: a change committed in between is reported now and
    again next time, never lost.
    """
    cursor = current_change(session)
    ids: dict[str, int] = {}
    for part in chunks(list(dict.fromkeys(names))):
        q = select(col(Batch.name), col(Batch.id)).where(
            col(Batch.owner_id) == user.id, col(Batch.name).in_(part)
        )
        ids.update({n: i for n, i in session.execute(q).all()})
    for name in names:
        if name not in ids:
            raise BatchNotFound(f"no batch named {name}", batch=name)
    jobs: dict[int, list[JobStateItem]] = {i: [] for i in ids.values()}
    for id_part in chunks(sorted(set(ids.values()))):
        jq = (
            select(col(Job.batch_id), col(Job.name), col(Job.state))
            .where(col(Job.batch_id).in_(id_part), col(Job.change) > since)
            .order_by(col(Job.batch_id), col(Job.id))
        )
        for bid, name, state in session.execute(jq).all():
            jobs[bid].append(JobStateItem(name=name, state=state))
    return BatchQueryResult(
        cursor=str(cursor),
        batches=[BatchQueryGroup(name=n, jobs=jobs[ids[n]]) for n in names],
    )
