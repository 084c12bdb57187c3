"""Settings: the one place that reads the environment (prefix ``BGW_``, or a ``.env`` file)."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every tunable of the service; defaults give the embedded SQLite + local setup."""

    model_config = SettingsConfigDict(env_prefix="BGW_", env_file=".env", extra="ignore")

    data_dir: Path = Path("var")
    database_url: str | None = None
    backend: Literal["local", "boinc"] = "local"
    # PostgreSQL: the longest any one wait for the server may last (connecting, a statement,
    # a commit, a pooled connection) before the call fails as unavailable (503)
    db_timeout_seconds: float = Field(default=30, gt=0)

    bootstrap_token: str | None = None
    register_examples: bool = True

    # files
    max_file_bytes: int = 8 << 30
    max_content_input_bytes: int = 64 << 10
    file_keep_seconds: float = 7 * 24 * 3600
    gc_interval_seconds: float = 3600
    retired_output_keep_seconds: float = 0

    # quotas applied to users created without explicit ones (None: unlimited)
    default_max_active_jobs: int | None = None
    default_max_storage_bytes: int | None = None

    # batches
    max_jobs_per_request: int = 10_000
    reaper_interval_seconds: float = 10

    # local backend
    local_slots: int = Field(default_factory=lambda: os.cpu_count() or 1)
    local_max_attempts: int = 3
    local_wall_seconds: float = 3600
    local_output_cap: int = 1 << 20
    worker_heartbeat_seconds: float = 5
    worker_dead_seconds: float = 30
    dispatcher_idle_seconds: float = 0.5

    # BOINC backend
    boinc_url: str | None = None
    # PEM file of the CAs to trust for the project's https (say, its self-signed certificate);
    # unset: the system's CAs
    boinc_ca_file: Path | None = None
    boinc_authenticator: str | None = None
    boinc_timeout_seconds: float = 60
    boinc_poll_seconds: float = 30
    boinc_upload_max_bytes: int = 64 << 20
    # largest submit_batch body: PHP's post_max_size on the project (8M unless raised); a
    # batch whose jobs do not fit is sent as several BOINC batches
    boinc_submit_max_bytes: int = Field(default=8 << 20, ge=64 << 10)
    # query_batch2 lists only jobs whose workunit changed, and a job being sent to a volunteer
    # changes only its instance: a full listing this often shows jobs that started running.
    boinc_full_poll_seconds: float = 600
    # how long a worker may take to send one batch before another worker takes over
    boinc_claim_seconds: float = 600
    # backoff after a retryable BOINC error: doubles from the first value up to the second
    boinc_retry_seconds: float = 5
    boinc_retry_max_seconds: float = 300
    # a batch's lease reaches BOINC as its expire_time this much later: the gateway aborts
    # and retires it itself at the lease; BOINC's own expiry is the fallback without it
    boinc_expire_margin_seconds: float = 3600
    # finished jobs whose outputs are fetched per dispatcher step (the rest follow)
    boinc_fetch_per_step: int = 100
    # finished jobs fetched at a time (each is a few latency-bound round trips)
    boinc_fetch_threads: int = Field(default=4, ge=1, le=32)
    # how long /readyz trusts the last ping
    boinc_health_seconds: float = 15
    # gateway-side failures (not BOINC's) before a batch is given up
    boinc_max_attempts: int = 10
    # BOINC batch and job names start with this (letters and digits)
    boinc_name_prefix: str = Field(default="bgw", pattern=r"^[A-Za-z0-9]{1,16}$")

    log_level: str = "INFO"
    log_json: bool = False

    @property
    def resolved_database_url(self) -> str:
        """The database URL, defaulting to a SQLite file under the data directory."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'gateway.db').resolve()}"

    @property
    def store_dir(self) -> Path:
        """Where content-addressed file bytes live."""
        return self.data_dir / "files"

    @property
    def sandbox_dir(self) -> Path:
        """Where the local backend creates job sandboxes."""
        return self.data_dir / "sandboxes"


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()
