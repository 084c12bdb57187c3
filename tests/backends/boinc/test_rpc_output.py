"""Output downloads from the fake server: token schemes, zips, refusals, safe file writes."""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from app.backends.boinc.errors import BoincOutputError, BoincRequestError
from app.backends.boinc.rpc import BoincClient
from tests.backends.boinc.test_rpc import submit_simple
from tests.fakes.boinc_server import FakeBoincServer


@pytest.fixture
def done(client: BoincClient, any_fake: FakeBoincServer, tmp_path: Path) -> int:
    """A batch `ob` of 3 jobs: ob_0 and ob_1 finished with outputs, ob_2 failed."""
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    bid = submit_simple(client, inputs, "ob", 3)
    any_fake.complete_job("ob_0", outputs={"out": b"OUT ZERO\n"})
    any_fake.complete_job("ob_1", outputs={"out": b"ERROR: not an error, just output\n"})
    any_fake.fail_job("ob_2")
    return bid


def only_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.is_file())


def test_single_files(client: BoincClient, done: int, tmp_path: Path) -> None:
    got = client.download_result_file("ob_0_0", 0, tmp_path / "a")
    assert (tmp_path / "a").read_bytes() == b"OUT ZERO\n"
    assert (got.nbytes, got.md5) == (9, hashlib.md5(b"OUT ZERO\n").hexdigest())
    assert got.server_filename is not None and got.server_filename.startswith("ob_0_0_r")
    # Content that looks like an error is still content: it came as an attachment.
    client.download_workunit_file("ob_1", 0, tmp_path / "b")
    assert (tmp_path / "b").read_bytes() == b"ERROR: not an error, just output\n"
    assert only_files(tmp_path) == ["a", "b"]
    assert client.rpc_counts["get_output:result_file"] == 1


def test_zips(client: BoincClient, any_fake: FakeBoincServer, done: int, tmp_path: Path) -> None:
    client.download_batch_files(done, tmp_path / "batch.zip")
    with zipfile.ZipFile(tmp_path / "batch.zip") as zf:
        names = zf.namelist()
        assert [zf.read(n) for n in names] == [b"OUT ZERO\n", b"ERROR: not an error, just output\n"]
    # Physical names, as `zip -j` stores them.
    assert [n.split("_r")[0] for n in names] == ["ob_0_0", "ob_1_0"]
    client.download_workunit_files(any_fake.job("ob_0").id, tmp_path / "wu.zip")
    with zipfile.ZipFile(tmp_path / "wu.zip") as zf:
        assert [zf.read(n) for n in zf.namelist()] == [b"OUT ZERO\n"]


def test_batch_without_outputs_is_an_empty_file(client: BoincClient, tmp_path: Path) -> None:
    empty = client.create_batch("uppercase", "empty")
    got = client.download_batch_files(empty, tmp_path / "e.zip")
    assert (got.nbytes, (tmp_path / "e.zip").read_bytes()) == (0, b"")


def test_get_output2_logical_names(
    client: BoincClient, any_fake: FakeBoincServer, done: int, tmp_path: Path
) -> None:
    res = any_fake.state.results[any_fake.job("ob_0").canonical_resultid]
    one = client.download_output2(tmp_path / "r", result_id=res.id)
    assert (one.server_filename, (tmp_path / "r").read_bytes()) == ("ob_0_0__out", b"OUT ZERO\n")
    wu = client.download_output2(tmp_path / "w", wu_id=any_fake.job("ob_1").id)
    assert wu.server_filename == "ob_1_0__out"
    client.download_output2(tmp_path / "b.zip", batch_id=done)
    with zipfile.ZipFile(tmp_path / "b.zip") as zf:
        assert zf.namelist() == ["ob_0_0__out", "ob_1_0__out"]
    with (
        BoincClient(any_fake.url, "wrong", timeout=5) as other,
        pytest.raises(BoincOutputError) as info,
    ):
        other.download_output2(tmp_path / "x", result_id=res.id)
    assert info.value.message == "get_output2:result: bad auth"
    with pytest.raises(ValueError):
        client.download_output2(tmp_path / "x", result_id=1, batch_id=1)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda c, d: c.download_workunit_file("ob_2", 0, d), "no canonical result for wu ob_2"),
        (lambda c, d: c.download_result_file("ob_0_0", 3, d), "bad file num: 3 > 1"),
        (lambda c, d: c.download_result_file("nosuch_0", 0, d), "no job instance nosuch_0"),
        (lambda c, d: c.download_batch_files(99, d), "no batch 99"),
    ],
)
def test_refusals(
    client: BoincClient, done: int, tmp_path: Path, call: object, message: str
) -> None:
    dest = tmp_path / "dest"
    dest.write_bytes(b"previous")
    with pytest.raises(BoincOutputError) as info:
        call(client, dest)  # type: ignore[operator]
    assert info.value.message.endswith(message)
    assert not info.value.retryable
    assert only_files(tmp_path) == ["dest"] and dest.read_bytes() == b"previous"


def test_wrong_token(any_fake: FakeBoincServer, done: int, tmp_path: Path) -> None:
    with BoincClient(any_fake.url, "0" * 32, timeout=5) as other:
        calls: list[tuple[Callable[[], object], str]] = [
            (lambda: other.download_result_file("ob_0_0", 0, tmp_path / "x"), "bad authenticator"),
            (lambda: other.download_batch_files(done, tmp_path / "x"), "bad auth str"),
        ]
        for call, text in calls:
            with pytest.raises(BoincOutputError) as info:
                call()
            assert info.value.message.endswith(text)
    assert only_files(tmp_path) == []


def test_outputs_deleted_by_the_file_deleter(
    client: BoincClient, any_fake: FakeBoincServer, done: int, tmp_path: Path
) -> None:
    assert len(any_fake.delete_output_files("ob_0")) == 1
    with pytest.raises(BoincOutputError) as info:
        client.download_workunit_file("ob_0", 0, tmp_path / "x")
    assert "no such file: /home/boincadm/projects/test/upload/" in info.value.message


def test_destination_checks(client: BoincClient, done: int, tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        client.download_result_file("ob_0_0", 0, tmp_path)
    with pytest.raises(FileNotFoundError):
        client.download_result_file("ob_0_0", 0, tmp_path / "missing" / "x")
    assert "get_output:result_file" not in client.rpc_counts  # refused before any request


def test_http_errors_never_carry_the_authenticator(tmp_path: Path) -> None:
    """A refused download names the URL without its query (auth_str is the key itself)."""
    secret = "a1ce0000000000000000000000000001"
    transport = httpx.MockTransport(lambda request: httpx.Response(403, text="no"))
    client = BoincClient("http://127.0.0.1:9/p/", secret, transport=transport)
    with pytest.raises(BoincRequestError) as info:
        client.download_workunit_file("wu_1", 0, tmp_path / "out")
    client.close()
    assert "HTTP 403 from http://127.0.0.1:9/p/get_output.php" in str(info.value)
    assert secret not in str(info.value)
