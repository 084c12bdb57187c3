"""PHP behaviours of BOINC's web code that the fake handlers reproduce.

Output is built like PHP's `echo`: handlers append to an `Output`, and an error ends the script
wherever it happens (`XmlError` -> xml_error(), `PhpFatal` -> an uncaught exception that cuts
the reply short). Also: SimpleXML-style request access with PHP casts, PHP float printing,
htmlspecialchars, and the notice and fatal-error texts seen on the live server.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

from defusedxml import ElementTree as SafeET
from python_multipart.multipart import MultipartParser, parse_options_header

from tests.fakes.boinc_state import PROJECT_DIR

XML_HEADER = '<?xml version="1.0" encoding="ISO-8859-1" ?>\n'
XML_TYPE = "text/xml;charset=UTF-8"
HTML_TYPE = "text/html; charset=UTF-8"
DB_CONN = f"{PROJECT_DIR}/html/inc/db_conn.inc"


class XmlError(Exception):
    """xml_error(num, msg): print `<error>`, close the open root, exit."""

    def __init__(self, msg: str, num: int = -1, *, where: tuple[str, int] | None = None) -> None:
        super().__init__(msg)
        self.msg, self.num, self.where = msg, num, where


class PhpFatal(Exception):
    """An uncaught mysqli_sql_exception: the reply ends after the fatal error text."""

    def __init__(self, msg: str, frames: list[str]) -> None:
        super().__init__(msg)
        self.msg, self.frames = msg, frames


@dataclass
class Quirks:
    """Real-server misbehaviours, each off by default (protocol reference section 9).

    php_notices: PHP notices are displayed inside replies (11.2): the `Deprecated` pair per
        get_batch_params() call, the qcj `Undefined variable` warning, fatal-error texts.
    notice_style: how notices look: "html" (live server), "text" (html_errors off), or
        "rpc_debug" (`<error>` without error_num, 1.3).
    notices_before_xml: a PHP warning is printed before the XML declaration of every reply.
    abort_jobs_bad_xml: abort_jobs prints `<aborted NAME>` lines (2.11) instead of elements.
    sql_exceptions: PHP >= 8.1: a failing SQL statement is an uncaught exception that
        truncates the reply (1.3, 11.3): duplicate associations, duplicate job_file rows, the
        broken qcj query. Off: the handler's own error path (or silence) is used.
    qcj_broken_error_path: query_completed_job of a job without canonical result looks its
        instances up with an undefined `$job_id` (2.9), so it reports only `<error_mask>`.
    template_entity_bug: submit_batch/estimate_batch fail with `couldn't parse input template
        file` for apps with a default input template (11.1).
    sandbox_fallthrough: `sandbox` input mode falls through into `inline` (2.4.2).
    inverted_deleter: `run_file_deleter` deletes files of active batches only (#7319).
    target_team_failure: a job with `<target_team>` makes create_work fail (2.4.1).
    """

    php_notices: bool = False
    notice_style: str = "html"
    notices_before_xml: bool = False
    abort_jobs_bad_xml: bool = False
    sql_exceptions: bool = False
    qcj_broken_error_path: bool = False
    template_entity_bug: bool = False
    sandbox_fallthrough: bool = False
    inverted_deleter: bool = False
    target_team_failure: bool = False

    @classmethod
    def live(cls) -> Quirks:
        """The server the replies in boinc-replies/ were recorded from (template bug fixed)."""
        return cls(
            php_notices=True,
            abort_jobs_bad_xml=True,
            sql_exceptions=True,
            qcj_broken_error_path=True,
            sandbox_fallthrough=True,
            inverted_deleter=True,
            target_team_failure=True,
        )


@dataclass
class Output:
    """What a PHP script has echoed so far, and which root element it opened."""

    quirks: Quirks
    parts: list[str] = field(default_factory=list)
    root: str | None = None
    content_type: str = XML_TYPE

    def echo(self, text: str) -> None:
        """Append text to the reply."""
        self.parts.append(text)

    def start(self, op: str) -> None:
        """xml_start_tag(op)."""
        self.root = op
        self.echo(f"<{op}>\n")

    def notice(self, kind: str, msg: str, file: str, line: int) -> None:
        """A displayed PHP notice or warning, when notices are on."""
        if self.quirks.php_notices:
            self.echo(notice_text(self.quirks.notice_style, kind, msg, file, line))

    def batch_params_notices(self) -> None:
        """The two notices every get_batch_params() call prints on PHP 8.2 (11.2)."""
        for prop, line in (("njobs_success", 187), ("njobs_in_prog", 188)):
            msg = f"Creation of dynamic property BoincBatch::${prop} is deprecated"
            self.notice("Deprecated", msg, f"{PROJECT_DIR}/html/inc/submit_util.inc", line)

    def body(self) -> bytes:
        """The reply bytes."""
        return "".join(self.parts).encode()


def notice_text(style: str, kind: str, msg: str, file: str, line: int) -> str:
    """A PHP notice as display_errors prints it."""
    if style == "text":
        return f"\n{kind}: {msg} in {file} on line {line}\n"
    if style == "rpc_debug":
        return (
            f"<error><error_msg><![CDATA[{msg}]]></error_msg><type>{kind}</type>"
            f"<file>{file}</file><line>{line}</line></error>\n"
        )
    return f"<br />\n<b>{kind}</b>:  {msg} in <b>{file}</b> on line <b>{line}</b><br />\n"


def fatal_text(style: str, fatal: PhpFatal) -> str:
    """The uncaught-exception text PHP prints before dying."""
    trace = "".join(f"#{i} {f}\n" for i, f in enumerate([*fatal.frames, "{main}"]))
    head = f"Uncaught mysqli_sql_exception: {fatal.msg} in {DB_CONN}:67\nStack trace:\n"
    if style == "text":
        return f"PHP Fatal error:  {head}{trace}  thrown in {DB_CONN} on line 67\n"
    trace = trace.replace("->", "-&gt;")
    return (
        f"<br />\n<b>Fatal error</b>:  {head}{trace}"
        f"  thrown in <b>{DB_CONN}</b> on line <b>67</b><br />\n"
    )


def sql_frames(*frames: str) -> list[str]:
    """Stack frames of a failed DbConn query: mysqli's, then the callers' ({inc}, {user})."""
    inc, user = f"{PROJECT_DIR}/html/inc", f"{PROJECT_DIR}/html/user"
    return [f"{DB_CONN}(67): mysqli->query()"] + [
        frame.replace("{inc}", inc).replace("{user}", user) for frame in frames
    ]


def xml_error_text(num: int, msg: str, where: tuple[str, int] | None = None) -> str:
    """xml_error()'s `<error>` block."""
    extra = f"    <file>{where[0]}</file>\n    <line>{where[1]}</line>\n" if where else ""
    head = f"<error>\n    <error_num>{num}</error_num>\n"
    return f"{head}    <error_msg>{msg}</error_msg>\n{extra}</error>\n"


def hsc(text: str) -> str:
    """PHP 8 htmlspecialchars (ENT_QUOTES)."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#039;")
    )


def php_float(value: float) -> str:
    """How PHP 8 echoes a float (precision 14)."""
    text = f"{value:.14G}"
    return text.replace("E+0", "E+").replace("E-0", "E-")


def php_int(text: str) -> int:
    """PHP's (int) cast of a string."""
    return int(php_double(text))


def php_double(text: str) -> float:
    """PHP's (double) cast of a string: the leading number, else 0."""
    match = re.match(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text)
    return float(match.group(0)) if match else 0.0


def load_request(text: str | None) -> ET.Element | None:
    """safe_simplexml_load_string(): None when unparseable or an empty root (1.2)."""
    if not text:
        return None
    try:
        root = SafeET.fromstring(text, forbid_dtd=True)
    except (ET.ParseError, ValueError):
        return None
    except Exception:  # defusedxml's forbidden constructs
        return None
    if len(root) == 0 and not root.attrib and not root.text:
        # SimpleXML's truthiness: no children, attributes or text reads as false.
        return None
    return root


def s(elem: ET.Element | None, path: str) -> str:
    """(string)$r->path: the text, "" when missing."""
    if elem is None:
        return ""
    found = elem.find(path)
    return "" if found is None else "".join(found.itertext())


def i(elem: ET.Element | None, path: str) -> int:
    """(int)$r->path."""
    return php_int(s(elem, path))


def f(elem: ET.Element | None, path: str) -> float:
    """(double)$r->path."""
    return php_double(s(elem, path))


def multipart_form(
    content_type: str, body: bytes
) -> tuple[dict[str, str], list[tuple[str, str, bytes]]]:
    """Form fields and (field, filename, data) file parts of a multipart body."""
    _, opts = parse_options_header(content_type)
    parts: list[dict[str, Any]] = []
    cur: dict[str, Any] = {}

    def begin() -> None:
        cur.clear()
        cur.update(headers={}, data=bytearray(), field=b"", value=b"")

    def field(data: bytes, start: int, end: int) -> None:
        cur["field"] += data[start:end]

    def value(data: bytes, start: int, end: int) -> None:
        cur["value"] += data[start:end]

    def header_end() -> None:
        cur["headers"][cur["field"].lower()] = cur["value"]
        cur["field"], cur["value"] = b"", b""

    def data(chunk: bytes, start: int, end: int) -> None:
        cur["data"] += chunk[start:end]

    def end() -> None:
        parts.append(dict(cur))

    callbacks: Any = {
        "on_part_begin": begin,
        "on_header_field": field,
        "on_header_value": value,
        "on_header_end": header_end,
        "on_part_data": data,
        "on_part_end": end,
    }
    parser = MultipartParser(opts.get(b"boundary", b""), callbacks)
    parser.write(body)
    parser.finalize()
    fields: dict[str, str] = {}
    files: list[tuple[str, str, bytes]] = []
    for part in parts:
        _, disp = parse_options_header(part["headers"].get(b"content-disposition", b""))
        name = disp.get(b"name", b"").decode()
        if b"filename" in disp:
            files.append((name, disp[b"filename"].decode(), bytes(part["data"])))
        else:
            fields[name] = bytes(part["data"]).decode("utf-8", errors="replace")
    return fields, files
