"""Files: per-user claims on content-addressed bytes, dedup queries, batch associations."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col

from app.errors import BatchState, FileNotFound, InvalidCursor
from app.models import Batch, BatchFile, FileOwner, StoredFile, User
from app.schemas import FileInfo
from app.services import users as users_svc
from app.services.common import (
    chunks,
    decode_cursor,
    encode_cursor,
    insert_ignore,
    is_postgres,
    lock_files,
    now,
    table_of,
)
from app.services.lookup import get_batch_or_404
from app.services.store import FileStore
from app.states import BATCH_LIVE


def owned(session: Session, *, user_id: int, md5s: Sequence[str]) -> set[str]:
    """Which of ``md5s`` the user has a claim on."""
    found: set[str] = set()
    for part in chunks(sorted(set(md5s))):
        q = select(col(FileOwner.md5)).where(
            col(FileOwner.user_id) == user_id, col(FileOwner.md5).in_(part)
        )
        found.update(session.execute(q).scalars())
    return found


def claim(
    session: Session,
    *,
    user_id: int,
    md5s: Sequence[str],
    keep_until: float,
    filename: str | None = None,
) -> None:
    """Record (or extend) the user's claim on stored files."""
    if not md5s:
        return
    t = now()
    rows = [
        {
            "user_id": user_id,
            "md5": m,
            "created_at": t,
            "keep_until": keep_until,
            "filename": filename,
        }
        for m in sorted(set(md5s))
    ]
    table = table_of(FileOwner)
    pg = is_postgres(session)
    ins = postgresql.insert(table) if pg else sqlite.insert(table)
    greatest = getattr(func, "greatest" if pg else "max")
    stmt = ins.on_conflict_do_update(
        index_elements=["user_id", "md5"],
        set_={"keep_until": greatest(table.c.keep_until, ins.excluded.keep_until)},
    )
    for part in chunks(rows, 500):
        session.execute(stmt, list(part))


def associate(session: Session, *, batch: Batch, md5s: Sequence[str]) -> None:
    """Tie files to a live batch so garbage collection keeps them while it is live."""
    if batch.state not in BATCH_LIVE:
        raise BatchState(
            f"batch {batch.name} is {batch.state}: files can only join an open or "
            "in-progress batch",
            batch=batch.name,
            state=batch.state,
        )
    insert_ignore(session, BatchFile, [{"batch_id": batch.id, "md5": m} for m in set(md5s)])


def record_upload(
    session: Session,
    *,
    store: FileStore,
    user: User,
    md5: str,
    size: int,
    temp: Path,
    filename: str | None,
    batch_name: str | None,
    keep_seconds: float,
) -> bool:
    """Record a verified upload and move its bytes into place; True when new to this user."""
    batch = get_batch_or_404(session, owner=user, name=batch_name) if batch_name else None
    users_svc.lock_user(session, user_id=user.id or 0)
    is_new = not owned(session, user_id=user.id or 0, md5s=[md5])
    if is_new:
        users_svc.check_storage_quota(session, user=user, adding=size)
    insert_ignore(session, StoredFile, [{"md5": md5, "size": size, "created_at": now()}])
    lock_files(session, [md5])
    claim(
        session,
        user_id=user.id or 0,
        md5s=[md5],
        keep_until=now() + keep_seconds,
        filename=filename,
    )
    if batch is not None:
        associate(session, batch=batch, md5s=[md5])
    # Inside the transaction: GC cannot have these bytes while we hold the row lock.
    store.place(temp, md5)
    return is_new


def query(
    session: Session,
    *,
    user: User,
    md5s: Sequence[str],
    batch_name: str | None,
    keep_seconds: float,
) -> list[str]:
    """The md5s the user does not have; the present ones are kept and tied to the batch."""
    batch = get_batch_or_404(session, owner=user, name=batch_name) if batch_name else None
    present = owned(session, user_id=user.id or 0, md5s=md5s) & lock_files(session, md5s).keys()
    if present:
        claim(session, user_id=user.id or 0, md5s=sorted(present), keep_until=now() + keep_seconds)
        if batch is not None:
            associate(session, batch=batch, md5s=sorted(present))
    seen: set[str] = set()
    missing = []
    for m in md5s:
        if m not in present and m not in seen:
            seen.add(m)
            missing.append(m)
    return missing


def get_file_or_404(session: Session, *, user: User, md5: str) -> StoredFile:
    """A stored file the user has (404 ``file_not_found`` otherwise, whoever else has it)."""
    row: StoredFile | None = (
        session.execute(
            select(StoredFile)
            .join(FileOwner, col(FileOwner.md5) == col(StoredFile.md5))
            .where(col(FileOwner.user_id) == user.id, col(StoredFile.md5) == md5)
        )
        .scalars()
        .first()
    )
    if row is None:
        raise FileNotFound(f"no file {md5}", md5s=[md5])
    return row


def list_files(
    session: Session, *, user: User, limit: int, cursor: str | None
) -> tuple[list[FileInfo], str | None]:
    """The user's files by md5, one page, with the batches that use each."""
    after = decode_cursor(cursor)
    if after is not None and not isinstance(after, str):
        raise InvalidCursor("cursor is not one this service issued", cursor=(cursor or "")[:100])
    q = (
        select(StoredFile, FileOwner)
        .join(FileOwner, col(FileOwner.md5) == col(StoredFile.md5))
        .where(col(FileOwner.user_id) == user.id)
        .order_by(col(StoredFile.md5))
        .limit(limit + 1)
    )
    if after:
        q = q.where(col(StoredFile.md5) > after)
    rows = session.execute(q).all()
    page = rows[:limit]
    md5s = [f.md5 for f, _ in page]
    batches: dict[str, list[str]] = {}
    if md5s:
        bq = (
            select(col(BatchFile.md5), col(Batch.name))
            .join(Batch, col(Batch.id) == col(BatchFile.batch_id))
            .where(col(Batch.owner_id) == user.id, col(BatchFile.md5).in_(md5s))
            .order_by(col(Batch.name))
        )
        for md5, name in session.execute(bq):
            batches.setdefault(md5, []).append(name)
    items = [
        FileInfo(
            md5=f.md5,
            size=f.size,
            filename=o.filename,
            created_at=o.created_at,
            keep_until=o.keep_until,
            batches=batches.get(f.md5, []),
        )
        for f, o in page
    ]
    nxt = encode_cursor(page[-1][0].md5) if len(rows) > limit else None
    return items, nxt


def drop_claim(session: Session, *, user: User, md5: str) -> None:
    """Drop the user's claim; the bytes go when nothing else protects them."""
    result = session.execute(
        delete(FileOwner).where(col(FileOwner.user_id) == user.id, col(FileOwner.md5) == md5)
    )
    if result.rowcount == 0:  # type: ignore[attr-defined]
        raise FileNotFound(f"no file {md5}", md5s=[md5])
