"""Telling BOINC what happened in the gateway: job aborts, batch abort, retirement, leases.

Each is sent once: the batch row records ``aborted_sent``, ``retired_sent`` and the lease last
given (``expire_sent``), and ``batches.backend_synced_change`` is the change number up to which
aborted jobs were passed on with ``abort_jobs``. A retryable error leaves the record as it was,
so the next round sends again (every one of these RPCs is harmless to repeat). A permanent
refusal is logged and recorded as done: there is nothing better to do with it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import structlog

from app.backends.boinc import sync_records
from app.backends.boinc.context import Context, describe, part_refs
from app.backends.boinc.errors import BoincNotFoundError, BoincPermanentError
from app.backends.boinc.rpc import BoincClient
from app.services.common import current_change
from app.states import BatchState

log = structlog.get_logger(__name__)

ABORT_CHUNK = 1000
_NO_JOB = re.compile(r"^(?:no job (\S+)|job (\S+) is not part of a batch)")


def pending(ctx: Context) -> bool:
    """Cheap check: is anything waiting to be told to BOINC?"""
    with ctx.db.read_session() as session:
        upto = current_change(session)
        return bool(
            sync_records.batch_ops(session, limit=1)
            or sync_records.unsynced_aborts(session, upto=upto, limit=1)
        )


def propagate(ctx: Context) -> int:
    """Send what is pending; returns how many RPC-level actions were taken."""
    with ctx.db.read_session() as session:
        # Read first: aborts committed later have higher change numbers and wait their turn.
        upto = current_change(session)
        ops = sync_records.batch_ops(session)
        aborts = sync_records.unsynced_aborts(session, upto=upto)
    done = 0
    for op in ops:
        done += _batch_op(ctx, op, upto)
    by_auth: dict[str, list[tuple[int, str, int]]] = {}
    for job_id, name, batch_id, own in aborts:
        by_auth.setdefault(ctx.authenticator(own), []).append((job_id, name, batch_id))
    for auth, jobs in by_auth.items():
        names = [ctx.namer.job(job_id, name) for job_id, name, _ in jobs]
        _abort_jobs(ctx.clients.get(auth), names)
        with ctx.db.session() as session:
            sync_records.mark_synced(session, batch_ids=[b for _, _, b in jobs], upto=upto)
        log.info("boinc.jobs_aborted", jobs=len(names))
        done += 1
    return done


def _abort_jobs(client: BoincClient, names: Sequence[str]) -> None:
    """abort_jobs in chunks; names BOINC does not know are dropped and the rest resent."""
    for i in range(0, len(names), ABORT_CHUNK):
        chunk = list(names[i : i + ABORT_CHUNK])
        while chunk:
            try:
                client.abort_jobs(chunk)
                break
            except BoincNotFoundError as exc:
                match = _NO_JOB.match(exc.message.strip())
                unknown = (match.group(1) or match.group(2)) if match else None
                if unknown not in chunk:
                    log.warning("boinc.abort_refused", error=describe(exc), jobs=len(chunk))
                    break
                # The jobs before it were aborted already; aborting again is harmless.
                chunk.remove(unknown)
            except BoincPermanentError as exc:
                log.warning("boinc.abort_refused", error=describe(exc), jobs=len(chunk))
                break


def _parts(ctx: Context, op: sync_records.BatchOp) -> list[dict[str, Any]]:
    """Every BOINC batch the batch went as. Telling a part twice (a retry after a later
    part failed) is harmless."""
    return part_refs(ctx.namer, op.batch_id, op.name, op.parts, op.boinc_id)


def _batch_op(ctx: Context, op: sync_records.BatchOp, upto: int) -> int:
    client = ctx.clients.get(ctx.authenticator(op.own_auth))
    ended = op.state in (BatchState.aborted.value, BatchState.retired.value)
    sent = 0
    # What a permanent refusal of the current RPC marks as done.
    giving_up: dict[str, object] = {}
    try:
        if ended and not op.aborted_sent:
            giving_up = {"aborted_sent": True}
            with ctx.db.read_session() as session:
                unsynced = sync_records.unsynced_aborts(session, upto=upto, batch_id=op.batch_id)
            # A retired batch whose jobs had all finished needs no abort, only retirement.
            if op.state == BatchState.aborted.value or unsynced:
                for ref in _parts(ctx, op):
                    client.abort_batch(**ref)
                    sent += 1
            with ctx.db.session() as session:
                sync_records.mark_batch_op(session, batch_id=op.batch_id, aborted_sent=True)
                sync_records.mark_synced(session, batch_ids=[op.batch_id], upto=upto)
        if op.state == BatchState.retired.value:
            # Outputs of done jobs are in the store already: they were recorded with the job.
            # Nothing more will be sent for it: the phase takes it out of every later query.
            giving_up = {"retired_sent": True, "phase": "retired"}
            for ref in _parts(ctx, op):
                client.retire_batch(**ref)
                sent += 1
            with ctx.db.session() as session:
                sync_records.mark_batch_op(session, batch_id=op.batch_id, **giving_up)
        elif (op.lease_until or 0.0) != (op.expire_sent or 0.0):
            giving_up = {"expire_sent": op.lease_until}
            for ref in _parts(ctx, op):
                client.set_expire_time(ctx.expire_time(op.lease_until), **ref)
                sent += 1
            with ctx.db.session() as session:
                sync_records.mark_batch_op(
                    session, batch_id=op.batch_id, expire_sent=op.lease_until
                )
    except BoincPermanentError as exc:
        log.warning("boinc.batch_op_refused", batch_id=op.batch_id, error=describe(exc))
        with ctx.db.session() as session:
            sync_records.mark_batch_op(
                session, batch_id=op.batch_id, last_error=describe(exc)[:2000], **giving_up
            )
    return sent
