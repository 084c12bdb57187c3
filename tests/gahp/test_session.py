"""The shim as a process: escaping on the wire, garbage input, concurrency, stdout purity."""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Callable
from pathlib import Path

from tests.gahp.fake_gateway import FakeGateway
from tests.gahp.gateways import ALICE
from tests.gahp.harness import Gahp, esc, tokens

PROTOCOL_LINE = re.compile(rb"(\$GahpVersion: .*|[SEF]( .*)?|R|[0-9]+ .*)", re.DOTALL)


def test_escaped_arguments_reach_the_gateway(
    gahp: Callable[..., Gahp], fake: FakeGateway, tmp_path: Path
) -> None:
    """Escaped spaces, backslashes, CR, LF and empty arguments survive; LF-only lines work."""
    odd = tmp_path / "dir with space" / "in\\put file.txt"
    odd.parent.mkdir()
    odd.write_bytes(b"abc")
    args = ["hello world", "C:\\tmp", "two\nlines", "", "cr\rhere", " lead", "trail\\"]
    shim = gahp()
    shim.startup()
    # LF-only endings and a CR LF line mixed in one write.
    shim.send(f"BOINC_SELECT_PROJECT {esc(fake.url)} {ALICE}\n".encode() + b"VERSION\r\n")
    assert shim.line() == b"S"
    assert shim.line().startswith(b"S $GahpVersion: ")
    line = (
        f"BOINC_SUBMIT 1 bat#1 upper 1 bat#1#0.0 {len(args)} "
        + " ".join(esc(a) for a in args)
        + f" 1 {esc(str(odd))} {esc(odd.name)}\n"
    )
    shim.send(line.encode())
    assert shim.line() == b"S"
    assert shim.collect(["1"]) == {"1": ["NULL"]}
    assert fake.job("bat#1#0.0").args == args
    assert fake.job("bat#1#0.0").inputs[0]["md5"] == "900150983cd24fb0d6963f7d28e17f72"


def test_error_text_with_spaces_and_newlines_is_one_token(
    gahp: Callable[..., Gahp], fake: FakeGateway
) -> None:
    """A gateway message full of separators still yields exactly two result tokens."""
    detail = "line one\nline two \\ end\r"
    fake.fail("POST", "/v1/jobs/abort", 500, "boom", detail)
    shim = gahp()
    shim.startup(fake.url, ALICE)
    assert shim.run("BOINC_ABORT_JOBS 3 some#job", "3") == [f"error aborting jobs: -1 {detail}"]
    fake.fail("POST", "/v1/batches/b/retire", 500, "boom", "x y " * 200_000)
    (message,) = shim.run("BOINC_RETIRE_BATCH 4 b", "4")
    assert message.startswith("error retiring batch: -1 x y x y") and len(message) <= 4000


def test_garbage_gets_one_e_per_line_and_the_shim_survives(
    gahp: Callable[..., Gahp], fake: FakeGateway
) -> None:
    """Random bytes, unknown commands and missing arguments: one E each, then all is well."""
    rng = random.Random(20240601)
    noise = [b"\r\n"]
    for _ in range(150):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
        # Without LF or backslash each chunk is exactly one line.
        noise.append(raw.replace(b"\n", b"").replace(b"\\", b"") + b"\r\n")
    malformed = [
        "BOINC_FROBNICATE 1 x",
        "boinc_ping",
        "BOINC_PING x",
        "BOINC_PING 0",
        "BOINC_PING -1",
        "BOINC_PING 1 extra",
        "BOINC_SUBMIT 2",
        "BOINC_SUBMIT 2 b upper 1 j 0",
        "BOINC_SUBMIT 2 b upper 2 j 0 0",
        "BOINC_SUBMIT 2 b upper 1 j 0 0 1 2 3",
        "BOINC_QUERY_BATCHES 3",
        "BOINC_QUERY_BATCHES 3 0 2 b",
        "BOINC_QUERY_BATCHES 3 never 1 b",
        "BOINC_FETCH_OUTPUT 4 j /tmp err SOMETIMES 0",
        "BOINC_FETCH_OUTPUT 4 j /tmp err SOME 1 a",
        "BOINC_ABORT_JOBS 5",
        "BOINC_RETIRE_BATCH 6",
        "BOINC_RETIRE_BATCH 6 a b",
        "BOINC_SET_LEASE 7 b",
        "BOINC_SET_LEASE 7 b later",
        "BOINC_SELECT_PROJECT only-a-url",
        "RESULTS now",
        "COMMANDS please",
        "RESPONSE_PREFIX",
        "ASYNC_MODE_ON 1",
        "QUIT now",
        "VERSION 2",
    ]
    shim = gahp()
    shim.startup(fake.url, ALICE)
    shim.send(b"".join(noise))
    for i in range(len(noise)):
        assert shim.line() == b"E", f"noise line {i}: {noise[i]!r}"
    for request in malformed:
        assert shim.call(request) == b"E", request
    assert shim.results() == []
    assert shim.run("BOINC_PING 99", "99") == ["NULL"]
    assert shim.proc.poll() is None
    assert all(PROTOCOL_LINE.fullmatch(line) for line in shim.all_lines), shim.all_lines


def test_fifty_commands_in_flight_each_result_once(
    gahp: Callable[..., Gahp], fake: FakeGateway
) -> None:
    """60 slow pings run concurrently; every S comes at once; each result arrives once."""
    fake.delay("GET", "/v1/me", 2.0)
    shim = gahp()
    shim.startup(fake.url, ALICE)
    ids = [str(i) for i in range(1, 61)]
    started = time.monotonic()
    shim.send(b"".join(f"BOINC_PING {i}\r\n".encode() for i in ids))
    assert [shim.line() for _ in ids] == [b"S"] * len(ids)
    assert time.monotonic() - started < 1.5, "return lines waited for the work"
    got = shim.collect(ids, timeout=30)
    assert got == {i: ["NULL"] for i in ids}
    assert fake.max_active >= 50
    assert time.monotonic() - started < 10
    time.sleep(0.3)
    assert shim.results() == []


def test_one_r_per_batch_of_results(gahp: Callable[..., Gahp], fake: FakeGateway) -> None:
    """Several results between two RESULTS cause a single R; the next result a new one."""
    shim = gahp()
    shim.startup(fake.url, ALICE)
    shim.send(b"BOINC_PING 1\r\nBOINC_PING 2\r\nBOINC_PING 3\r\n")
    assert [shim.line() for _ in range(3)] == [b"S"] * 3
    shim.wait_r(1)
    time.sleep(0.5)
    assert shim.r_count == 1
    assert sorted(tokens(r)[0] for r in shim.results()) == ["1", "2", "3"]
    assert shim.call("ASYNC_MODE_OFF") == b"S"
    assert shim.run("BOINC_PING 4", "4") == ["NULL"]
    assert shim.r_count == 1
    assert shim.call("BOINC_PING 5") == b"S"
    time.sleep(0.5)
    assert shim.call("ASYNC_MODE_ON") == b"S"
    shim.wait_r(2)
    assert [tokens(r) for r in shim.results()] == [["5", "NULL"]]


def test_logs_go_to_stderr_or_file_never_stdout(
    gahp: Callable[..., Gahp], fake: FakeGateway, tmp_path: Path
) -> None:
    """With DEBUG logging to a file, stdout carries exactly the protocol and nothing else."""
    log_file = tmp_path / "shim.log"
    shim = gahp(log_file=str(log_file))
    shim.startup(fake.url, ALICE)
    assert shim.call("BOINC_PING 1") == b"S"
    shim.wait_r(1)
    assert shim.results() == [b"1 NULL"]
    shim.stop()
    assert len(shim.all_lines) == 8  # banner, COMMANDS, S, S, S, R, S 1, "1 NULL"
    assert all(PROTOCOL_LINE.fullmatch(line) for line in shim.all_lines)
    text = log_file.read_text()
    assert "accepted BOINC_PING 1" in text and ALICE not in text


def test_eof_abandons_work_stuck_in_a_worker_thread(
    gahp: Callable[..., Gahp], fake: FakeGateway, tmp_path: Path
) -> None:
    """An input that blocks forever (a FIFO nobody writes) neither delays EOF nor the answer."""
    fifo = tmp_path / "never.fifo"
    os.mkfifo(fifo)
    shim = gahp(command_timeout=1.0)
    shim.startup(fake.url, ALICE)
    line = f"BOINC_SUBMIT 1 b upper 1 b#1.0 0 1 {esc(str(fifo))} in"
    assert shim.run(line, "1") == ["error submitting jobs: -1 timed out after 1 s"]
    assert shim.call(line.replace(" 1 b ", " 2 b ", 1)) == b"S"
    started = time.monotonic()
    shim.close_stdin()
    assert shim.wait(5) == 0
    assert time.monotonic() - started < 3
