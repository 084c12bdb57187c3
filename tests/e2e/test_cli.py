"""The server-side command line: migrate, users create, apps create, gc, openapi."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx

from tests.e2e.conftest import LiveServer


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_commands(tmp_path: Path, live_db: str) -> None:
    env = {
        "BGW_DATABASE_URL": live_db,
        "BGW_DATA_DIR": str(tmp_path / "data"),
        "BGW_LOG_LEVEL": "WARNING",
    }
    assert _run(env, "migrate").returncode == 0
    made = _run(env, "users", "create", "carol", "--admin")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert token.startswith("bgw_") and len(token) > 40 and "\n" not in token
    again = _run(env, "users", "create", "carol")
    assert again.returncode == 1 and "carol exists" in again.stderr
    bad = _run(env, "users", "create", "no spaces allowed")
    assert bad.returncode == 1 and "invalid user name" in bad.stderr

    app_file = tmp_path / "app.json"
    app_file.write_text(
        json.dumps(
            {
                "name": "echo",
                "inputs": [],
                "outputs": ["out"],
                "local": {"command": ["/bin/sh", "-c", "echo hi > out"]},
            }
        )
    )
    assert _run(env, "apps", "create", "--file", str(app_file)).returncode == 0
    dup = _run(env, "apps", "create", "--file", str(app_file))
    assert dup.returncode == 1 and "app echo exists" in dup.stderr
    app_file.write_text("{not json")
    assert _run(env, "apps", "create", "--file", str(app_file)).returncode == 1

    gc = _run(env, "gc")
    assert gc.returncode == 0 and "deleted 0 file(s)" in gc.stderr

    doc = _run(env, "openapi")
    assert doc.returncode == 0
    assert json.loads(doc.stdout)["paths"]["/v1/batches"]["post"]["operationId"] == "create_batch"

    server = LiveServer(live_db, tmp_path / "data")
    server.start()
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}) as c:
            assert c.get("/v1/me").json()["name"] == "carol"
            names = [a["name"] for a in c.get("/v1/apps").json()]
            assert "echo" in names and "uppercase" in names  # examples come with a new db
    finally:
        server.stop()
