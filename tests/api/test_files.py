"""Routes of /v1/files: streamed upload, multipart upload, download with Range, query, list."""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.api import files as files_api
from app.config import Settings
from tests.api.util import (
    live_server,
    problem,
    side_client,
    stored_files,
    temp_files,
    wait_until,
)
from tests.conftest import TestDatabase, make_settings, unique
from tests.helpers import md5, upload

UserFactory = Callable[..., dict[str, str]]


def _bytes(tag: str = "") -> bytes:
    return f"{tag}{unique('data')}\n".encode()


def test_put_new_then_again(client: TestClient, user: dict[str, str], settings: Settings) -> None:
    data = _bytes()
    m = md5(data)
    r = client.put(f"/v1/files/{m}", content=data, headers=user)
    assert r.status_code == 201, r.text
    assert r.json() == {"md5": m, "size": len(data), "filename": None, "created": True}
    again = client.put(f"/v1/files/{m}", content=data, headers=user)
    assert again.status_code == 200, again.text
    assert again.json()["created"] is False
    path = settings.store_dir / m[:2] / m
    assert path.read_bytes() == data


def test_put_wrong_hash_keeps_nothing(
    client: TestClient, user: dict[str, str], settings: Settings
) -> None:
    data = _bytes()
    claimed = md5(b"something else " + data)
    before_files, before_tmp = stored_files(settings.store_dir), temp_files(settings.store_dir)
    r = client.put(f"/v1/files/{claimed}", content=data, headers=user)
    body = problem(r, 400, "md5_mismatch", md5s=[claimed], actual=md5(data))
    assert claimed in body["detail"]
    assert stored_files(settings.store_dir) == before_files
    assert temp_files(settings.store_dir) <= before_tmp
    assert client.head(f"/v1/files/{claimed}", headers=user).status_code == 404
    assert client.head(f"/v1/files/{md5(data)}", headers=user).status_code == 404


def test_put_short_body_is_incomplete(
    client: TestClient, user: dict[str, str], settings: Settings
) -> None:
    data = _bytes()
    m = md5(data)
    headers = {**user, "Content-Length": str(len(data) + 100)}
    before_tmp = temp_files(settings.store_dir)
    r = client.put(f"/v1/files/{m}", content=data, headers=headers)
    problem(r, 400, "incomplete_upload")
    assert m not in stored_files(settings.store_dir)
    assert temp_files(settings.store_dir) <= before_tmp
    assert client.head(f"/v1/files/{m}", headers=user).status_code == 404


def test_put_invalid_md5_is_422(client: TestClient, user: dict[str, str]) -> None:
    for bad in ("NOTANMD5", "A" * 32, "0" * 31):
        assert client.put(f"/v1/files/{bad}", content=b"x", headers=user).status_code == 422


def test_put_unknown_or_finished_batch(client: TestClient, user: dict[str, str]) -> None:
    data = _bytes()
    m = md5(data)
    r = client.put(f"/v1/files/{m}", content=data, headers=user, params={"batch": "nope-x"})
    problem(r, 404, "batch_not_found", batch="nope-x")
    assert client.head(f"/v1/files/{m}", headers=user).status_code == 404
    name = unique()
    assert client.post(
        "/v1/batches", json={"name": name, "app": "uppercase"}, headers=user
    ).is_success
    assert client.post(f"/v1/batches/{name}/retire", headers=user).status_code == 200
    r = client.put(f"/v1/files/{m}", content=data, headers=user, params={"batch": name})
    problem(r, 409, "batch_state", batch=name, state="retired")
    assert client.head(f"/v1/files/{m}", headers=user).status_code == 404


def test_put_with_batch_associates(client: TestClient, user: dict[str, str]) -> None:
    name = unique("condor#s#uppercase#1#")
    r = client.post("/v1/batches", json={"name": name, "app": "uppercase"}, headers=user)
    assert r.status_code == 201
    m = upload(client, user, _bytes(), batch=name)
    items = client.get("/v1/files", headers=user).json()["items"]
    assert [i["batches"] for i in items if i["md5"] == m] == [[name]]


def test_over_the_limit_is_413_and_keeps_nothing(
    test_db: TestDatabase, tmp_path: Path, user: dict[str, str]
) -> None:
    with side_client(test_db, tmp_path, max_file_bytes=16) as (side, settings):
        store = settings.store_dir
        small = b"0123456789abcdef"
        assert side.put(f"/v1/files/{md5(small)}", content=small, headers=user).status_code == 201
        big = b"0123456789abcdefX"
        # Declared too large: refused before the body is read.
        r = side.put(f"/v1/files/{md5(big)}", content=big, headers=user)
        problem(r, 413, "file_too_large", limit=16)

        # Not declared (chunked): refused while streaming.
        def chunks() -> Iterator[bytes]:
            yield big[:10]
            yield big[10:]

        r = side.put(f"/v1/files/{md5(big)}", content=chunks(), headers=user)
        problem(r, 413, "file_too_large", limit=16)
        files = [("file", ("a.txt", small)), ("file", ("b.txt", big))]
        r = side.post("/v1/files", files=files, headers=user)
        problem(r, 413, "file_too_large", limit=16)
        assert stored_files(store) == {md5(small)}
        assert temp_files(store) == set()
        assert side.head(f"/v1/files/{md5(big)}", headers=user).status_code == 404


def test_connection_cut_mid_body_keeps_nothing(
    test_db: TestDatabase, tmp_path: Path, user: dict[str, str]
) -> None:
    settings = make_settings(test_db.url, tmp_path)
    data = os.urandom(64 * 1024)
    m = md5(data)
    with live_server(settings) as port:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            head = (
                f"PUT /v1/files/{m} HTTP/1.1\r\nHost: x\r\n"
                f"Authorization: {user['Authorization']}\r\n"
                f"Content-Type: application/octet-stream\r\n"
                f"Content-Length: {len(data)}\r\n\r\n"
            )
            s.sendall(head.encode() + data[: len(data) // 2])
            # Once the first half is in a temp file, cut the connection.
            wait_until(lambda: temp_files(settings.store_dir), 10, "the upload to start")
        wait_until(lambda: not temp_files(settings.store_dir), 10, "the temp file to go")
        assert stored_files(settings.store_dir) == set()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(
                f"HEAD /v1/files/{m} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                f"Authorization: {user['Authorization']}\r\n\r\n".encode()
            )
            assert s.recv(100).startswith(b"HTTP/1.1 404")


def test_same_bytes_from_two_users_stored_once(
    client: TestClient, make_user: UserFactory, settings: Settings
) -> None:
    a, b = make_user(), make_user()
    data = _bytes()
    m = md5(data)
    r1 = client.put(f"/v1/files/{m}", content=data, headers=a)
    r2 = client.put(f"/v1/files/{m}", content=data, headers=b)
    # Neither learns that the other had it.
    assert (r1.status_code, r2.status_code) == (201, 201)
    assert [p.name for p in settings.store_dir.glob(f"*/{m}")] == [m]
    for h in (a, b):
        assert client.head(f"/v1/files/{m}", headers=h).status_code == 200
        assert client.get(f"/v1/files/{m}", headers=h).content == data
    # One user dropping their claim leaves the other's intact.
    assert client.delete(f"/v1/files/{m}", headers=a).status_code == 204
    assert client.head(f"/v1/files/{m}", headers=a).status_code == 404
    assert client.get(f"/v1/files/{m}", headers=b).content == data


def test_multipart_upload(client: TestClient, user: dict[str, str]) -> None:
    parts = [_bytes("p1"), _bytes("p2"), _bytes("p3")]
    files = [
        ("file", ("first.txt", parts[0], "text/plain")),
        ("file", ("second.bin", parts[1], "application/octet-stream")),
        ("file", ("../evil name", parts[2], "application/octet-stream")),
    ]
    r = client.post("/v1/files", files=files, headers=user)
    assert r.status_code == 201, r.text
    got = r.json()
    assert [(x["md5"], x["size"], x["filename"]) for x in got] == [
        (md5(parts[0]), len(parts[0]), "first.txt"),
        (md5(parts[1]), len(parts[1]), "second.bin"),
        (md5(parts[2]), len(parts[2]), "../evil name"),
    ]
    assert all(x["created"] for x in got)
    for p in parts:
        assert client.get(f"/v1/files/{md5(p)}", headers=user).content == p
    listed = {i["md5"]: i for i in client.get("/v1/files", headers=user).json()["items"]}
    assert listed[md5(parts[0])]["filename"] == "first.txt"
    # A name that could not be a file name is not recorded.
    assert listed[md5(parts[2])]["filename"] is None
    again = client.post("/v1/files", files=files[:1], headers=user)
    assert again.status_code == 201
    assert again.json()[0]["created"] is False


def test_multipart_with_batch(client: TestClient, user: dict[str, str]) -> None:
    data = _bytes()
    r = client.post(
        "/v1/files", files=[("file", ("x", data))], headers=user, params={"batch": "nope-y"}
    )
    problem(r, 404, "batch_not_found", batch="nope-y")
    assert client.head(f"/v1/files/{md5(data)}", headers=user).status_code == 404
    name = unique()
    client.post("/v1/batches", json={"name": name, "app": "uppercase"}, headers=user)
    r = client.post(
        "/v1/files", files=[("file", ("x", data))], headers=user, params={"batch": name}
    )
    assert r.status_code == 201
    items = client.get("/v1/files", headers=user).json()["items"]
    assert [i["batches"] for i in items if i["md5"] == md5(data)] == [[name]]


def test_head_and_get_with_etag_and_range(client: TestClient, user: dict[str, str]) -> None:
    data = bytes(range(256)) * 4
    m = upload(client, user, data)
    h = client.head(f"/v1/files/{m}", headers=user)
    assert h.status_code == 200
    assert h.headers["content-length"] == str(len(data))
    assert h.headers["etag"] == f'"{m}"'
    assert h.content == b""
    g = client.get(f"/v1/files/{m}", headers=user)
    assert g.status_code == 200
    assert g.content == data
    assert g.headers["etag"] == f'"{m}"'
    assert g.headers["content-type"] == "application/octet-stream"
    part = client.get(f"/v1/files/{m}", headers={**user, "Range": "bytes=100-299"})
    assert part.status_code == 206, part.text
    assert part.content == data[100:300]
    assert part.headers["content-range"] == f"bytes 100-299/{len(data)}"
    tail = client.get(f"/v1/files/{m}", headers={**user, "Range": "bytes=-10"})
    assert tail.status_code == 206
    assert tail.content == data[-10:]


def test_head_get_delete_unknown(client: TestClient, user: dict[str, str]) -> None:
    m = md5(_bytes())
    assert client.head(f"/v1/files/{m}", headers=user).status_code == 404
    problem(client.get(f"/v1/files/{m}", headers=user), 404, "file_not_found", md5s=[m])
    problem(client.delete(f"/v1/files/{m}", headers=user), 404, "file_not_found", md5s=[m])
    assert client.get("/v1/files/nothex", headers=user).status_code == 422


def test_query_reports_missing_and_associates_present(
    client: TestClient, user: dict[str, str]
) -> None:
    have = upload(client, user, _bytes())
    missing = md5(_bytes())
    name = unique()
    assert (
        client.post(
            "/v1/batches", json={"name": name, "app": "uppercase"}, headers=user
        ).status_code
        == 201
    )
    r = client.post(
        "/v1/files/query", json={"md5s": [missing, have, missing], "batch": name}, headers=user
    )
    assert r.status_code == 200, r.text
    assert r.json() == {"missing": [missing]}
    items = {i["md5"]: i for i in client.get("/v1/files", headers=user).json()["items"]}
    assert items[have]["batches"] == [name]
    assert missing not in items
    # Without a batch: only the answer.
    r = client.post("/v1/files/query", json={"md5s": [have]}, headers=user)
    assert r.json() == {"missing": []}


def test_query_errors(client: TestClient, user: dict[str, str]) -> None:
    m = upload(client, user, _bytes())
    r = client.post("/v1/files/query", json={"md5s": [m], "batch": "nope-z"}, headers=user)
    problem(r, 404, "batch_not_found", batch="nope-z", detail="no batch named nope-z")
    name = unique()
    client.post("/v1/batches", json={"name": name, "app": "uppercase"}, headers=user)
    client.post(f"/v1/batches/{name}/abort", headers=user)
    r = client.post("/v1/files/query", json={"md5s": [m], "batch": name}, headers=user)
    problem(r, 409, "batch_state", batch=name, state="aborted")
    r = client.post("/v1/files/query", json={"md5s": ["xyz"]}, headers=user)
    assert r.status_code == 422


def test_list_pagination(client: TestClient, user: dict[str, str]) -> None:
    mine = sorted(upload(client, user, _bytes(str(i))) for i in range(5))
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        params: dict[str, str | int] = {"limit": 2}
        if cursor:
            params["cursor"] = cursor
        r = client.get("/v1/files", headers=user, params=params)
        assert r.status_code == 200, r.text
        body = r.json()
        assert len(body["items"]) <= 2
        for item in body["items"]:
            assert set(item) >= {"md5", "size", "created_at", "keep_until", "batches"}
            assert item["keep_until"] > item["created_at"]
        seen += [i["md5"] for i in body["items"]]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == mine
    assert pages == 3
    assert client.get("/v1/files", headers=user, params={"limit": 0}).status_code == 422
    assert client.get("/v1/files", headers=user, params={"limit": 1001}).status_code == 422


def test_list_bad_cursor(client: TestClient, user: dict[str, str]) -> None:
    problem(client.get("/v1/files", headers=user, params={"cursor": "%%%"}), 400, "invalid_cursor")


def test_delete_drops_the_claim(client: TestClient, user: dict[str, str]) -> None:
    data = _bytes()
    m = upload(client, user, data)
    assert client.delete(f"/v1/files/{m}", headers=user).status_code == 204
    assert client.head(f"/v1/files/{m}", headers=user).status_code == 404
    assert m not in [i["md5"] for i in client.get("/v1/files", headers=user).json()["items"]]
    assert client.post("/v1/files/query", json={"md5s": [m]}, headers=user).json() == {
        "missing": [m]
    }
    # Uploading again is new to this user.
    assert client.put(f"/v1/files/{m}", content=data, headers=user).status_code == 201


def test_files_are_private(client: TestClient, make_user: UserFactory) -> None:
    a, b = make_user(), make_user()
    data = _bytes()
    m = upload(client, a, data)
    assert client.head(f"/v1/files/{m}", headers=b).status_code == 404
    problem(client.get(f"/v1/files/{m}", headers=b), 404, "file_not_found")
    problem(client.delete(f"/v1/files/{m}", headers=b), 404, "file_not_found")
    assert client.post("/v1/files/query", json={"md5s": [m]}, headers=b).json() == {"missing": [m]}
    assert client.get("/v1/files", headers=b).json() == {"items": [], "next_cursor": None}
    name = unique()
    client.post("/v1/batches", json={"name": name, "app": "uppercase"}, headers=a)
    r = client.put(f"/v1/files/{m}", content=data, headers=b, params={"batch": name})
    problem(r, 404, "batch_not_found", batch=name)
    assert client.head(f"/v1/files/{m}", headers=a).status_code == 200


def test_store_out_of_space_is_507(
    test_db: TestDatabase, tmp_path: Path, user: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fh: object, digest: object, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files_api, "_write", full)
    data = _bytes()
    with side_client(test_db, tmp_path) as (side, settings):
        r = side.put(f"/v1/files/{md5(data)}", content=data, headers=user)
        problem(r, 507, "storage_full")
        r = side.post("/v1/files", files=[("file", ("x", data))], headers=user)
        problem(r, 507, "storage_full")
        assert stored_files(settings.store_dir) == set()
        assert temp_files(settings.store_dir) == set()
        assert side.head(f"/v1/files/{md5(data)}", headers=user).status_code == 404


def test_multipart_into_finished_batch(client: TestClient, user: dict[str, str]) -> None:
    name = unique()
    client.post("/v1/batches", json={"name": name, "app": "uppercase"}, headers=user)
    client.post(f"/v1/batches/{name}/abort", headers=user)
    data = _bytes()
    r = client.post(
        "/v1/files", files=[("file", ("x", data))], headers=user, params={"batch": name}
    )
    problem(r, 409, "batch_state", batch=name, state="aborted")
    assert client.head(f"/v1/files/{md5(data)}", headers=user).status_code == 404


def test_unsatisfiable_range_is_416(client: TestClient, user: dict[str, str]) -> None:
    m = upload(client, user, b"0123456789")
    r = client.get(f"/v1/files/{m}", headers={**user, "Range": "bytes=20-30"})
    assert r.status_code == 416
    assert r.headers["content-range"] == "bytes */10"


def test_unsatisfiable_range_is_a_problem(client: TestClient, user: dict[str, str]) -> None:
    m = upload(client, user, b"0123456789")
    r = client.get(f"/v1/files/{m}", headers={**user, "Range": "bytes=20-30"})
    problem(r, 416, "range_not_satisfiable")


def test_too_many_parts_is_a_problem(client: TestClient, user: dict[str, str]) -> None:
    files = [("file", (f"f{i}", b"x")) for i in range(1001)]
    r = client.post("/v1/files", files=files, headers=user)
    problem(r, 400, "invalid_request")
