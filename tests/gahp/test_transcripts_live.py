"""Byte-exact replay of the transcripts of gahp.md section 3 against a real `serve`.

The same transcripts as test_transcripts.py (tests/gahp/transcripts.txt), but the
gateway is a real `boinc-gateway serve` process on 127.0.0.1 (SQLite in tmp_path, local
backend) with the app `uppercase` registered by the admin with the transcripts' input
and output names, and a real user whose token stands for the transcripts' authenticator.
Every line the shim writes is checked byte for byte; see live_transcripts.py for the only
places a value may differ (cursors, wall/cpu seconds: captured and pinned) and for what is
substituted in the lines sent (URL, iwd, token, lease times).

The job states the transcripts show are produced by the server itself: the app waits
for a gate file per job, the server has one slot, and T5a's "42.0 queued while 42.1 runs"
is what a worker crash gives (42.0's worker is killed, the server requeues it).
"""

from __future__ import annotations

import hashlib
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.gahp.gateways import ALICE
from tests.gahp.harness import Gahp
from tests.gahp.live_transcripts import (
    SECONDS,
    LiveGateway,
    LiveReplayer,
    Var,
    cursors,
    start_gateway,
)
from tests.gahp.test_transcripts import BANNER, IWD, J0, J1, URL, B, transcript

# A lease the gridmanager computes as now + 6 h (gahp.md 2.7); the transcripts' values are
# in 2023, which a real server would take as expired at once (it retires the batch).
LEASE_T4, LEASE_T10 = "1700021610", "1700028810"


@pytest.fixture
def live_gw(tmp_path: Path) -> Iterator[LiveGateway]:
    """A real server with the transcripts' app; every gate opened before it stops."""
    gateway = start_gateway(tmp_path / "gw")
    try:
        yield gateway
    finally:
        for n in ("0", "1", "x"):
            gateway.open_gate(n)
        gateway.server.stop()


def _iwd(tmp_path: Path) -> Path:
    iwd = tmp_path / "boinc-test"
    iwd.mkdir()
    (iwd / "input_0.txt").write_bytes(b"hello zero\n")
    (iwd / "input_1.txt").write_bytes(b"hello one\n")
    (iwd / "params.cfg").write_bytes(b"n=1\n")
    assert " " not in str(iwd) and "\\" not in str(iwd)
    return iwd


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _subs(live_gw: LiveGateway, token: str, iwd: Path) -> dict[str, str]:
    return {URL: live_gw.url, IWD: str(iwd), ALICE: token}


def _lease_in_hours(hours: float) -> str:
    return str(int(time.time() + hours * 3600))


def _number(cursor: str) -> int:
    return int(cursor.removesuffix(".000000"))


def test_full_timeline_t1_to_t11(
    gahp: Callable[..., Gahp], live_gw: LiveGateway, tmp_path: Path
) -> None:
    """T1-T11 in one session against the real server, checking its side after each step."""
    iwd = _iwd(tmp_path)
    token = live_gw.add_user("alice")
    # The admin's job holds the server's only slot until its gate opens.
    with live_gw.client() as admin:
        blocker = {
            "name": "blocker",
            "app": "uppercase",
            "jobs": [
                {
                    "name": "blocker-0",
                    "args": ["--n", "x"],
                    "inputs": [{"name": "in", "content": "x"}, {"name": "params", "content": "y"}],
                }
            ],
        }
        reply = admin.post("/v1/batches", json=blocker)
        assert reply.status_code == 201, reply.text
    live_gw.wait_job("admin", "blocker-0", lambda j: j["state"] == "in_progress")
    worker_a = live_gw.server.start_worker()

    shim = gahp()
    banner = shim.line()
    assert BANNER.fullmatch(banner) and len(banner) < 150, banner
    t5a, t5b, t7, t10 = (
        "1700000070.000000",
        "1700000131.000000",
        "1700000192.000000",
        "1700007400.000000",
    )
    wall, cpu = "3605.250000", "3590.500000"
    play = LiveReplayer(
        shim,
        _subs(live_gw, token, iwd),
        [*cursors(t5a, t5b, t7, t10), Var(wall, SECONDS), Var(cpu, SECONDS)],
    )
    play.run(transcript("T1"))
    play.run(transcript("T2"))

    play.run(transcript("T3", 2))
    batch = live_gw.batch("alice", B)
    assert batch["state"] == "in_progress" and batch["njobs"] == 2
    listed = live_gw.get("alice", f"/v1/batches/{quote(B, safe='')}/jobs")["items"]
    assert [j["name"] for j in listed] == [J0, J1]
    job0, job1 = live_gw.job("alice", J0), live_gw.job("alice", J1)
    assert job0["args"] == ["--label", "hello world", "--n", "0"]
    assert job1["args"] == ["--label", "hello world", "--n", "1"]
    assert [(i["name"], i["md5"]) for i in job1["inputs"]] == [
        ("in", _md5(iwd / "input_1.txt")),
        ("params", _md5(iwd / "params.cfg")),
    ]
    files = live_gw.get("alice", "/v1/files")["items"]
    assert sorted(f["md5"] for f in files) == sorted(
        _md5(iwd / n) for n in ("input_0.txt", "input_1.txt", "params.cfg")
    )
    # Worker A (one slot) takes 42.0, the lower id; the server's slot is still busy.
    live_gw.wait_job("alice", J0, lambda j: j["state"] == "in_progress")

    lease = _lease_in_hours(6)
    play.send_subs[LEASE_T4] = lease
    play.run(transcript("T4"))
    assert live_gw.batch("alice", B)["lease_until"] == int(lease)

    # Worker B takes 42.1; then worker A dies and the server requeues 42.0.
    live_gw.server.start_worker()
    live_gw.wait_job("alice", J1, lambda j: j["state"] == "in_progress")
    worker_a.send_signal(signal.SIGKILL)
    worker_a.wait(10)
    live_gw.wait_job("alice", J0, lambda j: j["state"] == "queued" and j["attempts"] == 1)
    assert live_gw.job("alice", J1)["state"] == "in_progress"
    play.run(transcript("T5a"))

    live_gw.open_gate("x")  # the blocker ends; the server's slot takes 42.0 again
    live_gw.wait_job("alice", J0, lambda j: j["state"] == "in_progress" and j["attempts"] == 2)
    play.run(transcript("T5b"))

    play.run(transcript("T6"))
    assert live_gw.job("alice", J1)["state"] == "aborted"

    live_gw.open_gate("0")
    done = live_gw.wait_job("alice", J0, lambda j: j["state"] == "done")
    play.run(transcript("T7"))

    (iwd / "err_0.txt").write_bytes(b"earlier\n")
    play.run(transcript("T8"))
    assert play.value(wall) == f"{done['wall_seconds']:.6f}"
    assert play.value(cpu) == f"{done['cpu_seconds']:.6f}"
    assert done["exit_code"] == 0
    assert (iwd / "result_0.txt").read_bytes() == b"HELLO ZERO\n"
    assert (iwd / "log.txt").read_bytes() == b"params n=1\n"
    assert (iwd / "out_0.txt").read_bytes() == b"uppercase stdout\n"
    assert (iwd / "err_0.txt").read_bytes() == b"earlier\nuppercase stderr\n"
    assert not (iwd / "result.txt").exists()

    lease = _lease_in_hours(8)
    play.send_subs[LEASE_T10] = lease
    play.run(transcript("T10"))
    assert live_gw.batch("alice", B)["lease_until"] == int(lease)
    play.run(transcript("T9"))
    assert live_gw.batch("alice", B)["state"] == "retired"
    play.run(transcript("T11"))
    play.finish()

    # Cursors: bound in transcript order; each query after a state change moved on.
    assert [lit for lit in play.order if lit.endswith(".000000")] == [t5a, t5b, t7, t10]
    n5a, n5b, n7, n10 = (_number(play.value(c)) for c in (t5a, t5b, t7, t10))
    assert 0 < n5a < n5b < n7 <= n10


def test_t12_threads_limit(gahp: Callable[..., Gahp], live_gw: LiveGateway, tmp_path: Path) -> None:
    """Over the in-flight limit the shim answers `F Threads limit reached`; a resend works.

    The ping stays in flight because the server process is paused (SIGSTOP) meanwhile.
    """
    token = live_gw.add_user("alice")
    shim = gahp(max_in_flight=1)
    shim.line()
    play = LiveReplayer(shim, _subs(live_gw, token, tmp_path), [])
    play.run(transcript("T1"))
    steps = transcript("T12").split("\n")
    cut = next(i for i, s in enumerate(steps) if s.startswith("S< F ")) + 1
    with live_gw.paused():
        play.run("\n".join(steps[:cut]))
    play.run("\n".join(steps[cut:]))
    play.finish()


def test_t13_response_prefix(
    gahp: Callable[..., Gahp], live_gw: LiveGateway, tmp_path: Path
) -> None:
    """With RESPONSE_PREFIX advertised, every line after its reply carries the prefix."""
    token = live_gw.add_user("alice")
    shim = gahp(prefix="GAHP:", advertise_response_prefix=True)
    assert BANNER.fullmatch(shim.line())
    play = LiveReplayer(shim, _subs(live_gw, token, tmp_path), [])
    play.run(transcript("T13") + "C> VERSION\\r\\n\n")
    assert BANNER.fullmatch(shim.line().removeprefix(b"GAHP:S "))
    assert all(line.startswith(b"GAHP:") for line in shim.all_lines[3:])
    play.finish()


def test_t14_recovery_resumes_open_batch(
    gahp: Callable[..., Gahp], live_gw: LiveGateway, tmp_path: Path
) -> None:
    """An open, empty batch reads as group 0; the resubmission fills it; a repeat is a no-op."""
    iwd = _iwd(tmp_path)
    token = live_gw.add_user("alice")
    with live_gw.client("alice") as c:
        reply = c.post("/v1/batches", json={"name": B, "app": "uppercase", "submit": False})
        assert reply.status_code == 201, reply.text
    shim = gahp()
    shim.line()
    play = LiveReplayer(shim, _subs(live_gw, token, iwd), cursors("1700009000.000000"))
    play.run(transcript("T1"))
    play.run(transcript("T14"))
    # Nothing changed since: the shim's server_time is the gateway's cursor, as "%f".
    with live_gw.client("alice") as c:
        reply = c.post("/v1/batches/query", json={"batches": [B], "since": "0"})
    assert reply.json() == {"cursor": reply.json()["cursor"], "batches": [{"name": B, "jobs": []}]}
    assert play.value("1700009000.000000") == reply.json()["cursor"] + ".000000"
    for reqid in (3, 4):
        play.run(transcript("T3", reqid))
        batch = live_gw.batch("alice", B)
        assert batch["state"] == "in_progress" and batch["njobs"] == 2, batch
        listed = live_gw.get("alice", f"/v1/batches/{quote(B, safe='')}/jobs")["items"]
        assert [j["name"] for j in listed] == [J0, J1]
    play.finish()


def test_t15_eof_and_quit(gahp: Callable[..., Gahp], live_gw: LiveGateway) -> None:
    """EOF ends the shim at once even with a ping in flight; QUIT answers S, then exits."""
    token = live_gw.add_user("alice")
    shim = gahp()
    shim.startup(live_gw.url, token)
    with live_gw.paused():
        assert shim.call("BOINC_PING 1") == b"S"
        time.sleep(0.3)  # the request is on its way to the paused server
        assert "accepted BOINC_PING 1" in shim.stderr()
        assert "finished BOINC_PING 1" not in shim.stderr()
        started = time.monotonic()
        shim.close_stdin()
        assert shim.wait(5) == 0
        assert time.monotonic() - started < 3

    other = gahp()
    other.startup(live_gw.url, token)
    assert other.call("QUIT") == b"S"
    assert other.wait(5) == 0
