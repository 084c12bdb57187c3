"""Garbage collection killed with SIGKILL: deterministically inside its critical window, and
(slow) the ``gc`` command at random moments beside a running service.

GC moves a file's bytes to its trash before the transaction deleting the row commits (so a
concurrent upload of the same bytes can never be deleted after the commit). A crash right
there rolls the deletion back: the row and the owners' claims stay, the bytes sit in the
trash. Nothing may then answer "present" for a file it cannot serve for long: the bytes
must come back (or the row go), and a job using the file must run.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import wait_for
from tests.faults.conftest import ROOT, FaultLog, FaultServer, store_problems


def _wait_consistent(server: FaultServer, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while problems := store_problems(server.db_url, server.data_dir / "files"):
        assert time.monotonic() < deadline, problems[:10]
        time.sleep(0.1)


def _use_again(c: httpx.Client, payload: bytes, name: str) -> None:
    """Ask for the file with a new batch as the GAHP does; upload only if told it is missing;
    a job using it must run on the right bytes."""
    md5 = hashlib.md5(payload).hexdigest()
    assert c.post(
        "/v1/batches", json={"name": name, "app": "uppercase", "submit": False}
    ).is_success
    r = c.post("/v1/files/query", json={"md5s": [md5], "batch": name})
    assert r.status_code == 200, r.text
    if r.json()["missing"]:
        assert c.put(f"/v1/files/{md5}", content=payload, params={"batch": name}).is_success
    job = {"name": f"{name}-0", "inputs": [{"name": "in", "md5": md5}]}
    assert c.post(f"/v1/batches/{name}/jobs", json={"jobs": [job]}).is_success
    assert c.post(f"/v1/batches/{name}/submit").is_success
    info = wait_for(c, f"/v1/jobs/{name}-0", "state", ("done", "error"), timeout=30)
    assert info["state"] == "done", (info["error"], info)
    assert c.get(f"/v1/jobs/{name}-0/outputs/out").content == payload.upper()


@pytest.mark.parametrize("victim", ["serve", "gc_command"])
def test_kill9_of_gc_between_trash_and_commit(
    live_db: str, tmp_path: Path, fault_log: FaultLog, victim: str
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    # The service collects only at start-up (default interval) when the command is the victim.
    interval = "0.2" if victim == "serve" else "3600"
    server = FaultServer(live_db, data, BGW_FILE_KEEP_SECONDS="0", BGW_GC_INTERVAL_SECONDS=interval)
    server.start()
    gc_proc: subprocess.Popen[bytes] | None = None
    try:
        payload = b"precious bytes " + os.urandom(1000).hex().encode()
        md5 = hashlib.md5(payload).hexdigest()
        with server.client() as c:
            assert c.post(
                "/v1/batches", json={"name": "hold", "app": "uppercase", "submit": False}
            ).is_success
            r = c.put(f"/v1/files/{md5}", content=payload, params={"batch": "hold"})
            assert r.status_code == 201, r.text
            server.fault("gc_pause", True)
            assert c.post("/v1/batches/hold/retire").status_code == 200
            if victim == "gc_command":
                gc_proc = server._spawn("gc")
            paused = server.fault_dir / "gc_paused"
            deadline = time.monotonic() + 20
            while not paused.exists():
                assert time.monotonic() < deadline, "GC never reached the file"
                time.sleep(0.01)
        fault_log.note(f"{victim}: GC paused between trash and commit: kill -9")
        if gc_proc is not None:
            gc_proc.kill()
            gc_proc.wait(timeout=10)
            server.fault("gc_pause", False)
        else:
            server.kill9()
            server.fault("gc_pause", False)
            server.start()
        with server.client() as c:
            _use_again(c, payload, "again")
        _wait_consistent(server)
    finally:
        if gc_proc is not None and gc_proc.poll() is None:
            gc_proc.kill()
            gc_proc.wait()
        server.stop()


@pytest.mark.slow
def test_kill9_of_gc_command_at_random_moments(
    live_db: str, tmp_path: Path, fault_log: FaultLog
) -> None:
    """``boinc-gateway gc`` killed at random moments, repeatedly, beside a running service."""
    data = tmp_path / "data"
    data.mkdir()
    server = FaultServer(live_db, data, BGW_FILE_KEEP_SECONDS="0")
    server.start()
    rng = fault_log.rng
    kept: dict[str, bytes] = {}
    try:
        with server.client() as c:
            for i in range(12):
                name = f"g{i}"
                r = c.post("/v1/batches", json={"name": name, "app": "uppercase", "submit": False})
                assert r.status_code == 201, r.text
                for _ in range(200):
                    blob = os.urandom(rng.randint(1, 20000))
                    md5 = hashlib.md5(blob).hexdigest()
                    r = c.put(f"/v1/files/{md5}", content=blob, params={"batch": name})
                    assert r.is_success, r.text
                    if i % 2:
                        kept[md5] = blob
                if i % 2 == 0:
                    assert c.post(f"/v1/batches/{name}/retire").status_code == 200
                proc = subprocess.Popen(
                    [sys.executable, "-m", "app.cli", "gc"],
                    env=server.environ(),
                    cwd=ROOT,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                delay = rng.uniform(0.2, 2.0)
                time.sleep(delay)
                proc.kill()
                proc.wait(timeout=10)
                fault_log.note(f"gc command {i} killed after {delay:.2f}s (rc {proc.returncode})")
            _wait_consistent(server)
            for md5, blob in kept.items():
                assert c.get(f"/v1/files/{md5}").content == blob
    finally:
        server.stop()
