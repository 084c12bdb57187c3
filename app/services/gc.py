"""Garbage collection of stored bytes (api.md "Files": the rule and its race).

A file's bytes go only when no open or in-progress batch is associated with it, no job of a
non-retired batch uses it (input, output, stdout, stderr), and every owner's keep-time has
passed. Referencers hold FOR SHARE locks on the files rows until they commit; GC locks the
rows FOR UPDATE (SKIP LOCKED), re-checks the rule in a fresh statement, and links the bytes
into the trash before it commits; only after the commit are they removed from their place
(a crash before it leaves the row and its bytes; after it, at worst unreferenced bytes).
"""

from __future__ import annotations

import structlog
from sqlalchemy import text
from sqlalchemy.orm import Session as OrmSession

from app.db import Database
from app.services.common import is_postgres, now
from app.services.store import FileStore

log = structlog.get_logger(__name__)

_RULE = """
NOT EXISTS (SELECT 1 FROM file_owners o WHERE o.md5 = f.md5 AND o.keep_until > :now)
AND NOT EXISTS (SELECT 1 FROM batch_files bf JOIN batches b ON b.id = bf.batch_id
                WHERE bf.md5 = f.md5 AND b.state IN ('open', 'in_progress'))
AND NOT EXISTS (SELECT 1 FROM job_inputs ji JOIN jobs j ON j.id = ji.job_id
                JOIN batches b ON b.id = j.batch_id
                WHERE ji.md5 = f.md5 AND b.state <> 'retired')
AND NOT EXISTS (SELECT 1 FROM job_outputs jo JOIN jobs j ON j.id = jo.job_id
                JOIN batches b ON b.id = j.batch_id
                WHERE jo.md5 = f.md5 AND b.state <> 'retired')
AND NOT EXISTS (SELECT 1 FROM jobs j JOIN batches b ON b.id = j.batch_id
                WHERE (j.stdout_md5 = f.md5 OR j.stderr_md5 = f.md5) AND b.state <> 'retired')
"""


def _round(session: OrmSession, store: FileStore, *, at: float, limit: int) -> int:
    pg = is_postgres(session)  # type: ignore[arg-type]
    lock = " FOR UPDATE OF f SKIP LOCKED" if pg else ""
    candidates = [
        r[0]
        for r in session.execute(
            text(f"SELECT f.md5 FROM files f WHERE {_RULE} LIMIT :limit{lock}"),
            {"now": at, "limit": limit},
        )
    ]
    if not candidates:
        return 0
    if pg:
        # Fresh statement, fresh snapshot: sees every reference committed before our locks.
        candidates = [
            r[0]
            for r in session.execute(
                text(f"SELECT f.md5 FROM files f WHERE f.md5 = ANY(:m) AND {_RULE}"),
                {"m": candidates, "now": at},
            )
        ]
    trashed = []
    try:
        for md5 in candidates:
            session.execute(text("DELETE FROM batch_files WHERE md5 = :m"), {"m": md5})
            session.execute(text("DELETE FROM file_owners WHERE md5 = :m"), {"m": md5})
            session.execute(text("DELETE FROM files WHERE md5 = :m"), {"m": md5})
            path = store.trash(md5)
            if path is not None:
                trashed.append((path, md5))
        session.commit()
    except BaseException:
        session.rollback()
        for path, md5 in trashed:
            store.restore(path, md5)
        raise
    for path, md5 in trashed:
        store.discard(path, md5)
    return len(candidates)


def recover_trash(db: Database, store: FileStore) -> int:
    """Settle what a GC that died (or runs elsewhere) left in the trash; returns how many
    entries it settled.

    Under the row's lock (a GC in flight elsewhere holds it until it commits): a row that
    still exists means the deletion never committed, and the entry is dropped (or, for bytes
    a dying ``discard`` had moved aside, put back in place); no row means it committed, and
    the discard is finished.
    """
    entries = store.trashed()
    for path, md5 in entries:
        with OrmSession(db.engine) as session:
            lock = " FOR UPDATE" if is_postgres(session) else ""  # type: ignore[arg-type]
            row = session.execute(
                text(f"SELECT 1 FROM files WHERE md5 = :m{lock}"), {"m": md5}
            ).first()
            if row is not None:
                store.restore(path, md5)
            else:
                store.discard(path, md5)
            session.commit()
    if entries:
        log.info("gc.trash_settled", entries=len(entries))
    return len(entries)


def collect(
    db: Database,
    store: FileStore,
    *,
    at: float | None = None,
    limit: int = 500,
    max_rounds: int = 1000,
) -> int:
    """Delete every collectable file; returns how many went."""
    at = now() if at is None else at
    recover_trash(db, store)
    total = 0
    for _ in range(max_rounds):
        with OrmSession(db.engine) as session:
            n = _round(session, store, at=at, limit=limit)
        total += n
        if n < limit:
            break
    store.sweep_temp(older_than=at - 24 * 3600)
    if total:
        log.info("gc.collected", files=total)
    return total
