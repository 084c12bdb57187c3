"""The ``boinc`` backend: submitted batches go to a BOINC project, results come back.

Each dispatcher step (1) sends batches nobody is sending (``submit``), claimed with a guarded
update so two workers never send one batch; (2) under the poller lease, held by one worker at
a time, tells BOINC about aborts, retirements and leases (``propagate``) and polls
(``poll``). BOINC being unreachable is a retryable error: nothing changes in the database,
every worker backs off (doubling up to ``BGW_BOINC_RETRY_MAX_SECONDS``) and tries again, and
``/readyz`` says why. A permanent refusal puts the affected jobs into ``error`` with BOINC's
message.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable

import structlog

from app.backends.base import Backend
from app.backends.boinc import poll, propagate, records, submit
from app.backends.boinc.context import ClientPool, Context, MappingError, client_for, describe
from app.backends.boinc.errors import (
    BoincBatchStateError,
    BoincError,
    BoincPermanentError,
    BoincRetryableError,
)
from app.backends.boinc.names import Namer
from app.backends.boinc.rpc import BoincClient
from app.config import Settings
from app.db import Database
from app.metrics import BACKEND_ERRORS
from app.models import App
from app.services.common import now
from app.services.store import FileStore

log = structlog.get_logger(__name__)

SEND_PER_STEP = 10


class ClaimLost(Exception):
    """Another worker took over a batch this worker was sending."""


class Backoff:
    """Exponential backoff after retryable errors, shared by everything this worker does."""

    def __init__(self, first: float, cap: float) -> None:
        self.first, self.cap = max(0.01, first), max(first, cap)
        self.delay = 0.0
        self.until = 0.0

    def failed(self) -> float:
        """Record a failure; returns how long to wait."""
        self.delay = min(self.cap, self.delay * 2 or self.first)
        self.until = time.monotonic() + self.delay
        return self.delay

    def succeeded(self) -> None:
        """Forget earlier failures."""
        self.delay = self.until = 0.0

    def waiting(self) -> bool:
        """True while backing off."""
        return time.monotonic() < self.until


class BoincBackend(Backend):
    """Forwards batches to the project at ``BGW_BOINC_URL`` over its remote submission RPCs."""

    name = "boinc"
    jobs_held_by_worker = False

    def __init__(self, db: Database, store: FileStore, settings: Settings, worker_id: str) -> None:
        # httpx logs every request URL at INFO, and get_output.php URLs carry the account's
        # authenticator (workunit_file takes it raw): keep them out of the logs.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        self.db, self.store, self.settings, self.worker_id = db, store, settings, worker_id
        self.clients = ClientPool(settings)
        self.backoff = Backoff(settings.boinc_retry_seconds, settings.boinc_retry_max_seconds)
        self._ctx: Context | None = None
        self._next_poll = 0.0
        self._next_full = 0.0
        s = settings
        self._poller_lease = max(30.0, 2 * s.boinc_timeout_seconds, 3 * s.boinc_poll_seconds)
        self._health: tuple[float, str] | None = None
        self._health_lock = threading.Lock()
        self._pinger: BoincClient | None = None

    # ---- the loop -------------------------------------------------------------------------

    def _context(self) -> Context:
        if self._ctx is None:
            with self.db.session() as session:
                token = records.name_token(session)
            namer = Namer(self.settings.boinc_name_prefix, token)
            self._ctx = Context(
                self.db, self.store, self.settings, self.worker_id, namer, self.clients
            )
        return self._ctx

    def step(self) -> bool:
        """Send what is waiting, pass on aborts and leases, poll when due."""
        if not self.settings.boinc_url or self.backoff.waiting():
            return False
        ctx = self._context()
        try:
            busy = self._send(ctx)
            busy = self._sync(ctx) or busy
        except BoincRetryableError as exc:
            delay = self.backoff.failed()
            BACKEND_ERRORS.labels(self.name).inc()
            self._set_health(f"BOINC unreachable: {describe(exc)}")
            log.warning("boinc.unreachable", error=describe(exc), retry_in=delay)
            return False
        self.backoff.succeeded()
        return busy

    def stop(self) -> None:
        """Hand claims and the poller lease back, close connections."""
        with contextlib.suppress(Exception), self.db.session() as session:
            records.release_worker(session, worker=self.worker_id)
        self.clients.close()
        if self._pinger is not None:
            self._pinger.close()

    # ---- sending --------------------------------------------------------------------------

    def _send(self, ctx: Context) -> bool:
        with self.db.read_session() as session:
            ids = records.sendable(session, limit=SEND_PER_STEP, dead_before=self._dead_before())
        busy = False
        for batch_id in ids:
            busy = self._send_one(ctx, batch_id) or busy
        return busy

    def _renewer(self, batch_id: int) -> Callable[[], None]:
        def renew() -> None:
            with self.db.session() as session:
                until = now() + self.settings.boinc_claim_seconds
                if not records.renew_claim(
                    session, batch_id=batch_id, worker=self.worker_id, until=until
                ):
                    raise ClaimLost(f"batch {batch_id} was taken over by another worker")

        return renew

    def _send_one(self, ctx: Context, batch_id: int) -> bool:
        until = now() + self.settings.boinc_claim_seconds
        with self.db.session() as session:
            attempt = records.claim_send(
                session,
                batch_id=batch_id,
                worker=self.worker_id,
                until=until,
                dead_before=self._dead_before(),
            )
        if attempt is None:
            return False
        plan: submit.Plan | None = None
        try:
            plan = submit.load_plan(ctx, batch_id)
            if not plan.specs and attempt == 1:
                self._unsent(batch_id, "skipped", None, plan.invalid)
                return True
            client = ctx.clients.get(plan.authenticator)
            target = ctx.target(plan.app, plan.authenticator)
            sent = submit.send(
                client,
                plan,
                target,
                attempt=attempt,
                expire=ctx.expire_time(plan.lease_until),
                keep_until=now() + self.settings.file_keep_seconds,
                renew=self._renewer(batch_id),
                max_bytes=self.settings.boinc_submit_max_bytes,
            )
        except BoincBatchStateError as exc:
            # Submitted by an earlier attempt after all: the next attempt finds it by name.
            self._release(batch_id, 0.0, exc)
            return True
        except BoincRetryableError as exc:
            self._release(batch_id, self.backoff.first * 2 ** min(attempt - 1, 10), exc)
            raise
        except (BoincPermanentError, MappingError) as exc:
            BACKEND_ERRORS.labels(self.name).inc()
            if isinstance(exc, MappingError):
                message = f"cannot send the batch to BOINC: {describe(exc)}"
            else:
                message = f"BOINC refused the batch: {describe(exc)}"
            log.warning("boinc.batch_refused", batch_id=batch_id, error=describe(exc))
            self._unsent(batch_id, "failed", message, plan.invalid if plan else {})
            return True
        except submit.BatchBusy as exc:
            log.warning("boinc.batch_busy", batch_id=batch_id, attempt=attempt, error=str(exc))
            if attempt >= self.settings.boinc_max_attempts:
                self._unsent(batch_id, "failed", f"BOINC: {exc}", plan.invalid if plan else {})
            else:
                self._release(batch_id, self.backoff.first * 2 ** min(attempt, 10), exc)
            return False
        except ClaimLost as exc:
            log.warning("boinc.claim_lost", batch_id=batch_id, error=str(exc))
            return False
        except Exception as exc:
            BACKEND_ERRORS.labels(self.name).inc()
            log.exception("boinc.send_failed", batch_id=batch_id, attempt=attempt)
            if attempt >= self.settings.boinc_max_attempts:
                message = f"could not send the batch to BOINC: {describe(exc)}"
                self._unsent(batch_id, "failed", message, plan.invalid if plan else {})
            else:
                self._release(batch_id, self.backoff.first * 2 ** min(attempt, 10), exc)
            return False
        if sent is None:
            self._unsent(batch_id, "skipped", None, plan.invalid)
            return True
        with self.db.session() as session:
            ok = records.record_sent(
                session,
                batch_id=batch_id,
                worker=self.worker_id,
                boinc_id=sent.boinc_id,
                parts=sent.parts,
                synced_change=plan.synced_change,
                expire_sent=None if sent.recovered else plan.lease_until,
                invalid=plan.invalid,
            )
        if not ok:
            log.warning("boinc.claim_lost", batch_id=batch_id, boinc_id=sent.boinc_id)
        self._next_poll = 0.0  # show its jobs soon
        return True

    def _release(self, batch_id: int, delay: float, exc: BaseException) -> None:
        retry_at = now() + min(delay, self.settings.boinc_retry_max_seconds)
        with self.db.session() as session:
            records.release_claim(
                session,
                batch_id=batch_id,
                worker=self.worker_id,
                retry_at=retry_at,
                error=describe(exc),
            )

    def _unsent(
        self, batch_id: int, phase: str, message: str | None, invalid: dict[int, str]
    ) -> None:
        with self.db.session() as session:
            records.record_unsent(
                session,
                batch_id=batch_id,
                worker=self.worker_id,
                phase=phase,
                message=message,
                invalid=invalid,
            )

    # ---- propagation and polling (one worker at a time) -----------------------------------

    def _sync(self, ctx: Context) -> bool:
        t = time.monotonic()
        poll_due = t >= self._next_poll
        if not poll_due and not propagate.pending(ctx):
            return False
        if not self._keep_lease():
            self._next_poll = t + self.settings.boinc_poll_seconds
            return False
        busy = propagate.propagate(ctx) > 0
        if poll_due:
            full = t >= self._next_full
            apps: dict[int, App] = {}
            result = poll.poll(
                ctx,
                full=full,
                target=ctx.target,
                apps=lambda app_id: self._app(apps, app_id),
                keep_lease=self._keep_lease,
            )
            self._next_poll = t if result.backlog else t + self.settings.boinc_poll_seconds
            if full:
                self._next_full = t + self.settings.boinc_full_poll_seconds
            busy = busy or bool(result.started or result.finished)
        return busy

    def _keep_lease(self) -> bool:
        with self.db.session() as session:
            return records.take_lease(
                session,
                key=records.POLLER_KEY,
                worker=self.worker_id,
                until=now() + self._poller_lease,
                dead_before=self._dead_before(),
            )

    def _dead_before(self) -> float:
        """Workers whose last heartbeat is older than this were killed: their sending claims
        and poller lease are taken over without waiting for them to run out."""
        return now() - self.settings.worker_dead_seconds

    def _app(self, cache: dict[int, App], app_id: int) -> App:
        if app_id not in cache:
            with self.db.read_session() as session:
                cache[app_id] = session.get_one(App, app_id)
        return cache[app_id]

    # ---- health ---------------------------------------------------------------------------

    def _set_health(self, status: str) -> None:
        with self._health_lock:
            self._health = (time.monotonic(), status)

    def health(self) -> str:
        """``ok`` when the project answers a ping (cached for ``BGW_BOINC_HEALTH_SECONDS``)."""
        if not self.settings.boinc_url:
            return "BOINC not configured: set BGW_BOINC_URL"
        with self._health_lock:
            cached = self._health
            if cached and time.monotonic() - cached[0] < self.settings.boinc_health_seconds:
                return cached[1]
            if self._pinger is None:
                timeout = min(5.0, self.settings.boinc_timeout_seconds)
                self._pinger = client_for(self.settings, "", timeout=timeout)
            try:
                self._pinger.ping()
                status = "ok"
            except BoincError as exc:
                status = f"BOINC unreachable: {describe(exc)}"
            self._health = (time.monotonic(), status)
            return status
