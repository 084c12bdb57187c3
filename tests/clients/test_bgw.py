"""``bgw`` end to end against a live server: upload, submit with local paths, wait, fetch,
the read commands, batch control, and errors as one line with documented exit codes."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import httpx

from tests.clients.conftest import BgwRun, Server, free_port


def ok(result: Any) -> Any:
    """The JSON stdout of a successful run."""
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return json.loads(result.stdout)


def one_line_error(result: Any, code: int, *needles: str, alone: bool = True) -> str:
    """Assert exit ``code`` and one ``bgw: error:`` line (the last on stderr; with ``alone``,
    the only one) containing ``needles``."""
    assert result.returncode == code, f"exit {result.returncode}\n{result.stdout}{result.stderr}"
    lines = result.stderr.strip().splitlines()
    assert lines, "nothing on stderr"
    if alone:
        assert len(lines) == 1, result.stderr
    assert lines[-1].startswith("bgw: error: "), result.stderr
    assert sum(line.startswith("bgw: error") for line in lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[-1], lines[-1]
    assert "Traceback" not in result.stderr
    return str(lines[-1])


def test_upload_twice_sends_nothing_the_second_time(
    bgw: BgwRun, tmp_path: Path, server: Server, user_token: str
) -> None:
    (tmp_path / "a.txt").write_bytes(b"alpha\n")
    (tmp_path / "b.bin").write_bytes(bytes(range(256)) * 5000)
    (tmp_path / "a-copy.txt").write_bytes(b"alpha\n")  # same bytes: sent once

    run = bgw("upload", "a.txt", "b.bin", "a-copy.txt", "--json")
    first = ok(run)
    assert [r["uploaded"] for r in first] == [True, True, True]
    assert first[0]["md5"] == first[2]["md5"]
    assert "2 uploaded, 0 already present" in run.stderr
    assert first[0]["md5"] == hashlib.md5(b"alpha\n").hexdigest()
    assert first[1]["size"] == 256 * 5000

    second = bgw("upload", "a.txt", "b.bin", "a-copy.txt", "--json")
    assert [r["uploaded"] for r in ok(second)] == [False, False, False]
    assert "0 uploaded, 2 already present" in second.stderr

    with server.client(user_token) as c:
        for row in first:
            r = c.head(f"/v1/files/{row['md5']}")
            assert r.status_code == 200 and int(r.headers["content-length"]) == row["size"]

    plain = bgw("upload", "a.txt")
    assert plain.returncode == 0
    assert plain.stdout.split() == [first[0]["md5"], "present", "a.txt"]


def _spec(tmp_path: Path, name: str, inputs: dict[str, bytes]) -> Path:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    for job, content in inputs.items():
        (data / f"{job}.txt").write_bytes(content)
    jobs = "\n".join(
        f'  - name: "{name}.{job}"\n    inputs: [{{name: in, path: data/{job}.txt}}]'
        for job in inputs
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(f'name: "{name}"\napp: uppercase\njobs:\n{jobs}\n')
    return spec


def test_submit_wait_fetch_and_resume(bgw: BgwRun, tmp_path: Path) -> None:
    name = f"condor#host#uppercase#{time.time_ns()}#1"  # '#' must be percent-encoded
    inputs = {"j0": b"hello world\n", "j1": b"second input\n" * 1000, "j2": b"hello world\n"}
    spec = _spec(tmp_path, name, inputs)

    batch = ok(bgw("submit", str(spec), "--wait", "--interval", "0.1", "--json", timeout=90))
    assert batch["name"] == name
    assert batch["state"] == "complete"
    assert batch["counts"].get("done") == 3

    # the same spec again is a safe retry: nothing uploaded, the same batch
    again = bgw("submit", str(spec), "--json")
    assert ok(again)["name"] == name
    assert "uploaded" not in again.stderr

    rows = ok(bgw("fetch", name, "out", "--json", timeout=90))
    assert sorted((r["job"], r["output"], r["fetched"]) for r in rows) == [
        (f"{name}.{j}", "out", True) for j in sorted(inputs)
    ]
    for job, content in inputs.items():
        assert (tmp_path / "out" / f"{name}.{job}" / "out").read_bytes() == content.upper()

    # resumable: complete files are skipped; a damaged one is fetched again; a partial
    # download (.part) is continued
    j0 = tmp_path / "out" / f"{name}.j0" / "out"
    j1 = tmp_path / "out" / f"{name}.j1" / "out"
    j0.write_bytes(b"damaged")
    whole = j1.read_bytes()
    j1.unlink()
    j1.with_name("out.part").write_bytes(whole[:1000])
    rows = ok(bgw("fetch", name, "out", "--json"))
    fetched = {r["job"].rsplit(".", 1)[1] for r in rows if r["fetched"]}
    assert fetched == {"j0", "j1"}
    assert j0.read_bytes() == inputs["j0"].upper()
    assert j1.read_bytes() == whole
    assert not j1.with_name("out.part").exists()
    assert not any(r["fetched"] for r in ok(bgw("fetch", name, "out", "--json")))


def test_read_commands(bgw: BgwRun, tmp_path: Path) -> None:
    name = f"reads-{time.time_ns()}"
    spec = _spec(tmp_path, name, {"only": b"x\n"})
    ok(bgw("submit", str(spec), "--wait", "--interval", "0.1", "--json", timeout=90))

    me = ok(bgw("me", "--json"))
    assert me["admin"] is False and me["name"].startswith("u")
    apps = {a["name"]: a for a in ok(bgw("apps", "--json"))}
    assert apps["uppercase"]["inputs"] == ["in"]
    listed = ok(bgw("status", "--json"))
    assert [b["name"] for b in listed] == [name]
    one = ok(bgw("status", name, "--json"))
    assert one["state"] == "complete" and one["njobs"] == 1
    jobs = ok(bgw("jobs", name, "--json"))
    assert [(j["name"], j["state"], j["exit_code"]) for j in jobs] == [(f"{name}.only", "done", 0)]

    table = bgw("status")
    assert table.returncode == 0
    assert name in table.stdout and "complete" in table.stdout
    watched = bgw("status", name, "--watch", "--interval", "0.1", timeout=30)
    assert watched.returncode == 0 and "complete" in watched.stdout
    assert "uppercase" in bgw("apps").stdout
    assert f"{name}.only" in bgw("jobs", name).stdout


def test_wait_exits_4_when_jobs_fail(bgw: BgwRun, tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("x\n")
    name = f"fails-{time.time_ns()}"
    spec = {
        "name": name,
        "app": "exitcode",
        "jobs": [
            {
                "name": f"{name}.bad",
                "args": ["--exit", "3"],
                "inputs": [{"name": "in", "path": "in.txt"}],
            },
            {"name": f"{name}.good", "inputs": [{"name": "in", "path": "in.txt"}]},
        ],
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    result = bgw("submit", "spec.json", "--wait", "--interval", "0.1", "--json", timeout=90)
    one_line_error(result, 4, name, "1 error", alone=False)
    assert json.loads(result.stdout)["state"] == "complete"
    jobs = {j["name"]: j for j in ok(bgw("jobs", name, "--json"))}
    assert jobs[f"{name}.bad"]["state"] == "error" and jobs[f"{name}.bad"]["exit_code"] == 3


def test_lease_abort_retire(bgw: BgwRun, tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("x\n")
    name = f"ctl-{time.time_ns()}"
    jobs = [
        {
            "name": f"{name}.{i}",
            "args": ["--sleep", "30"],
            "inputs": [{"name": "in", "path": "in.txt"}],
        }
        for i in range(3)
    ]
    (tmp_path / "spec.json").write_text(json.dumps({"name": name, "app": "exitcode", "jobs": jobs}))
    assert ok(bgw("submit", "spec.json", "--json"))["state"] == "in_progress"

    before = time.time()
    leased = ok(bgw("lease", name, "+1h", "--json"))
    assert before + 3590 < leased["lease_until"] < time.time() + 3610

    aborted = ok(bgw("abort", name, "--jobs", f"{name}.0,{name}.1", "--json"))
    assert aborted == {"aborted": 2}
    states = {j["name"]: j["state"] for j in ok(bgw("jobs", name, "--json"))}
    assert states[f"{name}.0"] == states[f"{name}.1"] == "aborted"

    assert ok(bgw("abort", name, "--json"))["state"] == "aborted"
    assert ok(bgw("retire", name, "--json"))["state"] == "retired"


def test_errors_are_one_line_with_exit_codes(bgw: BgwRun, tmp_path: Path) -> None:
    one_line_error(bgw("status", "no-such-batch"), 1, "no batch named no-such-batch")
    one_line_error(bgw("fetch", "no-such-batch", "out"), 1, "batch_not_found")
    one_line_error(bgw("me", env={"BGW_TOKEN": "wrong"}), 1, "token")
    dead = f"http://127.0.0.1:{free_port()}"
    one_line_error(bgw("me", env={"BGW_URL": dead}), 3, "cannot reach")
    one_line_error(bgw("submit", "missing.yaml"), 2, "missing.yaml")
    (tmp_path / "bad.yaml").write_text(
        "name: x\napp: uppercase\njobs:\n  - name: j\n    inputs: [{name: in, path: nowhere.txt}]\n"
    )
    one_line_error(bgw("submit", "bad.yaml"), 2, "nowhere.txt")
    (tmp_path / "typo.json").write_text(json.dumps({"name": "t", "app": "no-such-app", "jobs": []}))
    one_line_error(bgw("submit", "typo.json"), 1, "app_not_found")
    one_line_error(bgw("lease", "x", "tomorrowish"), 2, "cannot read time")
    usage = bgw("status", "--no-such-option")
    assert usage.returncode == 2


def test_config_file(bgw: BgwRun, tmp_path: Path, server: Server, user_token: str) -> None:
    cfg = tmp_path / "bgw.toml"
    cfg.write_text(f'url = "{server.url}"\ntoken = "{user_token}"\n')
    me = ok(bgw("me", "--json", env={"BGW_URL": "", "BGW_TOKEN": "", "BGW_CONFIG": str(cfg)}))
    assert me["admin"] is False
    xdg = tmp_path / "xdg" / "bgw"
    xdg.mkdir(parents=True)
    (xdg / "config.toml").write_text(cfg.read_text())
    assert ok(bgw("me", "--json", env={"BGW_URL": "", "BGW_TOKEN": ""}))["name"] == me["name"]
    one_line_error(
        bgw("me", env={"BGW_TOKEN": "", "BGW_CONFIG": str(tmp_path / "none.toml")}), 2, "none.toml"
    )


def test_server_is_untouched_by_failed_upload(server: Server, user_token: str) -> None:
    """Guard for the fixtures: the live server answers and keeps users apart."""
    with httpx.Client(base_url=server.url, timeout=10) as c:
        assert c.get("/v1/me").status_code == 401
        assert c.get("/v1/me", headers={"Authorization": f"Bearer {user_token}"}).status_code == 200
