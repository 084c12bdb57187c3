"""Routes of /v1/apps and /v1/users, and /v1/me."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient

from app.examples import HERE
from tests.api.util import problem
from tests.conftest import auth, unique
from tests.helpers import upload

UserFactory = Callable[..., dict[str, str]]
UPPERCASE = [sys.executable, str(HERE / "uppercase.py")]


def _app(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": "test app",
        "inputs": ["in"],
        "outputs": ["out", {"name": "log", "required": False}],
        "local": {"command": UPPERCASE, "wall_seconds": 60},
        **extra,
    }


# ---- apps ---------------------------------------------------------------------------------


def test_examples_are_listed(client: TestClient, user: dict[str, str]) -> None:
    r = client.get("/v1/apps", headers=user)
    assert r.status_code == 200
    apps = {a["name"]: a for a in r.json()}
    assert {"uppercase", "concat", "exitcode"} <= set(apps)
    concat = apps["concat"]
    assert concat["inputs"] == ["a", "b"]
    assert concat["outputs"] == [
        {"name": "out", "required": True},
        {"name": "count", "required": False},
    ]
    one = client.get("/v1/apps/concat", headers=user)
    assert one.status_code == 200
    assert one.json() == concat


def test_get_unknown_app(client: TestClient, user: dict[str, str]) -> None:
    problem(
        client.get("/v1/apps/no-such-app", headers=user), 404, "app_not_found", app="no-such-app"
    )


def test_admin_creates_replaces_and_deletes(
    client: TestClient, admin: dict[str, str], user: dict[str, str]
) -> None:
    name = unique("app")
    r = client.post("/v1/apps", json=_app(name, params={"priority": 3}), headers=admin)
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["inputs"] == ["in"]
    assert body["outputs"] == [
        {"name": "out", "required": True},
        {"name": "log", "required": False},
    ]
    assert body["allowed_users"] is None
    assert body["local"] == {"command": UPPERCASE, "wall_seconds": 60}
    assert body["params"]["priority"] == 3
    assert client.get(f"/v1/apps/{name}", headers=user).json()["description"] == "test app"

    problem(client.post("/v1/apps", json=_app(name), headers=admin), 409, "app_exists", app=name)

    r = client.put(f"/v1/apps/{name}", json=_app(name, description="v2"), headers=admin)
    assert r.status_code == 200, r.text
    assert r.json()["description"] == "v2"
    assert client.get(f"/v1/apps/{name}", headers=user).json()["description"] == "v2"

    other = unique("app")
    r = client.put(f"/v1/apps/{other}", json=_app(other), headers=admin)
    assert r.status_code == 201, r.text
    assert r.json()["name"] == other

    assert client.delete(f"/v1/apps/{name}", headers=admin).status_code == 204
    problem(client.get(f"/v1/apps/{name}", headers=user), 404, "app_not_found")
    assert name not in [a["name"] for a in client.get("/v1/apps", headers=user).json()]
    problem(client.delete(f"/v1/apps/{name}", headers=admin), 404, "app_not_found", app=name)
    r = client.post("/v1/batches", json={"name": unique(), "app": name}, headers=user)
    problem(r, 404, "app_not_found", app=name)
    # Registering a deleted name again brings it back.
    assert client.post("/v1/apps", json=_app(name), headers=admin).status_code == 201
    assert client.get(f"/v1/apps/{name}", headers=user).status_code == 200


def test_put_uses_the_path_name(client: TestClient, admin: dict[str, str]) -> None:
    name = unique("app")
    r = client.put(f"/v1/apps/{name}", json=_app("something-else"), headers=admin)
    assert r.status_code == 201, r.text
    assert r.json()["name"] == name
    problem(client.get("/v1/apps/something-else", headers=admin), 404, "app_not_found")


def test_invalid_apps_are_422(client: TestClient, admin: dict[str, str]) -> None:
    bad_bodies = [
        _app("has space"),
        _app("slash/name"),
        _app(""),
        _app(".."),
        _app("x" * 65),
        _app(unique("app"), inputs=["in", "in"]),
        _app(unique("app"), inputs=["../in"]),
        _app(unique("app"), outputs=["out", "out"]),
        _app(unique("app"), local={"command": []}),
        _app(unique("app"), unknown_field=1),
    ]
    for body in bad_bodies:
        r = client.post("/v1/apps", json=body, headers=admin)
        assert r.status_code == 422, (body, r.text)
    for bad in ("has space", "x" * 65, ".."):
        r = client.put(f"/v1/apps/{bad}", json=_app("fine-name"), headers=admin)
        assert r.status_code in (404, 422), (bad, r.text)
        assert bad not in [a["name"] for a in client.get("/v1/apps", headers=admin).json()]


def test_allowed_users(client: TestClient, admin: dict[str, str], make_user: UserFactory) -> None:
    friend, stranger = make_user(), make_user()
    name = unique("app")
    body = _app(name, allowed_users=[friend["X-User"]])
    assert client.post("/v1/apps", json=body, headers=admin).status_code == 201
    assert client.get(f"/v1/apps/{name}", headers=friend).status_code == 200
    assert name in [a["name"] for a in client.get("/v1/apps", headers=friend).json()]
    problem(client.get(f"/v1/apps/{name}", headers=stranger), 403, "app_forbidden", app=name)
    assert name not in [a["name"] for a in client.get("/v1/apps", headers=stranger).json()]
    m = upload(client, stranger, b"abc")
    batch = unique()
    r = client.post(
        "/v1/batches",
        json={
            "name": batch,
            "app": name,
            "jobs": [{"name": f"{batch}-0", "inputs": [{"name": "in", "md5": m}]}],
        },
        headers=stranger,
    )
    problem(r, 403, "app_forbidden", app=name)
    problem(client.get(f"/v1/batches/{batch}", headers=stranger), 404, "batch_not_found")
    r = client.post("/v1/batches", json={"name": batch, "app": name}, headers=friend)
    assert r.status_code == 201, r.text


# ---- users ----------------------------------------------------------------------------------


def test_create_user_token_works_once_shown(client: TestClient, admin: dict[str, str]) -> None:
    name = unique("u")
    r = client.post(
        "/v1/users",
        json={"name": name, "quotas": {"max_active_jobs": 5, "max_storage_bytes": 1000}},
        headers=admin,
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["name"] == name
    token = body["token"]
    assert len(token) >= 22
    me = client.get("/v1/me", headers=auth(token))
    assert me.status_code == 200
    assert me.json() == {
        "name": name,
        "admin": False,
        "quotas": {"max_active_jobs": 5, "max_storage_bytes": 1000},
        "usage": {"active_jobs": 0, "stored_bytes": 0},
    }
    listed = client.get("/v1/users", headers=admin)
    assert listed.status_code == 200
    rows = [u for u in listed.json() if u["name"] == name]
    assert len(rows) == 1
    assert rows[0]["disabled"] is False
    assert token not in listed.text
    problem(client.post("/v1/users", json={"name": name}, headers=admin), 409, "user_exists")


def test_create_user_validation(client: TestClient, admin: dict[str, str]) -> None:
    for body in (
        {"name": "has space"},
        {"name": ""},
        {"name": "x" * 65},
        {"name": unique("u"), "quotas": {"max_active_jobs": -1}},
        {"name": unique("u"), "token": "chosen"},
    ):
        assert client.post("/v1/users", json=body, headers=admin).status_code == 422, body


def test_admin_user_can_administer(client: TestClient, admin: dict[str, str]) -> None:
    name = unique("u")
    token = client.post("/v1/users", json={"name": name, "admin": True}, headers=admin).json()[
        "token"
    ]
    assert client.get("/v1/me", headers=auth(token)).json()["admin"] is True
    assert client.get("/v1/users", headers=auth(token)).status_code == 200


def test_patch_quotas(client: TestClient, admin: dict[str, str], user: dict[str, str]) -> None:
    name = user["X-User"]
    r = client.patch(f"/v1/users/{name}", json={"quotas": {"max_active_jobs": 7}}, headers=admin)
    assert r.status_code == 200, r.text
    assert r.json()["quotas"]["max_active_jobs"] == 7
    r = client.patch(f"/v1/users/{name}", json={"quotas": {"max_storage_bytes": 99}}, headers=admin)
    # Only the quota named changes.
    assert r.json()["quotas"] == {"max_active_jobs": 7, "max_storage_bytes": 99}
    assert client.get("/v1/me", headers=user).json()["quotas"] == {
        "max_active_jobs": 7,
        "max_storage_bytes": 99,
    }
    r = client.patch(f"/v1/users/{name}", json={"quotas": {"max_active_jobs": None}}, headers=admin)
    assert r.json()["quotas"] == {"max_active_jobs": None, "max_storage_bytes": 99}
    problem(
        client.patch("/v1/users/nobody-here", json={"admin": False}, headers=admin),
        404,
        "user_not_found",
        user="nobody-here",
    )
    r = client.patch(f"/v1/users/{name}", json={"name": "renamed"}, headers=admin)
    assert r.status_code == 422


def test_rotate_token(client: TestClient, admin: dict[str, str], user: dict[str, str]) -> None:
    name = user["X-User"]
    r = client.post(f"/v1/users/{name}/token", headers=admin)
    assert r.status_code == 200, r.text
    new = r.json()["token"]
    assert r.json()["name"] == name
    assert new != user["Authorization"].split()[1]
    problem(client.get("/v1/me", headers=user), 401, "unauthorized")
    assert client.get("/v1/me", headers=auth(new)).json()["name"] == name
    problem(client.post("/v1/users/nobody-here/token", headers=admin), 404, "user_not_found")


def test_disable_user(client: TestClient, admin: dict[str, str], user: dict[str, str]) -> None:
    name = user["X-User"]
    m = upload(client, user, b"kept after disable " + name.encode())
    assert client.delete(f"/v1/users/{name}", headers=admin).status_code == 204
    problem(client.get("/v1/me", headers=user), 401, "unauthorized")
    assert client.head(f"/v1/files/{m}", headers=user).status_code == 401
    rows = [u for u in client.get("/v1/users", headers=admin).json() if u["name"] == name]
    assert rows[0]["disabled"] is True
    problem(client.delete("/v1/users/nobody-here", headers=admin), 404, "user_not_found")
    # Re-enabling brings the same token back.
    r = client.patch(f"/v1/users/{name}", json={"disabled": False}, headers=admin)
    assert r.status_code == 200
    assert client.get("/v1/me", headers=user).status_code == 200
    assert client.head(f"/v1/files/{m}", headers=user).status_code == 200
