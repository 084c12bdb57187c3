"""Engine set-up: the driver chosen for PostgreSQL URLs and the deadline on every wait."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from app.db import Database, db_unavailable, driver_url
from app.migrate import upgrade
from tests.conftest import TestDatabase


def test_driver_url() -> None:
    assert (
        driver_url("postgresql://u:p%40ss@h:5432/db") == "postgresql+psycopg://u:p%40ss@h:5432/db"
    )
    assert driver_url("postgres://h/db") == "postgresql+psycopg://h/db"
    assert driver_url("postgresql+psycopg://h/db") == "postgresql+psycopg://h/db"
    assert driver_url("sqlite:///var/gateway.db") == "sqlite:///var/gateway.db"


def _postgres_only(test_db: TestDatabase) -> None:
    if test_db.engine != "postgres":
        pytest.skip("PostgreSQL engine set-up")


def test_bare_postgresql_url_uses_psycopg(test_db: TestDatabase) -> None:
    """``postgresql://`` as users write it works for the service and for migrations
    (SQLAlchemy alone would load psycopg2, which is not installed)."""
    _postgres_only(test_db)
    bare = test_db.url.replace("postgresql+psycopg://", "postgresql://")
    upgrade(bare)  # already at head: connects and checks
    db = Database(bare)
    try:
        with db.read_session() as s:
            assert s.connection().dialect.driver == "psycopg"
            assert s.execute(text("SELECT count(*) FROM users")).scalar_one() >= 0
    finally:
        db.dispose()


def test_a_call_past_the_deadline_fails_as_unavailable(test_db: TestDatabase) -> None:
    """A statement the server does not answer within the deadline fails as unavailable (a
    503 in the routes) instead of blocking; the connection is dropped and the next call
    gets a fresh one."""
    _postgres_only(test_db)
    db = Database(test_db.url, timeout=1)
    try:
        with pytest.raises(Exception) as caught, db.read_session() as s:
            s.execute(text("SELECT pg_sleep(5)"))
        assert db_unavailable(caught.value), repr(caught.value)
        assert "did not answer within 1 s" in str(caught.value)
        with db.read_session() as s:
            assert s.execute(text("SELECT 1")).scalar_one() == 1
    finally:
        db.dispose()
