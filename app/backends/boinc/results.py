"""Finishing one job BOINC reports DONE or ERROR: exit status, times, stderr, outputs.

Outputs are fetched with ``get_output.php?cmd=workunit_file`` (the canonical instance's file
by its index in the app's output template) into store temp files, then recorded with the job's
state change in one transaction: ``done`` only with every required output safe in the store.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import structlog
from sqlalchemy import insert

from app.backends.boinc import models as m
from app.backends.boinc.context import Context, describe, part_refs
from app.backends.boinc.errors import BoincOutputError
from app.backends.boinc.rpc import BoincClient
from app.backends.boinc.sync_records import JobRow, store_files
from app.metrics import JOBS_FINISHED
from app.models import App, JobOutput
from app.services import jobs as jobs_svc
from app.services.common import now, table_of
from app.states import JobState

log = structlog.get_logger(__name__)

# workunit.error_mask bits (protocol reference 2.15.4), as people read them
ERROR_WORDS = (
    (1, "no volunteer could be sent the job"),
    (2, "too many instances failed"),
    (4, "too many successful instances without agreement"),
    (8, "too many instances in total"),
    (16, "cancelled on the BOINC project"),
    (32, "no valid result (validation failed)"),
)


def error_words(mask: int) -> str:
    """The error mask bits as words; an empty mask still says something useful."""
    words = [w for bit, w in ERROR_WORDS if mask & bit]
    return "; ".join(words) or "BOINC reported an error without a reason"


class ExitStatuses:
    """Exit statuses of failed instances, by job name, from one query_batch per batch.

    query_completed_job cannot report them on current servers (its no-canonical-result path
    is broken, protocol reference 2.9); query_batch with job details can.
    """

    def __init__(self) -> None:
        self._by_part: dict[tuple[str, object], dict[str, tuple[int, ...]]] = {}

    def of(self, ctx: Context, client: BoincClient, job: JobRow, job_name: str) -> int | None:
        """The last exit status of a failed instance of the job, if any (the parts of a
        batch sent as several are asked in order until one has the job)."""
        refs = part_refs(ctx.namer, job.batch_id, job.batch_name, job.parts, job.boinc_batch_id)
        for ref in refs:
            key = next(iter(ref.items()))
            if key not in self._by_part:
                detail = client.query_batch(**ref, get_job_details=True)
                self._by_part[key] = {j.name: j.exit_statuses for j in detail.jobs}
            if job_name in self._by_part[key]:
                statuses = self._by_part[key][job_name]
                return statuses[-1] if statuses else None
        return None


@contextlib.contextmanager
def _fetched(
    ctx: Context, client: BoincClient, wu_name: str, file_num: int
) -> Iterator[tuple[Path, str, int]]:
    with ctx.store.temp() as (fh, tmp):
        fh.close()
        got = client.download_workunit_file(wu_name, file_num, tmp)
        yield tmp, got.md5, got.nbytes


def finish(
    ctx: Context,
    client: BoincClient,
    job: JobRow,
    status: str,
    app: App,
    output_order: tuple[str, ...],
    exits: ExitStatuses,
) -> None:
    """Fetch what BOINC has about a finished job and move the job to done or error."""
    wu_name = ctx.namer.job(job.id, job.name)
    done = client.query_completed_job(wu_name)
    with contextlib.ExitStack() as stack:
        outputs: dict[str, tuple[Path, str, int]] = {}
        error: str | None
        exit_code: int | None
        if status == "DONE":
            error = _fetch_outputs(ctx, client, stack, job, app, output_order, outputs)
            if error is None and done.exit_status not in (None, 0):
                error = f"the app exited with status {done.exit_status}"
            exit_code = done.exit_status if done.exit_status is not None else 0
        else:
            exit_code = done.exit_status
            if exit_code is None:
                exit_code = exits.of(ctx, client, job, wu_name)
            error = "BOINC: " + error_words(done.error_mask)
            if exit_code is not None:
                error += f" (exit status {exit_code})"
        stderr = None
        if done.stderr_out:
            stderr = stack.enter_context(ctx.store.staged_bytes(done.stderr_out.encode()))
        _record(ctx, job, outputs, stderr, error, exit_code, done)


def _fetch_outputs(
    ctx: Context,
    client: BoincClient,
    stack: contextlib.ExitStack,
    job: JobRow,
    app: App,
    output_order: tuple[str, ...],
    outputs: dict[str, tuple[Path, str, int]],
) -> str | None:
    required = {o["name"] for o in app.outputs if o.get("required", True)}
    wu_name = ctx.namer.job(job.id, job.name)
    missing: list[str] = []
    for name in job.outputs_wanted:
        try:
            outputs[name] = stack.enter_context(
                _fetched(ctx, client, wu_name, output_order.index(name))
            )
        except BoincOutputError as exc:
            if name in required:
                missing.append(f"{name} ({describe(exc)})")
    if not missing:
        return None
    return (
        "required output(s) missing on the BOINC server: "
        + ", ".join(missing)
        + ". The project must keep outputs until the gateway fetched them (file_deleter)."
    )


def _record(
    ctx: Context,
    job: JobRow,
    outputs: dict[str, tuple[Path, str, int]],
    stderr: tuple[Path, str, int] | None,
    error: str | None,
    exit_code: int | None,
    done: m.CompletedJob,
) -> None:
    target = JobState.done if error is None else JobState.error
    values: dict[str, Any] = {
        "exit_code": exit_code,
        "wall_seconds": done.elapsed_time,
        "cpu_seconds": done.cpu_time,
        "error": error,
        "stderr_md5": stderr[1] if stderr else None,
    }
    keep = now() + ctx.settings.file_keep_seconds
    staged = [*outputs.values(), *([stderr] if stderr else [])]
    with ctx.db.session() as session:
        store_files(session, store=ctx.store, owner_id=job.owner_id, staged=staged, keep_until=keep)
        moved = jobs_svc.transition(session, job_ids=[job.id], target=target, values=values)
        if moved and target == JobState.done and outputs:
            session.execute(
                insert(table_of(JobOutput)),
                [
                    {"job_id": job.id, "name": n, "md5": md5, "size": size}
                    for n, (_, md5, size) in sorted(outputs.items())
                ],
            )
    if moved:
        JOBS_FINISHED.labels("boinc", target.value).inc()
        log.info("job.finished", job=job.name, state=target.value, error=error)
