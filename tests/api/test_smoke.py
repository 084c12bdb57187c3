"""The basic path through the API on each engine: upload, submit, run, download."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from tests.conftest import unique
from tests.helpers import md5, upload, wait_batch


def test_uppercase_runs(client: TestClient, user: dict[str, str]) -> None:
    m = upload(client, user, b"hello\n")
    name = unique()
    r = client.post(
        "/v1/batches",
        json={
            "name": name,
            "app": "uppercase",
            "jobs": [{"name": f"{name}-j0", "inputs": [{"name": "in", "md5": m}]}],
        },
        headers=user,
    )
    assert r.status_code == 201, r.text
    body = wait_batch(client, user, name)
    assert body["counts"]["done"] == 1
    out = client.get(f"/v1/jobs/{name}-j0/outputs/out", headers=user)
    assert out.status_code == 200
    assert out.content == b"HELLO\n"
    expected = md5(b"HELLO\n")
    assert out.headers["etag"] == f'"{expected}"'


def test_other_user_sees_nothing(
    client: TestClient, make_user: Callable[..., dict[str, str]]
) -> None:
    a, b = make_user(), make_user()
    m = upload(client, a, b"secret bytes")
    assert client.head(f"/v1/files/{m}", headers=a).status_code == 200
    assert client.head(f"/v1/files/{m}", headers=b).status_code == 404
    r = client.post("/v1/files/query", json={"md5s": [m]}, headers=b)
    assert r.json() == {"missing": [m]}
