"""Request building and lenient reply parsing, against every reply recorded from a real server."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from app.backends.boinc import models as m
from app.backends.boinc import replies as rp
from app.backends.boinc.errors import (
    BoincAuthError,
    BoincBatchStateError,
    BoincDatabaseError,
    BoincError,
    BoincFileError,
    BoincNotFoundError,
    BoincPermanentError,
    BoincPermissionError,
    BoincProjectDownError,
    BoincProtocolError,
    BoincRequestError,
    BoincSubmitError,
    error_from_reply,
)
from app.backends.boinc.xml import (
    RAW_FIELDS,
    Reply,
    add,
    fmt_num,
    new_request,
    parse_reply,
    serialize,
)
from tests.backends.boinc.conftest import DATA, recorded, request_xml


def _op(name: str) -> str:
    if name == "perf_submit_1000":
        return "submit_batch"  # its 145 KB request is not kept
    return request_xml(name).lstrip()[1:].split(">", 1)[0].split(" ")[0].rstrip("/")


def _parse(name: str) -> Reply:
    op = _op(name)
    return parse_reply(
        recorded(name).body, op, raw_fields=() if op == "get_templates" else RAW_FIELDS
    )


def _statuses(r: Reply) -> list[str]:
    return [j.status for j in rp.query_batch2_result(r.root, ["b"]).jobs]


def _detail(r: Reply) -> m.BatchDetail:
    return rp.batch_detail(r.root)


# name -> (what to extract from the parsed reply, expected value)
SUCCESS: dict[str, tuple[Callable[[Reply], object], object]] = {
    "abort_batch": (lambda r: r.root.findtext("success"), "1"),
    "abort_jobs": (lambda r: (r.aborted, r.root.findtext("success")), (("b_t3_2",), "1")),
    "create_batch": (lambda r: r.root.findtext("batch_id"), "5"),
    "create_batch_defaultname": (lambda r: r.root.findtext("batch_id"), "6"),
    "create_batch_escaped_name": (lambda r: r.root.findtext("batch_id"), "17"),
    "estimate_batch": (lambda r: r.root.findtext("seconds"), "3"),
    "get_templates": (
        lambda r: (rp.templates(r.root).input_open_names, rp.templates(r.root).output_open_names),
        (("in",), ("out",)),
    ),
    "perf_query_batch2_100": (lambda r: set(_statuses(r)) | {len(_statuses(r))}, {"UNSENT", 100}),
    "perf_query_batch2_1000": (lambda r: set(_statuses(r)) | {len(_statuses(r))}, {"UNSENT", 1000}),
    "perf_submit_100": (lambda r: r.root.findtext("batch_id"), "8"),
    "perf_submit_1000": (lambda r: r.root.findtext("batch_id"), "9"),
    "ping_space": (lambda r: r.root.findtext("success"), "1"),
    "query_batch": (
        lambda r: (
            _detail(r).batch.name,
            _detail(r).batch.state,
            [j.status for j in _detail(r).jobs],
            len(r.notices),
        ),
        ("b_t3", m.BatchState.IN_PROGRESS, ["queued"] * 3, 2),
    ),
    "query_batch2": (
        lambda r: (rp.query_batch2_result(r.root, ["b_t3"]).server_time, _statuses(r)),
        (1796215663.6123, ["UNSENT"] * 3),
    ),
    "query_batch2_aborted": (_statuses, ["ERROR"] * 3),
    "query_batch2_done": (_statuses, ["DONE", "DONE", "ERROR"]),
    "query_batch2_incremental": (
        lambda r: rp.query_batch2_result(r.root, ["b_t2"]).batches,
        (m.BatchStatuses("b_t2", ()),),
    ),
    "query_batch2_modtime": (_statuses, ["UNSENT", "UNSENT", "ERROR"]),
    "query_batch_done": (
        lambda r: (
            _detail(r).batch.state,
            _detail(r).batch.total_cpu_time,
            [(j.status, j.cpu_time, j.errors) for j in _detail(r).jobs],
        ),
        (
            m.BatchState.COMPLETE,
            37.96951,
            [("done", 18.75409, ()), ("done", 19.21542, ()), ("error", None, ("cancelled",))],
        ),
    ),
    "query_batch_escaped_name": (lambda r: (_detail(r).batch.name, _detail(r).jobs), ("a&b<c", ())),
    "query_batch_retired": (lambda r: _detail(r).batch.state, m.BatchState.RETIRED),
    "query_batches": (
        lambda r: ([rp.batch_info(b).id for b in r.root.findall("batch")], len(r.notices)),
        ([1, 2, 3, 4, 5, 6], 12),
    ),
    "query_batches_after": (
        lambda r: [(rp.batch_info(b).id, rp.batch_info(b).state) for b in r.root.findall("batch")],
        [(2, 0), (3, 1), (4, 0), (5, 3), (6, 0)],
    ),
    "query_completed_job_done": (
        lambda r: (rp.completed_job(r.root).exit_status, rp.completed_job(r.root).partial),
        (0, False),
    ),
    "query_files_1": (lambda r: [f.text for f in r.root.iterfind("absent_files/file")], ["0", "1"]),
    "query_job": (
        lambda r: rp.job_instances(r.root),
        (m.JobInstance(1, "b_t2_0_0", "In progress"),),
    ),
    "query_job_done": (lambda r: rp.job_instances(r.root)[0].outfile_sizes, (15,)),
    "retire_batch": (lambda r: (r.root.findtext("success"), len(r.notices)), ("1", 2)),
    "set_expire_time": (lambda r: r.root.findtext("success"), "1"),
    "submit_batch": (lambda r: r.root.findtext("batch_id"), "5"),
    "upload_files": (lambda r: r.root.find("success") is not None, True),
}

FAILURE: dict[str, tuple[type[BoincError], str]] = {
    "bad_auth": (BoincAuthError, "bad authenticator"),
    "bad_command": (BoincRequestError, "bad command"),
    "create_batch_badapp_badauth": (BoincNotFoundError, "app not found: nosuchapp"),
    "job_file_bad_action": (BoincRequestError, "no such action"),
    "no_user_submit_create_batch": (BoincPermissionError, "no submit access"),
    "no_user_submit_query_batches": (BoincPermissionError, "no file access"),
    "ping_empty": (BoincRequestError, "can't parse request message: <ping></ping>"),
    "ping_selfclose": (BoincRequestError, "can't parse request message: <ping/>"),
    "query_batch2_unknown": (BoincNotFoundError, "no batch named nosuch_t3"),
    "query_completed_job_unfinished": (BoincProtocolError, "error in your SQL syntax"),
    "query_files_2": (BoincProtocolError, "Duplicate entry '7-5' for key 'job_file_id'"),
    "query_files_badname": (BoincFileError, "bad filename"),
    "retire_batch_nosuch": (BoincNotFoundError, "no such batch"),
    "retire_batch_unspecified": (BoincNotFoundError, "batch not specified"),
    "submit_batch_again": (BoincBatchStateError, "batch not in init state"),
    "upload_21_files": (BoincFileError, "# of uploaded files (20) doesn't agree with request (21)"),
    "upload_count_mismatch": (BoincFileError, "(1) doesn't agree with request (2)"),
    "upload_files_again": (
        BoincProtocolError,
        "Duplicate entry 'jf_16aacb3285a8e7609e2efe4a7bd03507'",
    ),
    "upload_immutability": (BoincFileError, "file immutability violation for jf_16aacb"),
}

RPC_REPLIES = sorted(p.stem for p in DATA.glob("*.rep") if not p.stem.startswith("get_output"))


def test_every_recorded_reply_has_an_expectation() -> None:
    assert len(RPC_REPLIES) == 50  # plus 5 get_output.php downloads, in test_recorded.py
    assert set(RPC_REPLIES) == set(SUCCESS) | set(FAILURE)


@pytest.mark.parametrize("name", sorted(SUCCESS))
def test_recorded_success(name: str) -> None:
    extract, expected = SUCCESS[name]
    assert extract(_parse(name)) == expected


@pytest.mark.parametrize("name", sorted(FAILURE))
def test_recorded_failure(name: str) -> None:
    cls, text = FAILURE[name]
    with pytest.raises(cls) as info:
        _parse(name)
    assert type(info.value) is cls
    detail = (
        info.value.php_fatal if isinstance(info.value, BoincProtocolError) else info.value.message
    )
    assert text in (detail or "")
    assert info.value.retryable is (cls is BoincProtocolError)


def test_completed_job_stderr_is_unescaped() -> None:
    job = rp.completed_job(_parse("query_completed_job_done").root)
    assert (job.canonical_resultid, job.elapsed_time, job.cpu_time) == (1, 22.085828, 18.75409)
    assert job.stderr_out is not None
    assert job.stderr_out.startswith(
        "\n<core_client_version>7.20.5</core_client_version>\n<![CDATA["
    )
    assert "called boinc_finish(0)\n\n</stderr_txt>\n]]>" in job.stderr_out
    assert job.stderr_out.endswith("]]>")


def test_truncated_completed_job_is_salvaged() -> None:
    with pytest.raises(BoincProtocolError) as info:
        _parse("query_completed_job_unfinished")
    assert rp.salvage_completed_job(info.value) == m.CompletedJob(error_mask=0, partial=True)
    with pytest.raises(BoincProtocolError) as other:
        _parse("query_files_2")
    assert rp.salvage_completed_job(other.value) is None


# -- building requests -----------------------------------------------------------------------


def test_request_values_are_escaped() -> None:
    root = new_request("create_batch", "auth")
    add(root, "batch_name", 'a&b<c>"d')
    assert serialize(root) == (
        "<create_batch><authenticator>auth</authenticator>"
        '<batch_name>a&amp;b&lt;c&gt;"d</batch_name></create_batch>'
    )


def test_ping_root_is_never_empty() -> None:
    assert serialize(new_request("ping")) == "<ping> </ping>"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (7, "7"),
        (1e12, "1000000000000"),
        (1796237263.655497, "1796237263.655497"),
        (1e20, "1e+20"),
        (True, "1"),
    ],
)
def test_fmt_num(value: float, text: str) -> None:
    assert fmt_num(value) == text


def test_fmt_num_rejects_nan() -> None:
    with pytest.raises(ValueError):
        fmt_num(float("nan"))


# -- lenient parsing -------------------------------------------------------------------------

DECL = b'<?xml version="1.0" encoding="ISO-8859-1" ?>\n'


def test_utf8_body_despite_iso_declaration() -> None:
    body = DECL + "<query_batch>\n<id>3</id><name>café ☃</name>\n</query_batch>\n".encode()
    assert rp.batch_info(parse_reply(body, "query_batch").root).name == "café ☃"


def test_raw_names_are_taken_literally() -> None:
    body = DECL + b"<query_batches><batch><name>x&amp;y &lt;</name></batch></query_batches>"
    batch = parse_reply(body, "query_batches").root.find("batch")
    assert batch is not None
    assert rp.batch_info(batch).name == "x&amp;y &lt;"


def test_text_notices_and_notice_before_declaration() -> None:
    notice = b"\nWarning: Undefined variable $x in /p/util.inc on line 3\n"
    body = notice + DECL + b"<retire_batch>" + notice + b"<success>1</success></retire_batch>"
    reply = parse_reply(body, "retire_batch")
    assert reply.root.findtext("success") == "1"
    assert reply.notices == ("Warning: Undefined variable $x in /p/util.inc on line 3",) * 2


def test_job_stderr_lines_are_not_taken_for_notices() -> None:
    body = DECL + (
        b"<query_completed_job><completed_job><error_mask>0</error_mask>"
        b"<stderr_out><![CDATA[\nWarning: low memory\n   ]]></stderr_out>"
        b"</completed_job></query_completed_job>"
    )
    job = rp.completed_job(parse_reply(body, "query_completed_job").root)
    assert job.stderr_out == "Warning: low memory"


def test_rpc_debug_error_without_number_is_not_fatal() -> None:
    body = DECL + (
        b"<ping><error><error_msg><![CDATA[Creation of dynamic property]]></error_msg>"
        b"<type>Deprecated</type></error>\n<success>1</success></ping>"
    )
    assert parse_reply(body, "ping").root.findtext("success") == "1"


def test_error_num_zero_is_not_fatal() -> None:
    body = DECL + b"<ping><error><error_num>0</error_num><error_msg>ok</error_msg></error></ping>"
    assert parse_reply(body, "ping").root.tag == "ping"


def test_unparsable_reply_with_error_is_salvaged() -> None:
    body = DECL + b"<query_batches>\n<error>\n<error_num>-183</error_num>\n"
    body += b"<error_msg>project down for maintenance</error_msg>\n</error>\n<b"
    with pytest.raises(BoincProjectDownError) as info:
        parse_reply(body, "query_batches")
    assert info.value.retryable and info.value.error_num == -183


@pytest.mark.parametrize(
    "body", [b"", DECL, b"<html><body>Proxy error</body></html>", DECL + b"<ping><success>1"]
)
def test_garbage_is_a_protocol_error(body: bytes) -> None:
    with pytest.raises(BoincProtocolError) as info:
        parse_reply(body, "ping")
    assert info.value.retryable


def test_entities_are_refused() -> None:
    body = b'<?xml version="1.0"?><!DOCTYPE ping [<!ENTITY x "y">]><ping>&x;</ping>'
    with pytest.raises(BoincProtocolError):
        parse_reply(body, "ping")


# -- error classification --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("num", "msg", "cls"),
    [
        (-183, "project down for maintenance", BoincProjectDownError),
        (-138, "Can't connect to database", BoincDatabaseError),
        (-1, "no authenticator", BoincAuthError),
        (-1, "not owner of batch", BoincPermissionError),
        (-1, "no batch 12", BoincNotFoundError),
        (-1, "job b_1 is not part of a batch", BoincNotFoundError),
        (-1, "create_work failed: can't open template", BoincSubmitError),
        (-1, "couldn't parse input template file /p/templates/a_in", BoincSubmitError),
        (-1, "Can't create batch: Field 'x' doesn't have a default value", BoincDatabaseError),
        (
            -1,
            "BoincJobFile::insert(jf_1) failed: Duplicate entry 'jf_1' for key 'jf_name'",
            BoincFileError,
        ),
        (-1, "jf_1 upload failed because: The uploaded file exceeds the limit", BoincFileError),
        (-1, "something new", BoincPermanentError),
    ],
)
def test_error_from_reply(num: int, msg: str, cls: type[BoincError]) -> None:
    err = error_from_reply(num, msg)
    assert type(err) is cls
    assert (err.error_num, err.message) == (num, msg)
    assert err.retryable is (cls in (BoincProjectDownError, BoincDatabaseError))
