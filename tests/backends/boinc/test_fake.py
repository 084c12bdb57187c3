"""The fake server answers in the same shapes as the real one.

`test_replay_matches_recordings` rebuilds the recorded session (same users, batch and job ids,
clock) on a fake with the live server's quirks, sends each recorded request and compares the
reply with the recorded bytes, digits masked (times, random suffixes and ids of PHP's own
making are not reproducible).
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator

import httpx
import pytest

from app.backends.boinc import models as m
from app.backends.boinc.rpc import BoincClient, output_token
from tests.backends.boinc.conftest import DATA, recorded, request_xml
from tests.fakes.boinc_server import ALICE_AUTH, FakeBoincServer, Quirks

T0 = 1796215631.5  # create_time of the first recorded batch: Wed, 02 Dec 2026 12:47:11 +0000
STDERR = (
    "\n<core_client_version>7.20.5</core_client_version>\n<![CDATA[\n<stderr_txt>\n"
    "2026-12-02 12:48:20 (27434): app started; CPU time 20.000000, flags:\n"
    "2026-12-02 12:48:40 (27434): called boinc_finish(0)\n\n</stderr_txt>\n]]>"
)


def mask(body: bytes) -> bytes:
    """Replace every run of digits, and tempnam()'s random characters, by 0."""
    return re.sub(rb"[0-9]+", b"0", re.sub(rb"(boinc_batch_)\w{6}", rb"\1XXXXXX", body))


class Session:
    """Sends recorded requests to a fake and collects mismatches with the recordings."""

    def __init__(self, fake: FakeBoincServer, http: httpx.Client) -> None:
        self.fake, self.http = fake, http
        self.mismatches: list[str] = []
        self.checked: list[str] = []

    def compare(self, name: str, resp: httpx.Response, *, body: bool = True) -> None:
        rec = recorded(name)
        got = (
            resp.status_code,
            resp.headers["content-type"],
            resp.headers.get("content-disposition"),
        )
        want = (rec.status, rec.content_type, rec.disposition)
        if mask(repr(got).encode()) != mask(repr(want).encode()):
            self.mismatches.append(f"{name}: headers {got} != {want}")
        if body and mask(resp.content) != mask(rec.body):
            self.mismatches.append(
                f"{name}:\n--- fake\n{resp.text}\n--- recorded\n{rec.body.decode()}"
            )
        self.checked.append(name)

    def check(
        self,
        name: str,
        *,
        endpoint: str = "submit_rpc_handler.php",
        files: list[bytes] | None = None,
    ) -> None:
        data = {"request": request_xml(name)}
        parts = [
            (f"file_{k}", (f"f{k}", c, "application/octet-stream"))
            for k, c in enumerate(files or [])
        ]
        resp = self.http.post(self.fake.url + endpoint, data=data, files=parts or None)
        self.compare(name, resp)

    def get(self, name: str, params: dict[str, str | int], *, body: bool = True) -> httpx.Response:
        resp = self.http.get(self.fake.url + "get_output.php", params=params)
        self.compare(name, resp, body=body)
        return resp


@pytest.fixture
def session() -> Iterator[tuple[Session, BoincClient, list[float]]]:
    now = [T0]
    with (
        FakeBoincServer(quirks=Quirks.live(), clock=lambda: now[0]) as fake,
        httpx.Client(timeout=10) as http,
        BoincClient(fake.url, ALICE_AUTH, timeout=10) as client,
    ):
        # The recorded uploads carry unknown contents under real names.
        fake.state.check_jf_md5 = False
        yield Session(fake, http), client, now


def test_replay_matches_recordings(
    session: tuple[Session, BoincClient, list[float]], tmp_path: object
) -> None:
    s, client, now = session
    fake = s.fake
    for name in (
        "ping_empty",
        "ping_selfclose",
        "ping_space",
        "bad_command",
        "bad_auth",
        "no_user_submit_create_batch",
        "no_user_submit_query_batches",
        "create_batch_badapp_badauth",
        "retire_batch_unspecified",
        "retire_batch_nosuch",
    ):
        s.check(name)
    s.check("job_file_bad_action", endpoint="job_file.php")
    s.check("query_files_badname", endpoint="job_file.php")

    assert client.create_batch("uppercase", "b_t1", 1796237231.5312) == 1
    s.check("create_batch_defaultname")
    now[0] = 1796215659.25
    assert client.create_batch("uppercase", "b_t2", 1796237259.4894) == 3
    fake.state.download["jf_in_t2"] = b"hello world t2\n"
    raw = request_xml("submit_batch").replace("<batch_id>5</batch_id>", "<batch_id>3</batch_id>")
    raw = re.sub(r"jf_[0-9a-f]{32}", "jf_in_t2", raw.replace("b_t3_", "b_t2_"))
    assert (
        b"<batch_id>3</batch_id>"
        in s.http.post(fake.url + "submit_rpc_handler.php", data={"request": raw}).content
    )
    s.check("create_batch_defaultname")
    now[0] = 1796215663.6123
    s.check("create_batch")
    s.check("create_batch_defaultname")
    s.check("query_files_1", endpoint="job_file.php")
    s.check("upload_files", endpoint="job_file.php", files=[b"x", b"y"])
    s.check("query_files_2", endpoint="job_file.php")
    s.check("upload_files_again", endpoint="job_file.php", files=[b"x", b"y"])
    s.check("upload_immutability", endpoint="job_file.php", files=[b"other"])
    s.check("upload_count_mismatch", endpoint="job_file.php", files=[b"x"])
    s.check("upload_21_files", endpoint="job_file.php", files=[b"%d" % k for k in range(21)])
    s.check("estimate_batch")
    s.check("submit_batch")
    s.check("submit_batch_again")
    s.check("query_batch")
    s.check("query_batch2")
    assert client.abort_jobs(["b_t2_2"]) == ["b_t2_2"]
    fake.start_job("b_t2_0")
    s.check("query_batches")
    s.check("query_job")
    s.check("abort_jobs")
    s.check("query_batch2_modtime")
    s.check("set_expire_time")
    s.check("abort_batch")
    s.check("query_batch2_aborted")
    s.check("query_batch2_unknown")
    s.check("query_completed_job_unfinished")
    s.check("retire_batch")
    s.check("query_batch_retired")
    s.check("query_batches_after")

    now[0] = 1796215757.3746
    fake.complete_job(
        "b_t2_0",
        outputs={"out": b"HELLO WORLD T2\n"},
        cpu=18.75409,
        elapsed=22.085828,
        credit=0.2,
        stderr=STDERR,
    )
    fake.complete_job(
        "b_t2_1", outputs={"out": b"SECOND FILE T2\n"}, cpu=19.21542, credit=0.23966487708333
    )
    for name in (
        "query_batch2_done",
        "query_batch_done",
        "query_completed_job_done",
        "query_job_done",
    ):
        s.check(name)
    s.check("query_batch2_incremental")
    s.check("get_templates")
    token = output_token(ALICE_AUTH, "b_t2_0_0")
    s.get(
        "get_output_result_file",
        {"cmd": "result_file", "result_name": "b_t2_0_0", "file_num": 0, "auth_str": token},
    )
    s.get(
        "get_output_workunit_file",
        {"cmd": "workunit_file", "wu_name": "b_t2_1", "file_num": 0, "auth_str": ALICE_AUTH},
    )
    s.get(
        "get_output_no_canonical",
        {"cmd": "workunit_file", "wu_name": "b_t2_2", "file_num": 0, "auth_str": ALICE_AUTH},
    )
    s.get(
        "get_output_bad_auth",
        {"cmd": "workunit_file", "wu_name": "b_t2_1", "file_num": 0, "auth_str": "x"},
    )
    params: dict[str, str | int] = {
        "cmd": "batch_files",
        "batch_id": 3,
        "auth_str": output_token(ALICE_AUTH, "3"),
    }
    zipped = s.get("get_output_batch_files", params, body=False).content
    want = zipfile.ZipFile(io.BytesIO(recorded("get_output_batch_files").body))
    got = zipfile.ZipFile(io.BytesIO(zipped))
    assert [(mask(n.encode()), got.read(n)) for n in got.namelist()] == [
        (mask(n.encode()), want.read(n)) for n in want.namelist()
    ]

    for k in range(7, 17):
        name = {8: "perf_r1_100_0", 9: "perf_r1_1000_0"}.get(k, f"perf_{k}")
        assert client.create_batch("uppercase", name) == k
    fake.state.download["jf_ece20bcaeec435da560011b820d19c9f"] = b"perf"
    s.check("perf_submit_100")
    s.check("perf_query_batch2_100")
    many = [
        m.JobSpec(f"perf_r1_1000_0_{k}", inputs=[m.LocalInput("ece20bcaeec435da560011b820d19c9f")])
        for k in range(1000)
    ]
    assert client.submit_batch(9, "uppercase", many) == 9
    s.check("perf_query_batch2_1000")
    s.check("create_batch_escaped_name")
    s.check("query_batch_escaped_name")

    assert s.mismatches == [], "\n\n".join(s.mismatches)
    every = {p.stem for p in DATA.glob("*.rep")}
    assert set(s.checked) == every - {"perf_submit_1000"}  # its request is not kept


# -- behaviour the recordings do not show ----------------------------------------------------


_http: list[httpx.Client] = []


@pytest.fixture(scope="module", autouse=True)
def shared_http() -> Iterator[None]:
    """One HTTP client for the module (creating one costs tens of milliseconds)."""
    with httpx.Client(timeout=10) as http:
        _http.append(http)
        yield
        _http.clear()


def rpc(fake: FakeBoincServer, xml: str, endpoint: str = "submit_rpc_handler.php") -> str:
    """POST one raw request; the reply text."""
    return _http[0].post(fake.url + endpoint, data={"request": xml}).text


def auth(op: str, body: str = "") -> str:
    return f"<{op}><authenticator>{ALICE_AUTH}</authenticator>{body}</{op}>"


def submit(fake: FakeBoincServer, batch_name: str, files: list[str], extra: str = "") -> str:
    jobs = "".join(
        f"<job><name>{batch_name}_{k}</name>{extra}<input_file>{f}</input_file></job>"
        for k, f in enumerate(files)
    )
    return rpc(
        fake,
        auth(
            "submit_batch",
            f"<batch><app_name>uppercase</app_name><batch_name>{batch_name}</batch_name>{jobs}</batch>",
        ),
    )


def test_fixed_server_shapes(fake: FakeBoincServer) -> None:
    fake.state.download["jf_a"] = b"a"
    assert "<batch_id>1</batch_id>" in submit(
        fake, "b", ["<mode>local_staged</mode><source>jf_a</source>"] * 2
    )
    reply = rpc(fake, auth("abort_jobs", "<job_name>b_0</job_name>"))
    assert reply.endswith(
        "<abort_jobs>\n<aborted>b_0</aborted>\n<success>1</success>\n        </abort_jobs>\n    "
    )
    fake.fail_job("b_1", exit_status=-186, stderr="oops <x>")
    reply = rpc(fake, auth("query_completed_job", "<job_name>b_1</job_name>"))
    assert "<error_resultid>2</error_resultid>\n   <exit_status>-186</exit_status>" in reply
    assert "<![CDATA[\noops &lt;x&gt;\n   ]]>" in reply
    # A duplicate association is silently ignored without PHP 8's exceptions.
    files = auth("query_files", "<batch_id>1</batch_id><phys_name>jf_a</phys_name>")
    assert rpc(fake, files, "job_file.php") == rpc(fake, files, "job_file.php")
    assert "<absent_files>\n</absent_files>" in rpc(fake, files, "job_file.php")


def test_get_request_and_multipart_request(fake: FakeBoincServer) -> None:
    http = _http[0]
    got = http.get(fake.url + "submit_rpc_handler.php")
    assert "<error_msg>can't parse request message: </error_msg>" in got.text
    # The C++ client sends the request as a multipart form field.
    multi = http.post(
        fake.url + "submit_rpc_handler.php", files={"request": (None, "<ping> </ping>")}
    )
    assert "<success>1</success>" in multi.text


def test_job_file_parse_error_has_file_and_line(fake: FakeBoincServer) -> None:
    reply = rpc(fake, "<query_files/>", "job_file.php")
    assert "<error_msg>can't parse request message</error_msg>\n    <file>" in reply
    assert "<line>297</line>\n</error>\n" in reply


def test_sandbox_fallthrough() -> None:
    for quirk, expected in ((False, b"real data"), (True, b"data.txt")):
        with FakeBoincServer(quirks=Quirks(sandbox_fallthrough=quirk)) as fake:
            fake.add_sandbox_file(fake.alice, "data.txt", b"real data")
            submit(fake, "sb", ["<mode>sandbox</mode><source>data.txt</source>"])
            phys = fake.job("sb_0").input_files[0]
            assert fake.state.download[phys] == expected


def test_target_team_breaks_create_work() -> None:
    inline = "<mode>inline</mode><source>hi</source>"
    with FakeBoincServer(quirks=Quirks(target_team_failure=True)) as fake:
        reply = submit(fake, "tt", [inline], "<target_team>3</target_team>")
        assert "create_work failed: bad stdin argument" in reply
        assert fake.batch(1).state == 0  # a failed submit leaves the batch INIT
    with FakeBoincServer() as fake:
        assert "<batch_id>1</batch_id>" in submit(
            fake, "tt", [inline], "<target_team>3</target_team>"
        )


def test_template_entity_bug() -> None:
    with FakeBoincServer(quirks=Quirks(template_entity_bug=True, php_notices=True)) as fake:
        reply = submit(fake, "t", ["<mode>inline</mode><source>x</source>"])
        assert "failed to load external entity" in reply
        assert (
            "couldn't parse input template file /home/boincadm/projects/test/templates/uppercase_in"
            in reply
        )


@pytest.mark.parametrize("inverted", [False, True])
def test_file_deleter(inverted: bool) -> None:
    now = [1000.0]
    with FakeBoincServer(quirks=Quirks(inverted_deleter=inverted), clock=lambda: now[0]) as fake:
        fake.state.download |= {"jf_used": b"1", "jf_free": b"2"}
        rpc(fake, auth("create_batch", "<app_name>uppercase</app_name>"))
        used = auth(
            "query_files",
            "<batch_id>1</batch_id><delete_time>1500</delete_time><phys_name>jf_used</phys_name>",
        )
        rpc(fake, used, "job_file.php")
        rpc(
            fake,
            auth("query_files", "<delete_time>1500</delete_time><phys_name>jf_free</phys_name>"),
            "job_file.php",
        )
        assert fake.run_file_deleter() == []  # delete_time not passed yet
        now[0] = 2000.0
        assert fake.run_file_deleter() == (["jf_used"] if inverted else ["jf_free"])


def test_query_files_raises_delete_time_only() -> None:
    with FakeBoincServer() as fake:
        fake.state.download["jf_a"] = b"a"
        for t in (500, 300):
            rpc(
                fake,
                auth("query_files", f"<delete_time>{t}</delete_time><phys_name>jf_a</phys_name>"),
                "job_file.php",
            )
        assert fake.state.job_files["jf_a"].delete_time == 500


def test_expire_batches_and_mod_time_resolution() -> None:
    now = [100.75]
    with FakeBoincServer(clock=lambda: now[0]) as fake:
        submit(fake, "e", ["<mode>inline</mode><source>x</source>"])
        assert fake.job("e_0").mod_time == 100  # whole seconds, like a TIMESTAMP
        since = auth("query_batch2", "<min_mod_time>100.5</min_mod_time><batch_name>e</batch_name>")
        now[0] = 100.9
        fake.complete_job("e_0")
        # Changed at 100.9, stored as 100: a poll from server_time 100.5 misses it (11.7).
        assert "<batch_size>0</batch_size>" in rpc(fake, since)
        rpc(fake, auth("set_expire_time", "<batch_id>1</batch_id><expire_time>150</expire_time>"))
        now[0] = 200.0
        assert fake.expire_batches() == [1]
        assert fake.batch(1).state == 4


def test_get_output_parameter_errors(fake: FakeBoincServer) -> None:
    http, url = _http[0], fake.url + "get_output.php"
    assert http.get(url, params={"cmd": "x", "auth_str": "a"}).text == "bad command\n"
    missing = http.get(url, params={"cmd": "batch_files", "auth_str": "a"})
    assert (missing.status_code, missing.headers["location"]) == (302, "missing_arg_batch_id.html")
    assert "missing or bad parameter: auth_str" in http.get(url, params={"cmd": "x"}).text
    empty = http.get(url, params={"cmd": "batch_files", "batch_id": 99, "auth_str": "a"})
    assert empty.text == "ERROR: no batch 99"
