"""Users: tokens (random, stored hashed, compared in constant time), quotas, usage."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from sqlalchemy import func, select, text
from sqlmodel import Session, col

from app.errors import QuotaExceeded, UserExists, UserNotFound
from app.models import Batch, FileOwner, Job, StoredFile, User
from app.schemas import Me, Quotas, Usage, UserCreate, UserOut, UserPatch
from app.services.common import is_postgres, now
from app.states import JOB_ACTIVE, BatchState

TOKEN_PREFIX = "bgw_"


def new_token() -> str:
    """A random bearer token (256 bits)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """SHA-256 of the token: tokens carry 256 random bits, so no slow KDF is needed."""
    return hashlib.sha256(token.encode()).hexdigest()


def authenticate(session: Session, *, token: str) -> User | None:
    """The enabled user holding ``token``, or None."""
    if not token or len(token) > 512:
        return None
    digest = hash_token(token)
    user = session.execute(select(User).where(col(User.token_hash) == digest)).scalars().first()
    if user is None or user.disabled:
        return None
    # The index lookup matched; compare again in constant time as defence in depth.
    return user if hmac.compare_digest(user.token_hash, digest) else None


def get_user_or_404(session: Session, *, name: str) -> User:
    """The user called ``name``."""
    user: User | None = (
        session.execute(select(User).where(col(User.name) == name)).scalars().first()
    )
    if user is None:
        raise UserNotFound(f"no user named {name}", user=name)
    return user


def create_user(
    session: Session,
    *,
    data: UserCreate,
    token: str | None = None,
    default_quotas: Quotas | None = None,
) -> tuple[User, str]:
    """Create a user; returns it with its token (shown once)."""
    if session.execute(select(col(User.id)).where(col(User.name) == data.name)).first() is not None:
        raise UserExists(f"user {data.name} exists", user=data.name)
    token = token or new_token()
    quotas = data.quotas or default_quotas or Quotas()
    user = User.model_validate(
        {
            "name": data.name,
            "token_hash": hash_token(token),
            "admin": data.admin,
            "max_active_jobs": quotas.max_active_jobs,
            "max_storage_bytes": quotas.max_storage_bytes,
            "boinc_authenticator": data.boinc_authenticator,
            "created_at": now(),
        }
    )
    session.add(user)
    session.flush()
    return user, token


def patch_user(session: Session, *, name: str, data: UserPatch) -> User:
    """Change a user's rights, quotas, BOINC authenticator or disabled flag."""
    user = get_user_or_404(session, name=name)
    if data.admin is not None:
        user.admin = data.admin
    if data.disabled is not None:
        user.disabled = data.disabled
    if data.quotas is not None:
        fields = data.quotas.model_fields_set
        if "max_active_jobs" in fields:
            user.max_active_jobs = data.quotas.max_active_jobs
        if "max_storage_bytes" in fields:
            user.max_storage_bytes = data.quotas.max_storage_bytes
    if "boinc_authenticator" in data.model_fields_set:
        user.boinc_authenticator = data.boinc_authenticator
    session.add(user)
    session.flush()
    return user


def rotate_token(session: Session, *, name: str) -> str:
    """Replace a user's token; the old one stops working at once."""
    user = get_user_or_404(session, name=name)
    token = new_token()
    user.token_hash = hash_token(token)
    session.add(user)
    session.flush()
    return token


def list_users(session: Session) -> list[User]:
    """Every user, by name."""
    return list(session.execute(select(User).order_by(col(User.name))).scalars())


def user_out(user: User) -> UserOut:
    """The public view of a user (never the token hash)."""
    return UserOut(
        name=user.name,
        admin=user.admin,
        disabled=user.disabled,
        quotas=Quotas(
            max_active_jobs=user.max_active_jobs, max_storage_bytes=user.max_storage_bytes
        ),
        has_boinc_authenticator=bool(user.boinc_authenticator),
        created_at=user.created_at,
    )


def lock_user(session: Session, *, user_id: int) -> None:
    """Serialise quota checks of one user (SQLite: writes are already serial).

    NO KEY UPDATE does not block the foreign-key checks of inserts that refer to the user.
    Lock order everywhere: user, then the change counter, then job and batch rows.
    """
    if is_postgres(session):
        session.execute(
            text("SELECT 1 FROM users WHERE id = :id FOR NO KEY UPDATE"), {"id": user_id}
        )


def active_jobs(session: Session, *, user_id: int) -> int:
    """Jobs of the user's submitted batches that are queued or running (open batches: not yet)."""
    q = (
        select(func.count())
        .select_from(Job)
        .join(Batch, col(Batch.id) == col(Job.batch_id))
        .where(
            col(Job.owner_id) == user_id,
            col(Job.state).in_([s.value for s in JOB_ACTIVE]),
            col(Batch.state) == BatchState.in_progress.value,
        )
    )
    return int(session.execute(q).scalar_one())


def stored_bytes(session: Session, *, user_id: int) -> int:
    """Bytes of every file the user has a claim on."""
    q = (
        select(func.coalesce(func.sum(StoredFile.size), 0))
        .select_from(FileOwner)
        .join(StoredFile, col(StoredFile.md5) == col(FileOwner.md5))
        .where(col(FileOwner.user_id) == user_id)
    )
    return int(session.execute(q).scalar_one())


def check_job_quota(session: Session, *, user: User, adding: int) -> None:
    """Raise ``quota_exceeded`` unless ``adding`` more active jobs fit (user locked)."""
    if user.max_active_jobs is None or adding == 0:
        return
    active = active_jobs(session, user_id=user.id or 0)
    if active + adding > user.max_active_jobs:
        raise QuotaExceeded(
            f"max_active_jobs is {user.max_active_jobs}: {active} active, {adding} more asked",
            quota="max_active_jobs",
            limit=user.max_active_jobs,
            usage=active,
        )


def check_storage_quota(session: Session, *, user: User, adding: int) -> None:
    """Raise ``quota_exceeded`` unless ``adding`` more bytes fit (call with the user locked)."""
    if user.max_storage_bytes is None or adding == 0:
        return
    used = stored_bytes(session, user_id=user.id or 0)
    if used + adding > user.max_storage_bytes:
        raise QuotaExceeded(
            f"max_storage_bytes is {user.max_storage_bytes}: {used} stored, {adding} more asked",
            quota="max_storage_bytes",
            limit=user.max_storage_bytes,
            usage=used,
        )


def me(session: Session, *, user: User) -> Me:
    """The caller's identity, quotas and usage."""
    uid = user.id or 0
    return Me(
        name=user.name,
        admin=user.admin,
        quotas=Quotas(
            max_active_jobs=user.max_active_jobs, max_storage_bytes=user.max_storage_bytes
        ),
        usage=Usage(
            active_jobs=active_jobs(session, user_id=uid),
            stored_bytes=stored_bytes(session, user_id=uid),
        ),
    )
