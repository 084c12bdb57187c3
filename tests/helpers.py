"""Helpers for API tests: upload bytes, build jobs, wait for states."""

from __future__ import annotations

import hashlib
import time
from typing import Any

from fastapi.testclient import TestClient


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def upload(client: TestClient, headers: dict[str, str], data: bytes, **params: str) -> str:
    m = md5(data)
    r = client.put(f"/v1/files/{m}", content=data, headers=headers, params=params)
    assert r.status_code in (200, 201), r.text
    return m


def wait_batch(
    client: TestClient,
    headers: dict[str, str],
    name: str,
    states: tuple[str, ...] = ("complete",),
    timeout: float = 60,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        r = client.get(f"/v1/batches/{name.replace('#', '%23')}", headers=headers)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        if body["state"] in states:
            return body
        assert time.monotonic() < deadline, f"batch {name} still {body}"
        time.sleep(0.05)


def wait_job(
    client: TestClient,
    headers: dict[str, str],
    name: str,
    states: tuple[str, ...],
    timeout: float = 60,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        r = client.get(f"/v1/jobs/{name}", headers=headers)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        if body["state"] in states:
            return body
        assert time.monotonic() < deadline, f"job {name} still {body}"
        time.sleep(0.05)
