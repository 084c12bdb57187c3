"""The fake `job_file.php` (section 3) and `get_output.php` / `get_output2.php` (section 4)."""

from __future__ import annotations

import io
import re
import string
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass, field

from tests.fakes import boinc_state as st
from tests.fakes.boinc_php import (
    HTML_TYPE,
    Output,
    PhpFatal,
    Quirks,
    XmlError,
    i,
    sql_frames,
)
from tests.fakes.boinc_state import BoincState, JobFile, Result
from tests.fakes.boinc_submit import authenticate

VALID_NAME = re.compile(r"^[A-Za-z0-9_\-. ]+$")  # is_valid_filename(), PHP \w plus "-. "
JF_MD5 = re.compile(r"^jf_([0-9a-f]{32})$")
UPLOAD_DIR = f"{st.PROJECT_DIR}/upload"
OCTET = "application/octet-stream"


@dataclass
class UploadedFile:
    """One entry of PHP's $_FILES: the content, or the upload error text."""

    field: str
    data: bytes = b""
    error: str | None = None


@dataclass
class HttpReply:
    """A complete HTTP answer of a PHP script."""

    body: bytes
    content_type: str = HTML_TYPE
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


def php_files(
    parts: list[tuple[str, str, bytes]], max_file_uploads: int, upload_max_filesize: int
) -> list[UploadedFile]:
    """$_FILES: one entry per field name, at most max_file_uploads, size-checked."""
    entries: dict[str, UploadedFile] = {}
    for name, _filename, data in parts:
        if len(entries) >= max_file_uploads and name not in entries:
            continue  # PHP silently drops the extra parts
        if len(data) > upload_max_filesize:
            err = "The uploaded file exceeds the upload_max_filesize directive in php.ini"
            entries[name] = UploadedFile(name, error=err)
        else:
            entries[name] = UploadedFile(name, data)
    return list(entries.values())


def _phys_names(r: ET.Element) -> list[str]:
    names = ["".join(e.itertext()) for e in r.findall("phys_name")]
    for name in names:
        if not VALID_NAME.match(name) or len(name) > 255:
            raise XmlError("bad filename")
    return names


def _associate(state: BoincState, q: Quirks, jf: JobFile, batch_id: int, frames: list[str]) -> None:
    if (jf.id, batch_id) not in state.assocs:
        state.assocs.add((jf.id, batch_id))
    elif q.sql_exceptions:
        raise PhpFatal(f"Duplicate entry '{jf.id}-{batch_id}' for key 'job_file_id'", frames)
    # else: the handler ignores the failed insert


def query_files(state: BoincState, q: Quirks, r: ET.Element, out: Output) -> None:
    """query_files: 0-based indices of absent files; present ones are kept and associated."""
    authenticate(state, r, None)
    batch_id, delete_time, now = i(r, "batch_id"), i(r, "delete_time"), state.now()
    absent: list[int] = []
    for k, elem in enumerate(r.findall("phys_name")):
        name = "".join(elem.itertext())
        if not VALID_NAME.match(name) or len(name) > 255:
            raise XmlError("bad filename")  # earlier names stay processed
        jf = state.job_files.get(name)
        if jf is not None and jf.delete_time < delete_time:
            # Raised before the existence check, to close the race with the deleter (3.6).
            jf.delete_time = delete_time
        if name in state.download:
            if jf is None:
                jf = state.job_files[name] = JobFile(
                    state.next_id("job_file"), name, now, delete_time
                )
            if batch_id:
                frames = sql_frames(
                    "{inc}/db_conn.inc(157): DbConn->do_query()",
                    "{inc}/submit_db.inc(145): DbConn->insert()",
                    "{user}/job_file.php(146): BoincBatchFileAssoc::insert()",
                    "{user}/job_file.php(307): query_files()",
                )
                _associate(state, q, jf, batch_id, frames)
        else:
            if jf is not None:
                del state.job_files[name]
            absent.append(k)
    out.echo("<absent_files>\n" + "".join(f"<file>{k}</file>\n" for k in absent))
    out.echo("</absent_files>\n        </query_files>\n    ")


def upload_files(
    state: BoincState, q: Quirks, r: ET.Element, out: Output, files: list[UploadedFile]
) -> None:
    """upload_files: the i-th file part is stored under the i-th phys_name."""
    authenticate(state, r, None)
    names = [("".join(e.itertext())) for e in r.findall("phys_name")]
    if len(files) != len(names):
        raise XmlError(
            f"# of uploaded files ({len(files)}) doesn't agree with request ({len(names)})"
        )
    _phys_names(r)
    batch_id, delete_time = i(r, "batch_id"), i(r, "delete_time")
    for name, part in zip(names, files, strict=True):
        if part.error is not None:
            raise XmlError(f"{name} upload failed because: {part.error}")
        digest = st.md5_hex(part.data)
        jf_md5 = JF_MD5.match(name)
        if state.check_jf_md5 and jf_md5 and jf_md5.group(1) != digest:
            # Not a real-server check (it trusts names); it catches client bugs in tests.
            raise XmlError(f"fake server: content of {name} has md5 {digest}")
        existing = state.download.get(name)
        if existing is not None and existing != part.data:
            raise XmlError(f"file immutability violation for {name}")
        state.download[name] = part.data
        if name in state.job_files:
            msg = f"Duplicate entry '{name}' for key 'jf_name'"
            if q.sql_exceptions:
                raise PhpFatal(
                    msg,
                    sql_frames(
                        "{inc}/db_conn.inc(157): DbConn->do_query()",
                        "{inc}/submit_db.inc(124): DbConn->insert()",
                        "{user}/job_file.php(256): BoincJobFile::insert()",
                        "{user}/job_file.php(310): upload_files()",
                    ),
                )
            raise XmlError(f"BoincJobFile::insert({name}) failed: {msg}")
        jf = JobFile(state.next_id("job_file"), name, state.now(), delete_time)
        state.job_files[name] = jf
        if batch_id:
            frames = sql_frames(
                "{inc}/db_conn.inc(157): DbConn->do_query()",
                "{inc}/submit_db.inc(145): DbConn->insert()",
                "{user}/job_file.php(262): BoincBatchFileAssoc::insert()",
                "{user}/job_file.php(310): upload_files()",
            )
            _associate(state, q, jf, batch_id, frames)
    out.echo("<success/>\n        </upload_files>\n    ")


# -- outputs ---------------------------------------------------------------------------------


def _attachment(name: str, data: bytes) -> HttpReply:
    """do_download(): the file as an attachment."""
    return HttpReply(data, OCTET, headers={"Content-Disposition": f"attachment; filename={name}"})


def _zip(entries: list[tuple[str, bytes]]) -> bytes:
    if not entries:
        return b""  # `zip` made nothing; the script touches an empty file (4.1)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return buf.getvalue()


class _Missing(Exception):
    def __init__(self, reply: HttpReply) -> None:
        self.reply = reply


def _get_str(params: dict[str, str], name: str) -> str:
    if not params.get(name):
        raise _Missing(HttpReply(f"<h1>Error</h1>missing or bad parameter: {name}".encode()))
    return params[name]


def _get_int(params: dict[str, str], name: str) -> int:
    value = params.get(name)
    if value is None:
        raise _Missing(HttpReply(b"", status=302, headers={"Location": f"missing_arg_{name}.html"}))
    if not re.fullmatch(r"-?\d+", value):
        raise _Missing(HttpReply(b"", status=302, headers={"Location": "non_num_arg.html"}))
    return int(value)


def _tempnam(state: BoincState) -> str:
    """The six random characters PHP's tempnam() appends."""
    return "".join(state.rng.choice(string.ascii_letters + string.digits) for _ in range(6))


def _canonical(state: BoincState, wu: st.Workunit) -> Result | None:
    return state.results.get(wu.canonical_resultid) if wu.canonical_resultid else None


def get_output(state: BoincState, params: dict[str, str]) -> HttpReply:
    """get_output.php: the four token-authorised commands."""
    try:
        return _get_output(state, params)
    except _Missing as exc:
        return exc.reply


def _error(msg: str) -> HttpReply:
    return HttpReply(f"ERROR: {msg}".encode())


def _get_output(state: BoincState, params: dict[str, str]) -> HttpReply:
    cmd, auth_str = _get_str(params, "cmd"), _get_str(params, "auth_str")
    wu: st.Workunit | None
    if cmd == "result_file":
        name, num = _get_str(params, "result_name"), _get_int(params, "file_num")
        res = state.result_by_name(name)
        if res is None:
            return _error(f"no job instance {name}")
        owner = state.users[state.batches[res.batch_id].user_id]
        if st.md5_hex((owner.authenticator + res.name).encode()) != auth_str:
            return _error("bad authenticator")
        if num >= len(res.out_phys):
            return _error(f"bad file num: {num} > {len(res.out_phys)}")
        phys = res.out_phys[num]
        if phys not in state.upload:
            return _error(f"no such file {st.dir_hier_path(phys, UPLOAD_DIR)}")
        return _attachment(phys, state.upload[phys])
    if cmd in ("workunit_file", "workunit_files"):
        if cmd == "workunit_file":
            num, name = _get_int(params, "file_num"), _get_str(params, "wu_name")
            wu = state.wu_by_name(name)
            if wu is None:
                return _error(f"no workunit {name}")
            token = state.users[state.batches[wu.batch_id].user_id].authenticator
        else:
            wu_id = _get_int(params, "wu_id")
            wu = state.wus.get(wu_id)
            if wu is None:
                return _error(f"no workunit {wu_id}")
            owner = state.users[state.batches[wu.batch_id].user_id]
            token = st.md5_hex((owner.authenticator + str(wu_id)).encode())
        if token != auth_str:
            return _error("bad authenticator")
        res = _canonical(state, wu)
        if res is None:
            return _error(f"no canonical result for wu {wu.name}")
        if cmd == "workunit_files":
            files = [(p, state.upload[p]) for p in res.out_phys if p in state.upload]
            return _attachment(f"boinc_wu_{wu.name}_{_tempnam(state)}.zip", _zip(files))
        phys = res.out_phys[num] if 0 <= num < len(res.out_phys) else ""
        if phys not in state.upload:
            return _error(f"no such file: {st.dir_hier_path(phys, UPLOAD_DIR)}")
        return _attachment(phys, state.upload[phys])
    if cmd == "batch_files":
        batch_id = _get_int(params, "batch_id")
        batch = state.batches.get(batch_id)
        if batch is None:
            return _error(f"no batch {batch_id}")
        owner = state.users[batch.user_id]
        if st.md5_hex((owner.authenticator + str(batch.id)).encode()) != auth_str:
            return _error("bad auth str")
        files = []
        for wu in state.wus_of(batch.id):
            res = _canonical(state, wu)
            files += [
                (p, state.upload[p]) for p in (res.out_phys if res else []) if p in state.upload
            ]
        return _attachment(f"boinc_batch_{_tempnam(state)}.zip", _zip(files))
    return HttpReply(b"bad command\n")


def _logical_files(state: BoincState, res: Result) -> list[tuple[str, bytes]]:
    pairs = zip(res.out_phys, res.out_logical, strict=True)
    return [(log, state.upload[phys]) for phys, log in pairs if phys in state.upload]


def get_output2(state: BoincState, params: dict[str, str]) -> HttpReply:
    """get_output2.php: result, workunit and batch with logical names (4.2)."""
    try:
        cmd = _get_str(params, "cmd")
        auth = params.get("auth", "")
        if cmd == "batch":
            batch_id = _get_int(params, "batch_id")
            if batch_id not in state.batches:
                return HttpReply(f"no batch {batch_id}".encode())
            entries: list[tuple[str, bytes]] = []
            for wu in state.wus_of(batch_id):
                res = _canonical(state, wu)
                if res is None:
                    continue
                files = _logical_files(state, res)
                sep = "__" if len(res.out_phys) == 1 else "/"
                entries += [(f"{res.name}{sep}{log}", data) for log, data in files]
            # No authenticator check here, as upstream.
            return _attachment(f"batch_{batch_id}.zip", _zip(entries))
        if cmd == "workunit":
            job = state.wus.get(_get_int(params, "wu_id"))
            if job is None:
                return HttpReply(b"no workunit")
            res = _canonical(state, job)
            if res is None:
                return HttpReply(b"<b>Fatal error</b>: get_outfile_phys_names(): null result")
        elif cmd == "result":
            res = state.results.get(_get_int(params, "result_id"))
            if res is None:
                return HttpReply(b"no result")
            if state.users[state.batches[res.batch_id].user_id].authenticator != auth:
                return HttpReply(b"bad auth")
        else:
            return HttpReply(b"bad cmd\n")
        files = _logical_files(state, res)
        if len(res.out_phys) == 1 and files:
            return _attachment(f"{res.name}__{files[0][0]}", files[0][1])
        return _attachment(f"{res.name}.zip", _zip(files))
    except _Missing as exc:
        return exc.reply
