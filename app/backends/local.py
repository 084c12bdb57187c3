"""The embedded ``local`` backend: jobs as sandboxed subprocesses on this host."""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import structlog
from sqlalchemy import insert, select
from sqlmodel import col

from app.backends import sandbox
from app.backends.base import Backend
from app.config import Settings
from app.db import Database, db_unavailable
from app.metrics import BACKEND_ERRORS, JOBS_FINISHED
from app.models import App, Batch, Job, JobInput, JobOutput, StoredFile, Worker
from app.services import files as files_svc
from app.services import jobs as jobs_svc
from app.services.common import insert_ignore, lock_files, now, table_of
from app.services.store import READ_CHUNK, FileStore
from app.states import JobState

log = structlog.get_logger(__name__)


@dataclass
class _Work:
    job_id: int
    name: str
    owner_id: int
    argv: list[str]
    inputs: dict[str, Path]
    wanted: list[str]
    required: list[str]
    wall_seconds: float
    env: dict[str, str] | None = None
    url_inputs: list[JobInput] = field(default_factory=list)


class LocalBackend(Backend):
    """Claims queued jobs up to ``BGW_LOCAL_SLOTS`` and runs each in its own thread."""

    name = "local"

    def __init__(self, db: Database, store: FileStore, settings: Settings, worker_id: str) -> None:
        self.db, self.store, self.settings, self.worker_id = db, store, settings, worker_id
        self.slots = max(1, settings.local_slots)
        self.running: dict[int, sandbox.RunningJob | None] = {}
        self.lock = threading.Lock()
        self.threads: dict[int, threading.Thread] = {}
        # Jobs killed because this worker lost the database for so long that another worker
        # may requeue them: their runs record nothing; _requeue_strays requeues them.
        self.fenced: set[int] = set()
        # Jobs found aborted before their process started: it is killed as it starts.
        self.cancelled: set[int] = set()
        self._confirmed_at = time.monotonic()  # the database last confirmed our claims
        self._strays_due = 0.0
        self._stopping = threading.Event()
        settings.sandbox_dir.mkdir(parents=True, exist_ok=True)
        self._sweep_orphans()

    def _sweep_orphans(self) -> None:
        """Kill jobs left running by workers that died here, and remove their sandboxes."""
        with self.db.read_session() as session:
            alive = now() - self.settings.worker_dead_seconds
            live = set(
                session.execute(
                    select(col(Worker.id)).where(col(Worker.last_seen) >= alive)
                ).scalars()
            )

        def keep(dirname: str) -> bool:
            base = dirname.removesuffix(".log")
            return any(base.endswith(f"-{w}") for w in live)

        killed = sandbox.kill_orphans(self.settings.sandbox_dir, keep)
        if killed:
            log.warning("local.orphans_killed", processes=killed)

    # ---- the loop -------------------------------------------------------------------------

    def step(self) -> bool:
        """Kill aborted jobs, then claim and start queued ones for the free slots."""
        self._kill_aborted()
        self._requeue_strays()
        with self.lock:
            free = self.slots - len(self.threads)
        if free <= 0:
            return False
        with self.db.read_session() as session:
            if not jobs_svc.has_runnable(session, backend=self.name):
                return False
        with self.db.session() as session:
            ids = jobs_svc.claim(session, worker_id=self.worker_id, backend=self.name, limit=free)
        for job_id in ids:
            t = threading.Thread(
                target=self._run, args=(job_id,), name=f"job-{job_id}", daemon=True
            )
            with self.lock:
                self.threads[job_id] = t
                self.running[job_id] = None
            t.start()
        return bool(ids)

    def _kill_aborted(self) -> None:
        with self.lock:
            ids = list(self.running)
        if not ids:
            self._confirmed_at = time.monotonic()
            return
        try:
            with self.db.read_session() as session:
                still = set(
                    session.execute(
                        select(col(Job.id)).where(
                            col(Job.id).in_(ids),
                            col(Job.state) == JobState.in_progress.value,
                            col(Job.worker_id) == self.worker_id,
                        )
                    ).scalars()
                )
        except Exception as exc:
            if db_unavailable(exc):
                self._fence(ids)
            raise
        self._confirmed_at = time.monotonic()
        for job_id in ids:
            if job_id not in still:
                with self.lock:
                    rj = self.running.get(job_id)
                    if rj is None:
                        # Claimed but its process not started yet: killed as it starts.
                        self.cancelled.add(job_id)
                if rj is not None:
                    log.info("job.killing", job_id=job_id, reason="no longer in progress")
                    rj.kill()

    def _fence(self, ids: list[int]) -> None:
        """Kill our jobs once the database has not confirmed them for so long that other
        workers may think us dead and requeue them: a job never runs twice at once.

        Others requeue after ``worker_dead_seconds`` without a heartbeat; the dispatcher
        loop comes round at least every heartbeat interval, so this leaves a margin of one.
        """
        s = self.settings
        limit = max(0.0, s.worker_dead_seconds - 2 * s.worker_heartbeat_seconds)
        if time.monotonic() - self._confirmed_at <= limit:
            return
        with self.lock:
            new = [i for i in ids if i not in self.fenced]
            self.fenced.update(new)
            doomed = [rj for i in new if (rj := self.running.get(i)) is not None]
        for rj in doomed:
            rj.kill()
        if new:
            log.warning("local.fenced", jobs=new, reason="database unreachable")

    def _requeue_strays(self) -> None:
        """Requeue jobs claimed by this worker that no thread of it runs any more (their
        claim's answer or their result was lost with the database; or they were fenced)."""
        t = time.monotonic()
        if t < self._strays_due:
            return
        self._strays_due = t + self.settings.worker_heartbeat_seconds
        with self.lock:
            mine = set(self.running)
        with self.db.read_session() as session:
            rows = session.execute(
                select(col(Job.id), col(Job.attempts)).where(
                    col(Job.state) == JobState.in_progress.value,
                    col(Job.worker_id) == self.worker_id,
                )
            ).all()
        strays = [(i, n) for i, n in rows if i not in mine]
        if not strays:
            return
        most = self.settings.local_max_attempts
        with self.db.session() as session:
            requeued = jobs_svc.transition(
                session,
                job_ids=[i for i, n in strays if n < most],
                target=JobState.queued,
                values={"worker_id": None},
                worker_id=self.worker_id,
            )
            failed = jobs_svc.transition(
                session,
                job_ids=[i for i, n in strays if n >= most],
                target=JobState.error,
                values={"error": f"interrupted {most} times (database unavailable); giving up"},
                worker_id=self.worker_id,
            )
        log.warning("local.strays_requeued", requeued=requeued, failed=failed)

    def stop(self) -> None:
        """Kill what runs and put it back in the queue for the next worker."""
        self._stopping.set()
        with self.lock:
            jobs = dict(self.running)
        for rj in jobs.values():
            if rj is not None:
                rj.kill()
        for t in list(self.threads.values()):
            t.join(timeout=30)
        if jobs:
            with contextlib.suppress(Exception), self.db.session() as session:
                jobs_svc.transition(
                    session,
                    job_ids=list(jobs),
                    target=JobState.queued,
                    values={"worker_id": None},
                    worker_id=self.worker_id,
                )

    # ---- one job --------------------------------------------------------------------------

    def _load(self, job_id: int) -> _Work:
        with self.db.read_session() as session:
            job = session.get_one(Job, job_id)
            batch = session.get_one(Batch, job.batch_id)
            app = session.get_one(App, batch.app_id)
            inputs = list(
                session.execute(select(JobInput).where(col(JobInput.job_id) == job_id)).scalars()
            )
        local: dict[str, Any] = app.local or {}
        if not local.get("command"):
            raise RuntimeError(f"app {app.name} has no local command")
        wanted = list(job.outputs_wanted)
        required = [
            o["name"] for o in app.outputs if o.get("required", True) and o["name"] in wanted
        ]
        return _Work(
            job_id=job_id,
            name=job.name,
            owner_id=job.owner_id,
            argv=[*local["command"], *job.args],
            inputs={i.name: self.store.path(i.md5) for i in inputs if i.md5},
            wanted=wanted,
            required=required,
            wall_seconds=float(local.get("wall_seconds") or self.settings.local_wall_seconds),
            env=job.env,
            url_inputs=[i for i in inputs if i.url],
        )

    def _run(self, job_id: int) -> None:
        box = self.settings.sandbox_dir.resolve() / f"job-{job_id}-{self.worker_id}"
        doing = "run"
        try:
            work = self._load(job_id)
            for inp in work.url_inputs:
                work.inputs[inp.name] = self._fetch(inp, owner_id=work.owner_id)
            spec = sandbox.RunSpec(
                argv=work.argv,
                sandbox=box,
                inputs=work.inputs,
                outputs=work.wanted,
                wall_seconds=work.wall_seconds,
                output_cap=self.settings.local_output_cap,
                env=work.env,
            )
            with contextlib.suppress(FileNotFoundError):
                sandbox.remove(box)
            rj = sandbox.start(spec)
            with self.lock:
                self.running[job_id] = rj
                doomed = job_id in self.fenced or job_id in self.cancelled
            if doomed:
                log.info("job.killing", job_id=job_id, reason="no longer in progress")
                rj.kill()
            result = rj.wait()
            with self.lock:
                fenced = job_id in self.fenced
            if fenced:
                log.warning("job.fenced", job=work.name, reason="database unreachable")
                return
            doing = "store the outputs"
            self._finish_retrying(work, result)
        except Exception as exc:
            if db_unavailable(exc):
                # Not the job's fault: it stays claimed; _requeue_strays (or, if this worker
                # dies, another one) puts it back in the queue once the database answers.
                log.warning("job.database_unavailable", job_id=job_id, error=_first_line(exc))
                return
            BACKEND_ERRORS.labels(self.name).inc()
            log.exception("job.failed_to_run", job_id=job_id)
            with contextlib.suppress(Exception), self.db.session() as session:
                jobs_svc.transition(
                    session,
                    job_ids=[job_id],
                    target=JobState.error,
                    values={"error": f"could not {doing}: {exc}"},
                    worker_id=self.worker_id,
                )
        finally:
            with contextlib.suppress(Exception):
                sandbox.remove(box)
            with self.lock:
                self.running.pop(job_id, None)
                self.threads.pop(job_id, None)
                self.fenced.discard(job_id)
                self.cancelled.discard(job_id)
            self.wake()  # a slot is free: claim the next job now, not after the idle pause

    def _finish_retrying(self, work: _Work, result: sandbox.RunResult) -> None:
        """Record the result, waiting out a database outage (the outputs are still in the
        sandbox) rather than losing a finished run; gives up only when the worker stops."""
        delay = 0.5
        while True:
            try:
                self._finish(work, result)
                return
            except Exception as exc:
                if not db_unavailable(exc) or self._stopping.wait(delay):
                    raise
                log.warning("job.result_not_recorded", job=work.name, error=_first_line(exc))
                delay = min(delay * 2, 2.0)

    def _fetch(self, inp: JobInput, *, owner_id: int) -> Path:
        """Download a URL input into the store, checked against its md5 and size."""
        md5 = inp.url_md5 or ""
        if self.store.exists(md5):
            return self.store.path(md5)
        digest = hashlib.md5(usedforsecurity=False)
        size = 0
        with (
            self.store.temp() as (fh, tmp),
            httpx.stream("GET", inp.url or "", timeout=60, follow_redirects=True) as resp,
        ):
            resp.raise_for_status()
            for chunk in resp.iter_bytes(READ_CHUNK):
                size += len(chunk)
                if inp.size is not None and size > inp.size:
                    raise RuntimeError(
                        f"input {inp.name}: {inp.url} is larger than {inp.size} bytes"
                    )
                digest.update(chunk)
                fh.write(chunk)
            fh.flush()
            if digest.hexdigest() != md5 or (inp.size is not None and size != inp.size):
                raise RuntimeError(f"input {inp.name}: {inp.url} does not match its md5/size")
            self._record_files(owner_id, [(tmp, md5, size)])
        return self.store.path(md5)

    def _record_files(self, owner_id: int, staged: list[tuple[Path, str, int]]) -> None:
        with self.db.session() as session:
            self._insert_files(session, owner_id, staged)

    def _insert_files(
        self, session: Any, owner_id: int, staged: list[tuple[Path, str, int]]
    ) -> None:
        t = now()
        insert_ignore(
            session, StoredFile, [{"md5": m, "size": s, "created_at": t} for _, m, s in staged]
        )
        lock_files(session, [m for _, m, _ in staged])
        files_svc.claim(
            session,
            user_id=owner_id,
            md5s=[m for _, m, _ in staged],
            keep_until=t + self.settings.file_keep_seconds,
        )
        for tmp, md5, _ in staged:
            self.store.place(tmp, md5)

    def _finish(self, work: _Work, result: sandbox.RunResult) -> None:
        """Store outputs and logs content-addressed, then record the job's end (guarded)."""
        error = result.error_message(work.required)
        with contextlib.ExitStack() as stack:
            staged: dict[str, tuple[Path, str, int]] = {}
            for name, path in result.outputs.items():
                if name in work.wanted:
                    staged[name] = stack.enter_context(self.store.staged_copy(path))
            logs = {
                key: stack.enter_context(self.store.staged_bytes(data))
                for key, data in (("stdout", result.stdout), ("stderr", result.stderr))
            }
            target = JobState.done if error is None else JobState.error
            with self.db.session() as session:
                self._insert_files(session, work.owner_id, [*staged.values(), *logs.values()])
                moved = jobs_svc.transition(
                    session,
                    job_ids=[work.job_id],
                    target=target,
                    worker_id=self.worker_id,
                    values={
                        "exit_code": result.exit_code,
                        "wall_seconds": round(result.wall_seconds, 3),
                        "cpu_seconds": round(result.cpu_seconds, 3),
                        "error": error,
                        "stdout_md5": logs["stdout"][1],
                        "stderr_md5": logs["stderr"][1],
                    },
                )
                if moved and staged:
                    session.execute(
                        insert(table_of(JobOutput)),
                        [
                            {"job_id": work.job_id, "name": n, "md5": m, "size": s}
                            for n, (_, m, s) in sorted(staged.items())
                        ],
                    )
        if moved:
            JOBS_FINISHED.labels(self.name, target.value).inc()
            log.info(
                "job.finished",
                job=work.name,
                state=target.value,
                error=error,
                wall=round(result.wall_seconds, 2),
            )
        else:
            log.info("job.result_dropped", job=work.name, reason="no longer in progress")


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:300]
