"""The Condor-B design's command forms beside the gridmanager's, in one `boinc-gahp`.

Parsing is checked directly (both forms, the rule for lines both could read, mixtures);
the commands themselves run in a shim process against one real `serve` (SQLite, local
backend, the example app `concat`: inputs `a` and `b`, outputs `out` and `count`). Output
bytes are compared with what the app must write, computed here.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clients.gahp.commands import QueryBatch, parse
from clients.gahp.context import ParseError
from clients.gahp.fetch import FetchOutput
from clients.gahp.submit import Submit, SubmitJob
from tests.e2e.conftest import LiveServer
from tests.gahp.harness import Gahp, esc

pytestmark = pytest.mark.timeout(180)

A, B = b"alpha\n", b"beta\n"
DONE_WITHIN = 60.0


# ----- parsing -----


def test_design_submit_forms() -> None:
    """ALL keeps the app's outputs; a count names them; no parameters follow."""
    line = ["b", "concat", "2", "j0", "1", "--sep", "2", "/p/a", "a", "/p/b", "b", "ALL"]
    line += ["j1", "0", "2", "/p/a", "a", "/p/b", "b", "2", "out", "count"]
    submit = Submit.parse(line)
    assert submit.form == "Condor-B" and submit.params == ()
    assert submit.jobs == (
        SubmitJob("j0", ("--sep",), ("/p/a", "/p/b"), None),
        SubmitJob("j1", (), ("/p/a", "/p/b"), ("out", "count")),
    )
    # `all` in any case, and an empty output list, are the design's too.
    submit = Submit.parse(["b", "app", "2", "j0", "0", "0", "all", "j1", "0", "0", "0"])
    assert [job.outputs for job in submit.jobs] == [None, ()]


def test_gridmanager_submit_still_parses_as_before() -> None:
    """Without and with the six parameters: the gridmanager's form, outputs unnamed."""
    plain = Submit.parse(["b", "app", "1", "j", "1", "x", "1", "/p/in", "in"])
    assert plain.form == "gridmanager" and plain.jobs[0].outputs is None
    params = ["1e12", "NULL", "", "2e9", "86400", "3"]
    full = Submit.parse(["b", "app", "1", "j", "0", "0", *params])
    assert full.form == "gridmanager" and full.params == tuple(params)


def test_line_both_forms_can_read() -> None:
    """One job, then six tokens: numbers are the gridmanager's parameters, names are the
    design's output count and five outputs."""
    numbers = Submit.parse(["b", "app", "1", "j", "0", "0", "5", "1", "2", "3", "4", "5"])
    assert numbers.form == "gridmanager" and numbers.params == ("5", "1", "2", "3", "4", "5")
    names = Submit.parse(["b", "app", "1", "j", "0", "0", "5", "o1", "o2", "o3", "o4", "o5"])
    assert names.form == "Condor-B"
    assert names.jobs[0].outputs == ("o1", "o2", "o3", "o4", "o5")
    # Neither reads it as its own: the gridmanager's form answers the bad value later.
    odd = Submit.parse(["b", "app", "1", "j", "0", "0", "x", "1", "2", "3", "4", "5"])
    assert odd.form == "gridmanager"


@pytest.mark.parametrize(
    "args",
    [
        # a design job, then a gridmanager job (no ALL or count)
        ["b", "app", "2", "j0", "0", "0", "ALL", "j1", "0", "0"],
        # a gridmanager job, then a design job
        ["b", "app", "2", "j0", "0", "0", "j1", "0", "0", "ALL"],
        # design jobs followed by the gridmanager's six parameters
        ["b", "app", "1", "j0", "0", "0", "ALL", "1e9", "NULL", "NULL", "NULL", "NULL", "3"],
        # the output list ends early
        ["b", "app", "1", "j0", "0", "0", "2", "out"],
        # something after the last design job
        ["b", "app", "1", "j0", "0", "0", "ALL", "extra"],
        # the line ends before the first job's input count
        ["b", "app", "1", "j0", "0"],
    ],
)
def test_submit_mixtures_and_early_ends(args: list[str]) -> None:
    """A line that fits neither form is a parse error (answered E)."""
    with pytest.raises(ParseError):
        Submit.parse(args)


def test_fetch_forms() -> None:
    """The design's ALL and bare count; the gridmanager's form keeps its stderr and mode."""
    every = FetchOutput.parse(["j", "/d", "ALL"])
    assert (every.stderr, every.fetch_all, every.pairs) == (None, True, ())
    some = FetchOutput.parse(["j", "/d", "2", "out", "o.txt", "count", "c.txt"])
    assert (some.stderr, some.fetch_all) == (None, False)
    assert some.pairs == (("out", "o.txt"), ("count", "c.txt"))
    grid = FetchOutput.parse(["j", "/d", "err.txt", "SOME", "1", "out", "o.txt"])
    assert (grid.stderr, grid.fetch_all, grid.pairs) == ("err.txt", False, (("out", "o.txt"),))


@pytest.mark.parametrize(
    "args",
    [
        ["j", "/d", "err.txt", "1", "out", "o.txt"],  # stderr, but a bare count
        ["j", "/d", "SOME", "1", "out", "o.txt"],  # SOME, but no stderr
        ["j", "/d", "ALL", "1", "out", "o.txt"],  # ALL followed by pairs
        ["j", "/d", "2", "out", "o.txt"],  # fewer pairs than counted
        ["j", "/d"],
        ["j", "/d", "err.txt", "ALL"],  # the gridmanager's form without its count
    ],
)
def test_fetch_mixtures_and_early_ends(args: list[str]) -> None:
    """A fetch line that fits neither form is a parse error."""
    with pytest.raises(ParseError):
        FetchOutput.parse(args)


def test_query_batch_takes_one_name() -> None:
    """BOINC_QUERY_BATCH <batch>, nothing more or less."""
    assert parse("BOINC_QUERY_BATCH", ["b"]) == QueryBatch(batch="b")
    for args in ([], ["a", "b"]):
        with pytest.raises(ParseError):
            parse("BOINC_QUERY_BATCH", args)


# ----- against a real server -----


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One real server (SQLite, local backend, example apps) for the module."""
    tmp = tmp_path_factory.mktemp("condor-b-live")
    (tmp / "data").mkdir()
    server = LiveServer(f"sqlite:///{tmp / 'live.db'}", tmp / "data")
    server.start()
    try:
        yield server
    finally:
        server.stop()


class DesignClient:
    """Speaks to a shim as a client written from the design: no ASYNC_MODE_ON; it sends
    a request, gets `S`, and polls RESULTS for the answer."""

    def __init__(self, shim: Gahp, live: LiveServer) -> None:
        self.shim = shim
        self.reqid = 0
        assert shim.line().startswith(b"$GahpVersion: ")
        listed = shim.call("COMMANDS").split(b" ")
        assert listed[0] == b"S" and b"BOINC_QUERY_BATCH" in listed, listed
        assert shim.call(f"BOINC_SELECT_PROJECT {esc(live.url)} {esc(live.token)}") == b"S"

    def run(self, command: str, *args: str) -> list[str]:
        """One asynchronous request; its result fields after the reqid."""
        self.reqid += 1
        line = " ".join([command, str(self.reqid), *(esc(a) for a in args)])
        return self.shim.run(line, str(self.reqid), timeout=60)

    def wait_done(self, batch: str) -> list[str]:
        """BOINC_QUERY_BATCH until every job is DONE (bounded); the last reply."""
        deadline = time.monotonic() + DONE_WITHIN
        while True:  # bounded by the deadline
            reply = self.run("BOINC_QUERY_BATCH", batch)
            assert reply[0] == "NULL" and len(reply) % 2 == 1, reply
            states = reply[2::2]
            assert set(states) <= {"NOT_STARTED", "IN_PROGRESS", "DONE"}, reply
            if states and all(s == "DONE" for s in states):
                return reply
            assert time.monotonic() < deadline, f"batch {batch} not done: {reply}"
            time.sleep(0.2)


@pytest.fixture
def design(gahp: Callable[..., Gahp], live: LiveServer) -> DesignClient:
    """A design-style client on a fresh shim."""
    return DesignClient(gahp(), live)


def _inputs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A work directory with the two inputs, and an empty directory for outputs."""
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    out.mkdir()
    (work / "a.txt").write_bytes(A)
    (work / "b.txt").write_bytes(B)
    return work / "a.txt", work / "b.txt", out


def _job_tokens(name: str, args: list[str], a: Path, b: Path, outputs: list[str]) -> list[str]:
    tail = ["ALL"] if outputs == ["ALL"] else [str(len(outputs)), *outputs]
    return [name, str(len(args)), *args, "2", str(a), "a.txt", str(b), "b.txt", *tail]


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def test_design_submit_all_query_fetch_all(
    design: DesignClient, live: LiveServer, tmp_path: Path
) -> None:
    """Submit with ALL, query until DONE, fetch ALL: both outputs, byte for byte."""
    a, b, out = _inputs(tmp_path)
    jobs = [
        *_job_tokens("cb1.0", ["--sep", "-"], a, b, ["ALL"]),
        *_job_tokens("cb1.1", ["--repeat", "3"], a, b, ["ALL"]),
    ]
    assert design.run("BOINC_SUBMIT", "cb1", "concat", "2", *jobs) == ["NULL"]
    with live.client() as client:
        assert client.get("/v1/jobs/cb1.0").json()["outputs_wanted"] == ["out", "count"]
    reply = design.wait_done("cb1")
    assert reply == ["NULL", "cb1.0", "DONE", "cb1.1", "DONE"]

    assert design.run("BOINC_FETCH_OUTPUT", "cb1.0", str(out), "ALL") == ["NULL"]
    assert sorted(p.name for p in out.iterdir()) == ["count", "out"]
    assert (out / "out").read_bytes() == A + b"-" + B
    assert (out / "count").read_bytes() == b"1\n"
    second = tmp_path / "second"
    second.mkdir()
    assert design.run("BOINC_FETCH_OUTPUT", "cb1.1", str(second), "all") == ["NULL"]
    assert (second / "out").read_bytes() == (A + B) * 3
    with live.client() as client:
        job = client.get("/v1/jobs/cb1.1").json()
    assert {o["name"]: o["md5"] for o in job["outputs"]} == {
        "out": _md5((A + B) * 3),
        "count": _md5(b"3\n"),
    }


def test_design_named_outputs_and_pairs(
    design: DesignClient, live: LiveServer, tmp_path: Path
) -> None:
    """Named outputs become the jobs' outputs; pairs place them under new names."""
    a, b, out = _inputs(tmp_path)
    jobs = [
        *_job_tokens("cb2.0", [], a, b, ["count"]),
        *_job_tokens("cb2.1", ["--sep", "+"], a, b, ["out", "count", "out"]),
    ]
    assert design.run("BOINC_SUBMIT", "cb2", "concat", "2", *jobs) == ["NULL"]
    with live.client() as client:
        wanted = [client.get(f"/v1/jobs/cb2.{i}").json()["outputs_wanted"] for i in (0, 1)]
    assert wanted == [["count"], ["out", "count"]]
    design.wait_done("cb2")
    with live.client() as client:
        kept = [client.get(f"/v1/jobs/cb2.{i}").json()["outputs"] for i in (0, 1)]
    assert [o["name"] for o in kept[0]] == ["count"]
    assert sorted(o["name"] for o in kept[1]) == ["count", "out"]

    # ALL is every output the job has: here only the one it asked for.
    assert design.run("BOINC_FETCH_OUTPUT", "cb2.0", str(out), "ALL") == ["NULL"]
    assert [p.name for p in out.iterdir()] == ["count"]
    assert (out / "count").read_bytes() == b"1\n"
    pairs = ["2", "out", "joined.txt", "count", "n.txt"]
    assert design.run("BOINC_FETCH_OUTPUT", "cb2.1", str(out), *pairs) == ["NULL"]
    assert (out / "joined.txt").read_bytes() == A + b"+" + B
    assert (out / "n.txt").read_bytes() == b"1\n"
    assert sorted(p.name for p in out.iterdir()) == ["count", "joined.txt", "n.txt"]

    # Errors name the culprit and write nothing.
    before = sorted(p.name for p in tmp_path.rglob("*"))
    cases = {
        ("cb2.0", "1", "out", "x.txt"): "error fetching output: job cb2.0 has no output out",
        ("cb2.1", "1", "stdout", "x.txt"): (
            "error fetching output: stdout is not an output of job cb2.1"
        ),
        ("cb2.1", "1", "out", "../escaped.txt"): (
            f"error fetching output: destination '../escaped.txt' is not a file name in {out}"
        ),
    }
    for (job, *rest), message in cases.items():
        assert design.run("BOINC_FETCH_OUTPUT", job, str(out), *rest) == [message]
    missing = tmp_path / "no-such-dir"
    assert design.run("BOINC_FETCH_OUTPUT", "cb2.1", str(missing), "ALL") == [
        f"error fetching output: {missing} is not a directory"
    ]
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_design_submit_with_an_unknown_output_creates_nothing(
    design: DesignClient, live: LiveServer, tmp_path: Path
) -> None:
    """An output the app does not have is named in the error; no batch, no job."""
    a, b, _ = _inputs(tmp_path)
    jobs = [*_job_tokens("cb3.0", [], a, b, ["ALL"]), *_job_tokens("cb3.1", [], a, b, ["sum"])]
    assert design.run("BOINC_SUBMIT", "cb3", "concat", "2", *jobs) == [
        "error submitting jobs: job cb3.1 asks for output sum, which app concat does not have"
    ]
    with live.client() as client:
        assert client.get("/v1/batches/cb3").json()["code"] == "batch_not_found"
        assert client.get("/v1/jobs/cb3.0").json()["code"] == "job_not_found"
    assert design.run("BOINC_QUERY_BATCH", "cb3") == ["error querying batch: -1 no batch named cb3"]


def test_query_batch_pages_through_a_large_batch(design: DesignClient, live: LiveServer) -> None:
    """All jobs of a batch larger than one page, in job order, each with its status."""
    names = [f"cb4.{i}" for i in range(1005)]
    with live.client() as client:
        md5 = _md5(A)
        assert client.put(f"/v1/files/{md5}", content=A).status_code in (200, 201)
        inputs = [{"name": "a", "md5": md5}, {"name": "b", "md5": md5}]
        body = {
            "name": "cb4",
            "app": "concat",
            "submit": False,
            "jobs": [{"name": n, "inputs": inputs} for n in names],
        }
        reply = client.post("/v1/batches", json=body)
        assert reply.status_code == 201, reply.text
        reply = design.run("BOINC_QUERY_BATCH", "cb4")
        assert reply[0] == "NULL" and reply[1::2] == names
        assert set(reply[2::2]) == {"NOT_STARTED"}
        assert client.post("/v1/batches/cb4/abort").status_code == 200
    reply = design.run("BOINC_QUERY_BATCH", "cb4")
    assert reply[1::2] == names and set(reply[2::2]) == {"ERROR"}


@pytest.mark.parametrize(
    "line",
    [
        "BOINC_SUBMIT 7 b concat 2 j0 0 0 ALL j1 0 0",
        "BOINC_SUBMIT 7 b concat 2 j0 0 0 j1 0 0 ALL",
        "BOINC_SUBMIT 7 b concat 1 j0 0 0 ALL 1e9 NULL NULL NULL NULL 3",
        "BOINC_SUBMIT 7 b concat 1 j0 0 0 2 out",
        "BOINC_SUBMIT 7 b concat 1 j0 0 0 ALL extra",
        "BOINC_SUBMIT 7 b concat 1 j0",
        "BOINC_FETCH_OUTPUT 7 j /tmp err.txt 1 out o.txt",
        "BOINC_FETCH_OUTPUT 7 j /tmp SOME 1 out o.txt",
        "BOINC_FETCH_OUTPUT 7 j /tmp ALL 1 out o.txt",
        "BOINC_FETCH_OUTPUT 7 j /tmp 2 out o.txt",
        "BOINC_FETCH_OUTPUT 7 j /tmp",
        "BOINC_QUERY_BATCH 7",
        "BOINC_QUERY_BATCH 7 b c",
    ],
)
def test_mixed_or_short_lines_get_e_and_the_shim_stays_up(design: DesignClient, line: str) -> None:
    """`E` for the line, nothing started, and the next request is served."""
    assert design.shim.call(line) == b"E"
    assert design.run("BOINC_PING") == ["NULL"]
    assert design.shim.proc.poll() is None
    assert "accepted BOINC_SUBMIT" not in design.shim.stderr()


def test_gridmanager_and_design_clients_share_one_shim(
    design: DesignClient, live: LiveServer, tmp_path: Path
) -> None:
    """Each form's batch is queried and fetched with the other's commands too."""
    a, b, out = _inputs(tmp_path)
    shim = design.shim
    grid_jobs = ["gm5.0", "0", "2", str(a), "a.txt", str(b), "b.txt"]
    grid = ["gm5", "concat", "1", *grid_jobs, "1e9", "NULL", "NULL", "NULL", "NULL", "NULL"]
    assert design.run("BOINC_SUBMIT", *grid) == ["NULL"]
    ours = ["cb5", "concat", "1", *_job_tokens("cb5.0", [], a, b, ["out"])]
    assert design.run("BOINC_SUBMIT", *ours) == ["NULL"]
    design.wait_done("gm5")
    design.wait_done("cb5")
    reply = design.run("BOINC_QUERY_BATCHES", "0", "2", "gm5", "cb5")
    assert reply[2:] == ["1", "gm5.0", "DONE", "1", "cb5.0", "DONE"]

    # The gridmanager's fetch keeps its five tokens and its stderr append.
    err = out / "err.txt"
    reply = design.run("BOINC_FETCH_OUTPUT", "cb5.0", str(out), str(err), "ALL", "0")
    assert reply[0] == "NULL" and reply[1] == "0" and len(reply) == 4
    assert (out / "out").read_bytes() == A + B and err.exists()
    assert design.run("BOINC_FETCH_OUTPUT", "gm5.0", str(out), "1", "out", "gm.txt") == ["NULL"]
    assert (out / "gm.txt").read_bytes() == A + B
    assert shim.proc.poll() is None


def _readme_session() -> list[tuple[str, list[str]]]:
    """The design session of the README: each request (not RESULTS) and its result fields."""
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = text.split("C> BOINC_SUBMIT 1 run7", 1)[1].split("```", 1)[0]
    lines = ("C> BOINC_SUBMIT 1 run7" + block).splitlines()
    requests: dict[str, str] = {}
    results: dict[str, list[str]] = {}
    for line in lines:
        direction, _, rest = line.partition(" ")
        rest = rest.removesuffix("\\r\\n").removesuffix("\\n")
        words = rest.split(" ")
        if direction == "C>" and words[0] != "RESULTS":
            requests[words[1]] = rest
        elif direction == "S<" and words[0] in requests:
            results[words[0]] = words[1:]
    assert list(requests) == list(results) == ["1", "2", "3", "4"], (requests, results)
    return [(requests[k], results[k]) for k in requests]


def test_readme_design_session(design: DesignClient, tmp_path: Path) -> None:
    """The README's session, with /w standing for a real directory, answers as shown."""
    work = tmp_path / "w"
    (work / "out").mkdir(parents=True)
    (work / "a.txt").write_bytes(A)
    (work / "b.txt").write_bytes(B)
    for request, expected in _readme_session():
        line = request.replace(" /w/", f" {work}/")
        reqid = line.split(" ")[1]
        deadline = time.monotonic() + DONE_WITHIN
        got = design.shim.run(line, reqid, timeout=60)
        while line.startswith("BOINC_QUERY_BATCH ") and got != expected:  # bounded below
            assert time.monotonic() < deadline and "ERROR" not in got, got
            time.sleep(0.2)
            got = design.shim.run(line, reqid, timeout=60)
        assert got == expected, line
    assert (work / "out" / "out").read_bytes() == A + b"-" + B
    assert (work / "out" / "run7.1-count.txt").read_bytes() == b"1\n"
    assert sorted(p.name for p in (work / "out").iterdir()) == ["count", "out", "run7.1-count.txt"]
