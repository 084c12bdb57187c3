"""The UNICORE callback channel: one result line per job state change, from the change cursor.

The shim tracks the jobs it created, started or recovered. After UNICORE_JOB_CALLBACK a
watcher task asks the gateway what changed in their batches: per project and round one
POST /v1/batches/query with `since` = the cursor of the previous round (api.md 4), never
a request per job. For each tracked job whose state differs from the last one reported,
a status ad is built (the job is read in full only when it has finished, to fetch its
outputs before `JobStatus = 4` goes out) and pushed as `<reqid> <ad>`, the callback line
of gahp.md 5.1. A job tracked anew is queried once from `since=0`, so a state it reached
while nobody watched (before a shim restart) is reported too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx

from clients.gahp.rest import GatewayClient, GatewayError, Project

if TYPE_CHECKING:  # context.py imports this module; jobad.py imports context.py's users
    from clients.gahp.jobad import OutputPlan

log = logging.getLogger(__name__)

CALLBACK_INTERVAL = 1.0
MAX_BACKOFF = 30.0
BATCHES_PER_QUERY = 1000
TERMINAL = frozenset({"done", "error", "aborted", "gone"})
GONE = "gone"  # pseudo state: the job's batch no longer exists on the gateway

Push = Callable[[list[str]], None]


@dataclass(eq=False)
class Tracked:
    """A job the shim answers for: its contact, where its files go, what was reported."""

    contact: str
    batch: str
    job: str
    project: Project
    plan: OutputPlan | None  # None: not known to this process (no output fetching)
    reported: str | None = None  # last gateway state pushed on the callback channel
    fresh: bool = True  # not yet seen by the watcher: query its batch from since=0
    fetched: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


Report = Callable[[Tracked, str], Awaitable[str]]  # (job, gateway state) -> XML status ad


class Registry:
    """Tracked jobs by contact, and the watcher that feeds the callback channel."""

    def __init__(self) -> None:
        self.jobs: dict[str, Tracked] = {}
        self._channel: tuple[str, Push] | None = None
        self._report: Report | None = None
        self._client: GatewayClient | None = None
        self._timeout = 240.0
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._cursors: dict[Project, str] = {}

    def track(self, job: Tracked) -> Tracked:
        """Start answering for a job (again); keeps what is known about a tracked one."""
        known = self.jobs.get(job.contact)
        if known is not None and known.project == job.project:
            if job.plan is not None:
                known.plan = job.plan
            job = known
        self.jobs[job.contact] = job
        self.poke()
        return job

    def forget(self, contact: str) -> None:
        """Stop answering for a job (destroyed)."""
        self.jobs.pop(contact, None)

    def poke(self) -> None:
        """Run a watcher round soon instead of at the next interval."""
        if self._wake is not None:
            self._wake.set()

    def enable(
        self, reqid: str, push: Push, report: Report, client: GatewayClient, timeout: float
    ) -> None:
        """Open (or re-point) the callback channel and start the watcher."""
        self._channel = (reqid, push)
        self._report, self._client, self._timeout = report, client, timeout
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._loop())
        self.poke()

    def stop(self) -> None:
        """Cancel the watcher (end of the session)."""
        if self._task is not None:
            self._task.cancel()

    async def _loop(self) -> None:
        self._wake = asyncio.Event()
        delay = CALLBACK_INTERVAL
        while True:  # runs until cancelled at the end of the session
            self._wake.clear()
            try:
                await self._round()
                delay = CALLBACK_INTERVAL
            except (GatewayError, httpx.HTTPError) as exc:
                delay = min(delay * 2, MAX_BACKOFF)
                log.warning("callback round failed (next in %g s): %s", delay, exc)
            except Exception:  # a bug must not end the channel: log it and go on
                delay = min(delay * 2, MAX_BACKOFF)
                log.exception("callback round failed")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()

    async def _round(self) -> None:
        by_project: dict[Project, list[Tracked]] = {}
        for job in list(self.jobs.values()):
            if job.fresh or job.reported not in TERMINAL:
                by_project.setdefault(job.project, []).append(job)
        for project, jobs in by_project.items():
            await self._project_round(project, jobs)

    async def _project_round(self, project: Project, jobs: list[Tracked]) -> None:
        cursor = self._cursors.get(project)
        old = sorted({j.batch for j in jobs if not j.fresh}) if cursor is not None else []
        new = sorted({j.batch for j in jobs} - set(old))
        changes: list[tuple[str, str]] = []
        next_cursor = None
        if old:
            next_cursor, seen = await self._query(project, old, str(cursor))
            changes += seen
        if new:
            later, seen = await self._query(project, new, "0")
            changes += seen
            # The earlier cursor is the safe one: what changed in between comes again.
            next_cursor = next_cursor or later
        if next_cursor is not None:
            self._cursors[project] = next_cursor
        for job in jobs:
            if job.batch in new:
                job.fresh = False
        by_name = {j.job: j for j in jobs}
        for name, state in changes:
            changed = by_name.get(name)
            if changed is not None and state != changed.reported and changed.contact in self.jobs:
                await self._push(changed, state)

    async def _query(
        self, project: Project, batches: list[str], since: str
    ) -> tuple[str | None, list[tuple[str, str]]]:
        """Changed (job, state) pairs of the batches; a vanished batch is reported gone."""
        assert self._client is not None
        remaining = list(batches)
        for _ in range(len(batches)):  # each failed turn drops one vanished batch
            try:
                cursor, changes = None, []
                for start in range(0, len(remaining), BATCHES_PER_QUERY):
                    chunk = remaining[start : start + BATCHES_PER_QUERY]
                    reply = await self._client.query_batches(project, chunk, since)
                    cursor = cursor or reply.cursor
                    changes += [(j.name, j.state) for g in reply.batches for j in g.jobs]
                return cursor, changes
            except GatewayError as exc:
                name = exc.extra.get("batch")
                if exc.code != "batch_not_found" or name not in remaining:
                    raise
                remaining.remove(name)
                for job in [j for j in self.jobs.values() if j.batch == name]:
                    if job.project == project and job.reported != GONE:
                        await self._push(job, GONE)
                if not remaining:
                    break
        return None, []

    async def _push(self, job: Tracked, state: str) -> None:
        assert self._report is not None and self._channel is not None
        try:
            async with asyncio.timeout(self._timeout):
                ad = await self._report(job, state)
        except Exception as exc:  # whatever failed, the change must not be lost
            # The cursor has moved on: look at the job's batch from the start next round.
            log.warning("cannot report %s (%s): %r; retrying", job.contact, state, exc)
            job.fresh = True
            return
        job.reported = state
        reqid, push = self._channel
        push([reqid, ad])
        log.info("callback %s: %s", job.contact, state)
