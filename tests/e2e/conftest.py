"""A real ``boinc-gateway serve`` process on loopback, with its own fresh database."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN, TestDatabase, _create_pg_database, _drop_pg_database


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """One service (or worker) process per ``start``; the database and data dir persist."""

    def __init__(self, db_url: str, data_dir: Path, **env: str) -> None:
        self.db_url, self.data_dir = db_url, data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = ADMIN_TOKEN
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes]] = []
        self.log = data_dir / "serve.log"

    def environ(self) -> dict[str, str]:
        return {
            **os.environ,
            "BGW_DATABASE_URL": self.db_url,
            "BGW_DATA_DIR": str(self.data_dir),
            "BGW_BOOTSTRAP_TOKEN": ADMIN_TOKEN,
            "BGW_LOCAL_SLOTS": "2",
            "BGW_DISPATCHER_IDLE_SECONDS": "0.05",
            "BGW_WORKER_HEARTBEAT_SECONDS": "1",
            "BGW_WORKER_DEAD_SECONDS": "4",
            "BGW_REAPER_INTERVAL_SECONDS": "0.5",
            **self.env,
        }

    def start(self, timeout: float = 30) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "app.cli", "serve", "--port", str(self.port)],
                env=self.environ(),
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError("server did not start: " + self.log.read_text()[-3000:])

    def start_worker(self) -> subprocess.Popen[bytes]:
        with open(self.log, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "app.cli", "worker"],
                env=self.environ(),
                stdout=log,
                stderr=log,
            )
        self.workers.append(proc)
        return proc

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        for p in [*self.workers, *([self.proc] if self.proc else [])]:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.workers = []

    def client(self, token: str | None = None) -> httpx.Client:
        return httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token or self.token}"},
            timeout=120,
        )


@pytest.fixture
def live_db(test_db: TestDatabase, tmp_path: Path) -> Iterator[str]:
    """A database of its own for one live server (same engine as the run)."""
    if test_db.engine == "postgres":
        name, url = _create_pg_database()
        yield url
        _drop_pg_database(name)
    else:
        yield f"sqlite:///{tmp_path / f'live-{uuid.uuid4().hex[:6]}.db'}"


@pytest.fixture
def live(live_db: str, tmp_path: Path) -> Iterator[LiveServer]:
    server = LiveServer(live_db, tmp_path / "data")
    server.data_dir.mkdir()
    server.start()
    yield server
    server.stop()


def put_bytes(c: httpx.Client, data: bytes) -> str:
    import hashlib

    md5 = hashlib.md5(data).hexdigest()
    r = c.put(f"/v1/files/{md5}", content=data)
    assert r.status_code in (200, 201), r.text
    return md5


def wait_for(
    c: httpx.Client, path: str, key: str, values: tuple[str, ...], timeout: float = 60
) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        body = c.get(path).json()
        if body.get(key) in values:
            return body
        assert time.monotonic() < deadline, f"{path}: {body}"
        time.sleep(0.1)
