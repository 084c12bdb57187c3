"""The generic ClassAd job commands (the UNICORE set of gahp.md 5.1) over the REST API.

Token counts of results are what the gridmanager checks (gahp-client.cpp):

    request after the reqid      success result            failure result
    UNICORE_JOB_CREATE <ad>      S <contact> NULL          F NULL <error>
    UNICORE_JOB_START <contact>  S NULL                    F <error>
    UNICORE_JOB_STATUS <contact> S <status ad> NULL        F NULL <error>
    UNICORE_JOB_DESTROY <contact> S NULL                   F <error>
    UNICORE_JOB_RECOVER <ad>     S NULL                    F <error>

UNICORE_JOB_CALLBACK is synchronous (engine.py); its channel lives in watch.py. A
created job is a one-job batch (or joins the open batch named by `BoincBatch`) that
stays open until START submits it. The contact `<batch>/<job>` is one token (gateway
names never contain `/` or spaces) and resolves without any state of the shim, so it
stays valid across restarts; RECOVER takes it from the ad's GridJobId.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import quote

from clients.gahp.classad import ClassAd, ClassAdError
from clients.gahp.classad_xml import parse as parse_ad
from clients.gahp.classad_xml import to_xml
from clients.gahp.context import CommandError, Context, ParseError, describe, step
from clients.gahp.jobad import JobAdError, JobRequest, grid_contact, read_job
from clients.gahp.jobstatus import callback_ad, status_ad
from clients.gahp.rest import AppInfo, GatewayError, JobInfo, Project
from clients.gahp.submit import Submit, SubmitJob
from clients.gahp.watch import Push, Tracked

log = logging.getLogger(__name__)

_NAME = r"[A-Za-z0-9_.\-#:@+=]{1,191}"
CONTACT = re.compile(f"({_NAME})/({_NAME})")
LIVE = ("queued", "in_progress")


def make_contact(batch: str, job: str) -> str:
    """The job contact handed to the client: both gateway names, one token."""
    return f"{batch}/{job}"


def parse_contact(token: str, context: str) -> tuple[str, str]:
    """(batch, job) of a contact; a malformed one is a failed command, not a syntax error."""
    match = CONTACT.fullmatch(token)
    if match is None:
        raise CommandError(f"{context}: -1 malformed job contact {token[:200]!r}")
    return match[1], match[2]


def _one(args: Sequence[str], what: str) -> str:
    if len(args) != 1:
        raise ParseError(f"expected {what}, got {len(args)} arguments")
    return args[0]


def _read(description: str, context: str) -> tuple[ClassAd, JobRequest]:
    try:
        ad = parse_ad(description)
        return ad, read_job(ad)
    except (ClassAdError, JobAdError) as exc:
        raise CommandError(f"{context}: {exc}") from None


async def _job(ctx: Context, project: Project, batch: str, job: str, context: str) -> JobInfo:
    """The job named by a contact, checked to belong to the contact's batch."""
    async with step(context):
        info = await ctx.client.job(project, job)
    if info.batch is not None and info.batch != batch:
        raise CommandError(f"{context}: -1 job {job} is not in batch {batch}")
    return info


@dataclass(frozen=True)
class Create:
    """UNICORE_JOB_CREATE <job ad>: create the job (not yet runnable) and answer its contact."""

    context: ClassVar[str] = "error creating job"
    description: str

    @classmethod
    def parse(cls, args: Sequence[str]) -> Create:
        """One argument, the ad; it is read when the command runs (errors are results)."""
        return cls(description=_one(args, "<job ad>"))

    def failure_fields(self, message: str) -> list[str]:
        """F NULL <error>: four tokens with the reqid."""
        return ["F", "NULL", message]

    async def run(self, ctx: Context, project: Project) -> list[str]:
        """Check the ad and the app, open the batch, upload inputs, add the job."""
        _, request = _read(self.description, self.context)
        async with step("error getting app"):
            app = await ctx.client.app(project, request.app)
        _check_app(request, app, self.context)
        await _check_inputs(request, self.context)
        own = request.batch is None
        batch = request.batch or f"unicore#{uuid.uuid4().hex[:20]}"
        suffix = request.proc or ("0" if own else uuid.uuid4().hex[:12])
        job = f"{batch}#{suffix}"
        await _open_batch(ctx, project, batch, request.app, joining=not own)
        try:
            await _add_job(ctx, project, batch, job, request, app, self.context)
        except CommandError:
            if own:
                await _discard(ctx, project, batch)
            raise
        contact = make_contact(batch, job)
        ctx.unicore.track(Tracked(contact, batch, job, project, plan=request.plan))
        log.info("created job %s", contact)
        return ["S", contact, "NULL"]


def _check_app(request: JobRequest, app: AppInfo, context: str) -> None:
    if len(request.inputs) != len(app.inputs):
        raise CommandError(
            f"{context}: -1 app {app.name} takes {len(app.inputs)} input files"
            f" ({', '.join(app.inputs) or 'none'}), the job ad gives {len(request.inputs)}"
        )
    outputs = {o.name for o in app.outputs}
    named = [*(request.plan.outputs or ()), *(src for src, _ in request.plan.remaps)]
    unknown = [name for name in named if name not in outputs]
    if unknown:
        raise CommandError(f"{context}: -1 app {app.name} has no output {unknown[0]}")


async def _check_inputs(request: JobRequest, context: str) -> None:
    """Refuse unreadable inputs before anything exists on the gateway."""
    for path in dict.fromkeys(request.inputs):
        if not await asyncio.to_thread(_readable, path):
            raise CommandError(f"{context}: cannot read input file {path}")


def _readable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.R_OK)


async def _open_batch(ctx: Context, project: Project, batch: str, app: str, joining: bool) -> None:
    """Create the batch open; a joined batch may exist already, if open and of this app."""
    try:
        _, summary = await ctx.client.create_batch(project, name=batch, app=app, params={})
    except GatewayError as exc:
        if not (joining and exc.status == 409):
            raise CommandError(f"error creating batch: {describe(exc)}") from exc
        async with step("error creating batch"):
            summary = await ctx.client.batch(project, batch)
    if summary.app != app:
        raise CommandError(f"error creating batch: -1 batch {batch} is for app {summary.app}")
    if summary.state != "open":
        raise CommandError(
            f"error creating batch: -1 batch {batch} is {summary.state}; jobs join open batches"
        )


async def _add_job(
    ctx: Context,
    project: Project,
    batch: str,
    job: str,
    request: JobRequest,
    app: AppInfo,
    context: str,
) -> None:
    submit_job = SubmitJob(name=job, args=request.args, inputs=request.inputs)
    async with step("error processing input files"):
        # The same hashing, files/query and upload as BOINC_SUBMIT.
        uploader = Submit(batch=batch, app=request.app, jobs=(submit_job,), params=())
        md5_of = await uploader._upload_inputs(ctx, project, [submit_job])
    spec: dict[str, Any] = {
        "name": job,
        "args": list(request.args),
        # Bound by position, as in BOINC: the i-th file is the app's i-th input.
        "inputs": [
            {"name": n, "md5": md5_of[p]} for n, p in zip(app.inputs, request.inputs, strict=True)
        ],
    }
    if request.params:
        spec["params"] = request.params
    if request.env:
        spec["env"] = request.env
    async with step(context):
        await ctx.client.add_jobs(project, batch, [spec])


async def _discard(ctx: Context, project: Project, batch: str) -> None:
    """Best effort: retire a batch this command opened and could not fill."""
    try:
        await ctx.client.retire_batch(project, batch)
    except GatewayError as exc:
        log.warning("cannot retire the unused batch %s: %s", batch, exc)


@dataclass(frozen=True)
class Start:
    """UNICORE_JOB_START <contact>: submit the job's batch (a joined batch starts whole)."""

    context: ClassVar[str] = "error starting job"
    contact: str

    @classmethod
    def parse(cls, args: Sequence[str]) -> Start:
        """One argument, the contact."""
        return cls(contact=_one(args, "<job contact>"))

    def failure_fields(self, message: str) -> list[str]:
        """F <error>: three tokens with the reqid."""
        return ["F", message]

    async def run(self, ctx: Context, project: Project) -> list[str]:
        """POST /v1/batches/{batch}/submit; a batch already running counts as started."""
        batch, job = parse_contact(self.contact, self.context)
        await _job(ctx, project, batch, job, self.context)
        try:
            await ctx.client.submit_batch(project, batch)
        except GatewayError as exc:
            if exc.status != 409:
                raise CommandError(f"{self.context}: {describe(exc)}") from exc
            async with step(self.context):
                summary = await ctx.client.batch(project, batch)
            if summary.state not in ("in_progress", "complete"):
                raise CommandError(f"{self.context}: -1 batch {batch} is {summary.state}") from exc
        ctx.unicore.track(Tracked(self.contact, batch, job, project, plan=None))
        return ["S", "NULL"]


@dataclass(frozen=True)
class Status:
    """UNICORE_JOB_STATUS <contact>: the status ad (outputs fetched first when done)."""

    context: ClassVar[str] = "error querying job"
    contact: str

    @classmethod
    def parse(cls, args: Sequence[str]) -> Status:
        """One argument, the contact."""
        return cls(contact=_one(args, "<job contact>"))

    def failure_fields(self, message: str) -> list[str]:
        """F NULL <error>: four tokens with the reqid."""
        return ["F", "NULL", message]

    async def run(self, ctx: Context, project: Project) -> list[str]:
        """GET /v1/jobs/{job}, as an XML status ad."""
        batch, job = parse_contact(self.contact, self.context)
        info = await _job(ctx, project, batch, job, self.context)
        tracked = ctx.unicore.jobs.get(self.contact)
        if tracked is not None and tracked.project != project:
            tracked = None
        ad = await status_ad(ctx, project, self.contact, info, tracked)
        return ["S", to_xml(ad), "NULL"]


@dataclass(frozen=True)
class Destroy:
    """UNICORE_JOB_DESTROY <contact>: abort the job if unfinished; retire an idle batch."""

    context: ClassVar[str] = "error destroying job"
    contact: str

    @classmethod
    def parse(cls, args: Sequence[str]) -> Destroy:
        """One argument, the contact."""
        return cls(contact=_one(args, "<job contact>"))

    def failure_fields(self, message: str) -> list[str]:
        """F <error>: three tokens with the reqid."""
        return ["F", message]

    async def run(self, ctx: Context, project: Project) -> list[str]:
        """POST /v1/jobs/abort, then retire the batch once none of its jobs is unfinished."""
        batch, job = parse_contact(self.contact, self.context)
        try:
            await _job(ctx, project, batch, job, self.context)
            async with step(self.context):
                await ctx.client.abort_jobs(project, [job])
        except CommandError as exc:
            cause = exc.__cause__
            if not (isinstance(cause, GatewayError) and cause.code == "job_not_found"):
                raise
            log.warning("destroy: gateway does not know job %s; treating it as gone", job)
        ctx.unicore.forget(self.contact)
        await _retire_if_idle(ctx, project, batch)
        return ["S", "NULL"]


async def _retire_if_idle(ctx: Context, project: Project, batch: str) -> None:
    """Retire the batch once no job of it runs or still awaits its DESTROY here."""
    if any(job.batch == batch and job.project == project for job in ctx.unicore.jobs.values()):
        return  # a joined batch: the last destroyed job retires it, its files kept till then
    try:
        reply = await ctx.client.request(project, "GET", "batches/" + quote(batch, safe=""))
        counts = reply.json().get("counts") or {}
        if any(counts.get(state, 0) for state in LIVE):
            return
        await ctx.client.retire_batch(project, batch)
    except (GatewayError, ValueError, AttributeError) as exc:
        # The job is gone either way; an unretired batch only keeps its files longer.
        log.warning("cannot retire batch %s: %s", batch, exc)


@dataclass(frozen=True)
class Recover:
    """UNICORE_JOB_RECOVER <job ad>: answer for a job again after a restart (GridJobId)."""

    context: ClassVar[str] = "error recovering job"
    description: str

    @classmethod
    def parse(cls, args: Sequence[str]) -> Recover:
        """One argument, the ad."""
        return cls(description=_one(args, "<job ad>"))

    def failure_fields(self, message: str) -> list[str]:
        """F <error>: three tokens with the reqid."""
        return ["F", message]

    async def run(self, ctx: Context, project: Project) -> list[str]:
        """Check the job exists; track it so callbacks report its state (even a past one)."""
        ad, request = _read(self.description, self.context)
        contact = grid_contact(ad)
        if contact is None:
            raise CommandError(f"{self.context}: the job ad has no GridJobId")
        batch, job = parse_contact(contact, self.context)
        await _job(ctx, project, batch, job, self.context)
        ctx.unicore.track(Tracked(contact, batch, job, project, plan=request.plan))
        log.info("recovered job %s", contact)
        return ["S", "NULL"]


def enable_callbacks(ctx: Context, reqid: str, push: Push) -> None:
    """UNICORE_JOB_CALLBACK: from now on push `<reqid> <status ad>` per state change."""

    async def report(tracked: Tracked, state: str) -> str:
        return to_xml(await callback_ad(ctx, tracked, state))

    ctx.unicore.enable(reqid, push, report, ctx.client, ctx.config.command_timeout)


PARSERS: dict[str, Callable[[Sequence[str]], Create | Start | Status | Destroy | Recover]] = {
    "UNICORE_JOB_CREATE": Create.parse,
    "UNICORE_JOB_DESTROY": Destroy.parse,
    "UNICORE_JOB_RECOVER": Recover.parse,
    "UNICORE_JOB_START": Start.parse,
    "UNICORE_JOB_STATUS": Status.parse,
}
