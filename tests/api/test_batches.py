"""Routes of /v1/batches: create, add jobs, submit, list, summary, jobs, query."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi.testclient import TestClient

from tests.api.util import job, problem, q, wait_job
from tests.conftest import unique
from tests.helpers import md5, upload, wait_batch

UserFactory = Callable[..., dict[str, str]]


def _in(client: TestClient, user: dict[str, str], tag: str = "") -> str:
    return upload(client, user, f"input {tag} {unique()}\n".encode())


def _create(client: TestClient, user: dict[str, str], body: dict[str, Any]) -> Any:
    return client.post("/v1/batches", json=body, headers=user)


def _batch_absent(client: TestClient, user: dict[str, str], name: str) -> None:
    problem(client.get(f"/v1/batches/{q(name)}", headers=user), 404, "batch_not_found")


def test_one_shot_create_runs_and_retry_is_200(client: TestClient, user: dict[str, str]) -> None:
    m = _in(client, user)
    name = unique()
    body = {
        "name": name,
        "app": "uppercase",
        "jobs": [job(f"{name}-0", in_=m), job(f"{name}-1", in_=m)],
        "params": {"priority": 2},
    }
    r = _create(client, user, body)
    assert r.status_code == 201, r.text
    s = r.json()
    assert s["name"] == name
    assert s["app"] == "uppercase"
    assert s["state"] in ("in_progress", "complete")
    assert s["njobs"] == 2
    assert s["submitted_at"] is not None
    assert s["params"]["priority"] == 2
    assert sum(s["counts"].values()) == 2
    # The reply is a summary, never the jobs.
    assert "jobs" not in s
    again = _create(client, user, body)
    assert again.status_code == 200, again.text
    assert again.json()["name"] == name
    assert again.json()["created_at"] == s["created_at"]
    changed = {**body, "jobs": [job(f"{name}-0", in_=m)]}
    problem(_create(client, user, changed), 409, "batch_exists", batch=name)
    done = wait_batch(client, user, name)
    assert done["counts"]["done"] == 2
    assert done["fraction_done"] == 1.0
    assert done["completed_at"] is not None
    # A retry still answers 200 once the batch has run.
    assert _create(client, user, body).status_code == 200


def test_open_add_submit(client: TestClient, user: dict[str, str]) -> None:
    m = _in(client, user)
    name = unique("condor#schedd#uppercase#1700000000#")
    r = _create(client, user, {"name": name, "app": "uppercase"})
    assert r.status_code == 201, r.text
    assert r.json()["state"] == "open"
    assert r.json()["submitted_at"] is None
    jobs = [job(f"{name}.{i}", in_=m) for i in range(3)]
    r = client.post(f"/v1/batches/{q(name)}/jobs", json={"jobs": jobs[:2]}, headers=user)
    assert r.status_code == 200, r.text
    assert r.json() == {"batch": name, "added": 2, "njobs": 2}
    # A retry of the same add is a no-op; an overlapping add adds only the new job.
    r = client.post(f"/v1/batches/{q(name)}/jobs", json={"jobs": jobs[:2]}, headers=user)
    assert r.json() == {"batch": name, "added": 0, "njobs": 2}
    r = client.post(f"/v1/batches/{q(name)}/jobs", json={"jobs": jobs}, headers=user)
    assert r.json() == {"batch": name, "added": 1, "njobs": 3}
    s = client.get(f"/v1/batches/{q(name)}", headers=user).json()
    assert s["state"] == "open"
    assert s["counts"]["queued"] == 3
    # Nothing runs while the batch is open.
    j = client.get(f"/v1/jobs/{q(jobs[0]['name'])}", headers=user).json()
    assert j["state"] == "queued"
    assert j["attempts"] == 0
    r = client.post(f"/v1/batches/{q(name)}/submit", headers=user)
    assert r.status_code == 200, r.text
    assert r.json()["state"] in ("in_progress", "complete")
    assert r.json()["submitted_at"] is not None
    assert client.post(f"/v1/batches/{q(name)}/submit", headers=user).status_code == 200
    # Jobs cannot be added once submitted; the same jobs again are still a no-op.
    extra = job(f"{name}.9", in_=m)
    r = client.post(f"/v1/batches/{q(name)}/jobs", json={"jobs": [extra]}, headers=user)
    problem(r, 409, "batch_state", batch=name)
    r = client.post(f"/v1/batches/{q(name)}/jobs", json={"jobs": jobs}, headers=user)
    assert r.status_code == 200
    assert r.json()["added"] == 0
    done = wait_batch(client, user, name)
    assert done["counts"]["done"] == 3
    out = client.get(f"/v1/jobs/{q(jobs[2]['name'])}/outputs/out", headers=user)
    assert out.content.startswith(b"INPUT  ")


def test_create_with_missing_inputs_creates_nothing(
    client: TestClient, user: dict[str, str]
) -> None:
    have = _in(client, user)
    gone1, gone2 = md5(b"never uploaded 1" + have.encode()), md5(b"never 2" + have.encode())
    name = unique()
    body: dict[str, Any] = {
        "name": name,
        "app": "uppercase",
        "jobs": [
            job(f"{name}-0", in_=have),
            job(f"{name}-1", in_=gone2),
            job(f"{name}-2", in_=gone1),
            job(f"{name}-3", in_=gone2),
        ],
    }
    r = _create(client, user, body)
    err = problem(r, 400, "missing_input_files")
    assert sorted(err["md5s"]) == sorted([gone1, gone2])
    _batch_absent(client, user, name)
    problem(client.get(f"/v1/jobs/{name}-0", headers=user), 404, "job_not_found")
    # The names are free: the corrected request works.
    for j in body["jobs"]:
        j["inputs"][0]["md5"] = have
    assert _create(client, user, body).status_code == 201


def test_add_jobs_errors(client: TestClient, user: dict[str, str]) -> None:
    m = _in(client, user)
    other = unique()
    _create(client, user, {"name": other, "app": "uppercase", "jobs": [job(f"{other}-0", in_=m)]})
    name = unique()
    _create(client, user, {"name": name, "app": "uppercase"})
    url = f"/v1/batches/{name}/jobs"
    gone = md5(b"missing " + name.encode())
    r = client.post(
        url, json={"jobs": [job(f"{name}-0", in_=m), job(f"{name}-1", in_=gone)]}, headers=user
    )
    problem(r, 400, "missing_input_files", md5s=[gone])
    # Job names are unique per owner, across batches.
    r = client.post(url, json={"jobs": [job(f"{other}-0", in_=m)]}, headers=user)
    problem(r, 409, "job_exists", job=f"{other}-0")
    r = client.post(
        url,
        json={"jobs": [{"name": f"{name}-0", "inputs": [{"name": "a", "md5": m}]}]},
        headers=user,
    )
    problem(r, 400, "invalid_request", job=f"{name}-0")
    problem(
        client.post("/v1/batches/nope-q/jobs", json={"jobs": [job("z", in_=m)]}, headers=user),
        404,
        "batch_not_found",
        batch="nope-q",
    )
    assert client.post(url, json={"jobs": []}, headers=user).status_code == 422
    s = client.get(f"/v1/batches/{name}", headers=user).json()
    assert s["njobs"] == 0
    # Same name, different content: a conflict, not a silent skip.
    assert (
        client.post(url, json={"jobs": [job(f"{name}-0", in_=m)]}, headers=user).status_code == 200
    )
    r = client.post(url, json={"jobs": [job(f"{name}-0", "--x", in_=m)]}, headers=user)
    problem(r, 409, "job_exists", job=f"{name}-0")


def test_create_errors(client: TestClient, user: dict[str, str]) -> None:
    m = _in(client, user)
    taken = unique()
    _create(client, user, {"name": taken, "app": "uppercase", "jobs": [job(f"{taken}-j", in_=m)]})
    cases: list[tuple[dict[str, Any], int, str, dict[str, Any]]] = [
        ({"app": "no-such-app"}, 404, "app_not_found", {"app": "no-such-app"}),
        ({"jobs": [job(f"{taken}-j", in_=m)]}, 409, "job_exists", {"job": f"{taken}-j"}),
        # Wrong input bindings.
        ({"jobs": [{"name": "j", "inputs": []}]}, 400, "invalid_request", {"job": "j"}),
        (
            {"jobs": [{"name": "j", "inputs": [{"name": "a", "md5": m}]}]},
            400,
            "invalid_request",
            {"job": "j"},
        ),
        (
            {
                "jobs": [
                    {"name": "j", "inputs": [{"name": "in", "md5": m}, {"name": "in", "md5": m}]}
                ]
            },
            400,
            "invalid_request",
            {"job": "j"},
        ),
        ({"jobs": [job("j", outputs=["nope"], in_=m)]}, 400, "invalid_request", {"job": "j"}),
        ({"jobs": [job("j", in_=m), job("j", in_=m)]}, 400, "invalid_request", {"job": "j"}),
        (
            {"jobs": [{"name": "j", "inputs": [{"name": "in", "content": "x" * (64 * 1024 + 1)}]}]},
            400,
            "invalid_request",
            {"job": "j"},
        ),
    ]
    for extra, status, code, fields in cases:
        name = unique()
        body = {"name": name, "app": "uppercase", **extra}
        problem(_create(client, user, body), status, code, **fields)
        _batch_absent(client, user, name)
    invalid: list[dict[str, Any]] = [
        {"name": "has space", "app": "uppercase"},
        {"name": "x" * 192, "app": "uppercase"},
        {"name": "a/b", "app": "uppercase"},
        {"name": unique(), "app": "uppercase", "jobs": [{"name": "j", "inputs": [{"name": "in"}]}]},
        {
            "name": unique(),
            "app": "uppercase",
            "jobs": [{"name": "j", "inputs": [{"name": "in", "md5": m, "content": "x"}]}],
        },
        {"name": unique(), "app": "uppercase", "bogus": 1},
    ]
    for body in invalid:
        assert _create(client, user, body).status_code == 422, body
    r = _create(client, user, {"name": "x" * 191, "app": "uppercase"})
    assert r.status_code == 201, r.text


def test_content_inputs(client: TestClient, user: dict[str, str]) -> None:
    name = unique()
    body = {
        "name": name,
        "app": "concat",
        "jobs": [
            {
                "name": f"{name}-0",
                "args": ["--sep", "+", "--repeat", "2"],
                "inputs": [{"name": "b", "content": "right"}, {"name": "a", "content": "left"}],
            }
        ],
    }
    assert _create(client, user, body).status_code == 201
    j = wait_job(client, user, f"{name}-0")
    assert j["state"] == "done", j
    assert [(i["name"], i["md5"]) for i in j["inputs"]] == [
        ("a", md5(b"left")),
        ("b", md5(b"right")),
    ]
    out = client.get(f"/v1/jobs/{name}-0/outputs/out", headers=user)
    assert out.content == b"left+rightleft+right"
    # Content inputs become files the user has.
    assert client.get(f"/v1/files/{md5(b'left')}", headers=user).content == b"left"


def test_list_filters_and_pagination(client: TestClient, user: dict[str, str]) -> None:
    names = [unique("L") for _ in range(4)]
    apps = ["uppercase", "exitcode", "uppercase", "concat"]
    for n, a in zip(names, apps, strict=True):
        assert _create(client, user, {"name": n, "app": a}).status_code == 201
    client.post(f"/v1/batches/{names[2]}/abort", headers=user)

    def listed(**params: Any) -> list[str]:
        r = client.get("/v1/batches", headers=user, params=params)
        assert r.status_code == 200, r.text
        return [b["name"] for b in r.json()["items"]]

    assert listed() == names[::-1]
    assert listed(app="uppercase") == [names[2], names[0]]
    assert listed(state="aborted") == [names[2]]
    assert listed(state="open", app="uppercase") == [names[0]]
    assert listed(app="no-such-app") == []
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": 3}
        if cursor:
            params["cursor"] = cursor
        body = client.get("/v1/batches", headers=user, params=params).json()
        seen += [b["name"] for b in body["items"]]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == names[::-1]
    assert pages == 2
    assert client.get("/v1/batches", headers=user, params={"state": "weird"}).status_code == 422
    problem(
        client.get("/v1/batches", headers=user, params={"cursor": "%%%"}), 400, "invalid_cursor"
    )
    problem(
        client.get("/v1/batches", headers=user, params={"cursor": "InNvbWV0aGluZyI"}),
        400,
        "invalid_cursor",
    )


def test_summary_counts_and_fraction(client: TestClient, user: dict[str, str]) -> None:
    m = _in(client, user)
    name = unique()
    jobs = [job(f"{name}-{i}", in_=m) for i in range(4)]
    _create(client, user, {"name": name, "app": "exitcode", "jobs": jobs, "submit": False})
    r = client.post("/v1/jobs/abort", json={"jobs": [f"{name}-1"]}, headers=user)
    assert r.json() == {"aborted": 1}
    s = client.get(f"/v1/batches/{name}", headers=user).json()
    assert s["counts"] == {"queued": 3, "in_progress": 0, "done": 0, "error": 0, "aborted": 1}
    assert s["njobs"] == 4
    assert s["fraction_done"] == 0.25
    assert s["state"] == "open"
    assert {"created_at", "submitted_at", "completed_at", "lease_until"} <= set(s)
    problem(
        client.get("/v1/batches/nope-s", headers=user),
        404,
        "batch_not_found",
        batch="nope-s",
        detail="no batch named nope-s",
    )


def test_job_list_filters_since_and_pages(client: TestClient, user: dict[str, str]) -> None:
    m = _in(client, user)
    name = unique()
    jobs = [job(f"{name}-{i}", in_=m) for i in range(5)]
    _create(client, user, {"name": name, "app": "uppercase", "jobs": jobs, "submit": False})
    url = f"/v1/batches/{name}/jobs"
    first = client.get(url, headers=user)
    assert first.status_code == 200
    items = first.json()["items"]
    assert [i["name"] for i in items] == [j["name"] for j in jobs]
    assert {i["state"] for i in items} == {"queued"}
    since = max(int(i["change"]) for i in items)
    client.post("/v1/jobs/abort", json={"jobs": [f"{name}-3", f"{name}-1"]}, headers=user)
    r = client.get(url, headers=user, params={"since": str(since)})
    assert [(i["name"], i["state"]) for i in r.json()["items"]] == [
        (f"{name}-1", "aborted"),
        (f"{name}-3", "aborted"),
    ]
    r = client.get(url, headers=user, params={"state": "queued"})
    assert [i["name"] for i in r.json()["items"]] == [f"{name}-{i}" for i in (0, 2, 4)]
    latest = max(int(i["change"]) for i in client.get(url, headers=user).json()["items"])
    assert client.get(url, headers=user, params={"since": str(latest)}).json()["items"] == []
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 2}
        if cursor:
            params["cursor"] = cursor
        body = client.get(url, headers=user, params=params).json()
        assert len(body["items"]) <= 2
        seen += [i["name"] for i in body["items"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == [j["name"] for j in jobs]
    problem(client.get(url, headers=user, params={"since": "abc"}), 400, "invalid_cursor")
    problem(client.get(url, headers=user, params={"since": "-1"}), 400, "invalid_cursor")
    problem(
        client.get(url, headers=user, params={"cursor": "InNvbWV0aGluZyI"}), 400, "invalid_cursor"
    )
    problem(client.get("/v1/batches/nope-j/jobs", headers=user), 404, "batch_not_found")


def test_query_groups_in_order_and_since(client: TestClient, user: dict[str, str]) -> None:
    m = _in(client, user)
    b1, b2 = unique("condor#s#a#1#"), unique("condor#s#a#2#")
    _create(
        client,
        user,
        {
            "name": b1,
            "app": "uppercase",
            "submit": False,
            "jobs": [job(f"{b1}.0", in_=m), job(f"{b1}.1", in_=m)],
        },
    )
    _create(
        client,
        user,
        {"name": b2, "app": "uppercase", "submit": False, "jobs": [job(f"{b2}.0", in_=m)]},
    )
    r = client.post("/v1/batches/query", json={"batches": [b2, b1], "since": "0"}, headers=user)
    assert r.status_code == 200, r.text
    body = r.json()
    assert [g["name"] for g in body["batches"]] == [b2, b1]
    assert body["batches"][0]["jobs"] == [{"name": f"{b2}.0", "state": "queued"}]
    assert body["batches"][1]["jobs"] == [
        {"name": f"{b1}.0", "state": "queued"},
        {"name": f"{b1}.1", "state": "queued"},
    ]
    cursor = body["cursor"]
    assert int(cursor) > 0
    nothing = client.post(
        "/v1/batches/query", json={"batches": [b1, b2], "since": cursor}, headers=user
    ).json()
    assert [g["jobs"] for g in nothing["batches"]] == [[], []]
    assert int(nothing["cursor"]) >= int(cursor)
    client.post("/v1/jobs/abort", json={"jobs": [f"{b1}.1"]}, headers=user)
    after = client.post(
        "/v1/batches/query", json={"batches": [b1, b2], "since": cursor}, headers=user
    ).json()
    assert after["batches"] == [
        {"name": b1, "jobs": [{"name": f"{b1}.1", "state": "aborted"}]},
        {"name": b2, "jobs": []},
    ]
    assert int(after["cursor"]) > int(cursor)
    # GAHP clients echo server_time as a float.
    r = client.post(
        "/v1/batches/query", json={"batches": [b1], "since": f"{cursor}.000000"}, headers=user
    )
    assert r.json()["batches"][0]["jobs"] == [{"name": f"{b1}.1", "state": "aborted"}]
    # Default since: everything.
    r = client.post("/v1/batches/query", json={"batches": [b2]}, headers=user)
    assert r.json()["batches"][0]["jobs"] == [{"name": f"{b2}.0", "state": "queued"}]


def test_query_unknown_batch(client: TestClient, user: dict[str, str]) -> None:
    b = unique()
    _create(client, user, {"name": b, "app": "uppercase"})
    missing = unique("condor#schedd#x#1#")
    r = client.post("/v1/batches/query", json={"batches": [b, missing]}, headers=user)
    body = problem(r, 404, "batch_not_found", batch=missing)
    assert body["detail"] == f"no batch named {missing}"
    r = client.post("/v1/batches/query", json={"batches": [b], "since": "soon"}, headers=user)
    problem(r, 400, "invalid_cursor")
    r = client.post("/v1/batches/query", json={"batches": ["bad name"]}, headers=user)
    assert r.status_code == 422


def test_htcondor_names_in_urls(client: TestClient, user: dict[str, str]) -> None:
    m = upload(client, user, b"condor input\n")
    batch = f"condor#schedd-{unique('h')}#uppercase#1700000000#42"
    jname = f"{batch}.0"
    r = _create(client, user, {"name": batch, "app": "uppercase", "jobs": [job(jname, in_=m)]})
    assert r.status_code == 201, r.text
    assert r.json()["name"] == batch
    done = wait_batch(client, user, batch)
    assert done["counts"]["done"] == 1
    j = client.get(f"/v1/jobs/{q(jname)}", headers=user)
    assert j.status_code == 200
    assert j.json()["name"] == jname
    assert j.json()["batch"] == batch
    out = client.get(f"/v1/jobs/{q(jname)}/outputs/out", headers=user)
    assert out.content == b"CONDOR INPUT\n"
    items = client.get(f"/v1/batches/{q(batch)}/jobs", headers=user).json()["items"]
    assert [i["name"] for i in items] == [jname]
    # Unencoded, '#' starts a fragment: the service never sees the rest.
    assert client.get(f"/v1/batches/{batch}", headers=user).status_code == 404


def test_batches_are_private(client: TestClient, make_user: UserFactory) -> None:
    a, b = make_user(), make_user()
    m = _in(client, a)
    name = unique()
    jname = f"{name}-0"
    _create(client, a, {"name": name, "app": "uppercase", "jobs": [job(jname, in_=m)]})
    wait_batch(client, a, name)
    for method, url, body in [
        ("GET", f"/v1/batches/{name}", None),
        ("GET", f"/v1/batches/{name}/jobs", None),
        ("POST", f"/v1/batches/{name}/jobs", {"jobs": [job("x", in_=m)]}),
        ("POST", f"/v1/batches/{name}/submit", None),
        ("POST", f"/v1/batches/{name}/abort", None),
        ("POST", f"/v1/batches/{name}/retire", None),
        ("PUT", f"/v1/batches/{name}/lease", {"until": 1.0}),
        ("GET", f"/v1/batches/{name}/outputs.zip", None),
        ("POST", "/v1/batches/query", {"batches": [name]}),
    ]:
        problem(
            client.request(method, url, json=body, headers=b), 404, "batch_not_found", batch=name
        )
    for method, url, body in [
        ("GET", f"/v1/jobs/{jname}", None),
        ("GET", f"/v1/jobs/{jname}/outputs/out", None),
        ("GET", f"/v1/jobs/{jname}/stdout", None),
        ("GET", f"/v1/jobs/{jname}/stderr", None),
        ("POST", "/v1/jobs/abort", {"jobs": [jname]}),
    ]:
        problem(client.request(method, url, json=body, headers=b), 404, "job_not_found", job=jname)
    assert client.get("/v1/batches", headers=b).json() == {"items": [], "next_cursor": None}
    out_md5 = client.get(f"/v1/jobs/{jname}", headers=a).json()["outputs"][0]["md5"]
    assert client.head(f"/v1/files/{out_md5}", headers=a).status_code == 200
    assert client.head(f"/v1/files/{out_md5}", headers=b).status_code == 404
    assert client.post("/v1/files/query", json={"md5s": [m, out_md5]}, headers=b).json() == {
        "missing": [m, out_md5]
    }
    # The other user's batch is still as it was.
    assert client.get(f"/v1/batches/{name}", headers=a).json()["state"] == "complete"
    # Names are per owner: b may use the same ones.
    mb = _in(client, b)
    r = _create(
        client, b, {"name": name, "app": "uppercase", "jobs": [job(jname, in_=mb)], "submit": False}
    )
    assert r.status_code == 201, r.text


def test_concurrent_retries(client: TestClient, user: dict[str, str]) -> None:
    m = _in(client, user)
    name = unique()
    body = {
        "name": name,
        "app": "uppercase",
        "submit": False,
        "jobs": [job(f"{name}-{i}", in_=m) for i in range(20)],
    }
    with ThreadPoolExecutor(6) as pool:
        codes = sorted(pool.map(lambda _: _create(client, user, body).status_code, range(6)))
    assert codes == [200] * 5 + [201]
    # Retried and disjoint adds at once: every job exactly once, the count right.
    parts = [[job(f"{name}-x{k}-{i}", in_=m) for i in range(10)] for k in range(3)]
    url = f"/v1/batches/{name}/jobs"
    with ThreadPoolExecutor(6) as pool:
        replies = list(
            pool.map(lambda p: client.post(url, json={"jobs": p}, headers=user), [*parts, *parts])
        )
    assert [r.status_code for r in replies] == [200] * 6, [r.text for r in replies]
    assert sorted(r.json()["added"] for r in replies) == [0, 0, 0, 10, 10, 10]
    s = client.get(f"/v1/batches/{name}", headers=user).json()
    assert s["njobs"] == 50
    assert s["counts"]["queued"] == 50
