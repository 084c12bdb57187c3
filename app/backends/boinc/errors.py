"""Exceptions raised by the BOINC RPC client.

Every failure of a BOINC RPC is a `BoincError`. Its `retryable` flag says whether the same
call may succeed later without anyone changing anything; callers (the dispatcher) retry those
with backoff and surface the others.

Exception tree:

* BoincError
  + BoincRetryableError - the server or the path to it is unwell; try again later
    - BoincConnectionError - connection refused or reset, DNS failure
    - BoincTimeoutError - connect, read or write timeout
    - BoincServerError - HTTP 5xx
    - BoincProjectDownError - error_num -183, the project has a `stop_web` flag file
    - BoincDatabaseError - error_num -138, or an SQL failure reported by a handler
    - BoincProtocolError - truncated or unparsable reply (e.g. a PHP fatal error mid-reply)
  + BoincPermanentError - the request itself is wrong; retrying will not help
    - BoincAuthError - no or bad authenticator
    - BoincPermissionError - no submit access, no file access, not owner
    - BoincNotFoundError - app, batch or job not found (includes `no batch named <n>`)
    - BoincBatchStateError - batch not in init state (one submit_batch per batch)
    - BoincSubmitError - create_work failed, template or input-file problems
    - BoincFileError - bad filename, immutability violation, upload count or size
    - BoincOutputError - get_output.php / get_output2.php refused a download
    - BoincRequestError - bad command, unparsable request, redirects, HTTP 4xx

Anything the server reports that matches no known message is a plain `BoincPermanentError`.
"""

from __future__ import annotations

__all__ = [
    "BoincAuthError",
    "BoincBatchStateError",
    "BoincConnectionError",
    "BoincDatabaseError",
    "BoincError",
    "BoincFileError",
    "BoincNotFoundError",
    "BoincOutputError",
    "BoincPermanentError",
    "BoincPermissionError",
    "BoincProjectDownError",
    "BoincProtocolError",
    "BoincRequestError",
    "BoincRetryableError",
    "BoincServerError",
    "BoincSubmitError",
    "BoincTimeoutError",
    "error_from_reply",
]

ERR_DB_NOT_FOUND = -138
ERR_PROJECT_DOWN = -183


class BoincError(Exception):
    """Base class of every BOINC client error."""

    retryable: bool = False

    def __init__(self, message: str, *, error_num: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.error_num = error_num

    def __str__(self) -> str:
        if self.error_num is None:
            return self.message
        return f"{self.message} (error_num {self.error_num})"


class BoincRetryableError(BoincError):
    """A transient failure: the same call may succeed later."""

    retryable = True


class BoincConnectionError(BoincRetryableError):
    """The server could not be reached or dropped the connection."""


class BoincTimeoutError(BoincRetryableError):
    """The server did not answer in time."""


class BoincServerError(BoincRetryableError):
    """The web server answered with HTTP 5xx."""

    def __init__(self, message: str, *, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class BoincProjectDownError(BoincRetryableError):
    """The project is down for maintenance (error_num -183)."""


class BoincDatabaseError(BoincRetryableError):
    """The project database is unreachable or an SQL statement failed."""


class BoincProtocolError(BoincRetryableError):
    """The reply was truncated or could not be parsed."""

    def __init__(
        self, message: str, *, php_fatal: str | None = None, reply_text: str | None = None
    ) -> None:
        super().__init__(message)
        # The "Fatal error: ..." text PHP printed, when the reply was cut short by one.
        self.php_fatal = php_fatal
        # The start of the decoded reply, for salvaging what the server did say.
        self.reply_text = reply_text


class BoincPermanentError(BoincError):
    """The server refused the request; retrying it unchanged will not help."""


class BoincAuthError(BoincPermanentError):
    """Missing or unknown authenticator."""


class BoincPermissionError(BoincPermanentError):
    """The account lacks submit or file access, or does not own the object."""


class BoincNotFoundError(BoincPermanentError):
    """An app, batch, job or instance does not exist."""


class BoincBatchStateError(BoincPermanentError):
    """The batch is not in the state the operation needs."""


class BoincSubmitError(BoincPermanentError):
    """Job creation failed (create_work, templates, input files)."""


class BoincFileError(BoincPermanentError):
    """An input-file RPC was refused (name, content, count or size)."""


class BoincOutputError(BoincPermanentError):
    """An output download was refused (`ERROR: ...` body or a die() page)."""


class BoincRequestError(BoincPermanentError):
    """The server could not understand the request, or the URL is wrong."""


def body_dropped(exc: BoincError) -> bool:
    """PHP discarded the request body whole (larger than the project's post_max_size), so
    the handler saw no request at all. The gateway's XML always parses, so this is the one
    way to get "can't parse request"."""
    return isinstance(exc, BoincRequestError) and "can't parse request" in exc.message


# Message prefixes from section 1.4 of the protocol reference, checked in order.
_PREFIXES: tuple[tuple[str, type[BoincError]], ...] = (
    ("no authenticator", BoincAuthError),
    ("bad authenticator", BoincAuthError),
    ("no submit access", BoincPermissionError),
    ("no file access", BoincPermissionError),
    ("not owner", BoincPermissionError),
    ("app not found", BoincNotFoundError),
    ("job not found", BoincNotFoundError),
    ("no such batch", BoincNotFoundError),
    ("no such job", BoincNotFoundError),
    ("no batch", BoincNotFoundError),
    ("no job ", BoincNotFoundError),
    ("batch not specified", BoincNotFoundError),
    ("batch not in init state", BoincBatchStateError),
    ("create_work failed", BoincSubmitError),
    ("can't run create_work", BoincSubmitError),
    ("couldn't parse input template", BoincSubmitError),
    ("wrong # of input files", BoincSubmitError),
    ("unsupported file mode", BoincSubmitError),
    ("no rsc_fpops_est given", BoincSubmitError),
    ("sandbox link file", BoincSubmitError),
    ("can't copy file", BoincSubmitError),
    ("can't write to file", BoincSubmitError),
    ("template file missing", BoincSubmitError),
    ("bad filename", BoincFileError),
    ("file immutability violation", BoincFileError),
    ("# of uploaded files", BoincFileError),
    ("file operation failed", BoincFileError),
    ("could not move", BoincFileError),
    ("can't parse request message", BoincRequestError),
    ("bad command", BoincRequestError),
    ("no such action", BoincRequestError),
)

# SQL failures the handlers report through xml_error; the database may recover.
_DB_MARKERS = (
    "Can't create batch",
    "update() failed",
    "batch update failed",
    "::insert(",
    "::delete(",
)


def error_from_reply(error_num: int | None, message: str) -> BoincError:
    """Map an `<error>` element (or a download error text) to the right exception class."""
    if error_num == ERR_PROJECT_DOWN:
        return BoincProjectDownError(message, error_num=error_num)
    if error_num == ERR_DB_NOT_FOUND:
        return BoincDatabaseError(message, error_num=error_num)
    lowered = message.lower()
    for prefix, cls in _PREFIXES:
        if lowered.startswith(prefix.lower()):
            return cls(message, error_num=error_num)
    if "upload failed because" in lowered or "was not uploaded correctly" in lowered:
        return BoincFileError(message, error_num=error_num)
    if "job " in lowered and "is not part of a batch" in lowered:
        return BoincNotFoundError(message, error_num=error_num)
    if "Duplicate entry" in message:
        # A job_file row or batch association that already exists; see BoincClient.upload_files.
        return BoincFileError(message, error_num=error_num)
    if any(marker in message for marker in _DB_MARKERS):
        return BoincDatabaseError(message, error_num=error_num)
    return BoincPermanentError(message, error_num=error_num)
