"""Garbage collection of stored bytes, driven through the routes and ``gc.collect``."""

from __future__ import annotations

import time
from collections.abc import Callable

from fastapi.testclient import TestClient

from app.config import Settings
from app.db import Database
from app.services import gc
from app.services.store import FileStore
from tests.api.util import FAR_FUTURE, job, problem
from tests.conftest import unique
from tests.helpers import md5, upload, wait_batch


def _on_disk(settings: Settings, m: str) -> bool:
    return (settings.store_dir / m[:2] / m).is_file()


def _collect(db: Database, settings: Settings, at: float) -> int:
    return gc.collect(db, FileStore(settings.store_dir), at=at)


def test_live_batch_protects_then_retire_releases(
    client: TestClient, user: dict[str, str], db: Database, settings: Settings
) -> None:
    data = f"gc input {unique()}".encode()
    m = upload(client, user, data)
    assoc = upload(client, user, f"gc associated {unique()}".encode())
    name = unique()
    r = client.post(
        "/v1/batches",
        json={"name": name, "app": "uppercase", "submit": False, "jobs": [job(f"{name}-0", in_=m)]},
        headers=user,
    )
    assert r.status_code == 201
    r = client.post("/v1/files/query", json={"md5s": [assoc], "batch": name}, headers=user)
    assert r.json() == {"missing": []}
    _collect(db, settings, FAR_FUTURE)
    assert _on_disk(settings, m)
    assert _on_disk(settings, assoc)
    assert client.get(f"/v1/files/{m}", headers=user).content == data
    assert client.post(f"/v1/batches/{name}/retire", headers=user).status_code == 200
    assert _collect(db, settings, FAR_FUTURE) >= 2
    assert not _on_disk(settings, m)
    assert not _on_disk(settings, assoc)
    problem(client.get(f"/v1/files/{m}", headers=user), 404, "file_not_found")
    assert client.post("/v1/files/query", json={"md5s": [m, assoc]}, headers=user).json() == {
        "missing": [m, assoc]
    }
    # The job keeps its history.
    assert client.get(f"/v1/jobs/{name}-0", headers=user).json()["inputs"][0]["md5"] == m


def test_outputs_of_a_finished_batch_live_until_retired(
    client: TestClient, user: dict[str, str], db: Database, settings: Settings
) -> None:
    data = f"gc output {unique()}".encode()
    m = upload(client, user, data)
    name = unique()
    r = client.post(
        "/v1/batches",
        json={"name": name, "app": "uppercase", "jobs": [job(f"{name}-0", in_=m)]},
        headers=user,
    )
    assert r.status_code == 201
    wait_batch(client, user, name)
    out = md5(data.upper())
    assert _on_disk(settings, out)
    _collect(db, settings, FAR_FUTURE)
    assert _on_disk(settings, out)
    assert _on_disk(settings, m)
    assert client.get(f"/v1/jobs/{name}-0/outputs/out", headers=user).content == data.upper()
    client.post(f"/v1/batches/{name}/retire", headers=user)
    _collect(db, settings, FAR_FUTURE)
    assert not _on_disk(settings, out)
    assert not _on_disk(settings, m)
    problem(client.get(f"/v1/jobs/{name}-0/outputs/out", headers=user), 404, "output_not_found")
    assert client.get(f"/v1/batches/{name}/outputs.zip", headers=user).status_code == 200


def test_uploaded_file_lives_until_keep_time(
    client: TestClient, user: dict[str, str], db: Database, settings: Settings
) -> None:
    data = f"gc keep {unique()}".encode()
    m = upload(client, user, data)
    keep_until = next(
        i["keep_until"] for i in client.get("/v1/files", headers=user).json()["items"]
    )
    assert keep_until >= time.time() + settings.file_keep_seconds - 60
    _collect(db, settings, time.time())
    _collect(db, settings, keep_until - 1)
    assert _on_disk(settings, m)
    assert client.head(f"/v1/files/{m}", headers=user).status_code == 200
    _collect(db, settings, keep_until + 1)
    assert not _on_disk(settings, m)
    assert client.head(f"/v1/files/{m}", headers=user).status_code == 404
    # Uploading again stores it again.
    assert client.put(f"/v1/files/{m}", content=data, headers=user).status_code == 201
    assert _on_disk(settings, m)


def test_every_owner_keeps_shared_bytes(
    client: TestClient,
    make_user: Callable[..., dict[str, str]],
    db: Database,
    settings: Settings,
) -> None:
    a, b = make_user(), make_user()
    data = f"gc shared {unique()}".encode()
    m = upload(client, a, data)
    upload(client, b, data)
    assert client.delete(f"/v1/files/{m}", headers=a).status_code == 204
    _collect(db, settings, time.time() + 60)
    assert _on_disk(settings, m)
    assert client.get(f"/v1/files/{m}", headers=b).content == data
    assert client.delete(f"/v1/files/{m}", headers=b).status_code == 204
    _collect(db, settings, time.time() + 60)
    assert not _on_disk(settings, m)
