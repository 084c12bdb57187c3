"""Jobs and the end of batches: details, outputs, logs, abort, retire, lease, outputs.zip."""

from __future__ import annotations

import io
import time
import zipfile
from typing import Any

from fastapi.testclient import TestClient

from tests.api.util import job, problem, q, wait_job
from tests.conftest import unique
from tests.helpers import md5, upload, wait_batch


def _create(client: TestClient, user: dict[str, str], **body: Any) -> dict[str, Any]:
    r = client.post("/v1/batches", json=body, headers=user)
    assert r.status_code == 201, r.text
    result: dict[str, Any] = r.json()
    return result


def test_job_details_done_and_errors(client: TestClient, user: dict[str, str]) -> None:
    data = f"job input {unique()}\n".encode()
    m = upload(client, user, data)
    name = unique()
    _create(
        client,
        user,
        name=name,
        app="exitcode",
        jobs=[
            job(f"{name}-ok", in_=m),
            job(f"{name}-exit3", "--exit", "3", in_=m),
            job(f"{name}-noout", "--no-output", in_=m),
        ],
    )
    s = wait_batch(client, user, name)
    assert s["counts"] == {"queued": 0, "in_progress": 0, "done": 1, "error": 2, "aborted": 0}
    assert s["fraction_done"] == 1.0

    ok = client.get(f"/v1/jobs/{name}-ok", headers=user).json()
    assert ok["state"] == "done"
    assert ok["batch"] == name
    assert ok["app"] == "exitcode"
    assert ok["args"] == []
    assert ok["exit_code"] == 0
    assert ok["error"] is None
    assert ok["attempts"] == 1
    assert ok["wall_seconds"] is not None and ok["wall_seconds"] >= 0
    assert ok["cpu_seconds"] is not None and ok["cpu_seconds"] >= 0
    assert ok["created_at"] <= ok["started_at"] <= ok["finished_at"]
    assert ok["inputs"] == [{"name": "in", "md5": m, "size": len(data), "url": None}]
    assert ok["outputs"] == [{"name": "out", "md5": m, "size": len(data), "url": None}]
    out = client.get(f"/v1/jobs/{name}-ok/outputs/out", headers=user)
    assert out.status_code == 200
    assert out.content == data
    assert out.headers["etag"] == f'"{m}"'
    part = client.get(f"/v1/jobs/{name}-ok/outputs/out", headers={**user, "Range": "bytes=4-8"})
    assert part.status_code == 206
    assert part.content == data[4:9]

    e3 = client.get(f"/v1/jobs/{name}-exit3", headers=user).json()
    assert e3["state"] == "error"
    assert e3["exit_code"] == 3
    assert e3["error"] == "exit code 3"
    assert e3["args"] == ["--exit", "3"]
    stderr = client.get(f"/v1/jobs/{name}-exit3/stderr", headers=user)
    assert stderr.status_code == 200
    assert stderr.headers["content-type"].startswith("text/plain")
    assert stderr.text == "exitcode: exiting with 3\n"

    no = client.get(f"/v1/jobs/{name}-noout", headers=user).json()
    assert no["state"] == "error"
    assert no["exit_code"] == 0
    assert no["error"] == "missing output out"
    assert no["outputs"] == []
    problem(
        client.get(f"/v1/jobs/{name}-noout/outputs/out", headers=user),
        404,
        "output_not_found",
        job=f"{name}-noout",
        output="out",
    )


def test_job_errors_404(client: TestClient, user: dict[str, str]) -> None:
    m = upload(client, user, b"404 input")
    name = unique()
    _create(client, user, name=name, app="uppercase", submit=False, jobs=[job(f"{name}-0", in_=m)])
    j = f"{name}-0"
    for url in (
        f"/v1/jobs/{name}-x",
        f"/v1/jobs/{name}-x/stdout",
        f"/v1/jobs/{name}-x/stderr",
        f"/v1/jobs/{name}-x/outputs/out",
    ):
        problem(client.get(url, headers=user), 404, "job_not_found", job=f"{name}-x")
    # Not run yet: no output, empty logs.
    problem(
        client.get(f"/v1/jobs/{j}/outputs/out", headers=user),
        404,
        "output_not_found",
        job=j,
        output="out",
    )
    problem(
        client.get(f"/v1/jobs/{j}/outputs/nope", headers=user),
        404,
        "output_not_found",
        output="nope",
    )
    for stream in ("stdout", "stderr"):
        r = client.get(f"/v1/jobs/{j}/{stream}", headers=user)
        assert r.status_code == 200
        assert r.text == ""


def test_stdout(client: TestClient, user: dict[str, str]) -> None:
    m = upload(client, user, b"x")
    name = unique("condor#s#uppercase#5#")
    jname = f"{name}.0"
    _create(client, user, name=name, app="uppercase", jobs=[job(jname, in_=m)])
    assert wait_job(client, user, jname)["state"] == "done"
    r = client.get(f"/v1/jobs/{q(jname)}/stdout", headers=user)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    assert r.text == "uppercase: done\n"
    assert client.get(f"/v1/jobs/{q(jname)}/stderr", headers=user).text == ""


def test_abort_jobs_by_name(client: TestClient, user: dict[str, str]) -> None:
    m = upload(client, user, b"abort me")
    done_b, open_b = unique(), unique()
    _create(client, user, name=done_b, app="uppercase", jobs=[job(f"{done_b}-0", in_=m)])
    wait_batch(client, user, done_b)
    _create(
        client,
        user,
        name=open_b,
        app="uppercase",
        submit=False,
        jobs=[job(f"{open_b}-{i}", in_=m) for i in range(3)],
    )
    # One unknown name: nothing is aborted.
    r = client.post(
        "/v1/jobs/abort", json={"jobs": [f"{open_b}-0", f"{open_b}-nope"]}, headers=user
    )
    body = problem(r, 404, "job_not_found", job=f"{open_b}-nope")
    assert body["jobs"] == [f"{open_b}-nope"]
    assert client.get(f"/v1/jobs/{open_b}-0", headers=user).json()["state"] == "queued"
    r = client.post(
        "/v1/jobs/abort",
        json={"jobs": [f"{done_b}-0", f"{open_b}-0", f"{open_b}-1", f"{open_b}-0"]},
        headers=user,
    )
    assert r.status_code == 200, r.text
    assert r.json() == {"aborted": 2}
    done = client.get(f"/v1/jobs/{done_b}-0", headers=user).json()
    assert done["state"] == "done"
    assert done["outputs"][0]["md5"] == md5(b"ABORT ME")
    states = {
        i["name"]: i["state"]
        for i in client.get(f"/v1/batches/{open_b}/jobs", headers=user).json()["items"]
    }
    assert states == {f"{open_b}-0": "aborted", f"{open_b}-1": "aborted", f"{open_b}-2": "queued"}
    aborted = client.get(f"/v1/jobs/{open_b}-0", headers=user).json()
    assert aborted["finished_at"] is not None
    # Aborting again is a no-op.
    r = client.post("/v1/jobs/abort", json={"jobs": [f"{open_b}-0"]}, headers=user)
    assert r.json() == {"aborted": 0}
    assert client.post("/v1/jobs/abort", json={"jobs": []}, headers=user).status_code == 422


def test_abort_running_batch(client: TestClient, user: dict[str, str]) -> None:
    m = upload(client, user, b"slow")
    name = unique()
    _create(
        client,
        user,
        name=name,
        app="exitcode",
        jobs=[job(f"{name}-slow", "--sleep", "30", in_=m), job(f"{name}-fast", in_=m)],
    )
    wait_job(client, user, f"{name}-slow", ("in_progress",))
    wait_job(client, user, f"{name}-fast", ("done",))
    r = client.post(f"/v1/batches/{name}/abort", headers=user)
    assert r.status_code == 200, r.text
    s = r.json()
    assert s["state"] == "aborted"
    assert s["counts"]["aborted"] == 1
    assert s["counts"]["done"] == 1
    assert s["completed_at"] is not None
    slow = client.get(f"/v1/jobs/{name}-slow", headers=user).json()
    assert slow["state"] == "aborted"
    assert client.get(f"/v1/jobs/{name}-fast", headers=user).json()["state"] == "done"
    # The local backend kills the process: the job stays aborted, nothing more is recorded.
    assert client.post(f"/v1/batches/{name}/abort", headers=user).json()["state"] == "aborted"
    problem(
        client.post(f"/v1/batches/{name}/submit", headers=user),
        409,
        "batch_state",
        batch=name,
        state="aborted",
    )
    problem(client.post("/v1/batches/nope-a/abort", headers=user), 404, "batch_not_found")
    problem(client.post("/v1/batches/nope-a/submit", headers=user), 404, "batch_not_found")
    after = wait_job(client, user, f"{name}-slow", ("aborted",))
    assert after["outputs"] == []


def test_retire_is_idempotent(client: TestClient, user: dict[str, str]) -> None:
    m = upload(client, user, b"retire")
    name = unique()
    _create(client, user, name=name, app="uppercase", submit=False, jobs=[job(f"{name}-0", in_=m)])
    r = client.post(f"/v1/batches/{name}/retire", headers=user)
    assert r.status_code == 200, r.text
    first = r.json()
    assert first["state"] == "retired"
    assert first["retired_at"] is not None
    assert first["counts"]["aborted"] == 1
    again = client.post(f"/v1/batches/{name}/retire", headers=user)
    assert again.status_code == 200
    assert again.json()["retired_at"] == first["retired_at"]
    # A retired batch stays retired.
    assert client.post(f"/v1/batches/{name}/abort", headers=user).json()["state"] == "retired"
    problem(
        client.put(f"/v1/batches/{name}/lease", json={"until": time.time() + 60}, headers=user),
        409,
        "batch_state",
        batch=name,
        state="retired",
    )
    problem(
        client.post("/v1/batches/nope-r/retire", headers=user),
        404,
        "batch_not_found",
        batch="nope-r",
    )


def test_lease_set_and_reaped(client: TestClient, user: dict[str, str]) -> None:
    m = upload(client, user, b"lease")
    name = unique()
    _create(
        client,
        user,
        name=name,
        app="exitcode",
        lease_until=time.time() + 3600,
        jobs=[job(f"{name}-slow", "--sleep", "30", in_=m)],
    )
    until = time.time() + 7200
    r = client.put(f"/v1/batches/{name}/lease", json={"until": until}, headers=user)
    assert r.status_code == 200, r.text
    assert r.json()["lease_until"] == until
    assert client.get(f"/v1/batches/{name}", headers=user).json()["lease_until"] == until
    wait_job(client, user, f"{name}-slow", ("in_progress",))
    r = client.put(f"/v1/batches/{name}/lease", json={"until": time.time() - 1}, headers=user)
    assert r.status_code == 200
    s = wait_batch(client, user, name, ("retired",), timeout=10)
    assert s["counts"]["aborted"] == 1
    assert s["retired_at"] is not None
    assert client.get(f"/v1/jobs/{name}-slow", headers=user).json()["state"] == "aborted"
    problem(
        client.put("/v1/batches/nope-l/lease", json={"until": 1.0}, headers=user),
        404,
        "batch_not_found",
    )
    assert client.put(f"/v1/batches/{name}/lease", json={}, headers=user).status_code == 422


def test_open_batch_lease_reaped(client: TestClient, user: dict[str, str]) -> None:
    m = upload(client, user, b"open lease")
    name = unique()
    _create(
        client,
        user,
        name=name,
        app="uppercase",
        submit=False,
        lease_until=time.time() - 1,
        jobs=[job(f"{name}-0", in_=m)],
    )
    s = wait_batch(client, user, name, ("retired",), timeout=10)
    assert s["counts"] == {"queued": 0, "in_progress": 0, "done": 0, "error": 0, "aborted": 1}


def test_outputs_zip(client: TestClient, user: dict[str, str]) -> None:
    a = upload(client, user, b"left")
    b = upload(client, user, b"right")
    name = unique("condor#s#concat#7#")
    jobs = [
        {**job(f"{name}.0", "--sep", "-", "--repeat", "2", a=a, b=b)},
        {**job(f"{name}.1", outputs=["out"], a=b, b=a)},
        {**job(f"{name}.2", "--repeat", "x", a=a, b=b)},
    ]
    _create(client, user, name=name, app="concat", jobs=jobs)
    s = wait_batch(client, user, name)
    assert s["counts"]["done"] == 2
    assert s["counts"]["error"] == 1
    r = client.get(f"/v1/batches/{q(name)}/outputs.zip", headers=user)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/zip"
    zf = zipfile.ZipFile(io.BytesIO(r.content))
    assert zf.testzip() is None
    assert sorted(zf.namelist()) == sorted([f"{name}.0/out", f"{name}.0/count", f"{name}.1/out"])
    assert zf.read(f"{name}.0/out") == b"left-rightleft-right"
    assert zf.read(f"{name}.0/count") == b"2\n"
    assert zf.read(f"{name}.1/out") == b"rightleft"
    problem(client.get("/v1/batches/nope-z/outputs.zip", headers=user), 404, "batch_not_found")


def test_outputs_zip_of_batch_without_outputs(client: TestClient, user: dict[str, str]) -> None:
    name = unique()
    _create(client, user, name=name, app="uppercase")
    r = client.get(f"/v1/batches/{name}/outputs.zip", headers=user)
    assert r.status_code == 200
    assert zipfile.ZipFile(io.BytesIO(r.content)).namelist() == []


def test_outputs_wanted_before_and_after_the_run(client: TestClient, user: dict[str, str]) -> None:
    """The outputs a job asked for are visible at once; `outputs` fills in as it runs."""
    m = upload(client, user, f"wanted {unique()}\n".encode())
    name = unique()
    inputs = [{"name": "a", "md5": m}, {"name": "b", "md5": m}]
    _create(
        client,
        user,
        name=name,
        app="concat",
        submit=False,
        jobs=[
            {"name": f"{name}-all", "inputs": inputs},
            {"name": f"{name}-count", "inputs": inputs, "outputs": ["count"]},
            {"name": f"{name}-none", "inputs": inputs, "outputs": []},
        ],
    )
    views = {s: client.get(f"/v1/jobs/{name}-{s}", headers=user).json() for s in ("all", "count")}
    assert views["all"]["outputs_wanted"] == ["out", "count"]
    assert views["count"]["outputs_wanted"] == ["count"]
    assert all(v["outputs"] == [] for v in views.values())
    assert client.post(f"/v1/batches/{name}/submit", headers=user).status_code == 200
    wait_batch(client, user, name)
    done = {
        s: client.get(f"/v1/jobs/{name}-{s}", headers=user).json() for s in ("all", "count", "none")
    }
    assert [o["name"] for o in done["all"]["outputs"]] == ["count", "out"]
    assert [o["name"] for o in done["count"]["outputs"]] == ["count"]
    assert done["none"]["outputs_wanted"] == [] and done["none"]["outputs"] == []
    assert {v["state"] for v in done.values()} == {"done"}
