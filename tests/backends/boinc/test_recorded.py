"""BoincClient against the recorded real-server replies, replayed by an httpx mock transport."""

from __future__ import annotations

import hashlib
import urllib.parse
import zipfile
from collections.abc import Callable
from pathlib import Path
from xml.etree.ElementTree import Element

import httpx
import pytest
from defusedxml import ElementTree as SafeET

from app.backends.boinc import models as m
from app.backends.boinc.errors import (
    BoincNotFoundError,
    BoincOutputError,
    BoincProtocolError,
    BoincRequestError,
    BoincServerError,
)
from app.backends.boinc.rpc import BoincClient, output_token
from tests.backends.boinc.conftest import recorded, request_xml
from tests.fakes.boinc_server import ALICE_AUTH

URL = "https://boinc.example.org/test"


class Replay:
    """A mock transport answering every request with one recorded reply."""

    def __init__(self, name: str) -> None:
        self.rec = recorded(name)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        headers = {"Content-Type": self.rec.content_type}
        if self.rec.disposition:
            headers["Content-Disposition"] = self.rec.disposition
        return httpx.Response(self.rec.status, headers=headers, content=self.rec.body)

    def sent_xml(self) -> Element:
        """The XML of the last request's `request` form field."""
        form = urllib.parse.parse_qs(self.requests[-1].content.decode())
        return SafeET.fromstring(form["request"][0])


def client_for(replay: Replay | Callable[[httpx.Request], httpx.Response]) -> BoincClient:
    return BoincClient(URL, ALICE_AUTH, transport=httpx.MockTransport(replay))


B_T3_FILES = ["16aacb3285a8e7609e2efe4a7bd03507", "40b0ba6145f747a0c654025791f3640a"]


def test_url_is_normalised_and_ping_sends_a_space() -> None:
    replay = Replay("ping_space")
    with client_for(replay) as c:
        c.ping()
    assert str(replay.requests[0].url) == URL + "/submit_rpc_handler.php"
    assert replay.requests[0].content == b"request=%3Cping%3E+%3C%2Fping%3E"
    assert replay.requests[0].headers["content-type"] == "application/x-www-form-urlencoded"


def test_create_batch() -> None:
    replay = Replay("create_batch")
    with client_for(replay) as c:
        assert c.create_batch("uppercase", "b_t3") == 5
    sent = replay.sent_xml()
    assert (sent.tag, sent.findtext("authenticator"), sent.findtext("batch_name")) == (
        "create_batch",
        ALICE_AUTH,
        "b_t3",
    )
    assert c.rpc_counts == {"create_batch": 1}


def test_query_files_maps_indices_to_md5s() -> None:
    replay = Replay("query_files_1")
    with client_for(replay) as c:
        assert c.query_files(B_T3_FILES + B_T3_FILES[:1], 5, 1796302063) == B_T3_FILES
    sent = replay.sent_xml()
    # Deduplicated: a repeated name would be associated twice and kill the reply on PHP 8.
    assert [e.text for e in sent.findall("phys_name")] == [f"jf_{x}" for x in B_T3_FILES]
    assert (sent.findtext("batch_id"), sent.findtext("delete_time")) == ("5", "1796302063")


def test_submit_batch_request_shape() -> None:
    replay = Replay("submit_batch")
    jobs = [m.JobSpec(f"b_t3_{k}", inputs=[m.LocalInput(B_T3_FILES[k % 2])]) for k in range(3)]
    with client_for(replay) as c:
        assert c.submit_batch(5, "uppercase", jobs) == 5
    sent = replay.sent_xml()
    expected = SafeET.fromstring(request_xml("submit_batch"))
    assert _shape(sent) == _shape(expected)


def _shape(elem: Element) -> list[tuple[str, str]]:
    return [(e.tag, (e.text or "").strip()) for e in elem.iter()]


@pytest.mark.parametrize(
    ("name", "call", "expected"),
    [
        (
            "query_batch",
            lambda c: [j.name for j in c.query_batch(5).jobs],
            ["b_t3_0", "b_t3_1", "b_t3_2"],
        ),
        ("query_batches", lambda c: len(c.query_batches(get_cpu_time=True)), 6),
        (
            "query_batch2_done",
            lambda c: [j.status for j in c.query_batch2(["b_t2"]).jobs],
            ["DONE", "DONE", "ERROR"],
        ),
        ("abort_jobs", lambda c: c.abort_jobs(["b_t3_2"]), ["b_t3_2"]),
        (
            "query_completed_job_unfinished",
            lambda c: c.query_completed_job("b_t2_1"),
            m.CompletedJob(0, partial=True),
        ),
        ("query_completed_job_done", lambda c: c.query_completed_job("b_t2_0").cpu_time, 18.75409),
        ("get_templates", lambda c: c.get_templates("uppercase").output_open_names, ("out",)),
        ("query_job_done", lambda c: c.query_job(1)[0].state, "Completed and validated"),
        ("estimate_batch", lambda c: c.estimate_batch("uppercase", [m.JobSpec("j")]), 3.0),
        ("retire_batch", lambda c: c.retire_batch(1), None),
        (
            "set_expire_time",
            lambda c: c.set_expire_time(1796237263.655497, batch_name="b_t3"),
            None,
        ),
        ("abort_batch", lambda c: c.abort_batch(batch_name="b_t3"), None),
        ("upload_files", lambda c: c.upload_files([]), None),
    ],
)
def test_client_reads_recorded_reply(
    name: str, call: Callable[[BoincClient], object], expected: object
) -> None:
    with client_for(Replay(name)) as c:
        assert call(c) == expected


def test_query_batch2_error_is_whole_call() -> None:
    with client_for(Replay("query_batch2_unknown")) as c, pytest.raises(BoincNotFoundError) as info:
        c.query_batch2(["b_t3", "nosuch_t3"])
    assert info.value.message == "no batch named nosuch_t3"


def test_download_result_file(tmp_path: Path) -> None:
    replay = Replay("get_output_result_file")
    with client_for(replay) as c:
        got = c.download_result_file("b_t2_0_0", 0, tmp_path / "out")
    assert (tmp_path / "out").read_bytes() == b"HELLO WORLD T2\n"
    assert (got.nbytes, got.md5) == (15, hashlib.md5(b"HELLO WORLD T2\n").hexdigest())
    assert got.server_filename == "b_t2_0_0_r1562037837_0"
    params = dict(replay.requests[0].url.params)
    assert params == {
        "cmd": "result_file",
        "result_name": "b_t2_0_0",
        "file_num": "0",
        "auth_str": hashlib.md5((ALICE_AUTH + "b_t2_0_0").encode()).hexdigest(),
    }
    assert list(tmp_path.iterdir()) == [tmp_path / "out"]


def test_download_tokens(tmp_path: Path) -> None:
    assert output_token("abc", "12") == hashlib.md5(b"abc12").hexdigest()
    replay = Replay("get_output_workunit_file")
    with client_for(replay) as c:
        c.download_workunit_file("b_t2_1", 0, tmp_path / "o")
    # workunit_file compares the raw authenticator, whatever the wiki says.
    assert dict(replay.requests[0].url.params)["auth_str"] == ALICE_AUTH
    assert (tmp_path / "o").read_bytes() == b"SECOND FILE T2\n"


def test_download_batch_zip(tmp_path: Path) -> None:
    replay = Replay("get_output_batch_files")
    with client_for(replay) as c:
        got = c.download_batch_files(3, tmp_path / "b.zip")
    assert got.server_filename == "boinc_batch_ZJlzIZ.zip"
    assert dict(replay.requests[0].url.params)["auth_str"] == output_token(ALICE_AUTH, "3")
    with zipfile.ZipFile(tmp_path / "b.zip") as zf:
        assert sorted(zf.read(n) for n in zf.namelist()) == [
            b"HELLO WORLD T2\n",
            b"SECOND FILE T2\n",
        ]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("get_output_bad_auth", "bad authenticator"),
        ("get_output_no_canonical", "no canonical result for wu b_t2_2"),
    ],
)
def test_download_error_bodies(tmp_path: Path, name: str, message: str) -> None:
    (tmp_path / "out").write_bytes(b"old")
    with client_for(Replay(name)) as c, pytest.raises(BoincOutputError) as info:
        c.download_workunit_file("b_t2_2", 0, tmp_path / "out")
    assert info.value.message == f"get_output:workunit_file: {message}"
    assert not info.value.retryable
    # The destination is untouched and no temporary file is left behind.
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert (tmp_path / "out").read_bytes() == b"old"


def test_redirect_is_a_request_error() -> None:
    def redirect(request: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers={"Location": "https://secure.example.org/test/"})

    with client_for(redirect) as c, pytest.raises(BoincRequestError) as info:
        c.ping()
    assert "redirected to https://secure.example.org/test/" in info.value.message


def test_http_5xx_is_retryable() -> None:
    with client_for(lambda r: httpx.Response(502)) as c, pytest.raises(BoincServerError) as info:
        c.query_batches()
    assert info.value.retryable and info.value.status_code == 502


def test_reply_without_id_is_not_batch_zero() -> None:
    # The C++ client takes this as success with batch 0 and later submits a stray batch.
    def empty(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"<create_batch>\n</create_batch>\n")

    with client_for(empty) as c, pytest.raises(BoincProtocolError) as info:
        c.create_batch("uppercase", "b")
    assert info.value.message == "create_batch: reply without a valid <batch_id>"
    with client_for(empty) as c, pytest.raises(ValueError):
        c.submit_batch(0, "uppercase", [m.JobSpec("j")])
