"""Schema migrations: alembic driven from code, so no ini file or working directory is needed."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from app.db import driver_url

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(url: str) -> Config:
    """An alembic configuration for the given database URL."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", driver_url(url).replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at ``url`` to ``revision``."""
    command.upgrade(alembic_config(url), revision)
