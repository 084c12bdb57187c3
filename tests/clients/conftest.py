"""Fixtures for the client-side tests: a live ``boinc-gateway serve`` on loopback (SQLite,
fresh data directory), users on it, and a runner for the ``bgw`` command line.

The generated client and ``bgw`` are used from the source tree (``clients/python`` is put
first on the import path), so the tests exercise what is committed, installed or not.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT_DIR = ROOT / "clients" / "python"
BIN = Path(sys.executable).parent
BOOTSTRAP = "bootstrap-" + uuid.uuid4().hex
START_TIMEOUT = 30.0

if str(CLIENT_DIR) not in sys.path:
    sys.path.insert(0, str(CLIENT_DIR))


def tool(name: str) -> str:
    """A console script of this environment (beside the interpreter), else from PATH."""
    here = BIN / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    assert found, f"{name} is not installed: pip install -e '.[test]'"
    return found


def tool_env(**extra: str) -> dict[str, str]:
    """The environment for subprocesses: this venv's scripts first on PATH, no BGW_* leaks."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BGW_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A running service: its base URL, the admin token, the data directory and the log."""

    url: str
    admin_token: str
    data_dir: Path
    log: Path

    def client(self, token: str | None = None) -> httpx.Client:
        return httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token or self.admin_token}"},
            timeout=30,
        )


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``boinc-gateway serve`` on 127.0.0.1 (a free port), SQLite under its own data dir."""
    base = tmp_path_factory.mktemp("gateway")
    data_dir = base / "data"
    port = free_port()
    env = tool_env(
        BGW_DATA_DIR=str(data_dir),
        BGW_BOOTSTRAP_TOKEN=BOOTSTRAP,
        BGW_LOCAL_SLOTS="4",
        BGW_DISPATCHER_IDLE_SECONDS="0.05",
        BGW_REAPER_INTERVAL_SECONDS="0.5",
    )
    log = base / "serve.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [tool("boinc-gateway"), "serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=base,  # no stray .env file is read
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"server exited {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"server did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.1)
        yield Server(url=url, admin_token=BOOTSTRAP, data_dir=data_dir, log=log)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.fixture
def user_token(server: Server) -> str:
    """A fresh non-admin user on the live server; its token."""
    with server.client() as c:
        r = c.post("/v1/users", json={"name": f"u{uuid.uuid4().hex[:10]}"})
    assert r.status_code == 201, r.text
    token: str = r.json()["token"]
    return token


BgwRun = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def bgw(server: Server, user_token: str, tmp_path: Path) -> BgwRun:
    """Run ``bgw ARGS...`` (from the source tree) as the fresh user, in ``tmp_path``."""
    config_home = tmp_path / "xdg"
    config_home.mkdir()

    def run(
        *args: str, timeout: float = 60, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        full = tool_env(
            PYTHONPATH=os.pathsep.join([str(CLIENT_DIR), os.environ.get("PYTHONPATH", "")]),
            XDG_CONFIG_HOME=str(config_home),
            BGW_URL=server.url,
            BGW_TOKEN=user_token,
            COLUMNS="200",
        )
        full.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", "bgw", *args],
            cwd=tmp_path,
            env=full,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    return run
