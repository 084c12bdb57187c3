"""Status ads of the UNICORE-style commands, and fetching a finished job's files into Iwd.

A status ad (UNICORE_JOB_STATUS, callbacks) always has `UnicoreJobId` (the contact: the
routing key of callbacks, gahp.md 5.1) and `JobStatus` as HTCondor numbers:

    gateway state                       JobStatus
    queued                              1 idle
    in_progress                         2 running
    done                                4 completed (after the files are fetched)
    error, the app exited non-zero      4 completed, with its ExitCode or ExitSignal
    error otherwise (no output, limit)  5 held, HoldReason = ErrMessage = the error
    aborted                             3 removed

Finished jobs add `ExitBySignal`, `ExitCode` or `ExitSignal`, `RemoteWallClockTime` and
`RemoteUserCpu`; failed ones `ErrMessage`. The outputs are written into Iwd before the
ad says completed, because the gridmanager then considers the job done (gahp.md 5.1).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from clients.gahp.classad import ClassAd
from clients.gahp.context import CommandError, Context, describe
from clients.gahp.jobad import OutputPlan
from clients.gahp.localfs import LocalFileError, is_safe_name, write_stream
from clients.gahp.rest import GatewayError, JobInfo, Project, check_response, job_path
from clients.gahp.watch import GONE, Tracked

log = logging.getLogger(__name__)

IDLE, RUNNING, REMOVED, COMPLETED, HELD = 1, 2, 3, 4, 5
JOB_ID_ATTRIBUTE = "UnicoreJobId"


def simple_ad(contact: str, status: int) -> ClassAd:
    """The ad of a job that has not finished."""
    return ClassAd([(JOB_ID_ATTRIBUTE, contact), ("JobStatus", status)])


def held_ad(contact: str, reason: str) -> ClassAd:
    """A job the gateway could not run (or whose files could not be fetched)."""
    ad = simple_ad(contact, HELD)
    ad.add("HoldReason", reason)
    ad.add("ErrMessage", reason)
    return ad


def gone_ad(tracked: Tracked) -> ClassAd:
    """A job whose batch vanished from the gateway."""
    return held_ad(tracked.contact, f"no batch named {tracked.batch} on the gateway")


async def status_ad(
    ctx: Context, project: Project, contact: str, info: JobInfo, tracked: Tracked | None
) -> ClassAd:
    """The status ad for a job as the gateway reports it; fetches outputs once when done."""
    state = info.state
    if state in ("queued", "in_progress"):
        return simple_ad(contact, IDLE if state == "queued" else RUNNING)
    if state == "aborted":
        ad = simple_ad(contact, REMOVED)
        ad.add("ErrMessage", info.error or "job aborted on the gateway")
        return ad
    ran = state == "done" or (state == "error" and info.exit_code not in (None, 0))
    if not ran:
        return held_ad(contact, info.error or f"job ended in state {state}")
    if tracked is not None and tracked.plan is not None:
        try:
            await fetch_once(ctx, project, tracked, info)
        except (CommandError, LocalFileError, GatewayError, httpx.HTTPError) as exc:
            log.warning("fetching the files of %s failed: %s", contact, exc)
            return held_ad(contact, f"error fetching output: {describe(exc)}")
    ad = simple_ad(contact, COMPLETED)
    code = info.exit_code or 0
    ad.add("ExitBySignal", code < 0)
    ad.add("ExitSignal" if code < 0 else "ExitCode", abs(code))
    ad.add("RemoteWallClockTime", float(info.wall_seconds or 0.0))
    ad.add("RemoteUserCpu", float(info.cpu_seconds or 0.0))
    if state == "error":
        ad.add("ErrMessage", info.error or f"exited with {code}")
    return ad


async def callback_ad(ctx: Context, tracked: Tracked, state: str) -> ClassAd:
    """The ad the callback channel pushes when a job reached `state`."""
    if state == GONE:
        return gone_ad(tracked)
    if state in ("queued", "in_progress"):
        return simple_ad(tracked.contact, IDLE if state == "queued" else RUNNING)
    info = await ctx.client.job(tracked.project, tracked.job)
    return await status_ad(ctx, tracked.project, tracked.contact, info, tracked)


async def fetch_once(ctx: Context, project: Project, tracked: Tracked, info: JobInfo) -> None:
    """Fetch a finished job's files unless that already happened in this process."""
    assert tracked.plan is not None
    async with tracked.lock:
        if not tracked.fetched:
            await fetch_files(ctx, project, info, tracked.plan)
            tracked.fetched = True


async def fetch_files(ctx: Context, project: Project, info: JobInfo, plan: OutputPlan) -> None:
    """Write the outputs the plan asks for, and stdout/stderr, into iwd (never outside)."""
    iwd = Path(plan.iwd)
    if not await asyncio.to_thread(iwd.is_dir):
        raise CommandError(f"Iwd {iwd} is not a directory")
    real_iwd = await asyncio.to_thread(os.path.realpath, iwd)
    produced = {f.name: f for f in info.outputs}
    wanted = list(produced) if plan.outputs is None else list(plan.outputs)
    for name in wanted:
        output = produced.get(name)
        if output is None:
            if info.state == "done":
                raise CommandError(f"job {info.name} produced no output {name}")
            continue  # a run that failed may lack outputs; the exit code says so
        if not is_safe_name(name):
            raise CommandError(f"refusing output name {name!r} from the server")
        place = await _place(real_iwd, iwd / plan.destination(name))
        async with ctx.client.stream(project, job_path(info.name, "outputs", name)) as resp:
            if not resp.is_success:
                await resp.aread()
                check_response(resp)
            await write_stream(place, resp.aiter_bytes(), expect_md5=output.md5)
    logs = {}
    for which, rel in (("stdout", plan.stdout), ("stderr", plan.stderr)):
        if rel is not None:
            logs[which] = (rel, await _log(ctx, project, info.name, which))
    if plan.stdout is not None and plan.stdout == plan.stderr:
        # One file for both streams, as HTCondor allows: stdout first, then stderr.
        logs = {"stdout": (plan.stdout, logs["stdout"][1] + logs["stderr"][1])}
    for rel, data in logs.values():
        await write_stream(await _place(real_iwd, iwd / rel), _chunks(data))
    log.info("fetched %d outputs of job %s into %s", len(wanted), info.name, iwd)


async def _place(real_iwd: str, target: Path) -> Path:
    """Refuse a target that leads outside iwd through a symbolic link."""
    ancestor = target.parent
    while not await asyncio.to_thread(ancestor.exists):  # bounded by the path depth
        ancestor = ancestor.parent
    real = await asyncio.to_thread(os.path.realpath, ancestor)
    if real != real_iwd and not real.startswith(real_iwd.rstrip("/") + "/"):
        raise CommandError(f"{target} leads outside Iwd")
    return target


async def _log(ctx: Context, project: Project, job: str, which: str) -> bytes:
    """The job's captured stdout or stderr; nothing captured reads as empty."""
    try:
        response = await ctx.client.request(project, "GET", job_path(job, which))
    except GatewayError as exc:
        if exc.status == 404 and exc.code != "job_not_found":
            return b""
        raise
    return response.content


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    yield data
