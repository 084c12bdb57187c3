"""A gateway process for benchmarks: its own data dir and database, peak-RSS sampling."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg

TOKEN = "bench-admin-token-0123456789abcdef"
PG_ADMIN = os.environ.get("BGW_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Database:
    """A fresh database on one engine, dropped on close."""

    def __init__(self, engine: str, workdir: Path) -> None:
        self.engine = engine
        self.pg_name: str | None = None
        if engine == "postgres":
            self.pg_name = f"bgw_bench_{uuid.uuid4().hex[:10]}"
            with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{self.pg_name}"')
            base = PG_ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
            self.url = f"{base}/{self.pg_name}"
        else:
            self.url = f"sqlite:///{workdir / f'bench-{uuid.uuid4().hex[:6]}.db'}"

    def close(self) -> None:
        if self.pg_name:
            with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.pg_name}" WITH (FORCE)')


class Server:
    """``boinc-gateway serve`` on loopback; ``peak_rss()`` samples while a block runs."""

    def __init__(self, db_url: str, data_dir: Path, **env: str) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(data_dir / "serve.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(self.port)],
            env={
                **os.environ,
                "BGW_DATABASE_URL": db_url,
                "BGW_DATA_DIR": str(data_dir),
                "BGW_BOOTSTRAP_TOKEN": TOKEN,
                "BGW_LOG_LEVEL": "WARNING",
                "BGW_DISPATCHER_IDLE_SECONDS": os.environ.get("BGW_DISPATCHER_IDLE_SECONDS", "0.5"),
                **env,
            },
            stdout=self.log,
            stderr=self.log,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            raise RuntimeError("server did not start")
        self.ps = psutil.Process(self.proc.pid)

    def client(self, timeout: float = 600) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, timeout=timeout, headers={"Authorization": f"Bearer {TOKEN}"}
        )

    def rss(self) -> int:
        return int(self.ps.memory_info().rss)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


class PeakRss:
    """Samples a process's RSS every 20 ms while the ``with`` block runs."""

    def __init__(self, server: Server) -> None:
        self.server, self.peak = server, 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.server.rss())
            time.sleep(0.02)

    def __enter__(self) -> PeakRss:
        self.peak = self.server.rss()
        self._t.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._t.join()
