"""The dispatcher: one thread that drives a backend and does the periodic housekeeping.

Housekeeping: the worker heartbeat, requeueing jobs of workers that died, the lease reaper
(expired batches are aborted and retired), and garbage collection of stored files.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable

import structlog
from sqlalchemy import delete, select, update
from sqlmodel import col

from app.backends.base import Backend
from app.config import Settings
from app.db import Database, db_unavailable
from app.metrics import BACKEND_ERRORS
from app.models import Worker
from app.services import batches as batches_svc
from app.services import gc
from app.services import jobs as jobs_svc
from app.services.common import insert_ignore, now
from app.services.store import FileStore

log = structlog.get_logger(__name__)


def make_backend(db: Database, store: FileStore, settings: Settings, worker_id: str) -> Backend:
    """The backend ``BGW_BACKEND`` names."""
    if settings.backend == "local":
        from app.backends.local import LocalBackend

        return LocalBackend(db, store, settings, worker_id)
    from app.backends.boinc.backend import BoincBackend  # type: ignore[import-not-found,unused-ignore]

    backend: Backend = BoincBackend(db, store, settings, worker_id)
    return backend


class Dispatcher:
    """Runs ``backend.step()`` in a loop on its own thread, plus periodic housekeeping."""

    def __init__(
        self, db: Database, store: FileStore, settings: Settings, backend: Backend | None = None
    ) -> None:
        self.db, self.store, self.settings = db, store, settings
        self.worker_id = f"{socket.gethostname()[:20]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.backend = backend or make_backend(db, store, settings, self.worker_id)
        self.backend.wake = self.wake
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._listener: threading.Thread | None = None
        self._due: dict[str, float] = {}

    def start(self) -> None:
        """Start the loop thread (and, on PostgreSQL, the thread that hears of new work)."""
        self._thread = threading.Thread(target=self._loop, name="dispatcher", daemon=True)
        self._thread.start()
        if not self.db.is_sqlite:
            self._listener = threading.Thread(target=self._listen, name="listen", daemon=True)
            self._listener.start()

    def _listen(self) -> None:
        """Wake the loop on each NOTIFY of new work from any process (Database.notify). Only
        a shortcut: the idle pause still bounds how late work is seen, so a lost connection
        costs nothing but speed; it is reopened with a growing delay."""
        delay = 1.0
        while not self._stop.is_set():
            try:
                conn = self.db.listener()
                if conn is None:
                    return
                with conn:
                    delay = 1.0
                    self.wake()  # whatever was announced while nobody listened
                    checked = time.monotonic()
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=1.0):
                            self.wake()
                        if time.monotonic() - checked > 60:
                            conn.execute("SELECT 1")  # a dead link fails here, in bounds
                            checked = time.monotonic()
            except Exception as exc:
                log.warning("dispatcher.listen_failed", error=str(exc)[:200], retry_in=delay)
                if self._stop.wait(delay):
                    return
                delay = min(delay * 2, 60.0)

    def wake(self) -> None:
        """Poll now instead of after the idle pause."""
        self._wake.set()

    def stop(self) -> None:
        """Stop the loop, the backend, and withdraw this worker."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        if self._listener is not None:
            self._listener.join(timeout=10)

    def _every(self, key: str, interval: float, fn: Callable[[], object]) -> None:
        t = time.monotonic()
        if t < self._due.get(key, 0):
            return
        self._due[key] = t + interval
        try:
            fn()
        except Exception as exc:
            BACKEND_ERRORS.labels(self.backend.name).inc()
            if db_unavailable(exc):
                log.warning("dispatcher.database_unavailable", task=key, error=str(exc)[:200])
            else:
                log.exception("dispatcher.task_failed", task=key)

    def _heartbeat(self) -> None:
        with self.db.session() as session:
            t = now()
            insert_ignore(
                session,
                Worker,
                [
                    {
                        "id": self.worker_id,
                        "backend": self.backend.name,
                        "started_at": t,
                        "last_seen": t,
                    }
                ],
            )
            session.execute(
                update(Worker).where(col(Worker.id) == self.worker_id).values(last_seen=t)
            )

    def _recover(self) -> None:
        requeued = failed = 0
        with self.db.session() as session:
            alive = now() - self.settings.worker_dead_seconds
            # Never ourselves: after an outage our own heartbeat may be stale while our jobs
            # still run (the backend requeues what it lost itself).
            live = [
                self.worker_id,
                *session.execute(
                    select(col(Worker.id)).where(col(Worker.last_seen) >= alive)
                ).scalars(),
            ]
            if self.backend.jobs_held_by_worker:
                requeued, failed = jobs_svc.requeue_lost(
                    session,
                    backend=self.backend.name,
                    live_workers=live,
                    max_attempts=self.settings.local_max_attempts,
                )
            session.execute(delete(Worker).where(col(Worker.last_seen) < alive - 3600))
        if requeued or failed:
            log.info("dispatcher.recovered", requeued=requeued, failed=failed)

    def _reap(self) -> None:
        with self.db.session() as session:
            n = batches_svc.reap_expired(session, at=now())
        if n:
            log.info("lease.expired", batches=n)

    def _loop(self) -> None:
        log.info("dispatcher.started", worker=self.worker_id, backend=self.backend.name)
        s = self.settings
        backoff = 0.0
        while not self._stop.is_set():
            self._every("heartbeat", s.worker_heartbeat_seconds, self._heartbeat)
            self._every("recover", s.worker_heartbeat_seconds * 2, self._recover)
            self._every("reap", s.reaper_interval_seconds, self._reap)
            self._every("gc", s.gc_interval_seconds, lambda: gc.collect(self.db, self.store))
            try:
                busy = self.backend.step()
                backoff = 0.0
            except Exception as exc:
                BACKEND_ERRORS.labels(self.backend.name).inc()
                if db_unavailable(exc):
                    log.warning("dispatcher.database_unavailable", error=str(exc)[:200])
                else:
                    log.exception("dispatcher.step_failed")
                busy = False
                # Without the database, capped at the heartbeat interval: the loop keeps its
                # housekeeping cadence (heartbeats, the local backend's fencing) and resumes
                # soon after the outage.
                cap = s.worker_heartbeat_seconds if db_unavailable(exc) else 30.0
                backoff = min(cap, backoff * 2 or 1.0)
            if not busy:
                self._wake.wait(s.dispatcher_idle_seconds + backoff)
                self._wake.clear()
        try:
            self.backend.stop()
        finally:
            try:
                with self.db.session() as session:
                    session.execute(delete(Worker).where(col(Worker.id) == self.worker_id))
            except Exception:
                log.warning("dispatcher.withdraw_failed", worker=self.worker_id)
        log.info("dispatcher.stopped", worker=self.worker_id)
