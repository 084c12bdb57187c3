"""The dispatcher acts on submissions, aborts and freed slots at once, not after its idle
pause (the pause only bounds how late it sees work from other processes)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.backends import sandbox
from app.db import Database
from app.dispatcher import Dispatcher
from app.main import create_app
from app.services.store import FileStore
from tests.backends.boinc.backend_harness import fresh_database, wait
from tests.conftest import ADMIN_TOKEN, TestDatabase, auth, make_settings

PAUSE = 3600.0  # an idle pause no test could sit out: only a wake-up moves the dispatcher
BOUND = 30.0


def _wait(client: TestClient, path: str, key: str, want: str) -> dict[str, object]:
    deadline = time.monotonic() + BOUND
    while (body := client.get(path, headers=auth(ADMIN_TOKEN)).json())[key] != want:
        assert time.monotonic() < deadline, body
        time.sleep(0.05)
    return body


def test_submission_freed_slots_and_abort_wake_the_dispatcher(
    test_db: TestDatabase, tmp_path: Path
) -> None:
    with fresh_database(test_db, tmp_path) as url:
        settings = make_settings(
            url, tmp_path / "data", dispatcher_idle_seconds=PAUSE, local_slots=1
        )
        with TestClient(create_app(settings)) as c:
            h = auth(ADMIN_TOKEN)
            dispatcher = c.app.state.dispatcher  # type: ignore[attr-defined]
            time.sleep(0.3)  # the dispatcher found nothing to do and is in its pause
            # One slot, three jobs: each freed slot must claim the next job.
            jobs = [
                {"name": f"w{k}", "inputs": [{"name": "in", "content": f"job {k}\n"}]}
                for k in range(3)
            ]
            r = c.post(
                "/v1/batches", json={"name": "w", "app": "uppercase", "jobs": jobs}, headers=h
            )
            assert r.status_code == 201, r.text
            body = _wait(c, "/v1/batches/w", "state", "complete")
            assert body["counts"]["done"] == 3, body
            assert c.get("/v1/jobs/w2/outputs/out", headers=h).text == "JOB 2\n"

            # An abort reaches the running process through a wake-up too.
            job = {
                "name": "sleepy",
                "args": ["--sleep", "300"],
                "inputs": [{"name": "in", "content": "z"}],
            }
            r = c.post(
                "/v1/batches", json={"name": "s", "app": "exitcode", "jobs": [job]}, headers=h
            )
            assert r.status_code == 201, r.text
            _wait(c, "/v1/jobs/sleepy", "state", "in_progress")
            assert c.post("/v1/batches/s/abort", headers=h).status_code == 200
            wait(lambda: not dispatcher.backend.running, "the aborted job to stop", BOUND)


def test_an_abort_before_the_process_starts_kills_it_as_it_starts(
    test_db: TestDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The abort lands between the claim and the start of the process (the dispatcher's
    only look at it finds nothing to kill yet): the process is killed as it starts."""
    gate = threading.Event()
    real_start = sandbox.start

    def held_start(spec: sandbox.RunSpec) -> sandbox.RunningJob:
        assert gate.wait(BOUND), "the test never opened the gate"
        return real_start(spec)

    monkeypatch.setattr(sandbox, "start", held_start)
    with fresh_database(test_db, tmp_path) as url:
        settings = make_settings(url, tmp_path / "data", dispatcher_idle_seconds=PAUSE)
        with TestClient(create_app(settings)) as c:
            h = auth(ADMIN_TOKEN)
            backend = c.app.state.dispatcher.backend  # type: ignore[attr-defined]
            job = {
                "name": "early",
                "args": ["--sleep", "300"],
                "inputs": [{"name": "in", "content": "z"}],
            }
            r = c.post(
                "/v1/batches", json={"name": "e", "app": "exitcode", "jobs": [job]}, headers=h
            )
            assert r.status_code == 201, r.text
            _wait(c, "/v1/jobs/early", "state", "in_progress")  # claimed, process held back
            assert c.post("/v1/batches/e/abort", headers=h).status_code == 200
            wait(lambda: backend.cancelled, "the dispatcher to look at the abort", BOUND)
            gate.set()
            wait(lambda: not backend.running, "the aborted job to be killed as it starts", BOUND)
            assert c.get("/v1/jobs/early", headers=h).json()["state"] == "aborted"


def test_a_worker_process_hears_of_new_work_through_postgresql(
    test_db: TestDatabase, tmp_path: Path
) -> None:
    """A dispatcher the API process does not own (a separate `worker`) is woken by the
    NOTIFY the API sends after a submission, not by its idle pause."""
    if test_db.engine != "postgres":
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's; SQLite dispatchers share the API process")
    with fresh_database(test_db, tmp_path) as url:
        settings = make_settings(url, tmp_path / "data", dispatcher_idle_seconds=PAUSE)
        with TestClient(create_app(settings, run_dispatcher=False)) as c:
            worker_db = Database(url, timeout=5)
            worker = Dispatcher(worker_db, FileStore(settings.store_dir), settings)
            worker.start()
            try:
                time.sleep(1.0)  # the worker listens and is in its pause
                h = auth(ADMIN_TOKEN)
                job = {"name": "far", "inputs": [{"name": "in", "content": "far away\n"}]}
                r = c.post(
                    "/v1/batches",
                    json={"name": "far", "app": "uppercase", "jobs": [job]},
                    headers=h,
                )
                assert r.status_code == 201, r.text
                _wait(c, "/v1/batches/far", "state", "complete")
                assert c.get("/v1/jobs/far/outputs/out", headers=h).text == "FAR AWAY\n"
            finally:
                worker.stop()
                worker_db.dispose()
