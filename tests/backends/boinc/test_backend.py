"""The boinc backend end to end: REST API -> gateway -> fake BOINC project -> REST API."""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from pathlib import Path

import pytest

from tests.backends.boinc.backend_harness import UPPERCASE, Gateway, gateway, wait
from tests.conftest import TestDatabase
from tests.fakes.boinc_server import ALICE_AUTH, Quirks

SUBMISSION = ["create_batch", "query_files", "upload_files", "submit_batch"]
# Every quirk of the recorded live server, plus PHP warnings printed before the XML.
ALL_QUIRKS = dataclasses.replace(Quirks.live(), notices_before_xml=True)


def submission_ops(gw: Gateway, start: int) -> list[str]:
    """The RPCs of one submission: from its create_batch to its submit_batch."""
    ops = gw.ops(start)
    first = ops.index("create_batch")
    return ops[first : ops.index("submit_batch", first) + 1]


@pytest.mark.parametrize("quirks", [Quirks(), ALL_QUIRKS], ids=["fixed", "all-quirks"])
def test_batch_life(
    test_db: TestDatabase,
    tmp_path: Path,
    quirks: Quirks,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    with gateway(test_db, tmp_path, quirks=quirks) as gw:
        md5 = gw.upload(b"hello, volunteers\n")
        names = gw.submit("life", md5, 3)
        wus = gw.wait_sent(names)
        assert submission_ops(gw, 0) == SUBMISSION
        assert [gw.job(n)["state"] for n in names] == ["queued"] * 3

        # A volunteer gets job 0: only the periodic full listing can show it (2.7, #1609).
        gw.fake.start_job(wus[0])
        gw.wait_job(names[0], "in_progress")
        gw.fake.complete_job(
            wus[0],
            outputs={"out": b"HELLO, VOLUNTEERS\n"},
            stderr="<core_client_version>8.0.2</core_client_version>\nall & well\n",
            cpu=3.5,
            elapsed=4.25,
        )
        gw.fake.complete_job(wus[1], outputs={"out": b"ONE\n"}, cpu=1.0, elapsed=2.0)
        gw.fake.fail_job(wus[2], exit_status=-185, stderr="boom\n", cpu=0.5, elapsed=0.75)

        done = gw.wait_job(names[0], "done")
        assert (done["exit_code"], done["wall_seconds"], done["cpu_seconds"]) == (0, 4.25, 3.5)
        assert done["error"] is None
        assert [o["name"] for o in done["outputs"]] == ["out"]
        r = gw.client.get(f"/v1/jobs/{names[0]}/outputs/out", headers=gw.headers)
        assert r.status_code == 200 and r.content == b"HELLO, VOLUNTEERS\n"
        r = gw.client.get(f"/v1/jobs/{names[0]}/stderr", headers=gw.headers)
        assert r.text == "<core_client_version>8.0.2</core_client_version>\nall & well\n"
        assert gw.wait_job(names[1], "done")["exit_code"] == 0
        r = gw.client.get(f"/v1/jobs/{names[1]}/outputs/out", headers=gw.headers)
        assert r.content == b"ONE\n"

        failed = gw.wait_job(names[2], "error")
        assert failed["exit_code"] == -185
        assert failed["error"] == "BOINC: too many instances failed (exit status -185)"
        assert failed["outputs"] == []
        if not quirks.qcj_broken_error_path:
            # The server's query_completed_job reports the failed instance only when fixed.
            assert (failed["wall_seconds"], failed["cpu_seconds"]) == (0.75, 0.5)
            r = gw.client.get(f"/v1/jobs/{names[2]}/stderr", headers=gw.headers)
            assert r.text == "boom\n"

        summary = wait(lambda: (b := gw.batch("life"))["state"] == "complete" and b, "complete")
        assert summary["counts"] == {
            "queued": 0,
            "in_progress": 0,
            "done": 2,
            "error": 1,
            "aborted": 0,
        }
        before = len(gw.fake.rpc_log)
        r = gw.client.post("/v1/batches/life/retire", headers=gw.headers)
        assert r.status_code == 200, r.text
        wait(lambda: gw.fake.batch(1).state == 4, "batch retired on BOINC")
        # Every job had finished: retirement alone, no abort.
        assert [op for op in gw.ops(before) if op != "query_batch2"] == ["retire_batch"]
        # One batch, three jobs: nothing was sent twice.
        assert len(gw.fake.state.batches) == 1 and len(gw.wus()) == 3
    # The account key travels in get_output.php URLs: it must not reach the logs.
    captured = capsys.readouterr()
    assert ALICE_AUTH not in caplog.text + captured.out + captured.err


def test_shared_inputs_are_uploaded_once(test_db: TestDatabase, tmp_path: Path) -> None:
    with gateway(test_db, tmp_path) as gw:
        md5 = gw.upload(b"shared input\n")
        gw.wait_sent(gw.submit("first", md5, 3))
        assert submission_ops(gw, 0) == SUBMISSION
        start = len(gw.fake.rpc_log)
        gw.wait_sent(gw.submit("second", md5, 2))
        assert submission_ops(gw, start) == ["create_batch", "query_files", "submit_batch"]
        # The app's templates are checked once per app, not once per submission.
        assert gw.ops().count("get_templates") == 1
        with gw.fake.state.lock:
            assert list(gw.fake.state.job_files) == [f"jf_{md5}"]
            # Both batches are associated with the file: the deleter must keep it (3.6).
            assert len(gw.fake.state.assocs) == 2


def test_abort_one_job_then_the_batch(test_db: TestDatabase, tmp_path: Path) -> None:
    with gateway(test_db, tmp_path) as gw:
        md5 = gw.upload(b"abort me\n")
        names = gw.submit("ab", md5, 3)
        wus = gw.wait_sent(names)
        r = gw.client.post("/v1/jobs/abort", json={"jobs": [names[0]]}, headers=gw.headers)
        assert r.status_code == 200 and r.json() == {"aborted": 1}
        wait(lambda: gw.fake.job(wus[0]).error_mask & 16, "job cancelled on BOINC")
        assert gw.ops().count("abort_jobs") == 1
        assert not gw.fake.job(wus[1]).error_mask

        gw.fake.start_job(wus[1])
        gw.wait_job(names[1], "in_progress")
        r = gw.client.post("/v1/batches/ab/abort", headers=gw.headers)
        assert r.status_code == 200, r.text
        wait(lambda: gw.fake.batch(1).state == 3, "batch aborted on BOINC")
        assert all(gw.fake.job(w).error_mask & 16 for w in wus)
        assert [gw.job(n)["state"] for n in names] == ["aborted"] * 3
        # BOINC now reports the cancelled jobs as errors; the gateway keeps them aborted, sends
        # nothing twice, and stops polling a batch with nothing left to run.
        time.sleep(0.5)
        n = len(gw.fake.rpc_log)
        time.sleep(0.3)
        assert gw.ops(n) == []
        assert gw.ops().count("abort_jobs") == 1 and gw.ops().count("abort_batch") == 1
        assert [gw.job(n)["state"] for n in names] == ["aborted"] * 3


def test_lease_reaches_expire_time_and_expiry_retires(
    test_db: TestDatabase, tmp_path: Path
) -> None:
    with gateway(test_db, tmp_path) as gw:
        md5 = gw.upload(b"leased\n")
        lease = 4_000_000_000.0
        names = gw.submit("leased", md5, 2, lease_until=lease)
        gw.wait_sent(names)
        # BOINC's expiry is the fallback: the gateway itself ends the batch at the lease.
        margin = gw.settings.boinc_expire_margin_seconds
        assert margin > 0 and gw.fake.batch(1).expire_time == lease + margin  # create_batch
        r = gw.client.put(
            "/v1/batches/leased/lease", json={"until": lease + 60}, headers=gw.headers
        )
        assert r.status_code == 200, r.text
        wait(lambda: gw.fake.batch(1).expire_time == lease + 60 + margin, "set_expire_time")
        assert gw.ops().count("set_expire_time") == 1

        # The lease passes: the gateway aborts and retires the batch, and so does BOINC.
        r = gw.client.put("/v1/batches/leased/lease", json={"until": 1.0}, headers=gw.headers)
        assert r.status_code == 200, r.text
        wait(lambda: gw.fake.batch(1).state == 4, "batch retired on BOINC")
        assert gw.batch("leased")["state"] == "retired"
        assert [gw.job(n)["state"] for n in names] == ["aborted"] * 2
        ops = gw.ops()
        assert ops.index("abort_batch") < ops.index("retire_batch")
        assert ops.count("retire_batch") == 1


def test_what_boinc_receives(test_db: TestDatabase, tmp_path: Path) -> None:
    app = {**UPPERCASE, "name": "upper7", "boinc": {"app_name": "uppercase", "app_version_num": 7}}
    with gateway(test_db, tmp_path, app=app) as gw:
        md5 = gw.upload(b"params\n")
        url_md5 = "0123456789abcdef0123456789abcdef"
        jobs = [
            {"name": "p#0", "args": ["--n", "0"], "inputs": [{"name": "in", "md5": md5}]},
            {
                "name": "p#1",
                "params": {"priority": 9},
                "inputs": [
                    {"name": "in", "url": "https://data.example.org/x", "md5": url_md5, "size": 42}
                ],
            },
        ]
        params = {"rsc_fpops_est": 1e12, "delay_bound": 3600, "priority": 5}
        body = {"name": "p:batch", "app": "upper7", "jobs": jobs, "params": params}
        assert gw.client.post("/v1/batches", json=body, headers=gw.headers).status_code == 201
        w0, w1 = (gw.fake.job(w) for w in gw.wait_sent(["p_0", "p_1"]))
        batch = gw.fake.batch(1)
        # Names: <prefix>-<token>-<kind><gateway id>-<gateway name, BOINC-safe>.
        assert re.fullmatch(r"bgw-[0-9a-f]{8}-b1-p_batch", batch.name), batch.name
        assert re.fullmatch(r"bgw-[0-9a-f]{8}-j1-p_0", w0.name), w0.name
        assert (w0.command_line, w1.command_line) == ("--n 0", "")
        assert (w0.priority, w1.priority) == (5, 9)
        assert w0.params == w1.params == {"rsc_fpops_est": 1e12, "delay_bound": 3600.0}
        assert (w0.app_version_num, w1.app_version_num) == (7, 7)
        assert (w0.input_files, w1.input_files) == ([f"jf_{md5}"], [f"jf_{url_md5}"])

        # A batch's own app_version_num (what HTCondor's +app_version_num sends) wins over
        # the app's, and is shown back in the batch's params.
        body = {
            "name": "v9",
            "app": "upper7",
            "jobs": [{"name": "v9-0", "inputs": [{"name": "in", "md5": md5}]}],
            "params": {"app_version_num": 9},
        }
        r = gw.client.post("/v1/batches", json=body, headers=gw.headers)
        assert r.status_code == 201 and r.json()["params"]["app_version_num"] == 9, r.text
        assert gw.fake.job(gw.wu("v9-0")).app_version_num == 9
        body = {**body, "name": "v0", "params": {"app_version_num": 0}}
        r = gw.client.post("/v1/batches", json=body, headers=gw.headers)
        assert r.status_code == 422, r.text  # 0 is "any": leave it out instead
