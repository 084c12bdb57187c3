"""Byte-exact replay of the transcripts of gahp.md section 3 (T1-T15) against the fake.

The scenario values are the spec's; only the project URL and iwd are replaced by the
fake's URL and a temporary directory. The fake's change counter is set to the spec's
server_time values, which the shim prints as "%f" like the reference boinc_gahp.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.gahp.fake_gateway import FakeGateway, RunResult
from tests.gahp.gateways import ALICE
from tests.gahp.harness import Gahp
from tests.gahp.replay import Replayer

B = "condor#submit.example.org#uppercase#1700000000"
J0, J1 = B + "#42.0", B + "#42.1"
URL, IWD = "https://boinc.example.org/test/", "/home/alice/boinc-test"
BANNER = re.compile(rb"\$GahpVersion: \d+\.\d+(\.\d+)? [A-Z][a-z]{2} [ \d]?\d \d{4} \S.* \$")

TRANSCRIPTS = Path(__file__).with_name("transcripts.txt")


def transcript(name: str, reqid: int | None = None) -> str:
    """The steps of one section of transcripts.txt ("### T3 ..." is named "T3")."""
    sections = TRANSCRIPTS.read_text().split("\n### ")[1:]
    text = next(s for s in sections if s.split(maxsplit=1)[0] == name)
    return text if reqid is None else text.replace("{ID}", str(reqid))


def _subs(fake: FakeGateway, iwd: Path) -> dict[str, str]:
    assert " " not in str(iwd) and "\\" not in str(iwd)
    return {URL: fake.url, IWD: str(iwd)}


def _iwd(tmp_path: Path) -> Path:
    iwd = tmp_path / "boinc-test"
    iwd.mkdir()
    (iwd / "input_0.txt").write_bytes(b"hello zero\n")
    (iwd / "input_1.txt").write_bytes(b"hello one\n")
    (iwd / "params.cfg").write_bytes(b"n=1\n")
    return iwd


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def test_full_timeline_t1_to_t11(
    gahp: Callable[..., Gahp], fake: FakeGateway, tmp_path: Path
) -> None:
    """T1-T11 in one session, checking the gateway's side after each step."""
    iwd = _iwd(tmp_path)
    shim = gahp()
    banner = shim.line()
    assert BANNER.fullmatch(banner) and len(banner) < 150, banner
    play = Replayer(shim, _subs(fake, iwd))
    play.run(transcript("T1"))
    play.run(transcript("T2"))
    assert [r.token for r in fake.requests if r.path == "/v1/me"] == [ALICE]

    play.run(transcript("T3", 2))
    batch = fake.batch(B)
    assert batch.state == "in_progress" and batch.jobs == [J0, J1]
    assert batch.content["params"] == {"rsc_fpops_est": 1e12, "rsc_fpops_bound": 1e13}
    assert fake.job(J0).args == ["--label", "hello world", "--n", "0"]
    assert fake.job(J1).inputs == [
        {"name": "in", "md5": _md5(iwd / "input_1.txt")},
        {"name": "params", "md5": _md5(iwd / "params.cfg")},
    ]
    puts = [r.path for r in fake.requests if r.method == "PUT" and r.path.startswith("/v1/files")]
    assert len(puts) == 3  # params.cfg is shared by both jobs and uploaded once

    play.run(transcript("T4"))
    assert batch.lease == 1700021610

    fake.set_state(J1, "in_progress")
    fake.set_counter(1700000070)
    play.run(transcript("T5a"))
    fake.set_state(J0, "in_progress")
    fake.set_counter(1700000131)
    play.run(transcript("T5b"))

    play.run(transcript("T6"))
    assert fake.job(J1).state == "aborted"

    result = RunResult(
        outputs={"result.txt": b"HELLO ZERO\n", "log.txt": b"log\n"},
        stdout=b"the stdout\n",
        stderr=b"the stderr\n",
        wall=3605.25,
        cpu=3590.5,
    )
    fake.complete(J0, result)
    fake.set_counter(1700000192)
    play.run(transcript("T7"))

    (iwd / "err_0.txt").write_bytes(b"earlier\n")
    play.run(transcript("T8"))
    assert (iwd / "result_0.txt").read_bytes() == b"HELLO ZERO\n"
    assert (iwd / "log.txt").read_bytes() == b"log\n"
    assert (iwd / "out_0.txt").read_bytes() == b"the stdout\n"
    assert (iwd / "err_0.txt").read_bytes() == b"earlier\nthe stderr\n"
    assert not (iwd / "result.txt").exists()

    fake.set_counter(1700007400)
    play.run(transcript("T10"))
    assert batch.lease == 1700028810
    play.run(transcript("T9"))
    assert batch.state == "retired"
    play.run(transcript("T11"))
    play.finish()


def test_t12_threads_limit(gahp: Callable[..., Gahp], fake: FakeGateway, tmp_path: Path) -> None:
    """Over the in-flight limit the shim answers `F Threads limit reached`; a resend works."""
    fake.delay("GET", "/v1/me", 1.0)
    shim = gahp(max_in_flight=1)
    shim.line()
    play = Replayer(shim, _subs(fake, tmp_path))
    play.run(transcript("T1"))
    play.run(transcript("T12"))
    play.finish()


def test_t13_response_prefix(gahp: Callable[..., Gahp], fake: FakeGateway, tmp_path: Path) -> None:
    """With RESPONSE_PREFIX advertised, every line after its reply carries the prefix."""
    shim = gahp(prefix="GAHP:", advertise_response_prefix=True)
    assert BANNER.fullmatch(shim.line())
    play = Replayer(shim, _subs(fake, tmp_path))
    play.run(transcript("T13") + "C> VERSION\\r\\n\n")
    assert BANNER.fullmatch(shim.line().removeprefix(b"GAHP:S "))
    assert all(line.startswith(b"GAHP:") for line in shim.all_lines[3:])
    play.finish()


def test_t14_recovery_resumes_open_batch(
    gahp: Callable[..., Gahp], fake: FakeGateway, tmp_path: Path
) -> None:
    """An open, empty batch reads as group 0; the resubmission fills it; a repeat is a no-op."""
    iwd = _iwd(tmp_path)
    seed = {"name": B, "app": "uppercase", "submit": False}
    headers = {"Authorization": f"Bearer {ALICE}"}
    httpx.post(fake.url + "v1/batches", json=seed, headers=headers).raise_for_status()
    fake.set_counter(1700009000)
    shim = gahp()
    shim.line()
    play = Replayer(shim, _subs(fake, iwd))
    play.run(transcript("T1"))
    play.run(transcript("T14"))
    for reqid in (3, 4):
        play.run(transcript("T3", reqid))
        assert fake.batch(B).state == "in_progress"
        assert fake.batch(B).jobs == [J0, J1]
    play.finish()


def test_t15_eof_and_quit(gahp: Callable[..., Gahp], fake: FakeGateway) -> None:
    """EOF ends the shim at once even with work in flight; QUIT answers S, then exits."""
    fake.delay("GET", "/v1/me", 30.0)
    shim = gahp()
    shim.startup(fake.url, ALICE)
    assert shim.call("BOINC_PING 1") == b"S"
    deadline = time.monotonic() + 10
    while not any(r.path == "/v1/me" for r in fake.requests):  # bounded by the deadline
        assert time.monotonic() < deadline, "the ping never reached the gateway"
        time.sleep(0.05)
    started = time.monotonic()
    shim.close_stdin()
    assert shim.wait(5) == 0
    assert time.monotonic() - started < 3

    other = gahp()
    other.startup()
    assert other.call("QUIT") == b"S"
    assert other.wait(5) == 0
