"""Every error class, from the fake server over real HTTP, and the transport faults."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from app.backends.boinc import models as m
from app.backends.boinc.errors import (
    BoincAuthError,
    BoincBatchStateError,
    BoincConnectionError,
    BoincDatabaseError,
    BoincError,
    BoincFileError,
    BoincNotFoundError,
    BoincPermissionError,
    BoincProjectDownError,
    BoincProtocolError,
    BoincRequestError,
    BoincServerError,
    BoincSubmitError,
    BoincTimeoutError,
)
from app.backends.boinc.rpc import BoincClient
from tests.backends.boinc.conftest import make_client, write_inputs
from tests.backends.boinc.test_rpc import UPPER, submit_simple
from tests.fakes.boinc_server import ALICE_AUTH, BOB_AUTH, FakeBoincServer, Quirks


def raises(cls: type[BoincError], message: str, call: object) -> BoincError:
    """Assert `call()` raises exactly `cls` with `message` in its text."""
    with pytest.raises(BoincError) as info:
        call()  # type: ignore[operator]
    assert type(info.value) is cls, info.value
    assert message in info.value.message
    return info.value


def test_account_errors(any_fake: FakeBoincServer) -> None:
    with BoincClient(any_fake.url, "nope", timeout=5) as stranger:
        raises(BoincAuthError, "bad authenticator", stranger.query_batches)
    with BoincClient(any_fake.url, "", timeout=5) as anonymous:
        raises(BoincAuthError, "no authenticator", anonymous.query_batches)
    with BoincClient(any_fake.url, BOB_AUTH, timeout=5) as bob:
        raises(BoincPermissionError, "no submit access", lambda: bob.create_batch(UPPER))
        err = raises(BoincPermissionError, "no file access", lambda: bob.query_files(["0" * 32]))
        assert (err.error_num, err.retryable) == (-1, False)
    any_fake.add_user("carol", "c" * 32, submit_all=False, apps=("other",))
    with BoincClient(any_fake.url, "c" * 32, timeout=5) as carol:
        raises(BoincPermissionError, "no submit access", lambda: carol.get_templates(UPPER))
        assert carol.query_batches() == []  # user-level rights are enough here


def test_lookup_errors(client: BoincClient, any_fake: FakeBoincServer) -> None:
    raises(BoincNotFoundError, "app not found: nosuch", lambda: client.create_batch("nosuch"))
    raises(BoincNotFoundError, "no such batch", lambda: client.retire_batch(99))
    raises(BoincNotFoundError, "no batch named x", lambda: client.query_batch2(["x"]))
    raises(BoincNotFoundError, "no job x_0", lambda: client.abort_jobs(["x_0"]))
    raises(BoincNotFoundError, "job not found: x_0", lambda: client.get_templates(job_name="x_0"))
    any_fake.add_user("dave", "d" * 32)
    with BoincClient(any_fake.url, "d" * 32, timeout=5) as dave:
        theirs = dave.create_batch(UPPER, "theirs")
    raises(BoincPermissionError, "not owner of batch", lambda: client.abort_batch(theirs))
    raises(BoincPermissionError, "not owner of theirs", lambda: client.query_batch2(["theirs"]))


def test_abort_jobs_stops_at_first_error(
    client: BoincClient, any_fake: FakeBoincServer, tmp_path: Path
) -> None:
    submit_simple(client, tmp_path, "aj", 2)
    raises(
        BoincNotFoundError, "no job nosuch", lambda: client.abort_jobs(["aj_0", "nosuch", "aj_1"])
    )
    assert (any_fake.job("aj_0").error_mask, any_fake.job("aj_1").error_mask) == (16, 0)


def test_submit_errors(client: BoincClient, any_fake: FakeBoincServer, tmp_path: Path) -> None:
    bid = submit_simple(client, tmp_path, "se", 1)
    job = [m.JobSpec("se_x", inputs=[m.LocalInput(any_fake.job("se_0").input_files[0][3:])])]
    raises(
        BoincBatchStateError,
        "batch not in init state",
        lambda: client.submit_batch(bid, UPPER, job),
    )
    fresh = client.create_batch(UPPER, "se2")
    any_fake.fail_next_create_work("can't open template")
    raises(
        BoincSubmitError,
        "create_work failed: can't open template",
        lambda: client.submit_batch(fresh, UPPER, job),
    )
    assert any_fake.batch(fresh).state == m.BatchState.INIT  # a failed submit can be retried
    missing = [m.JobSpec("se_y", inputs=[m.LocalInput("f" * 32)])]
    raises(
        BoincSubmitError, "create_work failed", lambda: client.submit_batch(fresh, UPPER, missing)
    )
    raises(
        BoincSubmitError,
        "wrong # of input files for job 0: need 1, got 0",
        lambda: client.submit_batch(fresh, UPPER, [m.JobSpec("z")]),
    )
    dup = [m.JobSpec("se_0", inputs=job[0].inputs)]
    raises(
        BoincSubmitError, "Duplicate entry 'se_0'", lambda: client.submit_batch(fresh, UPPER, dup)
    )
    assert client.submit_batch(fresh, UPPER, job) == fresh


def test_template_bug_is_a_submit_error(tmp_path: Path) -> None:
    with (
        FakeBoincServer(quirks=Quirks(template_entity_bug=True, php_notices=True)) as fake,
        make_client(fake) as c,
    ):
        files = write_inputs(tmp_path, [b"t"])
        bid = c.create_batch(UPPER, "tb")
        c.stage_files(files, bid)
        job = [m.JobSpec("tb_0", inputs=[m.LocalInput(files[0][0])])]
        err = raises(
            BoincSubmitError,
            "couldn't parse input template file",
            lambda: c.submit_batch(bid, UPPER, job),
        )
        assert err.message.endswith("/templates/uppercase_in")


def test_file_errors(any_fake: FakeBoincServer, tmp_path: Path) -> None:
    ((md5, path),) = write_inputs(tmp_path, [b"original"])
    other = tmp_path / "other"
    other.write_bytes(b"changed")
    with make_client(any_fake, verify_upload_md5=False) as c:
        c.upload_files([(md5, path)])
        any_fake.state.check_jf_md5 = False
        raises(
            BoincFileError,
            f"file immutability violation for jf_{md5}",
            lambda: c.upload_files([(md5, other)]),
        )
    with make_client(any_fake) as c:
        raises(BoincFileError, "does not match md5", lambda: c.upload_files([(md5, other)]))
        assert c.rpc_counts == {}


def test_php_upload_limits(any_fake: FakeBoincServer, tmp_path: Path) -> None:
    big = write_inputs(tmp_path, [b"x" * 3000])
    with make_client(any_fake, max_upload_bytes=10_000) as c:
        raises(
            BoincFileError, "does not fit in max_upload_bytes=10000", lambda: c.upload_files(big)
        )
        assert c.rpc_counts == {}
    any_fake.upload_max_filesize = 2500
    with make_client(any_fake) as c:
        raises(
            BoincFileError,
            "upload failed because: The uploaded file exceeds",
            lambda: c.upload_files(big),
        )
    any_fake.post_max_size = 2500
    any_fake.upload_max_filesize = 10_000
    with make_client(any_fake) as c:
        # PHP drops the whole POST ("can't parse request"): one file that alone is too big
        # says so; several files are sent in halves until each request fits.
        raises(BoincFileError, "larger than its PHP post_max_size", lambda: c.upload_files(big))
        assert c.rpc_counts == {"upload_files": 1}
    any_fake.post_max_size = 4000
    small = write_inputs(tmp_path, [bytes([65 + k]) * 1000 for k in range(6)])
    with make_client(any_fake) as c:
        c.upload_files(small)  # one planned request of 6 files, then halves, then quarters
        assert c.rpc_counts["upload_files"] > 2
        assert set(c.query_files([md5 for md5, _ in small])) == set()  # every file is there


def test_project_and_database_down(any_fake: FakeBoincServer, tmp_path: Path) -> None:
    with make_client(any_fake) as c:
        submit_simple(c, tmp_path, "pd", 1)
        any_fake.complete_job("pd_0", outputs={"out": b"o"})
        any_fake.project_down = True
        err = raises(BoincProjectDownError, "project down for maintenance", c.ping)
        assert (err.error_num, err.retryable) == (-183, True)
        raises(
            BoincProjectDownError,
            "down for maintenance",
            lambda: c.download_workunit_file("pd_0", 0, tmp_path / "o"),
        )
        any_fake.project_down, any_fake.db_down = False, True
        err = raises(
            BoincDatabaseError, "Can't connect to database", lambda: c.query_files(["0" * 32])
        )
        assert (err.error_num, err.retryable) == (-138, True)
        any_fake.db_down = False
        c.ping()


def test_connection_refused_then_back(any_fake: FakeBoincServer) -> None:
    with make_client(any_fake) as c:
        c.ping()  # leaves a kept-alive connection the outage must also break
        any_fake.set_down("refused")
        assert raises(BoincConnectionError, "ping", c.ping).retryable
        any_fake.set_down(None)
        c.ping()


def test_http_503(any_fake: FakeBoincServer) -> None:
    any_fake.set_down("503")
    with make_client(any_fake) as c:
        err = raises(BoincServerError, "HTTP 503", c.query_batches)
        assert err.retryable


def test_timeout(any_fake: FakeBoincServer) -> None:
    any_fake.delay = 1.0
    with BoincClient(any_fake.url, "x", timeout=0.2) as c:
        started = time.monotonic()
        assert raises(BoincTimeoutError, "timed out", c.ping).retryable
        assert time.monotonic() - started < 0.9


def test_truncated_and_dropped_replies(any_fake: FakeBoincServer) -> None:
    with make_client(any_fake) as c:
        any_fake.truncate_next = 1
        err = raises(
            BoincProtocolError, "truncated or unparsable reply", lambda: c.create_batch(UPPER, "t")
        )
        assert err.retryable
        assert c.create_batch(UPPER, "t2") == 2  # the server did create the first one
        any_fake.disconnect_next = 1
        raises(BoincConnectionError, "query_batches", c.query_batches)
        assert [b.name for b in c.query_batches()] == ["t", "t2"]


def test_wrong_project_url(any_fake: FakeBoincServer) -> None:
    with BoincClient(any_fake.url.replace("/test/", "/other"), "x", timeout=5) as c:
        assert c.project_url.endswith("/other/")
        raises(BoincRequestError, "HTTP 404", c.ping)


def test_probe_request_size_is_exact(any_fake: FakeBoincServer) -> None:
    """`boinc check` sends pings padded to the gateway's largest requests: exactly that many
    bytes, so one at post_max_size passes and one byte more is dropped, as PHP does."""
    any_fake.post_max_size = 50_000
    with make_client(any_fake) as c:
        c.probe_request_size(50_000)
        raises(
            BoincRequestError, "can't parse request message", lambda: c.probe_request_size(50_001)
        )
    sizes: list[int] = []

    def record(request: httpx.Request) -> httpx.Response:
        sizes.append(len(request.read()))
        return httpx.Response(200, text="<ping><success>1</success></ping>")

    with BoincClient("http://127.0.0.1:9/", ALICE_AUTH, transport=httpx.MockTransport(record)) as c:
        for n in (300, 123_457):
            c.probe_request_size(n)
    assert sizes == [300, 123_457]
