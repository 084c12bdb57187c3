"""The UNICORE-style commands end to end: a shim process against a real `serve` process.

One live server (SQLite, local backend) serves the module; it has the example apps and
`argv`, registered here, which writes its arguments as JSON to `out`. Replies are
compared byte for byte with lines built here independently of the shim's code: the
status ads are spelt out in HTCondor's compact XML form, the GAHP escaping is the
harness's own.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.e2e.conftest import LiveServer
from tests.gahp.harness import Gahp, esc, tokens

pytestmark = pytest.mark.timeout(120)

ARGV_SCRIPT = (
    "import json, sys; open('out', 'w').write(json.dumps(sys.argv[1:]));"
    " print('argv: stdout'); print('argv: stderr', file=sys.stderr)"
)
ENV_SCRIPT = "import json, os; open('out', 'w').write(json.dumps(dict(os.environ)))"
COMMANDS = (
    "S ASYNC_MODE_OFF ASYNC_MODE_ON BOINC_ABORT_JOBS BOINC_FETCH_OUTPUT BOINC_PING"
    " BOINC_QUERY_BATCH BOINC_QUERY_BATCHES BOINC_RETIRE_BATCH BOINC_SELECT_PROJECT"
    " BOINC_SET_LEASE BOINC_SUBMIT"
    " COMMANDS QUIT RESULTS UNICORE_JOB_CALLBACK UNICORE_JOB_CREATE UNICORE_JOB_DESTROY"
    " UNICORE_JOB_RECOVER UNICORE_JOB_START UNICORE_JOB_STATUS VERSION"
)
CONTACT = re.compile(r"(unicore#[0-9a-f]{20})/\1#(0|\d+\.\d+)")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A real server with the example apps and `argv` (no inputs, output `out`)."""
    tmp = tmp_path_factory.mktemp("unicore-live")
    (tmp / "data").mkdir()
    server = LiveServer(f"sqlite:///{tmp / 'live.db'}", tmp / "data")
    server.start()
    try:
        with server.client() as client:
            app = {
                "name": "argv",
                "inputs": [],
                "outputs": ["out"],
                "local": {"command": [sys.executable, "-c", ARGV_SCRIPT], "wall_seconds": 60},
            }
            reply = client.post("/v1/apps", json=app)
            assert reply.status_code == 201, reply.text
            env_app = {
                "name": "envdump",
                "inputs": [],
                "outputs": ["out"],
                "local": {"command": [sys.executable, "-c", ENV_SCRIPT], "wall_seconds": 60},
            }
            reply = client.post("/v1/apps", json=env_app)
            assert reply.status_code == 201, reply.text
        yield server
    finally:
        server.stop()


# ----- an independent oracle for ads and replies -----


def s(value: str) -> str:
    """A ClassAd string as HTCondor's XML unparser writes it (the test strings' subset)."""
    body = value.replace("\\", "\\\\").replace("\n", "\\n")
    return body.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def xml_ad(**attrs: str | int) -> str:
    """A job ad in the gridmanager's compact XML form."""
    parts = []
    for name, value in attrs.items():
        element = f"<i>{value}</i>" if isinstance(value, int) else f"<s>{s(value)}</s>"
        parts.append(f'<a n="{name}">{element}</a>')
    return "<c>" + "".join(parts) + "</c>"


def real(value: float) -> str:
    """A real as HTCondor's XML unparser writes it."""
    return "0.0" if value == 0 else f"{value:1.15E}"


def status_xml(contact: str, status: int, extra: str = "") -> str:
    """The status ad the shim must produce."""
    head = f'<c><a n="UnicoreJobId"><s>{contact}</s></a><a n="JobStatus"><i>{status}</i></a>'
    return head + extra + "</c>"


def completed_xml(contact: str, job: dict[str, Any], error: str | None = None) -> str:
    """The status ad of a job that ran to its end, from the gateway's view of it."""
    extra = (
        '<a n="ExitBySignal"><b v="f"/></a>'
        f'<a n="ExitCode"><i>{job["exit_code"]}</i></a>'
        f'<a n="RemoteWallClockTime"><r>{real(job["wall_seconds"])}</r></a>'
        f'<a n="RemoteUserCpu"><r>{real(job["cpu_seconds"])}</r></a>'
    )
    if error is not None:
        extra += f'<a n="ErrMessage"><s>{s(error)}</s></a>'
    return status_xml(contact, 4, extra)


class Client:
    """Speaks to one shim like the gridmanager: requests, RESULTS, callback lines."""

    def __init__(self, shim: Gahp) -> None:
        self.shim = shim
        self.lines: list[bytes] = []
        self.reqid = 100

    def send(self, command: str, *args: str) -> str:
        """Send an asynchronous request, check its `S`, return its reqid."""
        self.reqid += 1
        rid = str(self.reqid)
        assert self.shim.call(" ".join([command, rid, *(esc(a) for a in args)])) == b"S"
        return rid

    def result(self, rid: str, timeout: float = 30.0) -> bytes:
        """The raw result line of one request (other lines are kept for later)."""
        deadline = time.monotonic() + timeout
        while True:  # bounded by the deadline
            for line in self.lines:
                if line.startswith(rid.encode() + b" "):
                    self.lines.remove(line)
                    return line
            assert time.monotonic() < deadline, f"no result for {rid}: {self.lines}"
            self.lines += self.shim.results()
            time.sleep(0.05)

    def call(self, command: str, *args: str) -> bytes:
        """Send a request and wait for its result line."""
        return self.result(self.send(command, *args))

    def callbacks(
        self, rid: str, until: Callable[[list[bytes]], bool], timeout: float = 30.0
    ) -> list[bytes]:
        """Callback lines of channel `rid` (in order) until `until` holds for them."""
        got: list[bytes] = []
        deadline = time.monotonic() + timeout
        while not until(got):  # bounded by the deadline
            assert time.monotonic() < deadline, f"callbacks so far: {got}"
            self.lines += self.shim.results()
            mine = [line for line in self.lines if line.startswith(rid.encode() + b" ")]
            self.lines = [line for line in self.lines if line not in mine]
            got += mine
            time.sleep(0.05)
        return got


def status_of(line: bytes) -> int:
    """JobStatus in a status or callback line."""
    match = re.search(rb"JobStatus\"><i>(\d)<", line.replace(b"\\", b""))
    assert match, line
    return int(match[1])


def wait_status(client: Client, contact: str, wanted: int, timeout: float = 30.0) -> bytes:
    """Poll UNICORE_JOB_STATUS until the job has the wanted JobStatus."""
    deadline = time.monotonic() + timeout
    while True:  # bounded by the deadline
        line = client.call("UNICORE_JOB_STATUS", contact)
        if status_of(line) == wanted:
            return line
        assert time.monotonic() < deadline, line
        time.sleep(0.1)


def shim_for(gahp: Callable[..., Gahp], live: LiveServer) -> Client:
    """A started shim whose default project is the live server (no SELECT_PROJECT)."""
    shim = gahp(url=live.url + "/", token=live.token)
    shim.startup()
    return Client(shim)


def create(client: Client, ad: str, rid_check: bool = True) -> str:
    """UNICORE_JOB_CREATE; checks the reply byte for byte and returns the contact."""
    rid = client.send("UNICORE_JOB_CREATE", ad)
    line = client.result(rid)
    fields = tokens(line)
    assert len(fields) == 4 and fields[1] == "S", line
    assert CONTACT.fullmatch(fields[2]), fields[2]
    assert line == f"{rid} S {esc(fields[2])} NULL".encode()
    return fields[2]


def gateway(live: LiveServer, path: str) -> Any:
    """GET a gateway resource as the shim's user."""
    with live.client() as c:
        reply = c.get(path)
        assert reply.status_code == 200, reply.text
        return reply.json()


def job_of(contact: str) -> str:
    """The job name inside a contact."""
    return contact.split("/")[1]


def exitcode_ad(iwd: Path, args: str, **extra: str | int) -> str:
    """A job ad for the `exitcode` example app reading in.txt from iwd."""
    return xml_ad(
        ClusterId=42,
        ProcId=0,
        Cmd="exitcode",
        Arguments=args,
        Iwd=str(iwd),
        TransferInput="in.txt",
        TransferOutput="out",
        Out="job.out",
        Err="job.err",
        **extra,
    )


def make_iwd(tmp_path: Path, name: str = "iwd", content: bytes = b"some input\n") -> Path:
    """An Iwd holding in.txt."""
    iwd = tmp_path / name
    iwd.mkdir()
    (iwd / "in.txt").write_bytes(content)
    return iwd


# ----- the tests -----


def test_advertised_and_malformed_requests(gahp: Callable[..., Gahp]) -> None:
    """COMMANDS lists the six beside the BOINC ones; wrong argument counts answer E."""
    shim = gahp()
    assert shim.line().startswith(b"$GahpVersion: ")
    assert shim.call("COMMANDS") == COMMANDS.encode()
    for bad in (
        "UNICORE_JOB_CREATE 5",
        "UNICORE_JOB_CREATE 5 <c/> extra",
        "UNICORE_JOB_START 6",
        "UNICORE_JOB_STATUS x a/b",
        "UNICORE_JOB_CALLBACK",
        "UNICORE_JOB_CALLBACK 0",
        "UNICORE_JOB_CALLBACK 7 8",
    ):
        assert shim.call(bad) == b"E", bad


def test_create_status_start_run_complete(
    gahp: Callable[..., Gahp], live: LiveServer, tmp_path: Path
) -> None:
    """Idle while created, running once started, completed with files fetched into Iwd."""
    iwd = make_iwd(tmp_path)
    client = shim_for(gahp, live)
    contact = create(client, exitcode_ad(iwd, "--sleep 1.5", rsc_fpops_est="1e9"))
    batch, job = contact.split("/")
    assert gateway(live, f"/v1/batches/{quote(batch, safe='')}")["state"] == "open"
    info = gateway(live, f"/v1/jobs/{quote(job, safe='')}")
    assert info["state"] == "queued" and info["args"] == ["--sleep", "1.5"]
    assert [i["name"] for i in info["inputs"]] == ["in"]

    rid = client.send("UNICORE_JOB_STATUS", contact)
    assert client.result(rid) == f"{rid} S {esc(status_xml(contact, 1))} NULL".encode()
    rid = client.send("UNICORE_JOB_START", contact)
    assert client.result(rid) == f"{rid} S NULL".encode()
    running = wait_status(client, contact, 2)
    assert running.split(b" ", 1)[1] == f"S {esc(status_xml(contact, 2))} NULL".encode()
    assert not (iwd / "out").exists()

    done = wait_status(client, contact, 4)
    info = gateway(live, f"/v1/jobs/{quote(job, safe='')}")
    assert done.split(b" ", 1)[1] == f"S {esc(completed_xml(contact, info))} NULL".encode()
    assert (iwd / "out").read_bytes() == b"some input\n"
    assert (iwd / "job.err").read_text() == "exitcode: exiting with 0\n"
    assert (iwd / "job.out").read_bytes() == b""
    assert sorted(p.name for p in iwd.iterdir()) == ["in.txt", "job.err", "job.out", "out"]


def test_callbacks_report_each_change_once(
    gahp: Callable[..., Gahp], live: LiveServer, tmp_path: Path
) -> None:
    """After UNICORE_JOB_CALLBACK: idle, running, completed, two tokens each, in order."""
    iwd = make_iwd(tmp_path)
    client = shim_for(gahp, live)
    assert client.shim.call("UNICORE_JOB_CALLBACK 1") == b"S"
    contact = create(client, exitcode_ad(iwd, "--sleep 2.5"))
    idle = client.callbacks("1", lambda got: len(got) >= 1)
    assert idle == [f"1 {esc(status_xml(contact, 1))}".encode()]
    assert client.call("UNICORE_JOB_START", contact).endswith(b" S NULL")

    lines = client.callbacks("1", lambda got: any(status_of(x) == 4 for x in got))
    # The completed line goes out only once the files are in Iwd.
    assert (iwd / "out").read_bytes() == b"some input\n"
    info = gateway(live, f"/v1/jobs/{quote(job_of(contact), safe='')}")
    assert lines == [
        f"1 {esc(status_xml(contact, 2))}".encode(),
        f"1 {esc(completed_xml(contact, info))}".encode(),
    ]
    assert all(len(tokens(line)) == 2 for line in idle + lines)
    time.sleep(1.5)  # a watcher round or more: nothing changed, nothing is pushed
    assert client.callbacks("1", lambda got: True) == []


def test_failed_runs(gahp: Callable[..., Gahp], live: LiveServer, tmp_path: Path) -> None:
    """A non-zero exit completes with its ExitCode; a run without its output is held."""
    client = shim_for(gahp, live)
    exit3 = create(client, exitcode_ad(make_iwd(tmp_path, "a"), "--exit 3"))
    no_out = create(client, exitcode_ad(make_iwd(tmp_path, "b"), "--no-output"))
    for contact in (exit3, no_out):
        assert client.call("UNICORE_JOB_START", contact).endswith(b" S NULL")

    line = wait_status(client, exit3, 4)
    info = gateway(live, f"/v1/jobs/{quote(job_of(exit3), safe='')}")
    assert info["state"] == "error" and info["exit_code"] == 3
    expected = completed_xml(exit3, info, error=info["error"])
    assert line.split(b" ", 1)[1] == f"S {esc(expected)} NULL".encode()
    assert (tmp_path / "a" / "out").read_bytes() == b"some input\n"

    line = wait_status(client, no_out, 5)
    error = gateway(live, f"/v1/jobs/{quote(job_of(no_out), safe='')}")["error"]
    held = f'<a n="HoldReason"><s>{s(error)}</s></a><a n="ErrMessage"><s>{s(error)}</s></a>'
    assert line.split(b" ", 1)[1] == f"S {esc(status_xml(no_out, 5, held))} NULL".encode()


def test_destroy(gahp: Callable[..., Gahp], live: LiveServer, tmp_path: Path) -> None:
    """DESTROY aborts a running job and retires its batch; unknown jobs are already gone."""
    client = shim_for(gahp, live)
    contact = create(client, exitcode_ad(make_iwd(tmp_path), "--sleep 30"))
    assert client.call("UNICORE_JOB_START", contact).endswith(b" S NULL")
    wait_status(client, contact, 2)
    rid = client.send("UNICORE_JOB_DESTROY", contact)
    assert client.result(rid) == f"{rid} S NULL".encode()
    batch, job = contact.split("/")
    info = gateway(live, f"/v1/jobs/{quote(job, safe='')}")
    assert info["state"] == "aborted"
    assert gateway(live, f"/v1/batches/{quote(batch, safe='')}")["state"] == "retired"
    line = client.call("UNICORE_JOB_STATUS", contact)
    removed = f'<a n="ErrMessage"><s>{s(info["error"] or "job aborted on the gateway")}</s></a>'
    assert line.split(b" ", 1)[1] == f"S {esc(status_xml(contact, 3, removed))} NULL".encode()

    assert client.call("UNICORE_JOB_DESTROY", "nobatch/nojob").endswith(b" S NULL")
    rid = client.send("UNICORE_JOB_DESTROY", "no-slash")
    assert (
        client.result(rid)
        == (f"{rid} F " + esc("error destroying job: -1 malformed job contact 'no-slash'")).encode()
    )


def test_recover_after_a_restart(
    gahp: Callable[..., Gahp], live: LiveServer, tmp_path: Path
) -> None:
    """A new shim process answers for a job created by an earlier one, given its ad."""
    iwd = make_iwd(tmp_path, content=b"recovered\n")
    first = shim_for(gahp, live)
    contact = create(first, exitcode_ad(iwd, "--sleep 1"))
    assert first.call("UNICORE_JOB_START", contact).endswith(b" S NULL")
    first.shim.stop()
    assert not (iwd / "out").exists()

    second = shim_for(gahp, live)
    assert second.shim.call("UNICORE_JOB_CALLBACK 9") == b"S"
    recovered = exitcode_ad(iwd, "--sleep 1", GridJobId=f"unicore usite vsite {contact}")
    rid = second.send("UNICORE_JOB_RECOVER", recovered)
    assert second.result(rid) == f"{rid} S NULL".encode()
    lines = second.callbacks("9", lambda got: any(status_of(x) == 4 for x in got))
    assert [status_of(x) for x in lines][-1] == 4 and len(lines) <= 2
    assert (iwd / "out").read_bytes() == b"recovered\n"
    assert second.call("UNICORE_JOB_STATUS", contact).split(b" ")[1] == b"S"

    unknown = exitcode_ad(iwd, "", GridJobId="unicore u v nobatch/nojob")
    rid = second.send("UNICORE_JOB_RECOVER", unknown)
    assert (
        second.result(rid)
        == (f"{rid} F " + esc("error recovering job: -1 no job named nojob")).encode()
    )
    rid = second.send("UNICORE_JOB_RECOVER", exitcode_ad(iwd, ""))
    assert (
        second.result(rid)
        == (f"{rid} F " + esc("error recovering job: the job ad has no GridJobId")).encode()
    )


def test_arguments_survive_the_round_trip(
    gahp: Callable[..., Gahp], live: LiveServer, tmp_path: Path
) -> None:
    """Spaces, quotes and backslashes: XML + ClassAd + GAHP escaping, both syntaxes."""
    iwd = tmp_path / "iwd with space"
    iwd.mkdir()
    cases = [
        (
            xml_ad(
                Cmd="argv",
                Iwd=str(iwd),
                Arguments="'hello world' 'it''s' \"dq\" back\\slash 'C:\\tmp\\new dir' '' <&>",
                TransferOutputRemaps="out=out0.json",
            ),
            ["hello world", "it's", '"dq"', "back\\slash", "C:\\tmp\\new dir", "", "<&>"],
        ),
        (
            xml_ad(
                Cmd="argv",
                Iwd=str(iwd),
                Args='a\\b  c:\\x "q"',
                TransferOutputRemaps="out=out1.json",
            ),
            ["a\\b", "c:\\x", '"q"'],
        ),
        (
            '[ Cmd = "argv"; Iwd = "' + str(iwd) + '"; TransferOutputRemaps = "out=out2.json";'
            ' Arguments = "\'a b\' c\\\\d \\"e\\"" ]',
            ["a b", "c\\d", '"e"'],
        ),
    ]
    client = shim_for(gahp, live)
    contacts = [create(client, ad) for ad, _ in cases]
    for contact in contacts:
        assert client.call("UNICORE_JOB_START", contact).endswith(b" S NULL")
    for i, (contact, (_, expected)) in enumerate(zip(contacts, cases, strict=True)):
        wait_status(client, contact, 4)
        assert json.loads((iwd / f"out{i}.json").read_text()) == expected
        info = gateway(live, f"/v1/jobs/{quote(job_of(contact), safe='')}")
        assert info["args"] == expected


def test_environment_reaches_the_job(
    gahp: Callable[..., Gahp], live: LiveServer, tmp_path: Path
) -> None:
    """Env (old syntax) and Environment (new syntax) become the job's variables."""
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    ads = [
        xml_ad(Cmd="envdump", Iwd=str(iwd), Env="A=1;B=x y", TransferOutputRemaps="out=e0"),
        xml_ad(
            Cmd="envdump", Iwd=str(iwd), Environment="C='it''s' D=\\", TransferOutputRemaps="out=e1"
        ),
    ]
    client = shim_for(gahp, live)
    contacts = [create(client, ad) for ad in ads]
    for contact in contacts:
        assert client.call("UNICORE_JOB_START", contact).endswith(b" S NULL")
        wait_status(client, contact, 4)
    first = json.loads((iwd / "e0").read_text())
    second = json.loads((iwd / "e1").read_text())
    assert (first["A"], first["B"]) == ("1", "x y")
    assert (second["C"], second["D"]) == ("it's", "\\")
    assert "A" not in second


def test_bad_ads_create_nothing(
    gahp: Callable[..., Gahp], live: LiveServer, tmp_path: Path
) -> None:
    """Each refused ad answers `F NULL <error>` (four tokens) and leaves no batch behind."""
    iwd = make_iwd(tmp_path)
    good = {"Cmd": "uppercase", "Iwd": str(iwd), "TransferInput": "in.txt"}
    cases = [
        ('<c><a n="Cmd"><s>uppercase</s></a>', "error creating job: malformed XML: "),
        (
            '[ Cmd = "uppercase" Iwd = "/x" ]',
            "error creating job: unexpected 'Iwd' at offset 20 (missing ';'?)",
        ),
        (
            xml_ad(**good, Frobnicate="1"),
            "error creating job: unknown attribute Frobnicate: the gateway does not honour it"
            " (list it in BoincIgnoreAttributes to have it ignored)",
        ),
        (
            xml_ad(Iwd=str(iwd), TransferInput="in.txt"),
            "error creating job: the job ad has no Cmd (the name of the app to run)",
        ),
        (xml_ad(**{**good, "Cmd": "nope"}), "error getting app: -1 "),
        (
            xml_ad(Cmd="uppercase", Iwd=str(iwd)),
            "error creating job: -1 app uppercase takes 1 input files (in), the job ad gives 0",
        ),
        (
            xml_ad(**{**good, "TransferInput": "missing.txt"}),
            f"error creating job: cannot read input file {iwd}/missing.txt",
        ),
        (
            xml_ad(**good, Environment="1A=1"),
            "error creating job: Environment entry '1A=1' is not NAME=value",
        ),
        (xml_ad(**good, Out="../x.out"), "error creating job: Out '../x.out' is outside Iwd"),
        (
            xml_ad(**good, TransferOutput="nope"),
            "error creating job: -1 app uppercase has no output nope",
        ),
    ]
    client = shim_for(gahp, live)
    before = gateway(live, "/v1/batches?limit=1000")["items"]
    for ad, message in cases:
        rid = client.send("UNICORE_JOB_CREATE", ad)
        line = client.result(rid)
        fields = tokens(line)
        assert len(fields) == 4 and fields[1:3] == ["F", "NULL"], line
        assert fields[3].startswith(message), (fields[3], message)
        if not message.endswith(" "):
            assert fields[3] == message
    assert gateway(live, "/v1/batches?limit=1000")["items"] == before

    for command, shape in (("UNICORE_JOB_START", 3), ("UNICORE_JOB_STATUS", 4)):
        rid = client.send(command, "nobatch/nojob")
        line = client.result(rid)
        assert len(tokens(line)) == shape and tokens(line)[1] == "F", line
        assert tokens(line)[-1].endswith("-1 no job named nojob"), line


def test_watcher_uses_the_change_cursor(
    gahp: Callable[..., Gahp], fake: Any, tmp_path: Path
) -> None:
    """Against the fake: one batch query per round for all jobs, jobs read only when done."""
    iwd = make_iwd(tmp_path)
    shim = gahp(url=fake.url, token="0123456789abcdef0123456789abcdef")
    shim.startup()
    client = Client(shim)
    assert shim.call("UNICORE_JOB_CALLBACK 1") == b"S"
    ad = xml_ad(Cmd="upper", Iwd=str(iwd), TransferInput="in.txt")
    contacts = [create(client, ad) for _ in range(3)]
    for contact in contacts:
        assert client.call("UNICORE_JOB_START", contact).endswith(b" S NULL")
    client.callbacks("1", lambda got: len(got) >= 3)  # each idle once
    time.sleep(2.5)  # two more rounds at least

    def requests(method: str, prefix: str) -> list[Any]:
        return [r for r in fake.requests if r.method == method and r.path.startswith(prefix)]

    queries = requests("POST", "/v1/batches/query")
    batches = sorted(c.split("/")[0] for c in contacts)
    settled = [q.body for q in queries if sorted(q.body["batches"]) == batches]
    assert len(settled) >= 2 and all(b["since"] != "0" for b in settled[-2:])
    job_reads = len(requests("GET", "/v1/jobs/"))
    assert job_reads == 3  # START's check of each contact, no polling

    for contact in contacts:
        fake.finish(contact.split("/")[0])
    done = client.callbacks("1", lambda got: len(got) >= 3)
    assert sorted(status_of(x) for x in done) == [4, 4, 4]
    assert len(requests("GET", "/v1/jobs/")) == job_reads + 3 + 3  # job, then its output
    assert (iwd / "out").read_bytes() == b"SOME INPUT\n"


def test_jobs_joining_a_named_batch(
    gahp: Callable[..., Gahp], live: LiveServer, tmp_path: Path
) -> None:
    """BoincBatch: jobs join one open batch; START runs it whole; it retires when idle."""
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    batch = f"joined-{time.time_ns()}"
    client = shim_for(gahp, live)

    def job_ad(proc: int, args: str) -> str:
        return xml_ad(
            ClusterId=7,
            ProcId=proc,
            Cmd="argv",
            Arguments=args,
            Iwd=str(iwd),
            TransferOutputRemaps=f"out=out{proc}.json",
            BoincBatch=batch,
        )

    contacts = []
    for proc in (0, 1):
        rid = client.send("UNICORE_JOB_CREATE", job_ad(proc, f"job {proc}"))
        contact = f"{batch}/{batch}#7.{proc}"
        assert client.result(rid) == f"{rid} S {esc(contact)} NULL".encode()
        contacts.append(contact)
    summary = gateway(live, f"/v1/batches/{quote(batch, safe='')}")
    assert summary["state"] == "open" and summary["counts"]["queued"] == 2
    for contact in contacts:  # the first START submits the batch, the second finds it running
        assert client.call("UNICORE_JOB_START", contact).endswith(b" S NULL")
    for proc, contact in enumerate(contacts):
        wait_status(client, contact, 4)
        assert json.loads((iwd / f"out{proc}.json").read_text()) == ["job", str(proc)]

    rid = client.send("UNICORE_JOB_CREATE", job_ad(2, "late"))
    assert (
        client.result(rid)
        == (
            f"{rid} F NULL "
            + esc(f"error creating batch: -1 batch {batch} is complete; jobs join open batches")
        ).encode()
    )
    assert client.call("UNICORE_JOB_DESTROY", contacts[0]).endswith(b" S NULL")
    # The other job is still the shim's to answer for: its batch (and files) stay.
    assert gateway(live, f"/v1/batches/{quote(batch, safe='')}")["state"] == "complete"
    assert client.call("UNICORE_JOB_DESTROY", contacts[1]).endswith(b" S NULL")
    assert gateway(live, f"/v1/batches/{quote(batch, safe='')}")["state"] == "retired"
