"""Sending one batch to BOINC in the race-free order of the protocol reference (3.6).

``create_batch`` (an INIT batch protects the files associated with it), ``query_files`` with
that batch id (present files are associated, so the project's deleter keeps them), upload of
the absent files only, then one ``submit_batch``: a constant number of RPCs however many jobs
share the inputs. A retried attempt first looks the batch up by its deterministic name, so an
attempt that died after BOINC created or submitted the batch is continued, never repeated.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from sqlalchemy import select
from sqlmodel import col

from app.backends.boinc import models as m
from app.backends.boinc.context import Context, MappingError, Target
from app.backends.boinc.errors import (
    BoincBatchStateError,
    BoincError,
    BoincNotFoundError,
    BoincPermanentError,
)
from app.backends.boinc.rpc import BoincClient
from app.models import App, Batch, Job, JobInput, User
from app.services.common import current_change
from app.states import JOB_TERMINAL, BatchState

log = structlog.get_logger(__name__)

TERMINAL = [s.value for s in JOB_TERMINAL]


class BatchBusy(Exception):
    """The batch exists on BOINC in a state that calls for waiting, not for sending."""


@dataclass
class Plan:
    """A batch as BOINC will get it, read in one go from the database."""

    batch_id: int
    batch_state: str
    boinc_name: str
    app: App
    authenticator: str
    synced_change: int
    lease_until: float | None
    params: m.JobParams | None
    priority: int | None
    specs: list[m.JobSpec] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)
    invalid: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Sent:
    """Where the batch ended up."""

    boinc_id: int
    # True when an earlier attempt had submitted it already (nothing was submitted now).
    recovered: bool = False


def _job_params(params: dict[str, Any]) -> m.JobParams | None:
    keys = ("rsc_fpops_est", "rsc_fpops_bound", "rsc_memory_bound", "rsc_disk_bound")
    values = {k: params.get(k) for k in (*keys, "delay_bound")}
    if not any(values.values()):
        return None
    return m.JobParams(**values)


def load_plan(ctx: Context, batch_id: int) -> Plan:
    """Read the batch, its app, owner, unfinished jobs and inputs (a few bulk queries)."""
    with ctx.db.read_session() as s:
        # The change number first: a job aborted after it is in the job list below and will be
        # aborted on BOINC by propagation; one aborted before it is left out of the batch.
        synced = current_change(s)
        batch = s.get_one(Batch, batch_id)
        app = s.get_one(App, batch.app_id)
        owner = s.get_one(User, batch.owner_id)
        jobs = s.execute(
            select(col(Job.id), col(Job.name), col(Job.args), col(Job.params), col(Job.env))
            .where(
                col(Job.batch_id) == batch_id,
                ~(col(Job.state).in_(TERMINAL) & (col(Job.change) <= synced)),
            )
            .order_by(col(Job.id))
        ).all()
        inputs = s.execute(
            select(JobInput)
            .join(Job, col(Job.id) == col(JobInput.job_id))
            .where(col(Job.batch_id) == batch_id)
            .order_by(col(JobInput.job_id), col(JobInput.position))
        ).scalars()
        by_job: dict[int, list[JobInput]] = {}
        for inp in inputs:
            by_job.setdefault(inp.job_id, []).append(inp)
    params = dict(batch.params or {})
    priority = params.get("priority")
    plan = Plan(
        batch_id=batch_id,
        batch_state=batch.state,
        boinc_name=ctx.namer.batch(batch_id, batch.name),
        app=app,
        authenticator=ctx.authenticator(owner.boinc_authenticator),
        synced_change=synced,
        lease_until=batch.lease_until,
        params=_job_params(params),
        priority=int(priority) if priority is not None else None,
    )
    for job_id, name, args, job_params, env in jobs:
        if env:
            # BOINC jobs get no per-job environment; running without it would change the job.
            plan.invalid[job_id] = "cannot be sent to BOINC: BOINC jobs take no environment"
            continue
        try:
            plan.specs.append(_spec(ctx, plan, job_id, name, args, job_params, by_job))
        except (ValueError, MappingError) as exc:
            plan.invalid[job_id] = f"cannot be sent to BOINC: {exc}"
    return plan


def _spec(
    ctx: Context,
    plan: Plan,
    job_id: int,
    name: str,
    args: list[str],
    job_params: dict[str, Any] | None,
    by_job: dict[int, list[JobInput]],
) -> m.JobSpec:
    inputs: list[m.LocalInput | m.RemoteInput] = []
    for inp in by_job.get(job_id, []):
        if inp.url:
            if inp.url_md5 is None or inp.size is None:
                raise MappingError(f"input {inp.name}: a remote input needs md5 and size")
            inputs.append(m.RemoteInput(inp.url, inp.size, inp.url_md5))
        elif inp.md5:
            path = ctx.store.path(inp.md5)
            if not path.is_file():
                raise MappingError(f"input {inp.name} ({inp.md5}) is no longer stored")
            plan.files[inp.md5] = path
            inputs.append(m.LocalInput(inp.md5))
    own = job_params or {}
    priority = own.get("priority")
    return m.JobSpec.from_args(
        ctx.namer.job(job_id, name),
        args,
        inputs=inputs,
        priority=int(priority) if priority is not None else None,
        rsc_fpops_est=own.get("rsc_fpops_est"),
    )


def _look_up(client: BoincClient, name: str) -> m.BatchDetail | None:
    try:
        return client.query_batch(batch_name=name, get_job_details=False)
    except BoincNotFoundError:
        return None


def send(
    client: BoincClient,
    plan: Plan,
    target: Target,
    *,
    attempt: int,
    expire: float,
    keep_until: float,
    renew: Callable[[], None],
) -> Sent | None:
    """Put the plan's jobs into BOINC; None when there was nothing to send."""
    boinc_id = 0
    if attempt > 1:
        found = _look_up(client, plan.boinc_name)
        if found is not None and found.batch.state != m.BatchState.INIT:
            # An earlier attempt submitted it and died before recording that.
            names = {spec.name for spec in plan.specs}
            ended = [j.name for j in found.jobs if j.name not in names]
            if ended:
                client.abort_jobs(ended)
            log.info("boinc.batch_recovered", batch_id=plan.batch_id, boinc_id=found.batch.id)
            return Sent(found.batch.id, recovered=True)
        if found is not None and found.jobs:
            # create_work is still adding jobs (a submit_batch that timed out on our side), or
            # failed midway: submitting again would collide with its job names.
            raise BatchBusy(
                f"BOINC batch {plan.boinc_name} is still INIT with {len(found.jobs)} jobs "
                "(a submission in progress, or create_work failed midway)"
            )
        if found is not None:
            boinc_id = found.batch.id
    if not plan.specs or plan.batch_state != BatchState.in_progress.value:
        if boinc_id:
            # An INIT batch counts as active and keeps its files on the project: let it go.
            client.retire_batch(batch_id=boinc_id)
        return None
    if not boinc_id:
        boinc_id = client.create_batch(target.app_name, plan.boinc_name, expire)
        renew()
    started = time.monotonic()
    try:
        client.stage_files(sorted(plan.files.items()), boinc_id, delete_time=int(keep_until))
        renew()
        # "batch not in init state" (BoincBatchStateError) means a slow earlier attempt
        # submitted it meanwhile: the caller retries at once, and the lookup records it.
        client.submit_batch(
            boinc_id,
            target.app_name,
            plan.specs,
            job_params=plan.params,
            app_version_num=target.app_version_num,
            priority=plan.priority,
        )
    except BoincPermanentError as exc:
        if not isinstance(exc, BoincBatchStateError):
            # The refused batch stays INIT, which keeps its files (and any jobs create_work
            # made before failing) alive on the project: retire it, as well as we can.
            with contextlib.suppress(BoincError):
                client.retire_batch(batch_id=boinc_id)
        raise
    log.info(
        "boinc.batch_submitted",
        batch_id=plan.batch_id,
        boinc_id=boinc_id,
        jobs=len(plan.specs),
        files=len(plan.files),
        seconds=round(time.monotonic() - started, 3),
    )
    return Sent(boinc_id)
