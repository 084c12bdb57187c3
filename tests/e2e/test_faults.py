"""Crashes and concurrency: kill -9 during a big submission, several workers, GC races."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import TestDatabase
from tests.e2e.conftest import LiveServer, put_bytes, wait_for


def _big_batch(name: str, n: int, shared: str) -> bytes:
    jobs = [
        {"name": f"{name}-{i}", "args": [str(i)], "inputs": [{"name": "in", "md5": shared}]}
        for i in range(n)
    ]
    return json.dumps({"name": name, "app": "uppercase", "jobs": jobs, "submit": False}).encode()


@pytest.mark.parametrize("delay", [0.2, 0.8])
def test_kill9_during_10k_submission_is_all_or_nothing(live: LiveServer, delay: float) -> None:
    with live.client() as c:
        shared = put_bytes(c, b"shared input")
    body = _big_batch("big", 10_000, shared)
    result: dict[str, object] = {}

    def submit() -> None:
        try:
            r = httpx.post(
                f"{live.url}/v1/batches",
                content=body,
                timeout=120,
                headers={
                    "Authorization": f"Bearer {live.token}",
                    "Content-Type": "application/json",
                },
            )
            result["status"] = r.status_code
        except httpx.HTTPError as exc:
            result["error"] = exc

    t = threading.Thread(target=submit)
    t.start()
    time.sleep(delay)
    live.kill9()
    t.join(timeout=60)
    live.start()
    with live.client() as c:
        r = c.get("/v1/batches/big")
        if r.status_code == 404:
            assert result.get("status") != 201, "acknowledged batch lost"
            jobs = c.get("/v1/jobs/big-0")
            assert jobs.status_code == 404
        else:
            assert r.status_code == 200
            assert r.json()["njobs"] == 10_000
            assert r.json()["counts"]["queued"] == 10_000
        # Whatever happened, a retry of the same request converges on one whole batch.
        r = c.post("/v1/batches", content=body, headers={"Content-Type": "application/json"})
        assert r.status_code in (200, 201), r.text
        assert r.json()["njobs"] == 10_000


def test_two_workers_run_each_job_once(test_db: TestDatabase, live_db: str, tmp_path: Path) -> None:
    if test_db.engine != "postgres":
        pytest.skip("several workers share a PostgreSQL database; SQLite is single-process")
    data = tmp_path / "data"
    data.mkdir()
    server = LiveServer(live_db, data, BGW_LOCAL_SLOTS="2")
    server.start()
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    try:
        server.start_worker()
        server.start_worker()
        with server.client() as c:
            script = (
                "import os, sys; "
                "fd = os.open(os.path.join(sys.argv[1], sys.argv[2] + '.' + str(os.getpid())), "
                "os.O_CREAT | os.O_WRONLY | os.O_EXCL); os.close(fd); open('out', 'w').write('ok')"
            )
            r = c.post(
                "/v1/apps",
                json={
                    "name": "ledger",
                    "inputs": [],
                    "outputs": ["out"],
                    "local": {"command": [sys.executable, "-c", script]},
                },
            )
            assert r.status_code == 201, r.text
            jobs = [{"name": f"l-{i}", "args": [str(ledger), f"l-{i}"]} for i in range(300)]
            r = c.post("/v1/batches", json={"name": "ledger", "app": "ledger", "jobs": jobs})
            assert r.status_code == 201, r.text
            body = wait_for(c, "/v1/batches/ledger", "state", ("complete",), timeout=240)
            assert body["counts"]["done"] == 300
            runs = sorted(p.name.split(".")[0] for p in ledger.iterdir())
            assert runs == sorted(f"l-{i}" for i in range(300)), "a job ran twice or never"
            page = c.get("/v1/batches/ledger/jobs", params={"limit": 1000}).json()["items"]
            assert len(page) == 300
    finally:
        server.stop()


def test_kill9_of_server_mid_job_requeues_and_leaves_no_orphan(live: LiveServer) -> None:
    from tests.e2e.test_live import _pids_in_sandboxes

    with live.client() as c:
        m = put_bytes(c, b"payload")
        r = c.post(
            "/v1/batches",
            json={
                "name": "k9",
                "app": "exitcode",
                "jobs": [
                    {"name": "k9-0", "args": ["--sleep", "2"], "inputs": [{"name": "in", "md5": m}]}
                ],
            },
        )
        assert r.status_code == 201
        wait_for(c, "/v1/jobs/k9-0", "state", ("in_progress",))
    root = str(live.data_dir.resolve())
    deadline = time.monotonic() + 20
    while not _pids_in_sandboxes(root):
        assert time.monotonic() < deadline, "job process never appeared"
        time.sleep(0.05)
    live.kill9()
    deadline = time.monotonic() + 10
    while _pids_in_sandboxes(root):
        assert time.monotonic() < deadline, "job process outlived its killed server"
        time.sleep(0.05)
    live.start()
    with live.client() as c:
        job = wait_for(c, "/v1/jobs/k9-0", "state", ("done", "error"), timeout=60)
        assert job["state"] == "done", job
        assert job["attempts"] == 2
        assert c.get("/v1/jobs/k9-0/outputs/out").content == b"payload"
