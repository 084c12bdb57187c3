"""Routes: jobs (details, outputs, captured stdout/stderr, abort by name)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import FileResponse

from app.api.files import ranged_file
from app.deps import ReadSessionDep, SessionDep, StoreDep, UserDep
from app.errors import (
    InvalidRequest,
    JobNotFound,
    OutputNotFound,
    RangeNotSatisfiable,
    responses,
)
from app.schemas import AbortResult, JobOut, JobsAbort
from app.services import jobs as svc
from app.services.lookup import get_job_or_404

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

_BINARY = {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
_TEXT = {"text/plain": {"schema": {"type": "string"}}}


@router.post("/abort", operation_id="abort_jobs", responses=responses(JobNotFound))
def abort_jobs(body: JobsAbort, session: SessionDep, user: UserDep) -> AbortResult:
    """Abort jobs by name: every name is checked first; finished jobs are left as they are."""
    return AbortResult(aborted=svc.abort_named(session, user=user, names=body.jobs))


@router.get("/{name}", operation_id="get_job", responses=responses(JobNotFound))
def get_job(name: str, session: ReadSessionDep, user: UserDep) -> JobOut:
    """A job: state, inputs, outputs, exit code, times, error."""
    return svc.job_out(session, job=get_job_or_404(session, owner=user, name=name))


@router.get(
    "/{name}/outputs/{output}",
    operation_id="get_job_output",
    response_class=FileResponse,
    responses={
        200: {"content": _BINARY, "description": "The output (Range supported)"},
        **responses(JobNotFound, OutputNotFound, RangeNotSatisfiable, InvalidRequest),
    },
)
def get_output(
    name: str,
    output: str,
    request: Request,
    session: ReadSessionDep,
    store: StoreDep,
    user: UserDep,
) -> FileResponse:
    """One output file of a job."""
    row = svc.get_output_or_404(session, user=user, job_name=name, output=output)
    path = store.path(row.md5)
    if not path.exists():
        raise OutputNotFound(f"output {output} of job {name} was deleted", job=name, output=output)
    return ranged_file(request, path, row.size, row.md5)


def _log(
    name: str, stream: str, session: ReadSessionDep, store: StoreDep, user: UserDep
) -> Response:
    job = get_job_or_404(session, owner=user, name=name)
    md5 = job.stdout_md5 if stream == "stdout" else job.stderr_md5
    if md5 is None or not store.path(md5).exists():
        return Response(b"", media_type="text/plain; charset=utf-8")
    return FileResponse(store.path(md5), media_type="text/plain; charset=utf-8")


@router.get(
    "/{name}/stdout",
    operation_id="get_job_stdout",
    response_class=Response,
    responses={
        200: {"content": _TEXT, "description": "Captured stdout (tail)"},
        **responses(JobNotFound),
    },
)
def get_stdout(name: str, session: ReadSessionDep, store: StoreDep, user: UserDep) -> Response:
    """The job's captured standard output (the tail, size-capped); empty before it ran."""
    return _log(name, "stdout", session, store, user)


@router.get(
    "/{name}/stderr",
    operation_id="get_job_stderr",
    response_class=Response,
    responses={
        200: {"content": _TEXT, "description": "Captured stderr (tail)"},
        **responses(JobNotFound),
    },
)
def get_stderr(name: str, session: ReadSessionDep, store: StoreDep, user: UserDep) -> Response:
    """The job's captured standard error (the tail, size-capped); empty before it ran."""
    return _log(name, "stderr", session, store, user)
