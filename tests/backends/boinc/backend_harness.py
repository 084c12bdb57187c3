"""A gateway with ``BGW_BACKEND=boinc`` in front of the fake BOINC server, for the backend tests.

Each gateway gets a database of its own (a fresh SQLite file or PostgreSQL database, on the
engine of the run), a fresh data directory and a fresh fake project, so BOINC names, RPC logs
and job counts belong to one test only.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from tests.conftest import (
    ADMIN_TOKEN,
    TestDatabase,
    _create_pg_database,
    _drop_pg_database,
    auth,
    make_settings,
)
from tests.fakes.boinc_server import ALICE_AUTH, FakeBoincServer, Quirks
from tests.fakes.boinc_state import Workunit

T = TypeVar("T")

FAST = {
    "backend": "boinc",
    "boinc_authenticator": ALICE_AUTH,
    "boinc_timeout_seconds": 5,
    "boinc_poll_seconds": 0.05,
    "boinc_full_poll_seconds": 0.2,
    "boinc_retry_seconds": 0.05,
    "boinc_retry_max_seconds": 0.4,
    "boinc_health_seconds": 0.1,
    "dispatcher_idle_seconds": 0.02,
    "reaper_interval_seconds": 0.1,
}
UPPERCASE = {
    "name": "uppercase",
    "inputs": ["in"],
    "outputs": ["out"],
    "boinc": {"app_name": "uppercase"},
}


def wait(pred: Callable[[], T | None], what: str, timeout: float = 20) -> T:
    """Poll ``pred`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@contextmanager
def fresh_database(test_db: TestDatabase, tmp_path: Path) -> Iterator[str]:
    """A database of its own on the run's engine (migrated by the app at start)."""
    if test_db.engine == "postgres":
        name, url = _create_pg_database()
        try:
            yield url
        finally:
            _drop_pg_database(name)
    else:
        yield f"sqlite:///{tmp_path / f'boinc-{uuid.uuid4().hex[:6]}.db'}"


@dataclass
class Gateway:
    """A running gateway, its fake project and the admin's headers."""

    client: TestClient
    fake: FakeBoincServer
    settings: Settings
    headers: dict[str, str]

    def ops(self, start: int = 0) -> list[str]:
        """Operations the fake served since log position ``start`` (get_output by command)."""
        return [op for _, op in self.fake.rpc_log[start:]]

    def upload(self, data: bytes, headers: dict[str, str] | None = None) -> str:
        """Store bytes in the gateway; returns their md5."""
        md5 = hashlib.md5(data).hexdigest()
        r = self.client.put(f"/v1/files/{md5}", content=data, headers=headers or self.headers)
        assert r.status_code in (200, 201), r.text
        return md5

    def submit(
        self,
        name: str,
        md5: str,
        njobs: int,
        *,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> list[str]:
        """Create and submit a batch of ``njobs`` uppercase jobs on one input; job names."""
        names = [f"{name}-{k}" for k in range(njobs)]
        jobs = [
            {"name": n, "args": ["--n", str(k)], "inputs": [{"name": "in", "md5": md5}]}
            for k, n in enumerate(names)
        ]
        body = {"name": name, "app": "uppercase", "jobs": jobs, **extra}
        r = self.client.post("/v1/batches", json=body, headers=headers or self.headers)
        assert r.status_code == 201, r.text
        return names

    def job(self, name: str) -> dict[str, Any]:
        """GET /v1/jobs/{name}."""
        r = self.client.get(f"/v1/jobs/{name}", headers=self.headers)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    def batch(self, name: str) -> dict[str, Any]:
        """GET /v1/batches/{name}."""
        r = self.client.get(f"/v1/batches/{name}", headers=self.headers)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    def wait_job(self, name: str, *states: str, timeout: float = 20) -> dict[str, Any]:
        """Wait for a job to be in one of ``states``."""

        def check() -> dict[str, Any] | None:
            job = self.job(name)
            return job if job["state"] in states else None

        return wait(check, f"job {name} in {states}", timeout)

    def wus(self) -> list[Workunit]:
        """Every job of the fake project."""
        with self.fake.state.lock:
            return list(self.fake.state.wus.values())

    def wu(self, job_name: str) -> str:
        """The BOINC name of a gateway job (waits until it was submitted)."""

        def find() -> str | None:
            return next((w.name for w in self.wus() if w.name.endswith(f"-{job_name}")), None)

        return wait(find, f"job {job_name} on BOINC")

    def wait_sent(self, job_names: list[str]) -> list[str]:
        """Wait until every job exists on BOINC; their BOINC names."""
        return [self.wu(n) for n in job_names]


@contextmanager
def gateway(
    test_db: TestDatabase,
    tmp_path: Path,
    *,
    quirks: Quirks | None = None,
    app: dict[str, Any] | None = None,
    dispatcher: bool = True,
    **overrides: object,
) -> Iterator[Gateway]:
    """A gateway (dispatcher running unless told not to) in front of a fresh fake project."""
    data = tmp_path / f"data-{uuid.uuid4().hex[:6]}"
    data.mkdir()
    with fresh_database(test_db, tmp_path) as url, FakeBoincServer(quirks=quirks) as fake:
        settings = make_settings(url, data, boinc_url=fake.url, **{**FAST, **overrides})
        with TestClient(create_app(settings, run_dispatcher=dispatcher)) as client:
            headers = auth(ADMIN_TOKEN)
            r = client.post("/v1/apps", json=app or UPPERCASE, headers=headers)
            assert r.status_code == 201, r.text
            # Registering asked the project about the app (get_templates): tests count
            # what the backend does from here.
            fake.rpc_log.clear()
            yield Gateway(client, fake, settings, headers)
        assert not fake.internal_errors, fake.internal_errors[0]


def register_drifted_app(gw: Gateway) -> None:
    """Gateway app ``mismatch`` on BOINC app ``drifted``: registered while the templates
    agreed (registration checks them), then the project changed its output template, so the
    app's output ``out`` is gone from it (what submissions must notice)."""
    drifted = gw.fake.add_app("drifted")
    body = {**UPPERCASE, "name": "mismatch", "boinc": {"app_name": "drifted"}}
    r = gw.client.post("/v1/apps", json=body, headers=gw.headers)
    assert r.status_code == 201, r.text
    with gw.fake.state.lock:
        drifted.output_template = (drifted.output_template or "").replace(
            "<open_name>out</open_name>", "<open_name>result</open_name>"
        )
