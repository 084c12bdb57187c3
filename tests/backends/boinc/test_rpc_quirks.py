"""Every quirk switch on: the client still gives the right answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.backends.boinc import models as m
from app.backends.boinc.errors import BoincProtocolError
from tests.backends.boinc.conftest import make_client, write_inputs
from tests.backends.boinc.test_rpc import UPPER, submit_simple
from tests.fakes.boinc_server import FakeBoincServer, Quirks


@pytest.mark.parametrize("style", ["html", "text", "rpc_debug"])
@pytest.mark.parametrize("before", [False, True])
def test_php_notices(style: str, before: bool, tmp_path: Path) -> None:
    quirks = Quirks(php_notices=True, notice_style=style, notices_before_xml=before)
    with FakeBoincServer(quirks=quirks) as fake, make_client(fake) as c:
        bid = submit_simple(c, tmp_path, "pn", 2)
        fake.complete_job("pn_0", cpu=2.0)
        detail = c.query_batch(bid, get_cpu_time=True)
        assert [j.status for j in detail.jobs] == ["done", "queued"]
        assert (detail.batch.name, detail.batch.fraction_done, detail.batch.total_cpu_time) == (
            "pn",
            0.5,
            2.0,
        )
        other = c.create_batch(UPPER, "pn2")
        assert [(b.id, b.name) for b in c.query_batches()] == [(bid, "pn"), (other, "pn2")]
        c.retire_batch(other)
        assert [b.id for b in c.query_batches()] == [bid]
        # The notices really were there.
        assert fake.quirks.php_notices


def test_abort_jobs_bad_xml(tmp_path: Path) -> None:
    with FakeBoincServer(quirks=Quirks(abort_jobs_bad_xml=True)) as fake, make_client(fake) as c:
        submit_simple(c, tmp_path, "ax", 3)
        assert c.abort_jobs(["ax_2", "ax_0"]) == ["ax_2", "ax_0"]
        assert [fake.job(f"ax_{k}").error_mask for k in range(3)] == [16, 0, 16]


@pytest.mark.parametrize("quirks", [Quirks(sql_exceptions=True), Quirks.live()])
def test_query_files_twice_for_one_batch(quirks: Quirks, tmp_path: Path) -> None:
    files = write_inputs(tmp_path, [b"a", b"b", b"c"])
    with FakeBoincServer(quirks=quirks) as fake, make_client(fake) as c:
        bid = c.create_batch(UPPER, "q2")
        c.stage_files(files[:2], bid)
        c.rpc_counts.clear()
        # A retry, say: a and b are already associated with the batch, c is new.
        got = c.stage_files(files, bid)
        assert got == m.StageResult(present=(files[0][0], files[1][0]), uploaded=(files[2][0],))
        # 1 failed query, 1 without association, 1 per present file, 1 upload.
        assert c.rpc_counts == {"query_files": 4, "upload_files": 1}
        ids = {fake.state.job_files[f"jf_{md5}"].id for md5, _ in files}
        assert {(i, bid) for i in ids} <= fake.state.assocs


@pytest.mark.parametrize("sql_exceptions", [False, True])
def test_upload_of_files_the_server_has(sql_exceptions: bool, tmp_path: Path) -> None:
    files = write_inputs(tmp_path, [b"old 1", b"old 2", b"new"])
    with (
        FakeBoincServer(quirks=Quirks(sql_exceptions=sql_exceptions)) as fake,
        make_client(fake) as c,
    ):
        c.upload_files(files[:2], batch_id=0)
        bid = c.create_batch(UPPER, "up")
        c.rpc_counts.clear()
        # Uploading without asking first: the server stops at the first known file.
        c.upload_files(files, bid)
        assert c.rpc_counts == {"upload_files": 2, "query_files": 1}
        assert fake.state.download[f"jf_{files[2][0]}"] == b"new"
        ids = {fake.state.job_files[f"jf_{md5}"].id for md5, _ in files}
        assert {(i, bid) for i in ids} == {a for a in fake.state.assocs if a[1] == bid}


def test_truncated_file_replies(tmp_path: Path) -> None:
    files = write_inputs(tmp_path, [b"z", b"y"])
    with FakeBoincServer(quirks=Quirks.live()) as fake, make_client(fake) as c:
        c.upload_files(files[:1])
        fake.truncate_next = 1
        # With a batch, a cut reply may be a duplicate association: the client re-asks.
        assert c.query_files([md5 for md5, _ in files], 1) == [files[1][0]]
        fake.truncate_next = 1
        with pytest.raises(BoincProtocolError):
            c.query_files([files[0][0]])  # without a batch there is nothing to recover
        fake.truncate_next = 1
        c.upload_files(files[1:], 1)  # cut short: re-asked, then uploaded again if absent
        assert fake.state.download[f"jf_{files[1][0]}"] == b"y"


@pytest.mark.parametrize(
    ("quirks", "partial"),
    [
        (Quirks(qcj_broken_error_path=True), False),
        (Quirks(qcj_broken_error_path=True, php_notices=True), False),
        (Quirks.live(), True),
    ],
)
def test_completed_job_of_failed_job(quirks: Quirks, partial: bool, tmp_path: Path) -> None:
    with FakeBoincServer(quirks=quirks) as fake, make_client(fake) as c:
        submit_simple(c, tmp_path, "fj", 1)
        fake.fail_job("fj_0", exit_status=-185)
        job = c.query_completed_job("fj_0")
        assert job == m.CompletedJob(error_mask=2, partial=partial)


@pytest.mark.parametrize(
    "name", ["a&b<c", "x&amp;y", "café ☃", "alice:up:Wed, 02 Dec 2026 12:47:11 +0000"]
)
def test_unescaped_names_round_trip(name: str) -> None:
    with FakeBoincServer(quirks=Quirks.live()) as fake, make_client(fake) as c:
        plain = c.create_batch(UPPER, "plain")
        bid = c.create_batch(UPPER, name)
        assert c.query_batch(bid).batch.name == name
        assert [b.name for b in c.query_batches()] == ["plain", name]
        assert c.query_batch(batch_name=name).batch.id == bid
        assert fake.batch(bid).name == name and plain == 1
