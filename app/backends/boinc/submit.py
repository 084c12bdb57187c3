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
    body_dropped,
)
from app.backends.boinc.names import Namer
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
    batch_name: str
    batch_state: str
    namer: Namer
    app: App
    authenticator: str
    synced_change: int
    lease_until: float | None
    params: m.JobParams | None
    priority: int | None
    # the batch's own app version (0: the app's, from its target)
    app_version_num: int = 0
    specs: list[m.JobSpec] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)
    invalid: dict[int, str] = field(default_factory=dict)

    def part_name(self, part: int) -> str:
        """The BOINC name of part ``part`` (part 0 is named like the batch)."""
        return self.namer.part(self.batch_id, self.batch_name, part)


@dataclass(frozen=True, slots=True)
class Sent:
    """Where the batch ended up."""

    boinc_id: int  # of part 0
    # True when an earlier attempt had submitted (some of) it already.
    recovered: bool = False
    # BOINC batches it went as (see split)
    parts: int = 1


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
        batch_name=batch.name,
        batch_state=batch.state,
        namer=ctx.namer,
        app=app,
        authenticator=ctx.authenticator(owner.boinc_authenticator),
        synced_change=synced,
        lease_until=batch.lease_until,
        params=_job_params(params),
        priority=int(priority) if priority is not None else None,
        app_version_num=int(params.get("app_version_num") or 0),
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


# Bounds the lookup of parts (a part holds at least one job).
MAX_PARTS = 1_000_000
# A part's batch_id is not known when the parts are cut: count it at its widest.
_WIDEST_ID = 2**63 - 1


def split(
    client: BoincClient, plan: Plan, target: Target, specs: list[m.JobSpec], limit: int
) -> list[list[m.JobSpec]]:
    """Cut ``specs`` into runs whose ``submit_batch`` body fits in ``limit`` bytes (PHP's
    ``post_max_size`` drops a larger body whole), in order."""
    fixed, each = client.submit_batch_sizes(
        target.app_name,
        specs,
        batch_id=_WIDEST_ID,
        job_params=plan.params,
        app_version_num=plan.app_version_num or target.app_version_num,
        priority=plan.priority,
    )
    parts: list[list[m.JobSpec]] = []
    size = fixed
    for spec, n in zip(specs, each, strict=True):
        if fixed + n > limit:
            raise MappingError(
                f"job {spec.name} alone makes a submit_batch of {fixed + n} bytes, more than "
                f"BGW_BOINC_SUBMIT_MAX_BYTES={limit}"
            )
        if not parts or size + n > limit:
            parts.append([])
            size = fixed
        parts[-1].append(spec)
        size += n
    return parts


@dataclass
class _Found:
    """What earlier attempts left on BOINC: submitted parts, and an INIT one to reuse."""

    submitted: list[int] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    init_id: int = 0


def _recover(client: BoincClient, plan: Plan) -> _Found:
    """Look the parts up by name in order: created in order, each only after the one before
    was submitted, so they are a run of submitted parts, then at most one INIT part."""
    found = _Found()
    wanted = {spec.name for spec in plan.specs}
    for k in range(MAX_PARTS):
        detail = _look_up(client, plan.part_name(k))
        if detail is None:
            break
        if detail.batch.state == m.BatchState.INIT:
            if detail.jobs:
                # create_work is still adding jobs (a submit_batch that timed out on our
                # side), or failed midway: submitting again would collide with its job names.
                raise BatchBusy(
                    f"BOINC batch {plan.part_name(k)} is still INIT with {len(detail.jobs)} "
                    "jobs (a submission in progress, or create_work failed midway)"
                )
            found.init_id = detail.batch.id
            break
        # An earlier attempt submitted this part and died before recording that.
        ended = [j.name for j in detail.jobs if j.name not in wanted]
        if ended:
            client.abort_jobs(ended)
        found.submitted.append(detail.batch.id)
        found.names.update(j.name for j in detail.jobs)
        log.info("boinc.batch_recovered", batch_id=plan.batch_id, boinc_id=detail.batch.id)
    return found


def send(
    client: BoincClient,
    plan: Plan,
    target: Target,
    *,
    attempt: int,
    expire: float,
    keep_until: float,
    renew: Callable[[], None],
    max_bytes: int,
) -> Sent | None:
    """Put the plan's jobs into BOINC; None when there was nothing to send.

    A batch whose ``submit_batch`` would exceed ``max_bytes`` goes as several BOINC batches
    (parts), each sent in the race-free order; an attempt after a failed one continues after
    the parts already submitted."""
    found = _recover(client, plan) if attempt > 1 else _Found()
    remaining = [spec for spec in plan.specs if spec.name not in found.names]
    if not remaining or plan.batch_state != BatchState.in_progress.value:
        if found.init_id:
            # An INIT batch counts as active and keeps its files on the project: let it go.
            client.retire_batch(batch_id=found.init_id)
        if found.submitted:
            return Sent(found.submitted[0], recovered=True, parts=len(found.submitted))
        return None
    pending = split(client, plan, target, remaining, max_bytes)
    ids = list(found.submitted)
    reuse = found.init_id  # an INIT batch to fill before creating another
    started = time.monotonic()
    while pending:
        run = pending.pop(0)
        part = len(ids)
        boinc_id, reuse = reuse, 0
        try:
            if not boinc_id:
                boinc_id = client.create_batch(target.app_name, plan.part_name(part), expire)
                renew()
            _submit_part(client, plan, target, boinc_id, run, keep_until, renew)
        except BoincPermanentError as exc:
            if body_dropped(exc) and len(run) > 1:
                # The project's post_max_size is below BGW_BOINC_SUBMIT_MAX_BYTES: PHP
                # dropped the request whole and the batch is still an empty INIT one.
                log.warning(
                    "boinc.part_dropped",
                    batch_id=plan.batch_id,
                    jobs=len(run),
                    hint="lower BGW_BOINC_SUBMIT_MAX_BYTES to the project's post_max_size",
                )
                half = len(run) // 2
                pending[:0] = [run[:half], run[half:]]
                reuse = boinc_id
                continue
            if not isinstance(exc, BoincBatchStateError):
                _withdraw(client, boinc_id, ids)
            raise
        ids.append(boinc_id)
        renew()
    log.info(
        "boinc.batch_submitted",
        batch_id=plan.batch_id,
        boinc_id=ids[0],
        parts=len(ids),
        jobs=len(remaining),
        files=len(plan.files),
        seconds=round(time.monotonic() - started, 3),
    )
    return Sent(ids[0], recovered=bool(found.submitted), parts=len(ids))


def _submit_part(
    client: BoincClient,
    plan: Plan,
    target: Target,
    boinc_id: int,
    run: list[m.JobSpec],
    keep_until: float,
    renew: Callable[[], None],
) -> None:
    md5s = {i.md5 for spec in run for i in spec.inputs if isinstance(i, m.LocalInput)}
    client.stage_files(
        sorted((md5, plan.files[md5]) for md5 in md5s), boinc_id, delete_time=int(keep_until)
    )
    renew()
    # "batch not in init state" (BoincBatchStateError) means a slow earlier attempt
    # submitted it meanwhile: the caller retries at once, and the lookup records it.
    client.submit_batch(
        boinc_id,
        target.app_name,
        run,
        job_params=plan.params,
        app_version_num=plan.app_version_num or target.app_version_num,
        priority=plan.priority,
    )


def _withdraw(client: BoincClient, refused: int, submitted: list[int]) -> None:
    """After a permanent refusal: the refused batch stays INIT, which keeps its files (and
    any jobs create_work made before failing) alive on the project, so it is retired; parts
    already submitted would run untracked, so they are aborted. As well as we can."""
    with contextlib.suppress(BoincError):
        if refused:
            client.retire_batch(batch_id=refused)
    for boinc_id in submitted:
        with contextlib.suppress(BoincError):
            client.abort_batch(batch_id=boinc_id)
