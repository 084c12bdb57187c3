"""The file store's disk full while a live service stores an upload, inline content or a job's
outputs, then freed again.

Two ways to fill it: ``inject`` (always): the store's temp-file writes write half their data
and then fail with ENOSPC (``tests.faults.inject``); ``tmpfs``: the store is a real 8 MiB
tmpfs filled up with a filler file (needs ``mount``; skipped where it is not permitted, the
injected variant covers the same paths then).

Expected: uploads answer 507 ``storage_full`` (problem+json), an inline-content submission
too, a job whose outputs cannot be stored ends in ``error`` with a message that says so;
nothing half-written stays (no temp files, no row without its bytes, no claim on bytes that
are not there); and once there is room again, everything works.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import wait_for
from tests.faults.conftest import FaultServer, store_problems, temp_leftovers

TMPFS_BYTES = 8 << 20


class FullDisk:
    """Fills and frees the store of one server, by injection or with a real tmpfs."""

    def __init__(self, mode: str, server: FaultServer) -> None:
        self.mode, self.server = mode, server
        self.store = server.data_dir / "files"
        self.filler = self.store / "filler"

    def fill(self) -> None:
        if self.mode == "inject":
            self.server.fault("enospc", True)
            return
        with open(self.filler, "ab", buffering=0) as fh:
            try:
                while True:
                    fh.write(b"\0" * (1 << 12))
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc

    def free(self) -> None:
        if self.mode == "inject":
            self.server.fault("enospc", False)
        else:
            self.filler.unlink(missing_ok=True)


@contextlib.contextmanager
def _tmpfs(path: Path) -> Iterator[None]:
    path.mkdir(parents=True, exist_ok=True)
    try:
        r = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", str(path)],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a tmpfs ({exc}); the injected variant covers this")
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs ({r.stderr.decode().strip()}); injected variant runs")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=10)


@pytest.fixture(params=["inject", "tmpfs"])
def full_disk(request: pytest.FixtureRequest, live_db: str, tmp_path: Path) -> Iterator[FullDisk]:
    data = tmp_path / "data"
    data.mkdir()
    server = FaultServer(live_db, data)
    with contextlib.ExitStack() as stack:
        if request.param == "tmpfs":
            stack.enter_context(_tmpfs(data / "files"))
        server.start()
        stack.callback(server.stop)
        yield FullDisk(request.param, server)


def _problem(r: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json"), r.headers
    body: dict[str, object] = r.json()
    assert body["code"] == code and body["status"] == status, body
    return body


def _consistent(disk: FullDisk) -> None:
    server = disk.server
    assert temp_leftovers(disk.store) == [], "half-written temp files left behind"
    problems = store_problems(server.db_url, disk.store)
    assert not problems, problems


def test_disk_full_upload_output_then_recovery(full_disk: FullDisk) -> None:
    server = full_disk.server
    with server.client() as c:
        small = b"a small input\n"
        small_md5 = hashlib.md5(small).hexdigest()
        assert c.put(f"/v1/files/{small_md5}", content=small).status_code == 201
        big = os.urandom(3 << 20)
        big_md5 = hashlib.md5(big).hexdigest()
        assert c.put(f"/v1/files/{big_md5}", content=big).status_code == 201
        before = {m for m in (small_md5, big_md5)}

        full_disk.fill()
        # Uploads: 507 storage_full, nothing kept, nothing claimed.
        blob = os.urandom(1 << 20)
        blob_md5 = hashlib.md5(blob).hexdigest()
        t = time.monotonic()
        _problem(c.put(f"/v1/files/{blob_md5}", content=blob), 507, "storage_full")
        _problem(c.post("/v1/files", files=[("file", ("x.bin", blob))]), 507, "storage_full")
        assert time.monotonic() - t < 10
        assert c.head(f"/v1/files/{blob_md5}").status_code == 404
        # Inline content is stored as a file too: the submission fails whole.
        r = c.post(
            "/v1/batches",
            json={
                "name": "inline",
                "app": "uppercase",
                "jobs": [{"name": "inline-0", "inputs": [{"name": "in", "content": "hello\n"}]}],
            },
        )
        _problem(r, 507, "storage_full")
        assert c.get("/v1/batches/inline").status_code == 404
        # A job whose outputs (and logs) cannot be stored ends in error, saying why.
        r = c.post(
            "/v1/batches",
            json={
                "name": "out",
                "app": "uppercase",
                "jobs": [{"name": "out-0", "inputs": [{"name": "in", "md5": big_md5}]}],
            },
        )
        assert r.status_code == 201, r.text
        job = wait_for(c, "/v1/jobs/out-0", "state", ("done", "error"), timeout=30)
        assert job["state"] == "error", job
        assert job["error"] == "could not store the outputs: the file store is out of space", job
        assert job["outputs"] == [], job
        assert c.get("/v1/jobs/out-0/outputs/out").status_code == 404
        _consistent(full_disk)
        # Reading still works while full.
        assert c.get(f"/v1/files/{small_md5}").content == small
        assert c.get("/readyz").status_code == 200

        full_disk.free()
        # The service keeps serving: the same upload and a job with outputs now succeed.
        assert c.put(f"/v1/files/{blob_md5}", content=blob).status_code == 201
        assert c.get(f"/v1/files/{blob_md5}").content == blob
        r = c.post(
            "/v1/batches",
            json={
                "name": "after",
                "app": "uppercase",
                "jobs": [
                    {"name": "after-0", "inputs": [{"name": "in", "md5": big_md5}]},
                    {"name": "after-1", "inputs": [{"name": "in", "content": "hello\n"}]},
                ],
            },
        )
        assert r.status_code == 201, r.text
        wait_for(c, "/v1/batches/after", "state", ("complete",), timeout=30)
        assert c.get("/v1/jobs/after-0/outputs/out").content == big.upper()
        assert c.get("/v1/jobs/after-1/outputs/out").content == b"HELLO\n"
        assert before <= {f["md5"] for f in c.get("/v1/files").json()["items"]}
    _consistent(full_disk)
