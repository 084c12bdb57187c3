"""Build BOINC RPC requests and parse the server's replies leniently.

Requests are built with ElementTree, so every value is escaped (the reference clients do not
escape, and a raw `&` makes the server reject the whole request). Replies are parsed with
defusedxml after repairing what the real server gets wrong (protocol reference, sections 1.3,
2.11 and 11): a wrong ISO-8859-1 declaration on UTF-8 bodies, unescaped names, PHP notices
inside or before the XML, `<aborted NAME>` lines, and replies cut short by PHP fatal errors.
"""

from __future__ import annotations

import html
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from xml.etree.ElementTree import Element

from defusedxml import DefusedXmlException
from defusedxml import ElementTree as SafeET

from app.backends.boinc.errors import BoincError, BoincProtocolError, error_from_reply

__all__ = [
    "Reply",
    "add",
    "fmt_num",
    "new_request",
    "parse_reply",
    "serialize",
    "text_of",
]

# Elements whose text the server echoes without escaping (names chosen by users).
RAW_FIELDS = ("name", "app_name", "job_name", "batch_name")

_DECL_RE = re.compile(r"<\?xml[^>]*\?>")
_ABORTED_RE = re.compile(r"^[ \t]*<aborted (.*?)>[ \t]*\r?$", re.MULTILINE)
# PHP notices with html_errors on: "<br />\n<b>Warning</b>:  text ... <br />".
_HTML_NOTICE_RE = re.compile(
    r"<br />\s*<b>(Deprecated|Warning|Notice|Fatal error|Parse error)</b>:(.*?)<br />",
    re.DOTALL,
)
# The same with html_errors off: one line of plain text ending in "on line N". Anchoring on
# that ending keeps a job's own stderr lines ("Warning: ...") from being taken for notices.
_TEXT_NOTICE_RE = re.compile(
    r"^(?:PHP )?(Deprecated|Warning|Notice):[ \t]+(.* on line \d+)[ \t]*\r?$", re.MULTILINE
)
_TEXT_FATAL_RE = re.compile(r"^(?:PHP )?(?:Fatal|Parse) error:[ \t]+(.*)$", re.MULTILINE)
_ERROR_NUM_RE = re.compile(r"<error_num>\s*(-?\d+)\s*</error_num>")
_ERROR_MSG_RE = re.compile(r"<error_msg>(.*?)</error_msg>", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Reply:
    """A parsed reply: the root element plus what the repairs removed."""

    root: Element
    aborted: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()


def new_request(op: str, authenticator: str | None = None) -> Element:
    """Start a request document whose root names the operation."""
    root = Element(op)
    if authenticator is not None:
        add(root, "authenticator", authenticator)
    else:
        # SimpleXML treats an empty root as a parse failure; a space keeps it non-empty.
        root.text = " "
    return root


def add(parent: Element, tag: str, value: str | int | float | None = None) -> Element:
    """Append a child element with an (escaped-on-output) text value."""
    child = ET.SubElement(parent, tag)
    if value is not None:
        child.text = value if isinstance(value, str) else fmt_num(value)
    return child


def fmt_num(value: int | float) -> str:
    """Format a number the way PHP's (double) and (int) casts read it."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {value!r}")
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def serialize(root: Element) -> str:
    """Serialise a request document (no XML declaration; the server does not need one)."""
    return ET.tostring(root, encoding="unicode")


def text_of(elem: Element | None, tag: str, default: str = "") -> str:
    """Text of a direct child, stripped; `default` when missing or empty."""
    if elem is None:
        return default
    child = elem.find(tag)
    if child is None or child.text is None:
        return default
    text = child.text.strip()
    return text if text else default


def _escape_raw(match: re.Match[str]) -> str:
    tag, inner = match.group(1), match.group(2)
    if inner.lstrip().startswith("<![CDATA["):
        return match.group(0)
    if tag == "error_msg":
        # Some messages are already HTML-escaped (the parse error echoes the request), others
        # are raw; normalise both to the plain text.
        inner = html.unescape(inner)
    escaped = inner.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f"<{tag}>{escaped}</{tag}>"


def _collect_notices(text: str) -> tuple[str, list[str], str | None]:
    """Remove PHP notices; return the cleaned text, the notices and the fatal error if any."""
    notices: list[str] = []
    fatal: str | None = None

    def keep(kind: str, body: str) -> None:
        nonlocal fatal
        plain = re.sub(r"<[^>]+>", "", html.unescape(body)).strip()
        notices.append(f"{kind}: {plain}")
        if kind in ("Fatal error", "Parse error") and fatal is None:
            fatal = plain.split("\n", 1)[0]

    def html_sub(match: re.Match[str]) -> str:
        keep(match.group(1), match.group(2))
        return ""

    def text_sub(match: re.Match[str]) -> str:
        keep(match.group(1), match.group(2))
        return ""

    text = _HTML_NOTICE_RE.sub(html_sub, text)
    text = _TEXT_NOTICE_RE.sub(text_sub, text)
    if fatal is None:
        # A plain-text fatal error ends the output; it is kept in the text (the parse fails
        # anyway) and only recorded.
        match = _TEXT_FATAL_RE.search(text)
        if match is not None:
            fatal = match.group(1).strip()
    return text, notices, fatal


def _error_from_element(err: Element) -> BoincError | None:
    num_text = text_of(err, "error_num")
    msg = text_of(err, "error_msg")
    if not num_text:
        # RPC_DEBUG turns PHP warnings into <error> without error_num: not fatal.
        return None
    try:
        num = int(num_text)
    except ValueError:
        num = -1
    if num == 0:
        return None
    return error_from_reply(num, msg or "unknown error")


def _salvage_error(text: str) -> BoincError | None:
    num = _ERROR_NUM_RE.search(text)
    if num is None or int(num.group(1)) == 0:
        return None
    msg = _ERROR_MSG_RE.search(text)
    message = html.unescape(msg.group(1)).strip() if msg else "unknown error"
    return error_from_reply(int(num.group(1)), message)


def parse_reply(body: bytes, op: str, *, raw_fields: tuple[str, ...] = RAW_FIELDS) -> Reply:
    """Parse a reply to `op`; raise the matching BoincError when it carries a fatal error."""
    # The declaration claims ISO-8859-1 but the bytes are UTF-8 straight from the database.
    text = body.decode("utf-8", errors="replace")
    aborted: tuple[str, ...] = ()
    if op == "abort_jobs":
        aborted = tuple(m.group(1) for m in _ABORTED_RE.finditer(text))
        text = _ABORTED_RE.sub("", text)
    text, notices, fatal = _collect_notices(text)
    decl = _DECL_RE.search(text)
    if decl is not None:
        # Anything before the declaration is PHP output printed before the handler started.
        text = text[decl.end() :]
    fields = (*raw_fields, "error_msg")
    pattern = re.compile(r"<(" + "|".join(map(re.escape, fields)) + r")>(.*?)</\1>", re.DOTALL)
    text = pattern.sub(_escape_raw, text)
    start = text.find("<")
    if start < 0:
        raise BoincProtocolError(f"{op}: empty reply", php_fatal=fatal)
    try:
        root = SafeET.fromstring(text[start:], forbid_dtd=True)
    except DefusedXmlException as exc:
        # The server never sends a DTD or entities; a reply with them is not from BOINC.
        raise BoincProtocolError(f"{op}: reply with forbidden XML constructs: {exc!r}") from exc
    except ET.ParseError as exc:
        salvaged = _salvage_error(text)
        if salvaged is not None:
            raise salvaged from exc
        detail = f" (PHP: {fatal})" if fatal else ""
        raise BoincProtocolError(
            f"{op}: truncated or unparsable reply: {exc}{detail}",
            php_fatal=fatal,
            reply_text=text[:65536],
        ) from exc
    if root.tag == "error":
        err = _error_from_element(root)
        raise err if err is not None else BoincProtocolError(f"{op}: error reply without number")
    if root.tag != op:
        raise BoincProtocolError(f"{op}: unexpected reply root <{root.tag}>")
    for child in root.findall("error"):
        err = _error_from_element(child)
        if err is not None:
            raise err
    return Reply(root=root, aborted=aborted, notices=tuple(notices))
