"""Routes: batches (create, add jobs, submit, list, query, abort, retire, lease, outputs)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status
from fastapi.responses import StreamingResponse

from app.deps import DbDep, ReadSessionDep, SessionDep, SettingsDep, StoreDep, UserDep
from app.errors import (
    AppForbidden,
    AppNotFound,
    BatchExists,
    BatchNotFound,
    BatchState,
    InvalidCursor,
    InvalidRequest,
    JobExists,
    MissingInputFiles,
    QuotaExceeded,
    responses,
)
from app.schemas import (
    BatchCreate,
    BatchQuery,
    BatchQueryResult,
    BatchSummary,
    JobListItem,
    JobsAdd,
    JobsAdded,
    Lease,
    Page,
)
from app.services import batches as svc
from app.services import outputs as outputs_svc
from app.services import queries
from app.services.common import parse_change_cursor
from app.services.lookup import get_batch_or_404
from app.states import BatchState as BS
from app.states import JobState

router = APIRouter(prefix="/v1/batches", tags=["batches"])


@router.post(
    "",
    operation_id="create_batch",
    status_code=status.HTTP_201_CREATED,
    responses={
        200: {"description": "The same batch existed already (a retry)", "model": BatchSummary},
        **responses(
            AppNotFound,
            AppForbidden,
            BatchExists,
            JobExists,
            MissingInputFiles,
            InvalidRequest,
            QuotaExceeded,
        ),
    },
)
def create_batch(
    body: BatchCreate,
    response: Response,
    session: SessionDep,
    store: StoreDep,
    settings: SettingsDep,
    user: UserDep,
) -> BatchSummary:
    """Create a batch; with jobs (and ``submit``, the default) it is submitted atomically."""
    if body.jobs and len(body.jobs) > settings.max_jobs_per_request:
        raise InvalidRequest(
            f"at most {settings.max_jobs_per_request} jobs per request; create the batch with "
            "submit=false and add jobs in parts",
        )
    batch, created = svc.create(
        session,
        store=store,
        user=user,
        data=body,
        backend=settings.backend,
        keep=settings.file_keep_seconds,
        max_content=settings.max_content_input_bytes,
    )
    if not created:
        response.status_code = status.HTTP_200_OK
    return svc.summary(session, batch=batch)


@router.post(
    "/query",
    operation_id="query_batches",
    responses=responses(BatchNotFound, InvalidCursor),
)
def query_batches(body: BatchQuery, session: ReadSessionDep, user: UserDep) -> BatchQueryResult:
    """Jobs changed after ``since`` in each named batch (what BOINC_QUERY_BATCHES stands on)."""
    return queries.query_batches(
        session, user=user, names=body.batches, since=parse_change_cursor(body.since)
    )


@router.post(
    "/{name}/jobs",
    operation_id="add_jobs",
    responses=responses(BatchNotFound, BatchState, JobExists, MissingInputFiles, InvalidRequest),
)
def add_jobs(
    name: str,
    body: JobsAdd,
    session: SessionDep,
    store: StoreDep,
    settings: SettingsDep,
    user: UserDep,
) -> JobsAdded:
    """Add jobs to an open batch (jobs already added with the same content are skipped)."""
    if len(body.jobs) > settings.max_jobs_per_request:
        raise InvalidRequest(f"at most {settings.max_jobs_per_request} jobs per request")
    batch, added = svc.add_jobs(
        session,
        store=store,
        user=user,
        name=name,
        jobs=body.jobs,
        keep=settings.file_keep_seconds,
        max_content=settings.max_content_input_bytes,
    )
    return JobsAdded(batch=name, added=added, njobs=batch.njobs)


@router.post(
    "/{name}/submit",
    operation_id="submit_batch",
    responses=responses(BatchNotFound, BatchState, QuotaExceeded),
)
def submit_batch(name: str, session: SessionDep, user: UserDep) -> BatchSummary:
    """Submit an open batch: its jobs start running."""
    return svc.summary(session, batch=svc.submit(session, user=user, name=name))


@router.get("", operation_id="list_batches", responses=responses(InvalidCursor))
def list_batches(
    session: ReadSessionDep,
    user: UserDep,
    state: BS | None = None,
    app: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: str | None = None,
) -> Page[BatchSummary]:
    """Your batches, newest first."""
    rows, nxt = queries.list_batches(
        session,
        user=user,
        state=state.value if state else None,
        app=app,
        limit=limit,
        cursor=cursor,
    )
    return Page[BatchSummary](items=[svc.summary(session, batch=b) for b in rows], next_cursor=nxt)


@router.get("/{name}", operation_id="get_batch", responses=responses(BatchNotFound))
def get_batch(name: str, session: ReadSessionDep, user: UserDep) -> BatchSummary:
    """A batch's summary: state, times, lease, job counts by state."""
    return svc.summary(session, batch=get_batch_or_404(session, owner=user, name=name))


@router.get(
    "/{name}/jobs",
    operation_id="list_batch_jobs",
    responses=responses(BatchNotFound, InvalidCursor),
)
def list_batch_jobs(
    name: str,
    session: ReadSessionDep,
    user: UserDep,
    state: JobState | None = None,
    since: Annotated[
        str | None, Query(description="change cursor: only jobs changed after it")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: str | None = None,
) -> Page[JobListItem]:
    """A batch's jobs in creation order, with their state."""
    items, nxt = queries.list_jobs(
        session,
        user=user,
        batch_name=name,
        state=state.value if state else None,
        since=parse_change_cursor(since),
        limit=limit,
        cursor=cursor,
    )
    return Page[JobListItem](items=items, next_cursor=nxt)


@router.post(
    "/{name}/abort", operation_id="abort_batch", responses=responses(BatchNotFound, BatchState)
)
def abort_batch(name: str, session: SessionDep, user: UserDep) -> BatchSummary:
    """Abort the batch and its unfinished jobs."""
    return svc.summary(session, batch=svc.abort(session, user=user, name=name))


@router.post("/{name}/retire", operation_id="retire_batch", responses=responses(BatchNotFound))
def retire_batch(name: str, session: SessionDep, user: UserDep) -> BatchSummary:
    """Retire the batch: done with it; its files are no longer protected (idempotent)."""
    return svc.summary(session, batch=svc.retire(session, user=user, name=name))


@router.put(
    "/{name}/lease", operation_id="set_batch_lease", responses=responses(BatchNotFound, BatchState)
)
def set_lease(name: str, body: Lease, session: SessionDep, user: UserDep) -> BatchSummary:
    """Set the lease: when it passes, the batch is aborted and retired."""
    return svc.summary(
        session, batch=svc.set_lease(session, user=user, name=name, until=body.until)
    )


@router.get(
    "/{name}/outputs.zip",
    operation_id="get_batch_outputs_zip",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}},
            "description": "Every output of every done job as <job>/<output>, streamed",
        },
        **responses(BatchNotFound),
    },
)
def outputs_zip(name: str, db: DbDep, store: StoreDep, user: UserDep) -> StreamingResponse:
    """Every output of every done job, streamed as a zip of ``<job>/<output name>``."""
    with db.read_session() as session:
        batch = get_batch_or_404(session, owner=user, name=name)
    return StreamingResponse(
        outputs_svc.zip_stream(db, store, batch_id=batch.id or 0),
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{name}.zip"'},
    )
