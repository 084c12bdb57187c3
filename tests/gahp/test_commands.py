"""Command behaviour against the fake: result shapes, failures, safety, binding, config."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

from tests.gahp.fake_gateway import FakeGateway, RunResult
from tests.gahp.gateways import ALICE, BOB
from tests.gahp.harness import Gahp, esc, tokens
from tests.gahp.test_job_life import query_groups


def closed_port_url() -> str:
    """A 127.0.0.1 URL where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


def submit_line(reqid: int, batch: str, inputs: list[Path], app: str = "upper") -> str:
    """A BOINC_SUBMIT of one job per input file, without the six parameters."""
    specs = " ".join(
        f"{batch}#1.{i} 1 arg{i} 1 {esc(str(p))} {esc(p.name)}" for i, p in enumerate(inputs)
    )
    return f"BOINC_SUBMIT {reqid} {batch} {app} {len(inputs)} {specs}"


def results_raw(shim: Gahp, reqids: list[str]) -> dict[str, bytes]:
    """Collect result lines undecoded, to count tokens exactly as the gridmanager does."""
    got = shim.collect(reqids)
    return {k: " ".join(esc(f) for f in [k, *v]).encode() for k, v in got.items()}


def test_every_result_shape_has_the_right_token_count(
    gahp: Callable[..., Gahp], fake: FakeGateway, tmp_path: Path
) -> None:
    """PING/SUBMIT/ABORT/RETIRE/LEASE: 2 tokens; QUERY: 3 + groups; FETCH: 5; errors: 2."""
    (tmp_path / "a.txt").write_bytes(b"a")
    shim = gahp()
    shim.startup(fake.url, ALICE)
    sends = {
        "1": "BOINC_PING 1",
        "2": submit_line(2, "b1", [tmp_path / "a.txt", tmp_path / "a.txt"]),
        "3": submit_line(3, "b2", [tmp_path / "a.txt"], app="no_such_app"),
        "4": submit_line(4, "b3", [tmp_path / "missing.txt"]),
        "5": "BOINC_SUBMIT 5 b4 uppercase 1 b4#1.0 0 1 /x/a.txt a.txt",
    }
    for line in sends.values():
        assert shim.call(line) == b"S", line
    shape = {k: tokens(v) for k, v in results_raw(shim, list(sends)).items()}
    assert shape["1"] == ["1", "NULL"] and shape["2"] == ["2", "NULL"]
    assert shape["3"][1] == "error getting templates: -1 no app named no_such_app"
    assert shape["4"][1].startswith("error processing input files: cannot read ")
    assert shape["5"][1].endswith("has 1 input files but app uppercase takes 2")
    assert all(len(t) == 2 for t in shape.values())

    fake.finish("b1")
    fake.fail("POST", "/v1/batches/zzz/retire", 500, "boom", "disk on fire")
    sends = {
        "10": "BOINC_QUERY_BATCHES 10 0 2 b1 b1",
        "11": "BOINC_QUERY_BATCHES 11 0 2 b1 nope",
        "12": f"BOINC_FETCH_OUTPUT 12 b1#1.0 {esc(str(tmp_path))} e.txt ALL 0",
        "13": f"BOINC_FETCH_OUTPUT 13 nope {esc(str(tmp_path))} e.txt ALL 0",
        "14": "BOINC_ABORT_JOBS 14 b1#1.1 never#existed",
        "15": "BOINC_RETIRE_BATCH 15 b1",
        "16": "BOINC_RETIRE_BATCH 16 zzz",
        "17": "BOINC_SET_LEASE 17 b1 1900000000",
        "18": "BOINC_SET_LEASE 18 nope 1900000000",
        "19": "BOINC_PING 19",
    }
    assert shim.call("BOINC_SELECT_PROJECT " + esc(fake.url) + " " + ALICE) == b"S"
    for reqid, line in sends.items():
        if reqid == "19":
            assert shim.call(f"BOINC_SELECT_PROJECT {esc(fake.url)} wrong") == b"S"
        assert shim.call(line) == b"S", line
    shape = {k: tokens(v) for k, v in results_raw(shim, list(sends)).items()}
    groups = query_groups(shape["10"][1:], 2)
    assert groups[0] == groups[1] == [("b1#1.0", "DONE"), ("b1#1.1", "DONE")]
    assert len(shape["10"]) == 3 + 2 * (1 + 2 * 2)
    assert shape["11"][1:] == ["error querying batch: -1 no batch named nope"]
    assert shape["12"][1] == "NULL" and len(shape["12"]) == 5
    assert [float(x) for x in shape["12"][3:]] == [2.0, 1.5]
    assert shape["13"][1:] == ["error fetching output: -1 no job named nope"]
    assert shape["14"] == ["14", "NULL"]  # finished and unknown jobs need no abort
    assert shape["15"] == ["15", "NULL"] and shape["17"] == ["17", "NULL"]
    assert shape["16"][1:] == ["error retiring batch: -1 disk on fire"]
    assert shape["18"][1:] == ["error setting lease: -1 no batch named nope"]
    assert shape["19"][1:] == ["error pinging server: -1 missing or bad token"]
    for key in ("13", "14", "15", "16", "17", "18", "19"):
        assert len(shape[key]) == 2, shape[key]
    assert fake.batch("b1").lease == 1900000000
    assert (tmp_path / "out").read_bytes() == b"A" and (tmp_path / "e.txt").exists()


def test_unreachable_service_gives_errors_and_shim_stays_up(
    gahp: Callable[..., Gahp], fake: FakeGateway, tmp_path: Path
) -> None:
    """Connection refused: every command answers one error token; later a good URL works."""
    (tmp_path / "a.txt").write_bytes(b"a")
    shim = gahp(http_retries=1)
    shim.startup(closed_port_url(), ALICE)
    sends = [
        "BOINC_PING 1",
        submit_line(2, "b", [tmp_path / "a.txt"]),
        "BOINC_QUERY_BATCHES 3 0 1 b",
        f"BOINC_FETCH_OUTPUT 4 b#1.0 {esc(str(tmp_path))} err ALL 0",
        "BOINC_ABORT_JOBS 5 b#1.0",
        "BOINC_RETIRE_BATCH 6 b",
        "BOINC_SET_LEASE 7 b 1900000000",
    ]
    for line in sends:
        assert shim.call(line) == b"S"
    got = shim.collect([str(i) for i in range(1, 8)])
    for reqid, fields in got.items():
        assert len(fields) == 1 and "cannot reach http://127.0.0.1:" in fields[0], (reqid, fields)
    assert shim.call(f"BOINC_SELECT_PROJECT {esc(fake.url)} {ALICE}") == b"S"
    assert shim.run("BOINC_PING 8", "8") == ["NULL"]


def test_slow_gateway_answers_timeout_error_in_time(
    gahp: Callable[..., Gahp], fake: FakeGateway
) -> None:
    """A hanging gateway costs at most command_timeout; meanwhile the shim keeps answering."""
    fake.delay("GET", "/v1/me", 30.0)
    shim = gahp(command_timeout=1.0)
    shim.startup(fake.url, ALICE)
    started = time.monotonic()
    assert shim.call("BOINC_PING 1") == b"S"
    assert shim.call("COMMANDS").startswith(b"S ")
    shim.wait_r(1, timeout=5)
    assert shim.results() == [b"1 error\\ pinging\\ server:\\ -1\\ timed\\ out\\ after\\ 1\\ s"]
    assert time.monotonic() - started < 4


def test_server_output_names_never_leave_iwd(
    gahp: Callable[..., Gahp], fake: FakeGateway, tmp_path: Path
) -> None:
    """Output names with path parts are refused; nothing is written outside iwd."""
    iwd = tmp_path / "work" / "iwd"
    iwd.mkdir(parents=True)
    (iwd / "a.txt").write_bytes(b"a")
    shim = gahp()
    shim.startup(fake.url, ALICE)
    assert shim.run(submit_line(1, "b", [iwd / "a.txt"]), "1") == ["NULL"]
    absolute = tmp_path / "work" / "abs-evil.txt"  # absolute, outside iwd
    evil = {"out": b"fine", "../evil.txt": b"x", str(absolute): b"y", "..": b"z"}
    fake.complete("b#1.0", RunResult(outputs=evil))
    fields = shim.run(f"BOINC_FETCH_OUTPUT 2 b#1.0 {esc(str(iwd))} err ALL 0", "2")
    assert len(fields) == 1 and "refusing output name" in fields[0]
    assert sorted(p.name for p in iwd.parent.iterdir()) == ["iwd"]
    fields = shim.run(f"BOINC_FETCH_OUTPUT 3 b#1.0 {esc(str(iwd))} err SOME 1 out res.txt", "3")
    assert fields[0] == "NULL" and (iwd / "res.txt").read_bytes() == b"fine"
    # The Condor-B form: the same refusal, and its destinations are plain names in the dir.
    fields = shim.run(f"BOINC_FETCH_OUTPUT 4 b#1.0 {esc(str(iwd))} ALL", "4")
    assert len(fields) == 1 and "refusing output name" in fields[0]
    far = esc(str(absolute))
    fields = shim.run(f"BOINC_FETCH_OUTPUT 5 b#1.0 {esc(str(iwd))} 1 out {far}", "5")
    assert len(fields) == 1 and "is not a file name in" in fields[0]
    assert sorted(p.name for p in iwd.parent.iterdir()) == ["iwd"]
    assert sorted(p.name for p in iwd.iterdir()) == ["a.txt", "err", "res.txt"]


def test_project_is_bound_when_the_request_is_received(
    gahp: Callable[..., Gahp], fake: FakeGateway
) -> None:
    """Selections arriving before earlier commands run do not redirect those commands."""
    shim = gahp()
    shim.startup(fake.url, ALICE)
    url = esc(fake.url)
    shim.send(
        f"BOINC_PING 1\r\nBOINC_SELECT_PROJECT {url} {BOB}\r\nBOINC_PING 2\r\n"
        f"BOINC_SELECT_PROJECT {url} bad\r\nBOINC_PING 3\r\n".encode()
    )
    assert [shim.line() for _ in range(5)] == [b"S"] * 5
    got = shim.collect(["1", "2", "3"])
    assert got["1"] == got["2"] == ["NULL"]
    assert got["3"] == ["error pinging server: -1 missing or bad token"]
    assert sorted(r.token for r in fake.requests if r.path == "/v1/me") == sorted(
        [ALICE, BOB, "bad"]
    )


def test_resubmitting_a_batch_with_other_jobs_fails(
    gahp: Callable[..., Gahp], fake: FakeGateway, tmp_path: Path
) -> None:
    """Same name and same jobs is a success; same name with other jobs is an error."""
    (tmp_path / "a.txt").write_bytes(b"a")
    shim = gahp()
    shim.startup(fake.url, ALICE)
    one, two = [tmp_path / "a.txt"], [tmp_path / "a.txt"] * 2
    assert shim.run(submit_line(1, "b", one), "1") == ["NULL"]
    assert shim.run(submit_line(2, "b", one), "2") == ["NULL"]
    assert shim.run(submit_line(3, "b", two), "3") == [
        "error creating batch: -1 batch b exists with other jobs"
    ]
    assert fake.batch("b").jobs == ["b#1.0"]


def test_query_reply_is_capped_and_rotates(
    gahp: Callable[..., Gahp], fake: FakeGateway, tmp_path: Path
) -> None:
    """Over max_reply_bytes a query reports a window and repeats the old time."""
    (tmp_path / "a.txt").write_bytes(b"a")
    shim = gahp(max_reply_bytes=1000)
    shim.startup(fake.url, ALICE)
    assert shim.run(submit_line(1, "big", [tmp_path / "a.txt"] * 60), "1") == ["NULL"]
    seen: set[str] = set()
    for reqid in range(2, 8):
        fields = shim.run(f"BOINC_QUERY_BATCHES {reqid} 0 1 big", str(reqid))
        (group,) = query_groups(fields, 1)
        assert fields[1] == "0" and 0 < len(group) < 60
        assert len(" ".join(esc(f) for f in [str(reqid), *fields])) <= 1000
        seen |= {name for name, _ in group}
    assert seen == {f"big#1.{i}" for i in range(60)}


def test_config_file_supplies_the_default_project(
    gahp: Callable[..., Gahp], fake: FakeGateway, tmp_path: Path
) -> None:
    """url/token (or token_file) from the config are used until BOINC_SELECT_PROJECT."""
    token_file = tmp_path / "auth"
    token_file.write_text(f"{BOB}  trailing words\n")
    shim = gahp(url=fake.url, token_file=str(token_file), config_in_env=False)
    shim.startup()
    assert shim.run("BOINC_PING 1", "1") == ["NULL"]
    assert [r.token for r in fake.requests] == [BOB]

    bare = gahp(config_text="")
    bare.startup()
    assert bare.run("BOINC_PING 1", "1") == [
        "error pinging server: -1 no project selected (BOINC_SELECT_PROJECT or config file)"
    ]

    broken = gahp(config_text="colour = 'blue'\n")
    broken.startup(fake.url, ALICE)
    assert broken.run("BOINC_PING 1", "1") == ["NULL"]
    assert "unknown key 'colour'" in broken.stderr()
