"""BoincClient against the fake server over real HTTP: every operation, fixed and live server."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.backends.boinc import models as m
from app.backends.boinc.files import PART_OVERHEAD, REQUEST_OVERHEAD
from app.backends.boinc.rpc import BoincClient
from tests.backends.boinc.conftest import make_client, write_inputs
from tests.fakes.boinc_server import FakeBoincServer

UPPER = "uppercase"


def submit_simple(c: BoincClient, tmp: Path, name: str, n: int) -> int:
    """create_batch + stage + submit of n one-input jobs named <name>_<k>."""
    files = write_inputs(tmp, [f"{name} input {k}".encode() for k in range(n)])
    bid = c.create_batch(UPPER, name)
    c.stage_files(files, bid)
    jobs = [
        m.JobSpec(f"{name}_{k}", inputs=[m.LocalInput(md5)]) for k, (md5, _) in enumerate(files)
    ]
    assert c.submit_batch(bid, UPPER, jobs) == bid
    return bid


def test_ping(client: BoincClient) -> None:
    client.ping()
    assert client.rpc_counts == {"ping": 1}


def test_create_batch(client: BoincClient, any_fake: FakeBoincServer) -> None:
    bid = client.create_batch(UPPER, "b1", expire_time=1796237263.5)
    default = client.create_batch(UPPER)
    assert (bid, default) == (1, 2)
    info = client.query_batch(bid).batch
    assert (info.name, info.app_name, info.state, info.expire_time) == (
        "b1",
        UPPER,
        m.BatchState.INIT,
        1796237263.5,
    )
    assert client.query_batch(default).batch.name.startswith("alice:uppercase:")
    assert any_fake.batch(bid).user_id == any_fake.alice.id


def test_submission_makes_four_rpcs(
    client: BoincClient, any_fake: FakeBoincServer, tmp_path: Path
) -> None:
    files = write_inputs(tmp_path, [b"alpha", b"beta", b"gamma"])
    bid = client.create_batch(UPPER, "s1")
    staged = client.stage_files(files, bid, delete_time=2_000_000_000)
    jobs = [m.JobSpec(f"s1_{k}", "--n 3", [m.LocalInput(md5)]) for k, (md5, _) in enumerate(files)]
    client.submit_batch(bid, UPPER, jobs)
    assert client.rpc_counts == {
        "create_batch": 1,
        "query_files": 1,
        "upload_files": 1,
        "submit_batch": 1,
    }
    assert staged == m.StageResult(present=(), uploaded=tuple(md5 for md5, _ in files))
    for md5, path in files:
        assert any_fake.state.download[f"jf_{md5}"] == path.read_bytes()
        jf = any_fake.state.job_files[f"jf_{md5}"]
        assert (jf.delete_time, (jf.id, bid) in any_fake.state.assocs) == (2_000_000_000, True)
    assert any_fake.job("s1_2").input_files == [f"jf_{files[2][0]}"]
    assert any_fake.job("s1_2").command_line == "--n 3"
    assert any_fake.batch(bid).state == m.BatchState.IN_PROGRESS

    # A second batch with the same inputs uploads nothing.
    client.rpc_counts.clear()
    bid2 = client.create_batch(UPPER, "s2")
    again = client.stage_files(files, bid2)
    client.submit_batch(bid2, UPPER, [m.JobSpec("s2_0", inputs=[m.LocalInput(files[0][0])])])
    assert again.uploaded == ()
    assert client.rpc_counts == {"create_batch": 1, "query_files": 1, "submit_batch": 1}


def test_uploads_are_chunked_by_count(any_fake: FakeBoincServer, tmp_path: Path) -> None:
    files = write_inputs(tmp_path, [b"file %d" % k for k in range(45)])
    with make_client(any_fake) as c:
        c.upload_files(files + files[:3], batch_id=0)
        assert c.rpc_counts == {"upload_files": 3}
    assert [op for _, op in any_fake.rpc_log] == ["upload_files"] * 3
    assert all(any_fake.state.download[f"jf_{md5}"] == p.read_bytes() for md5, p in files)


def test_uploads_are_chunked_by_size(any_fake: FakeBoincServer, tmp_path: Path) -> None:
    files = write_inputs(tmp_path, [bytes([k]) * 100 for k in range(10)])
    # Room for two files and their multipart framing per request.
    limit = REQUEST_OVERHEAD + 2 * (100 + PART_OVERHEAD) + 50
    with make_client(any_fake, max_upload_bytes=limit) as c:
        c.upload_files(files)
        assert c.rpc_counts == {"upload_files": 5}
    assert len(any_fake.state.job_files) == 10


def test_submit_batch_fields(
    client: BoincClient, any_fake: FakeBoincServer, tmp_path: Path
) -> None:
    ((md5, path),) = write_inputs(tmp_path, [b"local"])
    bid = client.create_batch(UPPER, "f")
    client.stage_files([(md5, path)], bid)
    remote = m.RemoteInput(
        "https://data.example.org/x.dat", 4250, "eec5a142cea5202c9ab2e4575a8aaaa7"
    )
    jobs = [
        m.JobSpec("f_0", "--mode fast", [m.LocalInput(md5)], priority=9),
        m.JobSpec("f_1", inputs=[remote]),
    ]
    params = m.JobParams(
        rsc_fpops_est=1e12,
        rsc_fpops_bound=1e14,
        rsc_memory_bound=1e9,
        rsc_disk_bound=2e9,
        delay_bound=86400,
    )
    client.submit_batch(bid, UPPER, jobs, job_params=params, app_version_num=710, priority=5)
    f0, f1 = any_fake.job("f_0"), any_fake.job("f_1")
    assert (f0.priority, f1.priority, f0.app_version_num) == (9, 5, 710)
    assert f1.input_files == ["jf_eec5a142cea5202c9ab2e4575a8aaaa7"]
    assert f0.params == {
        "rsc_fpops_est": 1e12,
        "rsc_fpops_bound": 1e14,
        "rsc_memory_bound": 1e9,
        "rsc_disk_bound": 2e9,
        "delay_bound": 86400,
    }


def test_job_statuses_and_lazy_complete(
    client: BoincClient, any_fake: FakeBoincServer, tmp_path: Path
) -> None:
    bid = submit_simple(client, tmp_path, "st", 4)
    any_fake.start_job("st_0")
    any_fake.complete_job("st_1", outputs={"out": b"X"}, cpu=3.5)
    any_fake.fail_job("st_2", exit_status=-185)
    detail = client.query_batch(bid, get_cpu_time=True)
    assert [(j.name, j.status) for j in detail.jobs] == [
        ("st_0", "in_progress"),
        ("st_1", "done"),
        ("st_2", "error"),
        ("st_3", "queued"),
    ]
    assert (detail.jobs[1].cpu_time, detail.jobs[2].errors, detail.jobs[2].exit_statuses) == (
        3.5,
        ("too_many_error_results",),
        (-185,),
    )
    assert (detail.batch.fraction_done, detail.batch.nerror_jobs, detail.batch.total_cpu_time) == (
        0.5,
        1,
        4.5,
    )
    polled = client.query_batch2(["st"])
    assert [j.status for j in polled.jobs] == ["IN_PROGRESS", "DONE", "ERROR", "UNSENT"]
    any_fake.complete_job("st_0")
    any_fake.complete_job("st_3")
    # COMPLETE is computed only when someone asks.
    assert any_fake.batch(bid).state == m.BatchState.IN_PROGRESS
    assert client.query_batch(bid).batch.state == m.BatchState.COMPLETE
    assert any_fake.batch(bid).completion_time > 0


def test_incremental_polling(any_fake: FakeBoincServer, tmp_path: Path) -> None:
    now = [1_800_000_000.25]
    any_fake.state.clock = lambda: now[0]
    with make_client(any_fake) as c:
        submit_simple(c, tmp_path, "ip", 3)
        first = c.query_batch2(["ip"])
        assert first.server_time == 1_800_000_000.25
        assert len(first.jobs) == 3
        now[0] += 0.5  # same second as the poll: only the margin catches it
        any_fake.complete_job("ip_1")
        changed = c.query_batch2(["ip"], first.next_min_mod_time)
        assert [(j.name, j.status) for j in changed.jobs] == [
            ("ip_0", "UNSENT"),
            ("ip_1", "DONE"),
            ("ip_2", "UNSENT"),
        ]
        now[0] += 5
        any_fake.fail_job("ip_2")
        later = c.query_batch2(["ip"], now[0] - 2)
        assert [(j.name, j.status) for j in later.jobs] == [("ip_2", "ERROR")]
        assert c.query_batch2(["ip"], now[0] + 10).batches == (m.BatchStatuses("ip", ()),)


def test_query_batches_hides_retired(client: BoincClient, tmp_path: Path) -> None:
    keep, gone = client.create_batch(UPPER, "keep"), client.create_batch(UPPER, "gone")
    client.retire_batch(gone)
    assert [b.id for b in client.query_batches()] == [keep]
    assert client.query_batch(batch_name="gone").batch.state == m.BatchState.RETIRED


def test_query_completed_job(
    client: BoincClient, any_fake: FakeBoincServer, tmp_path: Path
) -> None:
    submit_simple(client, tmp_path, "cj", 1)
    stderr = "<stderr_txt>\nline & <tag> \"q\" 'a' ]]> é\n</stderr_txt>\n"
    any_fake.complete_job("cj_0", exit_status=0, stderr=stderr, cpu=30.25, elapsed=35.5)
    job = client.query_completed_job("cj_0")
    assert job == m.CompletedJob(
        error_mask=0,
        canonical_resultid=1,
        exit_status=0,
        elapsed_time=35.5,
        cpu_time=30.25,
        stderr_out=stderr,
    )


def test_query_job(client: BoincClient, any_fake: FakeBoincServer, tmp_path: Path) -> None:
    submit_simple(client, tmp_path, "qj", 1)
    wu = any_fake.job("qj_0")
    assert client.query_job(wu.id) == (m.JobInstance(1, "qj_0_0", "Unsent"),)
    any_fake.fail_job("qj_0", retry=True)
    any_fake.complete_job("qj_0", outputs={"out": b"12345"})
    assert client.query_job(wu.id) == (
        m.JobInstance(1, "qj_0_0", "Error while computing"),
        m.JobInstance(2, "qj_0_1", "Completed and validated", (5,)),
    )


def test_get_templates(client: BoincClient, tmp_path: Path) -> None:
    by_app = client.get_templates(UPPER)
    assert (by_app.input_open_names, by_app.output_open_names) == (("in",), ("out",))
    assert "<rsc_fpops_est>1e9</rsc_fpops_est>" in by_app.input_template
    submit_simple(client, tmp_path, "gt", 1)
    assert client.get_templates(job_name="gt_0") == by_app


def test_abort_and_retire(client: BoincClient, any_fake: FakeBoincServer, tmp_path: Path) -> None:
    bid = submit_simple(client, tmp_path, "ab", 3)
    any_fake.complete_job("ab_0")
    assert client.abort_jobs(["ab_1"]) == ["ab_1"]
    assert any_fake.job("ab_1").error_mask == 16
    client.abort_batch(bid)
    assert [j.status for j in client.query_batch2(["ab"]).jobs] == ["DONE", "ERROR", "ERROR"]
    # query_batch says "error" for an aborted job even when it had a canonical result.
    assert [j.status for j in client.query_batch(bid).jobs] == ["error", "error", "error"]
    client.set_expire_time(1_900_000_000.5, batch_name="ab")
    assert any_fake.batch(bid).expire_time == 1_900_000_000.5
    client.retire_batch(batch_name="ab")
    assert any_fake.batch(bid).state == m.BatchState.RETIRED


def test_estimate_batch(client: BoincClient) -> None:
    inp = [m.LocalInput("0" * 32)]  # counted against the template, never looked up
    jobs = [m.JobSpec("e_0", inputs=inp), m.JobSpec("e_1", inputs=inp, rsc_fpops_est=4e9)]
    assert client.estimate_batch(UPPER, jobs) == 5.0  # template 1e9 + 4e9 at 1e9 FLOPS


@pytest.mark.parametrize(
    "make",
    [
        lambda: m.JobSpec("has space"),
        lambda: m.JobSpec("j", 'say "hi"'),
        lambda: m.JobSpec("j", "x" * 5000),
        lambda: m.LocalInput("NOTMD5"),
        lambda: m.RemoteInput("http://x y", 1, "0" * 32),
    ],
)
def test_invalid_job_specs(make: object) -> None:
    with pytest.raises(ValueError):
        make()  # type: ignore[operator]


def test_job_from_args() -> None:
    job = m.JobSpec.from_args("fa_0", ["--n", "7", "--mode=fast"], priority=3)
    assert (job.command_line, job.priority) == ("--n 7 --mode=fast", 3)
    for bad in (["two words"], ['q"'], [""]):
        with pytest.raises(ValueError):
            m.JobSpec.from_args("fa_1", bad)


def test_submit_refuses_empty_or_duplicate_jobs(client: BoincClient) -> None:
    with pytest.raises(ValueError):
        client.submit_batch(1, UPPER, [])
    with pytest.raises(ValueError):
        client.submit_batch(1, UPPER, [m.JobSpec("a"), m.JobSpec("a")])
    assert client.rpc_counts == {}
