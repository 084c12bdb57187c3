"""Database tables (SQLModel). Request/response models live in ``app.schemas``."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Column, ForeignKey, Index, String, UniqueConstraint, text
from sqlmodel import Field, SQLModel

SQLModel.metadata.naming_convention = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def _md5_ref() -> Any:
    # No foreign key to files: garbage collection may delete the bytes of a retired batch's
    # files while the job rows stay as history. Locks, not FKs, order GC and referencers.
    return Field(default=None, sa_column=Column(String(32), nullable=True, index=True))


class User(SQLModel, table=True):
    """An account; ``token_hash`` is the SHA-256 of the bearer token."""

    __tablename__ = "users"
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(sa_column=Column(String(64), unique=True, nullable=False))
    token_hash: str = Field(sa_column=Column(String(64), unique=True, nullable=False))
    admin: bool = False
    disabled: bool = False
    max_active_jobs: int | None = None
    max_storage_bytes: int | None = Field(default=None, sa_column=Column(BigInteger))
    boinc_authenticator: str | None = None
    created_at: float


class App(SQLModel, table=True):
    """A registered application: fixed input and output names, how each backend runs it."""

    __tablename__ = "apps"
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(sa_column=Column(String(64), unique=True, nullable=False))
    description: str = ""
    inputs: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    outputs: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    allowed_users: list[str] | None = Field(default=None, sa_column=Column(JSON))
    local: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    boinc: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    params: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    disabled: bool = False
    created_at: float


class StoredFile(SQLModel, table=True):
    """Bytes in the content store, named by their MD5."""

    __tablename__ = "files"
    md5: str = Field(sa_column=Column(String(32), primary_key=True))
    size: int = Field(sa_column=Column(BigInteger, nullable=False))
    created_at: float


class FileOwner(SQLModel, table=True):
    """A user's claim on stored bytes; protects them until ``keep_until``."""

    __tablename__ = "file_owners"
    user_id: int = Field(
        sa_column=Column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    )
    md5: str = Field(
        sa_column=Column(
            String(32), ForeignKey("files.md5", ondelete="CASCADE"), primary_key=True, index=True
        )
    )
    filename: str | None = None
    created_at: float
    keep_until: float


class Batch(SQLModel, table=True):
    """A named group of jobs of one app, owned by one user."""

    __tablename__ = "batches"
    __table_args__ = (
        UniqueConstraint("owner_id", "name", name="uq_batches_owner_name"),
        Index("ix_batches_owner_id_id", "owner_id", "id"),
        Index("ix_batches_state_lease", "state", "lease_until"),
    )
    id: int | None = Field(default=None, primary_key=True)
    owner_id: int = Field(foreign_key="users.id")
    name: str = Field(sa_column=Column(String(191), nullable=False))
    app_id: int = Field(foreign_key="apps.id", index=True)
    backend: str
    state: str
    spec_hash: str
    params: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    njobs: int = 0
    created_at: float
    submitted_at: float | None = None
    completed_at: float | None = None
    retired_at: float | None = None
    lease_until: float | None = None
    backend_id: int | None = None
    backend_state: str | None = None
    backend_synced_change: int = Field(default=0, sa_column=Column(BigInteger, nullable=False))


class Job(SQLModel, table=True):
    """One run of an app. ``change`` is the global change number of its last state change."""

    __tablename__ = "jobs"
    __table_args__ = (
        UniqueConstraint("owner_id", "name", name="uq_jobs_owner_name"),
        Index("ix_jobs_batch_id_id", "batch_id", "id"),
        Index("ix_jobs_batch_id_change", "batch_id", "change"),
        Index("ix_jobs_batch_id_state", "batch_id", "state"),
        Index("ix_jobs_state_id", "state", "id"),
        Index("ix_jobs_owner_id_state", "owner_id", "state"),
    )
    id: int | None = Field(default=None, primary_key=True)
    batch_id: int = Field(sa_column=Column(ForeignKey("batches.id"), nullable=False))
    owner_id: int = Field(foreign_key="users.id")
    name: str = Field(sa_column=Column(String(191), nullable=False))
    state: str
    change: int = Field(sa_column=Column(BigInteger, nullable=False))
    spec_hash: str
    args: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    outputs_wanted: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    params: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    env: dict[str, str] | None = Field(default=None, sa_column=Column(JSON))
    exit_code: int | None = None
    wall_seconds: float | None = None
    cpu_seconds: float | None = None
    error: str | None = None
    attempts: int = 0
    worker_id: str | None = None
    stdout_md5: str | None = _md5_ref()
    stderr_md5: str | None = _md5_ref()
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None


class JobInput(SQLModel, table=True):
    """An input of a job: stored bytes (``md5``) or a URL fetched where the job runs."""

    __tablename__ = "job_inputs"
    job_id: int = Field(
        sa_column=Column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    )
    name: str = Field(sa_column=Column(String(64), primary_key=True))
    position: int
    md5: str | None = _md5_ref()
    url: str | None = None
    url_md5: str | None = None
    size: int | None = Field(default=None, sa_column=Column(BigInteger))


class JobOutput(SQLModel, table=True):
    """An output a job produced, stored content-addressed."""

    __tablename__ = "job_outputs"
    job_id: int = Field(
        sa_column=Column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    )
    name: str = Field(sa_column=Column(String(64), primary_key=True))
    md5: str = Field(sa_column=Column(String(32), nullable=False, index=True))
    size: int = Field(sa_column=Column(BigInteger, nullable=False))


class BatchFile(SQLModel, table=True):
    """A file associated with a batch: protected while the batch is open or in progress."""

    __tablename__ = "batch_files"
    batch_id: int = Field(
        sa_column=Column(ForeignKey("batches.id", ondelete="CASCADE"), primary_key=True)
    )
    md5: str = Field(sa_column=Column(String(32), primary_key=True, index=True))


class ChangeCounter(SQLModel, table=True):
    """The single row holding the global change number (api.md section 3)."""

    __tablename__ = "change_counter"
    id: int = Field(default=1, primary_key=True)
    value: int = Field(sa_column=Column(BigInteger, nullable=False))


class Worker(SQLModel, table=True):
    """A running dispatcher; jobs it claimed are requeued when its heartbeat stops."""

    __tablename__ = "workers"
    id: str = Field(sa_column=Column(String(64), primary_key=True))
    backend: str
    started_at: float
    last_seen: float = Field(index=True)


class BoincBatch(SQLModel, table=True):
    """What the ``boinc`` backend did with a batch: sending claim, BOINC-side propagation."""

    __tablename__ = "boinc_batches"
    __table_args__ = (Index("ix_boinc_batches_phase_retry_at", "phase", "retry_at"),)
    batch_id: int = Field(
        sa_column=Column(ForeignKey("batches.id", ondelete="CASCADE"), primary_key=True)
    )
    # sending (claimed or waiting to retry), sent, retired (nothing more to tell BOINC),
    # failed, skipped (nothing to send)
    phase: str = Field(sa_column=Column(String(16), nullable=False))
    claimed_by: str | None = Field(default=None, sa_column=Column(String(64)))
    claimed_until: float = 0.0
    attempts: int = 0
    retry_at: float = 0.0
    last_error: str | None = None
    # min_mod_time of the next query_batch2 for this batch (0: list every job)
    poll_since: float = 0.0
    # the lease last given to BOINC as expire_time (None: none given)
    expire_sent: float | None = None
    aborted_sent: bool = False
    retired_sent: bool = False
    # BOINC batches it was sent as: a submit_batch larger than PHP's post_max_size is split,
    # part 0 named like the batch, part k with ``p<k>`` after the id (see names.Namer.part)
    parts: int = Field(default=1, sa_column_kwargs={"server_default": text("1")})


class BoincMeta(SQLModel, table=True):
    """Small shared values of the ``boinc`` backend: the name token, the poller's lease."""

    __tablename__ = "boinc_meta"
    key: str = Field(sa_column=Column(String(32), primary_key=True))
    value: str | None = None
    holder: str | None = Field(default=None, sa_column=Column(String(64)))
    until: float = 0.0
