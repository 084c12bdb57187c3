"""Shared fixtures: a fresh database per run on each engine (SQLite file, PostgreSQL database).

Every database-backed fixture is parametrised over ``sqlite`` and ``postgres``; set
``BGW_TEST_ENGINES=sqlite`` (or ``postgres``) to run one. PostgreSQL is the server at
127.0.0.1:5432 (user ``postgres``); each run creates its own database and drops it after.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.db import Database
from app.main import create_app
from app.migrate import upgrade

ADMIN_TOKEN = "admin-test-token-0123456789abcdef"
PG_ADMIN_URL = os.environ.get("BGW_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
ENGINES = [e for e in os.environ.get("BGW_TEST_ENGINES", "sqlite,postgres").split(",") if e]


@dataclass
class TestDatabase:
    __test__ = False
    engine: str
    url: str


def _create_pg_database() -> tuple[str, str]:
    name = f"bgw_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
    return name, f"{base}/{name}"


def _drop_pg_database(name: str) -> None:
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session", params=ENGINES)
def test_db(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestDatabase]:
    """A fresh, migrated database for this test run on one engine."""
    if request.param == "postgres":
        name, url = _create_pg_database()
        upgrade(url)
        yield TestDatabase("postgres", url)
        _drop_pg_database(name)
    else:
        path = tmp_path_factory.mktemp("sqlite") / "gateway.db"
        url = f"sqlite:///{path}"
        upgrade(url)
        yield TestDatabase("sqlite", url)


def make_settings(db_url: str, data_dir: Path, **overrides: object) -> Settings:
    """Settings for a test service."""
    base: dict[str, object] = {
        "database_url": db_url,
        "data_dir": data_dir,
        "bootstrap_token": ADMIN_TOKEN,
        "local_slots": 2,
        "dispatcher_idle_seconds": 0.05,
        "worker_heartbeat_seconds": 1,
        "worker_dead_seconds": 5,
        "reaper_interval_seconds": 0.2,
        "gc_interval_seconds": 3600,
    }
    base.update(overrides)
    return Settings.model_validate(base)


@pytest.fixture(scope="session")
def data_dir(test_db: TestDatabase, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data directory (file store, sandboxes) of this run's service."""
    return tmp_path_factory.mktemp(f"data-{test_db.engine}")


@pytest.fixture(scope="session")
def settings(test_db: TestDatabase, data_dir: Path) -> Settings:
    return make_settings(test_db.url, data_dir)


@pytest.fixture(scope="session")
def client(settings: Settings) -> Iterator[TestClient]:
    """An in-process service with its dispatcher (local backend) running."""
    app = create_app(settings, run_dispatcher=True)
    with TestClient(app) as c:
        yield c


@pytest.fixture(scope="session")
def db(test_db: TestDatabase) -> Iterator[Database]:
    database = Database(test_db.url)
    yield database
    database.dispose()


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="session")
def admin(client: TestClient) -> dict[str, str]:
    return auth(ADMIN_TOKEN)


@pytest.fixture
def make_user(client: TestClient, admin: dict[str, str]) -> Callable[..., dict[str, str]]:
    """Create a fresh user (unique name) and return its auth headers."""

    def make(**body: object) -> dict[str, str]:
        name = f"u{uuid.uuid4().hex[:10]}"
        r = client.post("/v1/users", json={"name": name, **body}, headers=admin)
        assert r.status_code == 201, r.text
        return {**auth(r.json()["token"]), "X-User": name}

    return make


@pytest.fixture
def user(make_user: Callable[..., dict[str, str]]) -> dict[str, str]:
    return make_user()


def unique(prefix: str = "b") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"
