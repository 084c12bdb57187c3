"""End to end against a real ``serve`` process: every example app, a failure, an abort."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.e2e.conftest import LiveServer, put_bytes, wait_for


def test_example_apps_end_to_end(live: LiveServer) -> None:
    with live.client() as c:
        m_in = put_bytes(c, b"abc\n")
        m_a, m_b = put_bytes(c, b"left"), put_bytes(c, b"right")
        jobs = {
            "uppercase": [{"name": "up-0", "inputs": [{"name": "in", "md5": m_in}]}],
            "concat": [
                {
                    "name": "cat-0",
                    "args": ["--sep", "+", "--repeat", "2"],
                    "inputs": [{"name": "a", "md5": m_a}, {"name": "b", "md5": m_b}],
                }
            ],
            "exitcode": [
                {"name": "ok-0", "inputs": [{"name": "in", "md5": m_in}]},
                {
                    "name": "fail-0",
                    "args": ["--exit", "3"],
                    "inputs": [{"name": "in", "content": "x"}],
                },
                {
                    "name": "noout-0",
                    "args": ["--no-output"],
                    "inputs": [{"name": "in", "md5": m_in}],
                },
            ],
        }
        for app, js in jobs.items():
            r = c.post("/v1/batches", json={"name": f"b-{app}", "app": app, "jobs": js})
            assert r.status_code == 201, r.text
        for app in jobs:
            wait_for(c, f"/v1/batches/b-{app}", "state", ("complete",))
        assert c.get("/v1/jobs/up-0/outputs/out").content == b"ABC\n"
        assert c.get("/v1/jobs/cat-0/outputs/out").content == b"left+rightleft+right"
        assert c.get("/v1/jobs/cat-0/outputs/count").content == b"2\n"
        assert c.get("/v1/jobs/ok-0/outputs/out").content == b"abc\n"
        fail = c.get("/v1/jobs/fail-0").json()
        assert (fail["state"], fail["exit_code"], fail["error"]) == ("error", 3, "exit code 3")
        assert "exiting with 3" in c.get("/v1/jobs/fail-0/stderr").text
        noout = c.get("/v1/jobs/noout-0").json()
        assert (noout["state"], noout["error"]) == ("error", "missing output out")
        counts = c.get("/v1/batches/b-exitcode").json()["counts"]
        assert (counts["done"], counts["error"]) == (1, 2)


def _pids_in_sandboxes(data_dir: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd.startswith(data_dir):
            found.append(int(pid))
    return found


def test_abort_kills_long_running_job(live: LiveServer) -> None:
    with live.client() as c:
        m = put_bytes(c, b"zzz")
        r = c.post(
            "/v1/batches",
            json={
                "name": "long",
                "app": "exitcode",
                "jobs": [
                    {
                        "name": "sleepy",
                        "args": ["--sleep", "300"],
                        "inputs": [{"name": "in", "md5": m}],
                    }
                ],
            },
        )
        assert r.status_code == 201
        wait_for(c, "/v1/jobs/sleepy", "state", ("in_progress",))
        deadline = time.monotonic() + 20
        while not _pids_in_sandboxes(str(live.data_dir.resolve())):
            assert time.monotonic() < deadline, "job process never appeared"
            time.sleep(0.1)
        started = time.monotonic()
        r = c.post("/v1/batches/long/abort")
        assert r.json()["state"] == "aborted"
        while _pids_in_sandboxes(str(live.data_dir.resolve())):
            assert time.monotonic() - started < 20, "job process survived the abort"
            time.sleep(0.1)
        job = c.get("/v1/jobs/sleepy").json()
        assert job["state"] == "aborted"
        assert c.post("/v1/batches/query", json={"batches": ["long"], "since": "0"}).json()[
            "batches"
        ][0]["jobs"] == [{"name": "sleepy", "state": "aborted"}]


def test_url_input_is_fetched_checked_and_kept(live: LiveServer, tmp_path: Path) -> None:
    import functools
    import hashlib
    import http.server
    import threading

    served = tmp_path / "www"
    served.mkdir()
    (served / "data.txt").write_bytes(b"from the web\n")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/data.txt"
    good = hashlib.md5(b"from the web\n").hexdigest()
    try:
        with live.client() as c:
            jobs = [
                {"name": "web-ok", "inputs": [{"name": "in", "url": url, "md5": good, "size": 13}]},
                {
                    "name": "web-bad",
                    "inputs": [{"name": "in", "url": url, "md5": "0" * 32, "size": 13}],
                },
            ]
            r = c.post("/v1/batches", json={"name": "web", "app": "uppercase", "jobs": jobs})
            assert r.status_code == 201, r.text
            wait_for(c, "/v1/batches/web", "state", ("complete",))
            assert c.get("/v1/jobs/web-ok/outputs/out").content == b"FROM THE WEB\n"
            bad = c.get("/v1/jobs/web-bad").json()
            assert bad["state"] == "error"
            assert "does not match its md5/size" in bad["error"]
            detail = c.get("/v1/jobs/web-ok").json()
            assert detail["inputs"] == [{"name": "in", "md5": good, "size": 13, "url": url}]
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_job_environment_reaches_the_job_and_nothing_else_does(live: LiveServer) -> None:
    import sys

    script = "import os, json; open('out', 'w').write(json.dumps(dict(os.environ)))"
    with live.client() as c:
        r = c.post(
            "/v1/apps",
            json={
                "name": "env",
                "inputs": [],
                "outputs": ["out"],
                "local": {"command": [sys.executable, "-c", script]},
            },
        )
        assert r.status_code == 201, r.text
        jobs = [{"name": "env-0", "env": {"GREETING": "hello world", "N": "3"}}]
        r = c.post("/v1/batches", json={"name": "env", "app": "env", "jobs": jobs})
        assert r.status_code == 201, r.text
        wait_for(c, "/v1/batches/env", "state", ("complete",))
        seen = c.get("/v1/jobs/env-0/outputs/out").json()
        assert seen["GREETING"] == "hello world" and seen["N"] == "3"
        assert "BGW_DATABASE_URL" not in seen and "BGW_BOOTSTRAP_TOKEN" not in seen
        assert c.get("/v1/jobs/env-0").json()["env"] == {"GREETING": "hello world", "N": "3"}
        bad = c.post(
            "/v1/batches",
            json={
                "name": "env-bad",
                "app": "env",
                "jobs": [{"name": "env-1", "env": {"1BAD": "x"}}],
            },
        )
        assert bad.status_code == 422
