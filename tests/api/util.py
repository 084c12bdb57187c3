"""Helpers of the route tests: problem checks, URL-safe names, jobs, waits, side services."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import uvicorn
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from tests.conftest import TestDatabase, make_settings

FAR_FUTURE = 4_000_000_000.0  # year 2096


def q(name: str) -> str:
    """A batch/job name as one URL path segment (``#`` becomes ``%23``)."""
    return quote(name, safe="")


def problem(r: Any, status: int, code: str, **fields: Any) -> dict[str, Any]:
    """Assert ``r`` is an RFC 9457 problem with this status, code and culprit fields."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json"), r.headers
    body: dict[str, Any] = r.json()
    assert body["status"] == status, body
    assert body["code"] == code, body
    assert body["type"].endswith(code), body
    assert body["title"] and body["detail"], body
    for key, value in fields.items():
        assert body.get(key) == value, (key, body)
    return body


def declared_codes(openapi: dict[str, Any], method: str, path: str) -> dict[int, set[str]]:
    """The error codes the OpenAPI document declares for one operation, by status."""
    out: dict[int, set[str]] = {}
    for status, resp in openapi["paths"][path][method.lower()]["responses"].items():
        m = re.search(r"\(code: ([a-z0-9_, ]+)\)", resp.get("description", ""))
        if m:
            out[int(status)] = {c.strip() for c in m.group(1).split(",")}
    return out


def job(name: str, *args: str, outputs: list[str] | None = None, **inputs: str) -> dict[str, Any]:
    """A job spec binding inputs by md5 (``in_=...`` binds ``in``)."""
    spec: dict[str, Any] = {
        "name": name,
        "args": list(args),
        "inputs": [{"name": k.rstrip("_"), "md5": v} for k, v in inputs.items()],
    }
    if outputs is not None:
        spec["outputs"] = outputs
    return spec


def wait_until(pred: Callable[[], Any], timeout: float = 20, what: str = "condition") -> Any:
    """Poll ``pred`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def wait_job(
    client: TestClient,
    headers: dict[str, str],
    name: str,
    states: tuple[str, ...] = ("done", "error", "aborted"),
    timeout: float = 30,
) -> dict[str, Any]:
    """Wait for a job (any name, URL-encoded) to reach one of ``states``."""

    def check() -> dict[str, Any] | None:
        r = client.get(f"/v1/jobs/{q(name)}", headers=headers)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body if body["state"] in states else None

    result: dict[str, Any] = wait_until(check, timeout, f"job {name} in {states}")
    return result


def stored_files(store_dir: Path) -> set[str]:
    """Content files in a store (not temp or trash)."""
    return {
        p.name
        for p in store_dir.glob("*/*")
        if p.is_file() and p.parent.name not in ("tmp", "trash")
    }


def temp_files(store_dir: Path) -> set[str]:
    """Temp and trash leftovers in a store."""
    return {p.name for d in ("tmp", "trash") for p in (store_dir / d).glob("*")}


@contextmanager
def side_client(
    test_db: TestDatabase, data_dir: Path, **overrides: object
) -> Iterator[tuple[TestClient, Settings]]:
    """A second service on the same database (own store, no dispatcher)."""
    settings = make_settings(test_db.url, data_dir, **overrides)
    with TestClient(create_app(settings, run_dispatcher=False)) as c:
        yield c, settings


@contextmanager
def live_server(settings: Settings) -> Iterator[int]:
    """A real uvicorn server (no dispatcher) on a loopback port; yields the port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    config = uvicorn.Config(
        create_app(settings, run_dispatcher=False),
        log_level="warning",
        ws="none",
        lifespan="on",
        access_log=False,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, 20, "uvicorn to start")
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()
