"""Quotas: max_active_jobs on submission, max_storage_bytes on upload, usage in /v1/me."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from fastapi.testclient import TestClient

from app.config import Settings
from tests.api.util import job, problem, wait_job
from tests.conftest import unique
from tests.helpers import md5, upload, wait_batch

UserFactory = Callable[..., dict[str, str]]


def _usage(client: TestClient, user: dict[str, str]) -> dict[str, int]:
    r = client.get("/v1/me", headers=user)
    assert r.status_code == 200
    usage: dict[str, int] = r.json()["usage"]
    return usage


def test_max_active_jobs(client: TestClient, make_user: UserFactory) -> None:
    user = make_user(quotas={"max_active_jobs": 2})
    assert client.get("/v1/me", headers=user).json()["quotas"]["max_active_jobs"] == 2
    m = upload(client, user, b"quota input")
    slow = unique()
    r = client.post(
        "/v1/batches",
        json={"name": slow, "app": "exitcode", "jobs": [job(f"{slow}-0", "--sleep", "30", in_=m)]},
        headers=user,
    )
    assert r.status_code == 201, r.text
    try:
        assert _usage(client, user)["active_jobs"] == 1
        big = unique()
        r = client.post(
            "/v1/batches",
            json={
                "name": big,
                "app": "uppercase",
                "jobs": [job(f"{big}-{i}", in_=m) for i in range(2)],
            },
            headers=user,
        )
        err = problem(r, 403, "quota_exceeded", quota="max_active_jobs", limit=2)
        assert "max_active_jobs" in err["detail"]
        problem(client.get(f"/v1/batches/{big}", headers=user), 404, "batch_not_found")
        problem(client.get(f"/v1/jobs/{big}-0", headers=user), 404, "job_not_found")
        assert _usage(client, user)["active_jobs"] == 1

        # An open batch runs nothing, so it takes no quota until it is submitted.
        later = unique()
        r = client.post(
            "/v1/batches",
            json={
                "name": later,
                "app": "uppercase",
                "submit": False,
                "jobs": [job(f"{later}-{i}", in_=m) for i in range(2)],
            },
            headers=user,
        )
        assert r.status_code == 201, r.text
        assert _usage(client, user)["active_jobs"] == 1
        r = client.post(f"/v1/batches/{later}/submit", headers=user)
        problem(r, 403, "quota_exceeded", quota="max_active_jobs")
        assert client.get(f"/v1/batches/{later}", headers=user).json()["state"] == "open"
    finally:
        client.post(f"/v1/batches/{slow}/abort", headers=user)
    assert _usage(client, user)["active_jobs"] == 0
    r = client.post(f"/v1/batches/{later}/submit", headers=user)
    assert r.status_code == 200, r.text
    done = wait_batch(client, user, later)
    assert done["counts"]["done"] == 2
    assert _usage(client, user)["active_jobs"] == 0


def test_max_active_jobs_counts_jobs_not_batches(
    client: TestClient, make_user: UserFactory, admin: dict[str, str]
) -> None:
    user = make_user(quotas={"max_active_jobs": 3})
    m = upload(client, user, b"three")
    name = unique()
    body = {
        "name": name,
        "app": "uppercase",
        "jobs": [job(f"{name}-{i}", in_=m) for i in range(3)],
    }
    assert client.post("/v1/batches", json=body, headers=user).status_code == 201
    wait_batch(client, user, name)
    # Finished jobs are not active: the same number fits again.
    again = unique()
    body = {**body, "name": again, "jobs": [job(f"{again}-{i}", in_=m) for i in range(3)]}
    assert client.post("/v1/batches", json=body, headers=user).status_code == 201
    wait_batch(client, user, again)
    # Lifting the quota.
    r = client.patch(
        f"/v1/users/{user['X-User']}", json={"quotas": {"max_active_jobs": None}}, headers=admin
    )
    assert r.status_code == 200
    many = unique()
    body = {**body, "name": many, "jobs": [job(f"{many}-{i}", in_=m) for i in range(5)]}
    assert client.post("/v1/batches", json=body, headers=user).status_code == 201
    wait_job(client, user, f"{many}-4")


def test_max_storage_bytes(client: TestClient, make_user: UserFactory, settings: Settings) -> None:
    user = make_user(quotas={"max_storage_bytes": 100})
    first = b"a" * 59 + unique().encode()[:1]
    assert len(first) == 60
    m1 = md5(first)
    assert client.put(f"/v1/files/{m1}", content=first, headers=user).status_code == 201
    assert _usage(client, user)["stored_bytes"] == 60
    second = unique().encode().ljust(50, b"b")
    m2 = md5(second)
    r = client.put(f"/v1/files/{m2}", content=second, headers=user)
    err = problem(r, 403, "quota_exceeded", quota="max_storage_bytes", limit=100, usage=60)
    assert "max_storage_bytes" in err["detail"]
    assert client.head(f"/v1/files/{m2}", headers=user).status_code == 404
    assert not (settings.store_dir / m2[:2] / m2).exists()
    r = client.post("/v1/files", files=[("file", ("s", second))], headers=user)
    problem(r, 403, "quota_exceeded", quota="max_storage_bytes")
    assert not (settings.store_dir / m2[:2] / m2).exists()
    assert _usage(client, user)["stored_bytes"] == 60
    # Bytes the user already has cost nothing.
    assert client.put(f"/v1/files/{m1}", content=first, headers=user).status_code == 200
    third = unique().encode().ljust(40, b"c")
    assert client.put(f"/v1/files/{md5(third)}", content=third, headers=user).status_code == 201
    assert _usage(client, user)["stored_bytes"] == 100
    # Dropping a claim frees the space.
    assert client.delete(f"/v1/files/{m1}", headers=user).status_code == 204
    assert _usage(client, user)["stored_bytes"] == 40
    assert client.put(f"/v1/files/{m2}", content=second, headers=user).status_code == 201
    assert _usage(client, user)["stored_bytes"] == 90


def test_concurrent_submit_retries_within_quota(client: TestClient, make_user: UserFactory) -> None:
    user = make_user(quotas={"max_active_jobs": 2})
    m = upload(client, user, b"submit twice")
    for _ in range(3):
        name = unique()
        body = {
            "name": name,
            "app": "uppercase",
            "submit": False,
            "jobs": [job(f"{name}-{i}", in_=m) for i in range(2)],
        }
        assert client.post("/v1/batches", json=body, headers=user).status_code == 201
        url = f"/v1/batches/{name}/submit"
        with ThreadPoolExecutor(4) as pool:
            replies = list(pool.map(lambda u: client.post(u, headers=user), [url] * 4))
        # A retried submit is a no-op, not a second claim on the quota.
        assert [r.status_code for r in replies] == [200] * 4, [r.text for r in replies]
        wait_batch(client, user, name)


def test_jobs_aborted_before_submit_take_no_quota(
    client: TestClient, make_user: UserFactory
) -> None:
    user = make_user(quotas={"max_active_jobs": 2})
    m = upload(client, user, b"aborted early")
    name = unique()
    body = {
        "name": name,
        "app": "uppercase",
        "submit": False,
        "jobs": [job(f"{name}-{i}", in_=m) for i in range(3)],
    }
    assert client.post("/v1/batches", json=body, headers=user).status_code == 201
    problem(
        client.post(f"/v1/batches/{name}/submit", headers=user),
        403,
        "quota_exceeded",
        quota="max_active_jobs",
        limit=2,
    )
    r = client.post("/v1/jobs/abort", json={"jobs": [f"{name}-1"]}, headers=user)
    assert r.json() == {"aborted": 1}
    r = client.post(f"/v1/batches/{name}/submit", headers=user)
    assert r.status_code == 200, r.text
    done = wait_batch(client, user, name)
    assert done["counts"]["done"] == 2
    assert done["counts"]["aborted"] == 1
